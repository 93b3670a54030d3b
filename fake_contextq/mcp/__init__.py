"""ContextQ's MCP surface: the contract's tools as REST calls, served in-process, over
streamable HTTP at ``/mcp`` and on stdio. Needs the ``mcp`` package (the ``fake`` extra)."""

from fake_contextq.mcp.endpoint import McpEndpoint
from fake_contextq.mcp.server import bound_server, build_server, check_arguments, tool_listing
from fake_contextq.mcp.sync_client import McpToolError, SyncMcpClient, result_text
from fake_contextq.mcp.tools import Rest, run_tool

__all__ = [
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
