"""The served fake's ``/mcp``: streamable HTTP in front of the REST app.

A request to ``/mcp`` is authenticated as REST authenticates (no key or a bad one: the
same 401 and ``WWW-Authenticate`` challenge, its body a JSON-RPC error for an MCP client:
``refusal``; a CORS preflight, which carries no credentials, is answered first: ``cors``),
then handed to the SDK's streamable HTTP transport; each tool call it makes is
a REST request into the same app in-process, with the caller's own ``Authorization``, so
it is journaled, subject to faults and bound to the key's tenant. Every other path goes to
the REST app unchanged.

The SDK's transport (and the SDK itself, half a second of imports) starts with the first
MCP request, in a task of its own that lives until the server shuts down: most servers,
a test's or a developer's, never see one. A POST of one JSON-RPC request it would answer
statelessly with one JSON body is answered without building its per-request transport
(``exchange.SingleExchange``), as that transport would answer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2

from adapter import wire
from fake_contextq.domain._validate import decode_json
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError, ValidationFailed
from fake_contextq.http._io import (
    SERVED_MCP_KEY,
    ASGIApp,
    Message,
    Receive,
    Scope,
    Send,
    error_response,
    json_response,
)
from fake_contextq.http.transport import AsyncInProcessTransport
from fake_contextq.mcp import cors
from fake_contextq.mcp.cors import LOOPBACK, LOOPBACK_HOSTS, LOOPBACK_ORIGINS
from fake_contextq.service import ContextQService

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from fake_contextq.mcp.exchange import SingleExchange
    from fake_contextq.mcp.tools import Rest

INTERNAL_BASE_URL = "http://contextq.internal"

logger = logging.getLogger(__name__)


def security_for(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection when bound to loopback (a web page cannot reach the fake
    through a name of its own), as the SDK's own apps do; none on other addresses."""
    from mcp.server.transport_security import TransportSecuritySettings

    if host in LOOPBACK:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(LOOPBACK_HOSTS),
            allowed_origins=list(LOOPBACK_ORIGINS),
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


@dataclass(frozen=True, slots=True)
class _Mcp:
    """The SDK's transport, running, and the stateless answer made without it (None when
    the fake serves sessions: ``wire.MCP_STATELESS``)."""

    manager: StreamableHTTPSessionManager
    exchange: SingleExchange | None


class McpEndpoint:
    """Pure ASGI: ``/mcp`` to the MCP transport, anything else to ``app``. It needs the
    lifespan protocol (the SDK's transport runs in a task group that lives as long as the
    server): ``fake_server`` serves it with lifespan on."""

    def __init__(
        self,
        app: ASGIApp,
        backend: ContextQBackend,
        *,
        host: str = "127.0.0.1",
        versions: Sequence[str] | None = None,
    ):
        from fake_contextq.mcp.versions import SUPPORTED_PROTOCOL_VERSIONS  # no SDK import

        self.app = app
        self.backend = backend
        self.host = host
        self.versions = tuple(versions or SUPPORTED_PROTOCOL_VERSIONS)
        # straight into the service when the app has one (the fake's own), so each tool
        # call's REST request is journaled and faulted without another trip through ASGI
        target = getattr(app, "service", app)
        transport = AsyncInProcessTransport(target)
        self._rest = httpx2.AsyncClient(transport=transport, base_url=INTERNAL_BASE_URL)
        # and without building an httpx2 request and response for it (``Rest.link``)
        self._link = transport if isinstance(target, ContextQService) else None
        self._mcp: _Mcp | None = None
        self._runner: asyncio.Task[None] | None = None
        self._starting: asyncio.Lock | None = None
        self._stopping: asyncio.Event | None = None

    def shutting_down(self) -> None:
        """Pass the server's shutdown on to the app behind (see ``fake_server``)."""
        hook = getattr(self.app, "shutting_down", None)
        if callable(hook):
            hook()

    def _rest_for(self, ctx: ServerRequestContext[Any, Any]) -> Rest:
        from fake_contextq.mcp.tools import Rest

        request = ctx.request
        headers = getattr(request, "headers", None)
        authorization = None if headers is None else headers.get("authorization")
        return Rest(self._rest, authorization, link=self._link)

    async def _started(self) -> _Mcp:
        """The SDK's transport, started on first use by a task that runs it until the
        server shuts down (its task group must be entered and left by one task)."""
        if self._mcp is not None:
            return self._mcp
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._mcp is None:
                ready: asyncio.Future[_Mcp] = asyncio.get_running_loop().create_future()
                self._stopping = asyncio.Event()
                self._runner = asyncio.create_task(self._run(ready, self._stopping))
                self._mcp = await ready
        return self._mcp

    async def _run(self, ready: asyncio.Future[_Mcp], stopping: asyncio.Event) -> None:
        try:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            from fake_contextq.mcp.server import build_server

            server = build_server(self._rest_for, versions=self.versions)
            manager = StreamableHTTPSessionManager(
                app=server,
                json_response=True,
                stateless=wire.MCP_STATELESS,
                security_settings=security_for(self.host),
            )
            async with manager.run():
                exchange = _single_exchange(server, manager) if wire.MCP_STATELESS else None
                ready.set_result(_Mcp(manager, exchange))
                await stopping.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def _stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._runner is not None:
            with contextlib.suppress(Exception):
                await self._runner
        self._mcp = self._runner = self._stopping = None

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
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
                principal = await loop.run_in_executor(
                    None, self.backend.authenticate, authorization
                )
            else:
                principal = self.backend.authenticate(authorization)
        except ApiError as exc:
            return exc
        scope.setdefault("state", {})["tenant_id"] = principal.tenant_id  # for the journal
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http" or scope.get("path") != wire.MCP_PATH:
            scope[SERVED_MCP_KEY] = wire.MCP_PATH  # the root page lists it
            await self.app(scope, receive, send)
            return
        observe = getattr(self.app, "observe", None)  # the REST app's journal and faults
        if observe is None:
            await self._serve(scope, receive, send)
            return
        await observe(scope, receive, send, self._serve)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        preflight = cors.preflight(scope, self.host)
        if preflight is not None:  # a browser asks first, without credentials
            status, headers, body = preflight
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        send = cors.with_cors(scope, send, self.host)
        refused = await self._authenticate(scope)
        if refused is not None:  # REST's 401, its challenge included
            await refusal(scope, refused)(scope, receive, send)
            return
        buffered = await well_formed_body(scope, receive)  # read, so the journal shows it
        unsupported = _unsupported_version(scope, self.versions)
        if unsupported is not None:
            await unsupported(scope, buffered, send)
            return
        mcp = await self._started()
        if mcp.exchange is not None and await mcp.exchange.answer(
            scope, buffered.body, buffered, send
        ):
            return
        await mcp.manager.handle_request(scope, buffered, send)


