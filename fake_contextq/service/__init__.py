"""The fake ContextQ as one service: ``ContextQService.handle(request) -> answer``, over
one table of operations (``operations.OPERATIONS``) from which routing, validation order,
the OpenAPI document and the MCP tool list are derived. Sans I/O: the transports in
``fake_contextq.http`` only translate to and from it."""

from fake_contextq.service.exchange import Answer, ReceivedBody, Request
from fake_contextq.service.operations import OPERATIONS, Inputs, Operation, operation
from fake_contextq.service.service import OPENAPI_PATH, ContextQService, Exchange

__all__ = [
    "OPENAPI_PATH",
    "OPERATIONS",
    "Answer",
    "ContextQService",
    "Exchange",
    "Inputs",
    "Operation",
    "ReceivedBody",
    "Request",
    "operation",
]
