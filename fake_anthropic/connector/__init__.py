"""The MCP connector's far side: how the scripted model reaches a request's MCP servers,
over streamable HTTP with the official ``mcp`` SDK (or in-process, for a route a test
registers). It builds on ``engine`` (whose ``McpConnector`` port it implements)."""

from fake_anthropic.connector.sdk import McpRoute, SdkConnector

__all__ = ["McpRoute", "SdkConnector"]
