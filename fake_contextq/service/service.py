"""``ContextQService``: the fake ContextQ as one dispatch point, sans I/O.

A request in, an answer out: routing, authentication, the scope check, the store
transaction, the domain call, rendering and the error envelopes happen here once, for
every transport (the in-process httpx2 transports, the served ASGI adapter, and through
REST the MCP server). The journal and faults are here too, split in two steps
(``begin`` takes the request's fault, ``Exchange.finish`` answers and journals it) so a
transport can wait out a fault's delay its own way (a thread sleeps, a loop awaits).

Order of checks, as ContextQ's routes check: route (404) -> key (401) -> the request's
own inputs (path parameters, query, body limits and media type: 400, 413, 415) -> scope
(403) -> the domain's validation and rules.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapter import wire
from adapter.errors import redact
from fake_contextq import _msgs
from fake_contextq.domain import auth
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import WWW_AUTHENTICATE, ApiError
from fake_contextq.service import _routing
from fake_contextq.service.exchange import (
    JSON_HEADERS,
    Answer,
    Request,
    error_answer,
    json_answer,
    query_params,
)
from fake_contextq.service.faults import ConnectionDropped, Fault, Faults
from fake_contextq.service.journal import BODY_KEPT, Journal, JournalEntry
from fake_contextq.service.openapi import document
from fake_contextq.service.operations import OPERATIONS, Inputs, Operation

__all__ = ["OPENAPI_PATH", "ContextQService", "Exchange"]

#: Where the OpenAPI document of the table is served (as FastAPI served it before).
OPENAPI_PATH = "/openapi.json"


class ContextQService:
    """The fake's REST API over one backend, journal and set of faults."""

    def __init__(
        self,
        backend: ContextQBackend,
        journal: Journal | None = None,
        faults: Faults | None = None,
        operations: Sequence[Operation] = OPERATIONS,
    ) -> None:
        self.backend = backend
        self.journal = Journal() if journal is None else journal
        self.faults = Faults() if faults is None else faults
        self.operations = tuple(operations)
        self.router = _routing.Router(self.operations)
        self._openapi: bytes | None = None

    # ----- the whole cycle -----

    def handle(self, request: Request, wait: Callable[[float], None] | None = None) -> Answer:
        """Answer ``request`` and journal it; a fault's delay is waited out by ``wait``
        (none given: not waited). A dropped connection raises ``ConnectionDropped``."""
        exchange = self.begin(request)
        if exchange.delay and wait is not None:
            wait(exchange.delay)
        return exchange.finish(self.answer)

    def begin(self, request: Request) -> Exchange:
        """Start the exchange: its journal number, clock and fault (counted as used)."""
        return Exchange(
            self,
            request,
            self.faults.take(request.method, request.path),
            self.journal.next_number(),
        )

    # ----- the answer, without journal or faults -----

    def answer(self, request: Request) -> Answer:
        """The answer to ``request``; every error as ContextQ's error body, never raised."""
        return self._answer(request, self.router.match(request.method, request.path))

    def lone_read(self, request: Request) -> Callable[[Request], Answer] | None:
        """``answer`` for a request whose operation takes no store lock (a transport may
        then run it in place on a store whose reads never wait), routed once; else None."""
        found = self.router.match(request.method, request.path)
        if found is None or not found.op.lone_read:
            return None
        return lambda routed: self._answer(routed, found)

    def in_place(
        self, request: Request, *, threaded: bool, reads_in_place: bool
    ) -> Callable[[Request], Answer] | None:
        """How a transport answers ``request`` on its own thread, or None to hand it to the
        store's threads: ``answer`` where the store has none (``threaded`` False: the
        in-memory store), a lone read where the store's reads never wait."""
        if not threaded:
            return self.answer
        return self.lone_read(request) if reads_in_place else None

    def _answer(self, request: Request, found: _routing.Match | None) -> Answer:
        try:
            if found is None:
                if request.path == OPENAPI_PATH and request.method in ("GET", "HEAD"):
                    return self._document()
                if wire.is_oauth_discovery(request.path):
                    raise _routing.oauth_not_offered(request.method, request.path)
                raise _routing.route_not_found(request.method, request.path)
            if not _routing.one_segment(found, request.raw_path):
                raise _routing.route_not_found(request.method, request.path)
            return self._run(request, found)
        except ApiError as exc:
            return error_answer(exc)
        except Exception as exc:  # a fault of the fake itself: a 500 naming it, as before
            return json_answer(
                500,
                wire.error_body(
                    _msgs.INTERNAL_ERROR,
                    _msgs.INTERNAL_ERROR_MSG.format(detail=type(exc).__name__),
                ),
            )

    def _run(self, request: Request, found: _routing.Match) -> Answer:
        op, backend = found.op, self.backend
        authorization = request.headers.get("authorization")
        tenant: list[int] = []

        def call() -> Any:
            principal = backend.authenticate(authorization)
            tenant.append(principal.tenant_id)
            inputs = Inputs(
                _routing.path_values(found, request.raw_path),
                query_params(request.query) if op.query else {},
                request.body.checked() if op.reads_body else b"",
                request.method == "HEAD",
            )
            auth.require_scope(principal.scopes, op.scope)
            return op.call(backend, principal, inputs)

        try:
            if op.lone_read:
                result = call()
            else:
                try:
                    with backend.request_transaction():
                        result = call()
                except ApiError as exc:
                    if exc.code != _msgs.DATABASE_BUSY:
                        raise
                    raise backend.busy_answer(authorization, exc) from exc
            shown = _rendered(op, result)
        except ApiError as exc:
            refused = error_answer(exc)
            refused.tenant_id = tenant[0] if tenant else None
            refused.asked = request.body.data if op.reads_body else b""
            return refused
        shown.tenant_id = tenant[0] if tenant else None
        shown.asked = request.body.data if op.reads_body else b""
        return shown

    def _document(self) -> Answer:
        if self._openapi is None:
            self._openapi = json.dumps(
                document(self.operations), ensure_ascii=False, separators=(",", ":")
            ).encode()
        body = self._openapi
        return Answer(200, (("content-length", str(len(body))), *JSON_HEADERS), body)


