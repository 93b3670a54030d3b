"""Request and response plumbing shared by the API routes and the control routes."""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.store import Store
from fake_contextq.service.exchange import BodyReader, ReceivedBody, json_answer
from fake_contextq.service.faults import Faults
from fake_contextq.service.journal import Journal
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


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    answer = json_answer(status, body)
    return Response(answer.body, status_code=status, media_type="application/json", headers=headers)


def error_response(exc: ApiError) -> Response:
    """ContextQ's error body, with the headers the error carries (a 401's challenge)."""
    return json_response(exc.status, exc.body(), dict(exc.headers()))


async def receive_limited(headers: Mapping[str, str], chunks: AsyncIterator[bytes]) -> ReceivedBody:
    """The body as it streams in, read within the limit (``BodyReader``)."""
    reader = BodyReader(headers)
    if reader.refused is not None:
        return reader.refused
    async for chunk in chunks:
        refused = reader.feed(chunk)
        if refused is not None:
            return refused
    return reader.done()


async def read_body(request: Request) -> bytes:
    """The raw body, refusing oversized and non-JSON bodies the way Fastify does."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    return (await receive_limited(headers, request.stream())).checked()


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
