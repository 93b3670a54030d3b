"""The blocking MCP client the fake's tests and fixtures use: the adapter's own."""

from adapter.mcp_client import McpToolError, SyncMcpClient, result_text

__all__ = ["McpToolError", "SyncMcpClient", "result_text"]
