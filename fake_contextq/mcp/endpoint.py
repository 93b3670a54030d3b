"""The served fake's ``/mcp``: streamable HTTP in front of the REST app.

A request to ``/mcp`` is authenticated as REST authenticates (no key or a bad one: the
same 401), then handed to the SDK's streamable HTTP transport; each tool call it makes is
a REST request into the same app in-process, with the caller's own ``Authorization``, so
it is journaled, subject to faults and bound to the key's tenant. Every other path goes to
the REST app unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx2
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from adapter import wire
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError
from fake_contextq.http._io import ASGIApp, Receive, Scope, Send, error_response
from fake_contextq.http.transport import AsyncInProcessTransport
from fake_contextq.mcp.server import build_server
from fake_contextq.mcp.tools import Rest

LOOPBACK = ("127.0.0.1", "localhost", "::1")
INTERNAL_BASE_URL = "http://contextq.internal"


def security_for(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection when bound to loopback (a web page cannot reach the fake
    through a name of its own), as the SDK's own apps do; none on other addresses."""
    if host in LOOPBACK:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpEndpoint:
    """Pure ASGI: ``/mcp`` to the MCP transport, anything else to ``app``. It needs the
    lifespan protocol (the SDK's transport runs in a task group that lives as long as the
    server): ``fake_server`` serves it with lifespan on."""

    def __init__(self, app: ASGIApp, backend: ContextQBackend, *, host: str = "127.0.0.1"):
        self.app = app
        self.backend = backend
        self.security = security_for(host)
        self._rest = httpx2.AsyncClient(
            transport=AsyncInProcessTransport(app), base_url=INTERNAL_BASE_URL
        )
        self._manager: StreamableHTTPSessionManager | None = None
        self._running: contextlib.AsyncExitStack | None = None

    def shutting_down(self) -> None:
        """Pass the server's shutdown on to the app behind (see ``fake_server``)."""
        hook = getattr(self.app, "shutting_down", None)
        if callable(hook):
            hook()

    def _rest_for(self, ctx: ServerRequestContext[Any, Any]) -> Rest:
        request = ctx.request
        headers = getattr(request, "headers", None)
        authorization = None if headers is None else headers.get("authorization")
        return Rest(self._rest, authorization)

    async def _start(self) -> None:
        manager = StreamableHTTPSessionManager(
            app=build_server(self._rest_for),
            json_response=True,
            stateless=wire.MCP_STATELESS,
            security_settings=self.security,
        )
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(manager.run())
        self._manager, self._running = manager, stack

    async def _stop(self) -> None:
        if self._running is not None:
            await self._running.aclose()
        self._manager = self._running = None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self._start()
                except Exception as exc:  # reported to the server, which then exits
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._stop()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _authenticate(self, scope: Scope) -> ApiError | None:
        authorization = next(
            (v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"authorization"),
            None,
        )
        try:
            if self.backend.store.reads_wait:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(None, self.backend.authenticate, authorization)
            else:
                self.backend.authenticate(authorization)
        except ApiError as exc:
            return exc
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http" or scope.get("path") != wire.MCP_PATH:
            await self.app(scope, receive, send)
            return
        refused = await self._authenticate(scope)
        if refused is not None:
            await error_response(refused)(scope, receive, send)
            return
        if self._manager is None:
            raise RuntimeError("the MCP endpoint was served without the ASGI lifespan")
        await self._manager.handle_request(scope, receive, send)
