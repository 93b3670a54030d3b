"""``SdkConnector``: the engine's ``McpConnector`` on the ``mcp`` SDK.

The engine is synchronous and may be called from a thread that runs an event loop (an
async SDK client's transport, a served model's ASGI app), so each call runs its own event
loop on a short-lived thread and waits for it. ``mcp`` is imported on first use: a model
that never plays an ``mcp_tool_use`` never loads it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from fake_anthropic.engine.mcp import McpOutcome, McpServer, McpUnreachable

T = TypeVar("T")

McpRoute = Callable[[str | None], Any]
"""An in-process MCP server for a URL: called with the request's ``authorization_token``,
it returns an ``mcp`` server object (``mcp.server.Server``) that ``mcp.Client`` connects
to in memory."""

TIMEOUT_SECONDS = 30.0


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failure, readable in one line (task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text_blocks(result: Any) -> list[dict[str, Any]]:
    """An MCP ``CallToolResult`` as the ``mcp_tool_result`` content the API returns: its
    text blocks (other kinds, which the API's block holds no form of, as their JSON)."""
    blocks: list[dict[str, Any]] = []
    for item in result.content:
        if getattr(item, "type", None) == "text":
            blocks.append({"type": "text", "text": item.text})
        else:
            blocks.append({"type": "text", "text": item.model_dump_json(by_alias=True)})
    if not blocks and result.structured_content is not None:
        blocks.append({"type": "text", "text": json.dumps(result.structured_content)})
    return blocks


def _listed(tool: Any) -> dict[str, Any]:
    """An MCP ``Tool`` as the API lists it (``BetaMCPTool``): its name, input schema and
    description (left out when the server gives none)."""
    listed: dict[str, Any] = {"name": tool.name, "input_schema": dict(tool.input_schema)}
    if tool.description is not None:
        listed["description"] = tool.description
    return listed


class SdkConnector:
    """Reaches each server at its URL with ``Authorization: Bearer <authorization_token>``,
    or through a registered in-process route (``route(url, factory)``)."""

    def __init__(self, *, timeout: float = TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._routes: dict[str, McpRoute] = {}

    def route(self, url: str, server: McpRoute) -> None:
        self._routes[url] = server

    def _run(self, work: Callable[[], Awaitable[T]]) -> T:
        import anyio

        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = anyio.run(work)
            except BaseException as exc:  # carried back to the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=target, name="scripted-model-mcp", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            raise McpUnreachable(f"no answer within {self.timeout:g}s")
        if "error" in box:
            raise box["error"]
        value: T = box["value"]
        return value

    async def _session(self, server: McpServer, use: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``use`` on a session with the server; an HTTP refusal on the way (a 401 for
        a bad token) is reported by its status and message, which the SDK's error hides."""
        from mcp import Client

        route = self._routes.get(server.url)
        if route is not None:
            async with Client(route(server.authorization_token)) as session:
                return await use(session)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        refusals: list[str] = []

        async def note_refusal(response: httpx2.Response) -> None:
            if response.status_code >= 400:
                await response.aread()
                refusals.append(f"HTTP {response.status_code}: {response.text[:200]}")

        headers = {}
        if server.authorization_token is not None:
            headers["Authorization"] = f"Bearer {server.authorization_token}"
        async with httpx2.AsyncClient(
            headers=headers, timeout=self.timeout, event_hooks={"response": [note_refusal]}
        ) as http:
            try:
                async with Client(streamable_http_client(server.url, http_client=http)) as session:
                    return await use(session)
            except Exception as exc:
                if refusals:
                    raise McpUnreachable(refusals[0]) from exc
                raise

    def _with_session(self, server: McpServer, use: Callable[[Any], Awaitable[T]]) -> T:
        """``use`` run on a session; any failure to get one is ``McpUnreachable``."""
        try:
            return self._run(lambda: self._session(server, use))
        except McpUnreachable:
            raise
        except Exception as exc:
            raise McpUnreachable(_reason(exc)) from None

    def list_tools(self, server: McpServer) -> list[dict[str, Any]]:
        async def listing(session: Any) -> list[dict[str, Any]]:
            return [_listed(tool) for tool in (await session.list_tools()).tools]

        return self._with_session(server, listing)

    def call_tool(self, server: McpServer, name: str, arguments: Mapping[str, Any]) -> McpOutcome:
        from mcp import MCPError

        async def call(session: Any) -> McpOutcome:
            try:
                result = await session.call_tool(name, dict(arguments))
            except MCPError as exc:  # the protocol's own error: the model reads it
                return McpOutcome(True, [{"type": "text", "text": exc.message}])
            return McpOutcome(bool(result.is_error), _text_blocks(result))

        return self._with_session(server, call)