def _rendered(op: Operation, result: Any) -> Answer:
    status = op.route.status if op.status_of is None else op.status_of(result)
    if op.render is None:
        return Answer(status)
    return json_answer(status, op.render(result))


@dataclass
class Exchange:
    """One request on its way through the service: the fault it met and its journal
    entry's number and clock. ``finish`` answers and journals it."""

    service: ContextQService
    request: Request
    fault: Fault | None
    number: int
    started: float = field(default_factory=time.perf_counter)
    at: float = field(default_factory=time.time)
    _recorded: bool = False

    @property
    def delay(self) -> float | None:
        return None if self.fault is None else self.fault.delay

    def finish(self, answer: Callable[[Request], Answer]) -> Answer:
        """The fault's answer (or the dropped connection), else ``answer(request)``."""
        fault = self.fault
        if fault is not None and fault.drop:
            self.record(None, None, b"", asked=b"")
            raise ConnectionDropped()
        if fault is not None and fault.status is not None:
            method, path = self.request.method, self.request.path
            body = wire.error_body(
                _msgs.INJECTED_FAULT, _msgs.INJECTED_FAULT_MSG.format(method=method, path=path)
            )
            headers = JSON_HEADERS
            if fault.status == 401:  # a 401 carries its challenge (RFC 6750 §3), injected too
                headers += ((WWW_AUTHENTICATE, wire.bearer_challenge(wire.AUTH_REALM)),)
            injected = Answer(fault.status, headers, json.dumps(body).encode())
            self.record(injected.status, None, injected.body, asked=b"")
            return injected
        try:
            answered = answer(self.request)
        except BaseException:
            self.record(None, None, b"")
            raise
        cut = bool(answered.asked) and self.request.body.streamed_too_large is not None
        self.record(
            answered.status, answered.tenant_id, answered.body, asked=answered.asked, cut=cut
        )
        return answered

    def record(
        self,
        status: int | None,
        tenant_id: int | None,
        answered: bytes,
        *,
        asked: bytes = b"",
        cut: bool = False,
    ) -> None:
        """Journal the exchange (once): what was asked (the body as far as the request
        read it), what was answered, how long it took. ``cut``: a body was longer than the
        journal keeps."""
        if self._recorded:
            return
        self._recorded = True
        request = self.request
        query = request.query
        # by position, in JournalEntry's order (a third quicker than by name, per request)
        self.service.journal.record(
            JournalEntry(
                request.method,
                request.path,
                # a credential-named value (?token=, &api_key=) shown as ***, as anywhere
                redact("?" + query)[1:] if query else query,
                status,
                tenant_id,
                time.perf_counter() - self.started,
                self.fault is not None,
                self.number,
                self.at,
                asked[:BODY_KEPT],
                answered[:BODY_KEPT],
                cut or len(asked) > BODY_KEPT or len(answered) > BODY_KEPT,
            )
        )
