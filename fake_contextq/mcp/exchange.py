"""A stateless POST carrying one JSON-RPC request, answered in its own task.

For every POST the SDK's stateless streamable HTTP path builds a transport, its memory
streams and their router task, a JSON-RPC dispatcher with a task group and a server run,
hands the request across them and tears them all down again: more than half of what a
served tool call costs. A POST that carries one JSON-RPC request and asks for a JSON
answer needs none of it, for the answer is that request's result alone: ``SingleExchange``
runs it through the SDK's own request kernel (``runner.serve_one``, the one its
single-exchange entry runs) in the request's task, with the SDK's own parsing, checks
and serialisation, and answers as the SDK's transport would, byte for byte. Whatever else
comes (a notification, a batch, a body or header the transport refuses, another era's
request) is left to the SDK's transport, which answers it as ever.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import CONTENT_TYPE_JSON, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from fake_contextq.http._io import Receive, Scope, Send
from fake_contextq.service.exchange import declared_length

logger = logging.getLogger(__name__)


@dataclass
class _NoBackChannel:
    """The dispatch context of a request answered by one JSON body, which carries its
    answer and nothing else: a notification or progress the handler sends has no wire and
    is dropped, and a request of its own is refused, as the SDK's transport does in
    JSON-response mode."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    # the protocol's signatures (``mcp.shared.dispatcher.DispatchContext``)
    async def notify(
        self,
        method: str,  # noqa: ARG002
        params: Mapping[str, Any] | None,  # noqa: ARG002
        opts: CallOptions | None = None,  # noqa: ARG002
    ) -> None:
        return None

    async def send_raw_request(
        self,
        method: str,
        params: Mapping[str, Any] | None,  # noqa: ARG002
        opts: CallOptions | None = None,  # noqa: ARG002
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def progress(
        self,
        progress: float,  # noqa: ARG002
        total: float | None = None,  # noqa: ARG002
        message: str | None = None,  # noqa: ARG002
    ) -> None:
        return None


class SingleExchange:
    """The SDK's stateless JSON-response answer to a POST of one JSON-RPC request, made
    without its per-request transport (see the module). ``manager`` must be running: the
    server's lifespan state is the one it entered."""

    def __init__(self, server: Server[Any], manager: StreamableHTTPSessionManager) -> None:
        self.server = server
        self.security = TransportSecurityMiddleware(manager.security_settings)
        self.max_body = manager.max_request_body_size
        self.lifespan_state = manager._lifespan_state  # what every request of it is served with

    async def answer(self, scope: Scope, body: bytes | None, receive: Receive, send: Send) -> bool:
        """Answer the request whose whole ``body`` was read (None: it was not), and say
        so; False, having sent nothing, when it is one for the SDK's transport."""
        request = Request(scope, receive)
        message = await self._single_request(request, body)
        if message is None:
            return False
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
        reply = await self._reply(message, request, version)
        # the transport's ``_create_json_response``
        content = reply.model_dump_json(by_alias=True, exclude_unset=True)
        response = Response(content, status_code=200, headers={"Content-Type": CONTENT_TYPE_JSON})
        await response(scope, receive, send)
        return True

    async def _single_request(self, request: Request, body: bytes | None) -> JSONRPCRequest | None:
        """The JSON-RPC request the POST carries when the SDK's stateless transport would
        take it as it stands and answer it with its result, else None. Each check is the
        transport's own, in its order, or stricter (a refusal is the transport's to word)."""
        if request.method != "POST" or body is None or not self._within_limit(request, body):
            return None
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None  # the manager's other era
        if await self.security.validate_request(request, is_post=True) is not None:
            return None
        if not check_accept_headers(request)[0] or not _json_content(request):
            return None
        try:
            message = jsonrpc_message_adapter.validate_python(
                pydantic_core.from_json(body), by_name=False
            )
        except (ValueError, ValidationError):  # the transport's 400s
            return None
        return message if isinstance(message, JSONRPCRequest) else None

    def _within_limit(self, request: Request, body: bytes) -> bool:
        """The manager's body limit, on the declared length and on the body. A length
        that is no number (``declared_length``) is the SDK's to judge."""
        if "content-length" in request.headers:
            declared = declared_length(request.headers)
            if declared is None or declared > self.max_body:
                return False
        return len(body) <= self.max_body

    async def _reply(
        self, message: JSONRPCRequest, request: Request, version: str
    ) -> JSONRPCResponse | JSONRPCError:
        """The request's answer as the dispatcher writes it: the result, or the error a
        handler's exception maps onto (``code`` 0 and its text for an unmapped one)."""
        dctx = _NoBackChannel(
            transport=TransportContext(kind="streamable-http", can_send_request=False),
            request_id=message.id,
            message_metadata=ServerMessageMetadata(request_context=request, can_send_request=False),
        )
        connection = Connection.from_envelope(version, None, None)  # born ready, as stateless
        try:
            result = await serve_one(
                self.server,
                dctx,
                message.method,
                message.params,
                connection=connection,
                lifespan_state=self.lifespan_state,
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                logger.exception("handler for %r raised", message.method)
                error = ErrorData(code=0, message=str(exc))
            return JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
        return JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)


def _json_content(request: Request) -> bool:
    """The transport's ``Content-Type`` check: one of its types is ``application/json``."""
    content_type = request.headers.get("content-type", "")
    parts = [part.strip() for part in content_type.split(";")[0].split(",")]
    return CONTENT_TYPE_JSON in parts
