"""The served fake's ASGI adapter: ASGI in, ``ContextQService`` out, nothing else.

ContextQ's API goes to the service, with the body read within its limit and, on a
database store, the work on the store's threads so a request waiting on the database
leaves the event loop free. The fake's own routes (the control routes and the dashboard
under ``/_fake/``, a served fake's root page) go to their FastAPI app, neither journaled
nor subject to faults. ``observe`` journals another ASGI app's exchange (the MCP
endpoint's ``/mcp``) through the same service.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.http._io import (
    CONTROL_PREFIX,
    SCOPE_KEY,
    SERVED_MCP_KEY,
    ASGIApp,
    Binding,
    Message,
    Receive,
    Scope,
    Send,
    store_executor,
)
from fake_contextq.http.root import is_root_page
from fake_contextq.service import ContextQService, Exchange, Request
from fake_contextq.service.exchange import Answer, BodyReader, ReceivedBody
from fake_contextq.service.faults import ConnectionDropped, Faults
from fake_contextq.service.journal import Journal

__all__ = ["ServedApi", "create_app"]


def create_app(
    backend: ContextQBackend,
    journal: Journal,
    faults: Faults,
    *,
    control_token: str | None = None,
    service: ContextQService | None = None,
) -> ServedApi:
    """An ASGI app serving ``backend``; with a control token, the ``/_fake/`` routes too.

    The fake's own routes are built once per process and hold no state: each app made
    here binds its own backend, journal and faults into every request's scope."""
    from fake_contextq.http.own import own_routes

    store = backend.store
    bound = Binding(
        backend, journal, faults, control_token, store_executor(store), not store.reads_wait
    )
    if service is None:
        service = ContextQService(backend, journal, faults)
    return ServedApi(service, own_routes(control=control_token is not None), bound)


class ServedApi:
    """Pure ASGI: ContextQ's API to the service, the fake's own routes to their app."""

    def __init__(self, service: ContextQService, own: ASGIApp, bound: Binding) -> None:
        self.service = service
        self.own = own
        self.bound = bound
        self._delays: set[asyncio.Future[None]] = set()

    def shutting_down(self) -> None:
        """The server is shutting down: end the dashboard's live streams and cut short the
        injected delays, which would otherwise keep it waiting for them (a delay may be
        minutes long). Called on the server's event loop."""
        self.bound.closing.set()
        for delay in self._delays:
            delay.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[SCOPE_KEY] = self.bound
        path: str = scope.get("path", "")
        if (
            scope["type"] != "http"
            or path.startswith(CONTROL_PREFIX)
            or (is_root_page(scope) and SERVED_MCP_KEY in scope)
        ):
            await self.own(scope, receive, send)
            return
        request = await _request(scope, receive)
        exchange = self.service.begin(request)
        try:
            if exchange.delay:
                await self._delay(exchange.delay)
            answer = await self._finish(exchange)
        except ConnectionDropped:
            await _drop_connection(send)
            return
        finally:
            exchange.record(None, None, b"", asked=b"")  # cut short: journaled all the same
        await send({"type": "http.response.start", "status": answer.status,
                    "headers": answer.raw_headers()})  # fmt: skip
        await send({"type": "http.response.body", "body": answer.body})

    async def _finish(self, exchange: Exchange) -> Answer:
        """Answer on the store's threads, or in place where nothing can wait: the
        in-memory store, and a lone read on a store whose reads never wait."""
        executor = self.bound.executor
        service = self.service
        threaded, reads_in_place = executor is not None, self.bound.reads_in_place
        in_place = service.in_place(
            exchange.request, threaded=threaded, reads_in_place=reads_in_place
        )
        if in_place is not None:
            return exchange.finish(in_place)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, exchange.finish, service.answer)

    async def _delay(self, seconds: float) -> None:
        """Wait out a fault's delay, or until the server shuts down, then answer as usual."""
        sleeping = asyncio.ensure_future(self.service.faults.sleep(seconds))
        self._delays.add(sleeping)
        try:
            await sleeping
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the request itself was cancelled, not only its delay
        finally:
            self._delays.discard(sleeping)

    async def observe(self, scope: Scope, receive: Receive, send: Send, inner: ASGIApp) -> None:
        """Serve the request with ``inner``, journaled and subject to faults as the API is
        (``/mcp`` is served by the MCP endpoint through here)."""
        scope[SCOPE_KEY] = self.bound
        query = scope.get("query_string", b"")
        exchange = self.service.begin(
            Request(
                scope["method"],
                scope.get("path", ""),
                query=query.decode("latin-1") if isinstance(query, bytes) else str(query),
            )
        )
        seen = _Seen(scope)
        try:
            if exchange.delay:
                await self._delay(exchange.delay)
            fault = exchange.fault
            if fault is not None and fault.drop:
                exchange.finish(_never)
            elif fault is not None and fault.status is not None:
                answer = exchange.finish(_never)
                await send({"type": "http.response.start", "status": answer.status,
                            "headers": answer.raw_headers()})  # fmt: skip
                await send({"type": "http.response.body", "body": answer.body})
            else:
                await inner(scope, seen.receiving(receive), seen.sending(send, exchange))
        except ConnectionDropped:
            await _drop_connection(send)
        finally:
            seen.record(exchange)