#: The ``mcp`` releases the shortcut past the SDK's transport was held to that transport
#: with (``tests/fake_contextq/test_mcp_single_exchange.py``): it uses parts that are not
#: all the SDK's public API, and repeats its transport's checks, so another release might
#: answer differently without failing to import. Add a release here once that test passes
#: on it.
SHORTCUT_SDK_RELEASES: tuple[str, ...] = ("2.3.",)


def _single_exchange(server: Any, manager: StreamableHTTPSessionManager) -> SingleExchange | None:
    """The shortcut past the SDK's per-request transport, or None on an SDK release it was
    not checked against, or one lacking the parts it uses: every request then goes
    through the SDK's transport, slower, answering as the SDK answers."""
    from importlib.metadata import version

    release = version("mcp")
    if not release.startswith(SHORTCUT_SDK_RELEASES):
        logger.info("MCP requests go through the SDK's transport: mcp %s is unchecked", release)
        return None
    try:
        from fake_contextq.mcp.exchange import SingleExchange

        return SingleExchange(server, manager)
    except (ImportError, AttributeError) as exc:
        logger.info("MCP requests go through the SDK's transport only: %s", exc)
        return None


def _unsupported_version(scope: Scope, versions: Sequence[str]) -> ASGIApp | None:
    """The TypeScript SDK's 400 for an ``MCP-Protocol-Version`` header naming a version
    not served (``mcp.versions``), or None. It also keeps the Python SDK from serving its
    2026-07-28 era, which it picks by that header, unless ``versions`` holds it."""
    from fake_contextq.mcp.versions import unsupported_header

    header = next(
        (v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"mcp-protocol-version"),
        None,
    )
    message = unsupported_header(header, versions)
    if message is None:
        return None
    body = {"jsonrpc": "2.0", "error": {"code": -32000, "message": message}, "id": None}
    return json_response(400, body)


def refusal(scope: Scope, refused: ApiError) -> ASGIApp:
    """REST's answer to a refused key; to an MCP client (``wire.MCP_UNAUTHORIZED_CODE``)
    its body as a JSON-RPC error, the one body an MCP client shows, so the person running it
    reads what REST says (which key to send) instead of a bare 'error response'."""
    if not _is_mcp_client(scope):
        return error_response(refused)
    body = refused.body()
    error = {
        "code": wire.MCP_UNAUTHORIZED_CODE,
        "message": wire.mcp_error_text(refused.status, body),
        "data": body,
    }
    rpc = {"jsonrpc": "2.0", "id": None, "error": error}
    return json_response(refused.status, rpc, dict(refused.headers()))


def _is_mcp_client(scope: Scope) -> bool:
    accept = b", ".join(v for k, v in scope.get("headers", ()) if k.lower() == b"accept")
    return b"text/event-stream" in accept.lower()


class Buffered:
    """A request's ``receive`` once its body has been read: the messages read, then the
    server's own. ``body``: the whole body, when it was read to its end."""

    def __init__(self, messages: list[Message], receive: Receive, body: bytes | None) -> None:
        self._messages = messages
        self._receive = receive
        self.body = body

    async def __call__(self) -> Message:
        return self._messages.pop(0) if self._messages else await self._receive()


async def well_formed_body(scope: Scope, receive: Receive) -> Buffered:
    """``receive`` for a request whose JSON body may escape a lone surrogate (``"\\ud800"``):
    JSON.parse, and so ContextQ's own MCP server, reads one, where the SDK's parser refuses
    the whole message. Such a body is handed on with each one U+FFFD, as REST stores it
    ([assumed] ``wire.well_formed``); any other body (and one over the REST body limit, or
    not JSON) is handed on unread."""
    messages: list[Message] = []
    size = 0
    complete = False
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if size > wire.MAX_BODY_BYTES:
            break
        if not message.get("more_body"):
            complete = True
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
    if size <= wire.MAX_BODY_BYTES and _SURROGATE_ESCAPE.search(body):
        with contextlib.suppress(ValidationFailed):
            well = json.dumps(decode_json(body), ensure_ascii=False).encode()
            messages = [{"type": "http.request", "body": well, "more_body": False}]
            scope["headers"] = [
                (k, str(len(well)).encode() if k == b"content-length" else v)
                for k, v in scope.get("headers", ())
            ]
            body, complete = well, True
    return Buffered(messages, receive, body if complete else None)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
