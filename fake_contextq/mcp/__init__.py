"""ContextQ's MCP surface: the contract's tools as REST calls, served in-process, over
streamable HTTP at ``/mcp`` and on stdio. Needs the ``mcp`` package (the ``fake`` extra).

Names load on first use: a served fake builds its ``/mcp`` endpoint at once, but imports
the ``mcp`` SDK (half a second) only when the first MCP request comes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapter._lazy import lazy_names

if TYPE_CHECKING:
    from fake_contextq.mcp.endpoint import McpEndpoint
    from fake_contextq.mcp.server import (
        bound_server,
        build_server,
        check_arguments,
        tool_listing,
    )
    from fake_contextq.mcp.sync_client import McpToolError, SyncMcpClient, result_text
    from fake_contextq.mcp.tools import Rest, run_tool

#: How long one whole tool call of the stdio bridge may take, in seconds, by default
#: (``fake-contextq mcp --deadline``): every REST call it makes and every byte of their answers.
CALL_DEADLINE_SECONDS = 30.0

_HOMES = {
    "McpEndpoint": "endpoint",
    "bound_server": "server",
    "build_server": "server",
    "check_arguments": "server",
    "tool_listing": "server",
    "McpToolError": "sync_client",
    "SyncMcpClient": "sync_client",
    "result_text": "sync_client",
    "Rest": "tools",
    "run_tool": "tools",
}

__all__ = [
    "CALL_DEADLINE_SECONDS",
    "McpEndpoint",
    "McpToolError",
    "Rest",
    "SyncMcpClient",
    "bound_server",
    "build_server",
    "check_arguments",
    "result_text",
    "run_tool",
    "tool_listing",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _HOMES)