def _never(_: Request) -> Answer:
    raise AssertionError("a faulted exchange is answered by its fault")


class _Seen:
    """What passed through an observed exchange: its status and the bodies, as much of
    them as the journal keeps."""

    def __init__(self, scope: Scope) -> None:
        from fake_contextq.service.journal import BODY_KEPT

        self.scope = scope
        self.kept = BODY_KEPT
        self.status: int | None = None
        self.asked = bytearray()
        self.answered = bytearray()
        self.cut = False

    def _keep(self, into: bytearray, chunk: bytes) -> None:
        room = self.kept - len(into)
        if len(chunk) > room:
            self.cut = True
            chunk = chunk[:room]
        into += chunk

    def receiving(self, receive: Receive) -> Receive:
        async def received() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self._keep(self.asked, message.get("body", b""))
            return message

        return received

    def sending(self, send: Send, exchange: Exchange) -> Send:
        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.status = int(message["status"])  # the SDK sends an HTTPStatus
            elif message["type"] == "http.response.body":
                self._keep(self.answered, message.get("body", b""))
                if not message.get("more_body"):
                    # journaled before the last byte leaves, so a client that has its
                    # answer always finds the request in the journal
                    self.record(exchange)
            await send(message)

        return sent

    def record(self, exchange: Exchange) -> None:
        state: dict[str, Any] = self.scope.get("state", {})
        exchange.record(
            self.status,
            state.get("tenant_id"),
            bytes(self.answered),
            asked=bytes(self.asked),
            cut=self.cut,
        )


async def _request(scope: Scope, receive: Receive) -> Request:
    """The service's request of an ASGI one, its body read within the limit."""
    headers = Request.header_map(scope.get("headers", ()))
    raw = scope.get("raw_path")
    query = scope.get("query_string", b"")
    return Request(
        scope["method"],
        scope.get("path", ""),
        raw.decode("latin-1").split("?", 1)[0] if isinstance(raw, bytes | bytearray) else None,
        query.decode("latin-1") if isinstance(query, bytes) else str(query),
        headers,
        await _body(headers, receive),
    )


async def _body(headers: dict[str, str], receive: Receive) -> ReceivedBody:
    """The body as it streams in, read within the limit (``BodyReader``); a loop, not
    ``receive_limited`` over an async generator, whose set-up cost a GET more than its
    one empty chunk does."""
    reader = BodyReader(headers)
    if reader.refused is not None:
        return reader.refused
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        refused = reader.feed(message.get("body", b""))
        if refused is not None:
            return refused
        if not message.get("more_body"):
            break
    return reader.done()


async def _drop_connection(send: Send) -> None:
    """Close the client's connection without an answer.

    Under uvicorn, ``send`` is bound to the request cycle that owns the socket; closing
    it is what a crashed server looks like to the client. In-process there is no socket,
    so the transport is told through ``ConnectionDropped``.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise ConnectionDropped()
    transport.close()
    await asyncio.sleep(0)  # let the server see the connection is gone before it answers
