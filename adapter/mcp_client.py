"""``SyncMcpClient``: an ``mcp.Client`` for synchronous code (tests, ``McpAgentMemory``),
its session held open on an anyio portal thread so that many calls share one connection.
Needs the ``mcp`` package (the ``mcp`` extra); ``import adapter`` does not load it."""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any, Self

import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server

from adapter import wire
from adapter._tls import default_ssl_context


class SyncMcpClient:
    """Connects to an in-process ``Server``, to a streamable HTTP URL (with ``api_key``
    sent as ``Authorization: Bearer``), or to a stdio server it starts. ``mode`` is
    ``mcp.Client``'s: ``"auto"`` speaks the newest protocol the server offers, ``"legacy"``
    the initialize handshake."""

    def __init__(
        self,
        target: Server[Any] | str | StdioServerParameters,
        *,
        api_key: str | None = None,
        mode: str = "auto",
    ) -> None:
        self.target = target
        self.api_key = api_key
        self.mode = mode
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._client: Client | None = None

    def open(self) -> Self:
        if self._portal is not None:
            return self
        self._portal = self._stack.enter_context(start_blocking_portal())
        try:
            self._client = self._stack.enter_context(
                self._portal.wrap_async_context_manager(self._connect())
            )
        except BaseException:
            self.close()
            raise
        return self

    @contextlib.asynccontextmanager
    async def _connect(self) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            target: Any = self.target
            if isinstance(target, str):
                headers = (
                    {}
                    if self.api_key is None
                    else {"Authorization": wire.authorization(self.api_key)}
                )
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=headers, verify=default_ssl_context())
                )
                target = streamable_http_client(target, http_client=http)
            client = await stack.enter_async_context(Client(target, mode=self.mode))
            yield client

    def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._portal is None or self._client is None:
            self.open()
        assert self._portal is not None and self._client is not None
        return self._portal.call(lambda: getattr(self._client, name)(*args, **kwargs))

    def list_tools(self) -> list[types.Tool]:
        result: types.ListToolsResult = self._run("list_tools")
        return list(result.tools)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """The tool's result; a protocol error (unknown tool, arguments of the wrong
        shape) raises ``mcp.MCPError``."""
        result: types.CallToolResult = self._run("call_tool", name, arguments or {})
        return result

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """The ``structuredContent`` of a successful call; a tool error raises
        ``McpToolError`` with its text and error body."""
        result = self.call_tool(name, arguments)
        if result.is_error:
            raise McpToolError(name, result)
        return result.structured_content

    @property
    def protocol_version(self) -> str:
        assert self._client is not None, "not open"
        return self._client.protocol_version

    def close(self) -> None:
        self._portal = self._client = None
        self._stack.close()
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def result_text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


class McpToolError(AssertionError):
    """A tool answered ``isError``: ``text`` is what the model would read, ``body`` the
    ContextQ error body (``body["error"]`` is its code)."""

    def __init__(self, tool: str, result: types.CallToolResult) -> None:
        self.tool = tool
        self.text = result_text(result)
        self.body: dict[str, Any] = dict(result.structured_content or {})
        self.code = self.body.get("error")
        super().__init__(f"{tool}: {self.text}")
