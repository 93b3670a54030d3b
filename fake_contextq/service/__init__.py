"""The fake ContextQ as one service: ``ContextQService.handle(request) -> answer``, over
one table of operations (``operations.OPERATIONS``) from which routing, validation order,
the OpenAPI document and the MCP tool list are derived. Sans I/O: the transports in
``fake_contextq.http`` only translate to and from it."""

from fake_contextq.service.exchange import Answer, ReceivedBody, Request
from fake_contextq.service.operations import (
    MCP_TOOLS,
    OPERATIONS,
    Inputs,
    Operation,
    mcp_tool,
    operation,
)
from fake_contextq.service.service import OPENAPI_PATH, ContextQService, Exchange
from fake_contextq.service.tool_shapes import MCP_TOOLS_NOT_FAKED, Exposure, McpTool

__all__ = [
    "MCP_TOOLS",
    "MCP_TOOLS_NOT_FAKED",
    "OPENAPI_PATH",
    "OPERATIONS",
    "Answer",
    "ContextQService",
    "Exchange",
    "Exposure",
    "Inputs",
    "McpTool",
    "Operation",
    "ReceivedBody",
    "Request",
    "mcp_tool",
    "operation",
]
