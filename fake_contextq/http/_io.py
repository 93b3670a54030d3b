"""Request and response plumbing shared by the API routes and the control routes."""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import Response

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain._validate import Issues
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.store import Store
from fake_contextq.http.faults import Faults
from fake_contextq.http.journal import Journal
from fake_contextq.stores.memory import MemoryStore

#: Where the control routes and the dashboard live: never journaled, never faulted.
CONTROL_PREFIX = "/_fake/"
DASHBOARD_PREFIX = CONTROL_PREFIX + "ui"

#: The path of ``/mcp``, set in each request's scope by the served app's MCP endpoint
#: (``fake_contextq.mcp``): only a served fake has it, and only it answers at ``/``.
SERVED_MCP_KEY = "fake_contextq.served_mcp"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def json_response(status: int, body: Any) -> Response:
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        payload = text.encode()
    except UnicodeEncodeError:  # a lone surrogate a store held from before: U+FFFD, as stored
        well = wire.well_formed_json(body)
        payload = json.dumps(
            well, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
    return Response(payload, status_code=status, media_type="application/json")


def query_params(request: Request) -> dict[str, str]:
    """The query's parameters (a repeated name: its last value, as Starlette reads them),
    each value percent-decoded as UTF-8; one that is not UTF-8 is a 400 naming it
    (``wire.URL_TEXT_ENCODING``). A name that is not UTF-8 names no parameter: ignored."""
    raw = request.scope.get("query_string", b"")
    text = raw.decode("latin-1") if isinstance(raw, bytes | bytearray) else str(raw)
    issues = Issues(_msgs.INVALID_QUERY)
    params: dict[str, str] = {}
    for name, value in parse_qsl(
        text, keep_blank_values=True, encoding=wire.URL_TEXT_ENCODING, errors="surrogateescape"
    ):
        if wire.well_formed(name) != name:
            continue
        if wire.well_formed(value) != value:  # undecodable bytes were kept as surrogates
            issues.add((name,), _msgs.QUERY_NOT_UTF8)
        params[name] = value
    issues.check()
    return params


def error_response(exc: ApiError) -> Response:
    return json_response(exc.status, exc.body())


@dataclass(frozen=True, slots=True)
class ReceivedBody:
    """A request body as received, checked later: a route authenticates first, so a bad
    key is a 401 even when the body is also too large or not JSON."""

    data: bytes
    media: str
    declared_too_large: int | None = None  # a declared length over the limit: not read
    streamed_too_large: int | None = None  # bytes read when a body without one went over

    def checked(self) -> bytes:
        """The raw body, refusing oversized and non-JSON bodies the way Fastify does."""
        if self.declared_too_large is not None:
            raise _too_large(self.declared_too_large)
        if self.streamed_too_large is not None:
            raise ApiError(
                _msgs.PAYLOAD_TOO_LARGE,
                _msgs.PAYLOAD_TOO_LARGE_STREAMED_MSG.format(
                    read=self.streamed_too_large, limit=wire.MAX_BODY_BYTES
                ),
            )
        body = self.data
        if len(body) > wire.MAX_BODY_BYTES:
            raise _too_large(len(body))
        if body and self.media != wire.JSON_MEDIA_TYPE:
            raise ApiError(
                _msgs.UNSUPPORTED_MEDIA_TYPE,
                _msgs.UNSUPPORTED_MEDIA_TYPE_MSG.format(content_type=self.media),
            )
        return body


async def receive_body(request: Request) -> ReceivedBody:
    """The body, not read when its declared length is already over the limit, and read no
    further than the limit when it streams in without one (chunked): what is past it is
    never held, so a huge upload costs no memory before its 413."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > wire.MAX_BODY_BYTES:
        return ReceivedBody(b"", media, int(declared))
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > wire.MAX_BODY_BYTES:
            parts.clear()
            return ReceivedBody(b"", media, streamed_too_large=size)
        parts.append(chunk)
    return ReceivedBody(b"".join(parts), media)


async def read_body(request: Request) -> bytes:
    """The raw body, refusing oversized and non-JSON bodies the way Fastify does."""
    return (await receive_body(request)).checked()


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
    #: where the model runs, off the event loop (None: on it, for the in-memory store)
    executor: Executor | None = None
    #: lone reads run on the event loop all the same: the store's reads never wait
    reads_in_place: bool = False
    #: set when the server begins to shut down: live streams (the dashboard's) end
    closing: threading.Event = field(default_factory=threading.Event)

    def reset(self) -> None:
        """Forget every tenant, key, row, journal entry and fault."""
        self.backend.reset()
        self.journal.clear()
        self.faults.clear()


SCOPE_KEY = "fake_contextq.binding"

#: Threads a store's database work runs on, per store (they borrow the store's connections).
DATABASE_THREADS = 8
_executors: weakref.WeakKeyDictionary[Store, ThreadPoolExecutor] = weakref.WeakKeyDictionary()
_executors_lock = threading.Lock()


def store_executor(store: Store) -> Executor | None:
    """The threads the model runs on for ``store``, so a request waiting on the database
    never holds up the event loop (other requests, ``/_fake/health``); None for the
    in-memory store, which never waits and is faster called in place.

    One pool per store, shared by every app on it; each request borrows one of the
    store's connections for its transaction. The pool goes when the store does."""
    if isinstance(store, MemoryStore):
        return None
    with _executors_lock:
        executor = _executors.get(store)
        if executor is None:
            executor = ThreadPoolExecutor(DATABASE_THREADS, thread_name_prefix="fake-contextq-db")
            _executors[store] = executor
        return executor


def binding(request: Request) -> Binding:
    bound: Binding = request.scope[SCOPE_KEY]
    return bound
