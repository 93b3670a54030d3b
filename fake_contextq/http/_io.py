"""Request and response plumbing shared by the API routes and the control routes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError
from fake_contextq.http.faults import Faults
from fake_contextq.http.journal import Journal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def json_response(status: int, body: Any) -> Response:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        payload = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: escape it, as JSON.stringify does
        payload = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return Response(payload, status_code=status, media_type="application/json")


def error_response(exc: ApiError) -> Response:
    return json_response(exc.status, exc.body())


async def read_body(request: Request) -> bytes:
    """The raw body, refusing oversized and non-JSON bodies the way Fastify does."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > wire.MAX_BODY_BYTES:
        raise _too_large(int(declared))
    body = await request.body()
    if len(body) > wire.MAX_BODY_BYTES:
        raise _too_large(len(body))
    if body:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != wire.JSON_MEDIA_TYPE:
            raise ApiError(
                _msgs.UNSUPPORTED_MEDIA_TYPE,
                _msgs.UNSUPPORTED_MEDIA_TYPE_MSG.format(content_type=media),
            )
    return body


def _too_large(size: int) -> ApiError:
    return ApiError(
        _msgs.PAYLOAD_TOO_LARGE,
        _msgs.PAYLOAD_TOO_LARGE_MSG.format(size=size, limit=wire.MAX_BODY_BYTES),
    )


@dataclass(frozen=True, slots=True)
class Binding:
    """The state one request is served against; the routes find it in the ASGI scope."""

    backend: ContextQBackend
    journal: Journal
    faults: Faults
    control_token: str | None = None

    def reset(self) -> None:
        """Forget every tenant, key, row, journal entry and fault."""
        self.backend.reset()
        self.journal.clear()
        self.faults.clear()


SCOPE_KEY = "fake_contextq.binding"


def binding(request: Request) -> Binding:
    bound: Binding = request.scope[SCOPE_KEY]
    return bound
