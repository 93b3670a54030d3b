"""In-process httpx2 transports: a request goes straight to ``ContextQService``, no socket,
no ASGI, and for the sync client no event loop.

The sync transport answers in the calling thread. The async one answers in place too,
except on a database store, where the work goes to the store's threads (as when served)
so a request waiting on the database never holds up the caller's loop. The only async
code a sync request can meet is a fault's delay (``Faults.sleep`` is a coroutine a test
may replace) and an ASGI app given instead of the service (the control routes): both run
through anyio's blocking portal, the project's one bridge from sync to async code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import unquote, unquote_to_bytes

import anyio.from_thread
import httpx2

from fake_contextq.http._io import ASGIApp, Message, store_executor
from fake_contextq.service import ContextQService, Exchange, ReceivedBody, Request
from fake_contextq.service.exchange import Answer
from fake_contextq.service.faults import ConnectionDropped

__all__ = ["AsyncInProcessTransport", "InProcessTransport", "service_request"]


def service_request(request: httpx2.Request, body: bytes) -> Request:
    """The service's request of an httpx2 one (whose body has been read). Its path is
    what httpx2's ``url.path`` gives, ``unquote`` of the raw path, which is ASCII: the
    bytes its escapes name, read as UTF-8 with U+FFFD for what is not (``unquote`` of an
    ASCII string, without its split into ASCII runs)."""
    raw_path, _, query = request.url.raw_path.decode("latin-1").partition("?")
    path = unquote_to_bytes(raw_path).decode("utf-8", "replace") if "%" in raw_path else raw_path
    headers = Request.header_map(request.headers.raw)
    return Request(
        request.method, path, raw_path, query, headers, ReceivedBody.whole(body, headers)
    )


def _response(request: httpx2.Request, answer: Answer) -> httpx2.Response:
    content = b"" if request.method == "HEAD" else answer.body
    return httpx2.Response(
        answer.status, headers=answer.raw_headers(), content=content, request=request
    )


def _read_timeout(request: httpx2.Request) -> float | None:
    timeout: float | None = request.extensions.get("timeout", {}).get("read")
    return timeout


def _dropped(request: httpx2.Request | None) -> httpx2.RemoteProtocolError:
    return httpx2.RemoteProtocolError(
        "Server disconnected without sending a response.", request=request
    )


def _timed_out(request: httpx2.Request | None, timeout: float | None) -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout(
        f"The fake took longer than the read timeout ({timeout}s).", request=request
    )


async def _within(timeout: float | None, work: Callable[[], Awaitable[Any]]) -> Any:
    if timeout is None:
        return await work()
    async with asyncio.timeout(timeout):
        return await work()


class InProcessTransport(httpx2.BaseTransport):
    """A sync transport into the service, answering in the calling thread; or into an
    ASGI app (the fake's control routes), through a blocking portal."""

    def __init__(self, target: ContextQService | ASGIApp) -> None:
        self.target = target

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        target = self.target
        if not isinstance(target, ContextQService):
            with anyio.from_thread.start_blocking_portal() as portal:
                answer: Answer = portal.call(call_app, target, request, body)
            return _response(request, answer)
        exchange = target.begin(service_request(request, body))
        if exchange.delay:
            self._wait(target, exchange, request)
        try:
            return _response(request, exchange.finish(target.answer))
        except ConnectionDropped:
            raise _dropped(request) from None

    @staticmethod
    def _wait(service: ContextQService, exchange: Exchange, request: httpx2.Request) -> None:
        """Wait out the fault's delay within the read timeout, as a client would."""
        timeout, delay = _read_timeout(request), exchange.delay or 0.0
        try:
            with anyio.from_thread.start_blocking_portal() as portal:
                portal.call(_within, timeout, lambda: service.faults.sleep(delay))
        except TimeoutError:
            exchange.record(None, None, b"", asked=b"")
            raise _timed_out(request, timeout) from None


class AsyncInProcessTransport(httpx2.AsyncBaseTransport):
    """An async transport into the service (or an ASGI app)."""

    def __init__(self, target: ContextQService | ASGIApp) -> None:
        self.target = target
        if isinstance(target, ContextQService):
            store = target.backend.store
            self._executor = store_executor(store)
            self._reads_in_place = not store.reads_wait

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        service = self.target
        if not isinstance(service, ContextQService):
            return _response(request, await call_app(service, request, body))
        exchange, in_place, answer = self._begun(service, service_request(request, body), request)
        if answer is None:
            answer = await self._waited(service, exchange, in_place, request, None)
        return _response(request, answer)

    async def exchange(
        self,
        method: str,
        raw_path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float | None,
    ) -> tuple[int, bytes]:
        """One request as plain data straight into the service, its (status, body): what
        ``handle_async_request`` does for an httpx2 request that would carry the same
        (the MCP tools' REST calls: ``mcp.tools.Link``), without building one, so the journal,
        the faults and the errors raised (``httpx2.RemoteProtocolError``, ``ReadTimeout``) are
        the same. ``raw_path`` as sent (percent-encoded), header names lower case."""
        service = self.target
        if not isinstance(service, ContextQService):
            raise TypeError("exchange needs the service, not an ASGI app")
        request = Request(
            method, unquote(raw_path), raw_path, query, headers, ReceivedBody.whole(body, headers)
        )
        exchange, in_place, answer = self._begun(service, request, None)
        if answer is None:
            answer = await self._waited(service, exchange, in_place, None, timeout)
        return answer.status, b"" if method == "HEAD" else answer.body

    def _begun(
        self, service: ContextQService, asked: Request, request: httpx2.Request | None
    ) -> tuple[Exchange, Callable[[Request], Answer] | None, Answer | None]:
        """The exchange of ``asked``, how it is answered in place (None: on the store's
        threads), and its answer when nothing need be waited for: no coroutine for most
        requests. ``request`` is what the httpx2 errors name (None: a plain ``exchange``)."""
        exchange = service.begin(asked)
        executor = self._executor
        in_place = service.in_place(
            exchange.request, threaded=executor is not None, reads_in_place=self._reads_in_place
        )
        if in_place is None or exchange.delay:
            return exchange, in_place, None
        try:
            return exchange, in_place, exchange.finish(in_place)  # journaled, whatever it does
        except ConnectionDropped:
            raise _dropped(request) from None

    async def _waited(
        self,
        service: ContextQService,
        exchange: Exchange,
        in_place: Callable[[Request], Answer] | None,
        request: httpx2.Request | None,
        timeout: float | None,
    ) -> Answer:
        """The answer of an exchange that waits (a fault's delay, the store's threads),
        within the read timeout of ``request`` (None: a plain ``exchange``, ``timeout``)."""
        try:
            if request is not None:
                timeout = _read_timeout(request)

            async def answered() -> Answer:
                if exchange.delay:
                    await service.faults.sleep(exchange.delay)
                if in_place is not None:
                    return exchange.finish(in_place)
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(self._executor, exchange.finish, service.answer)

            try:
                answer: Answer = await _within(timeout, answered)
            except TimeoutError:
                raise _timed_out(request, timeout) from None
            return answer
        except ConnectionDropped:
            raise _dropped(request) from None
        finally:
            exchange.record(None, None, b"", asked=b"")  # cut short: journaled all the same


async def call_app(app: ASGIApp, request: httpx2.Request, body: bytes) -> Answer:
    """Send one request through an ASGI app and collect its whole answer."""
    url = request.url
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": url.scheme,
        "path": url.path,
        "raw_path": url.raw_path.split(b"?", 1)[0],
        "query_string": url.query,
        "root_path": "",
        "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        "client": ("127.0.0.1", 50000),
    }
    sent_body = False
    answer = Answer(0)
    parts: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if sent_body:
            return {"type": "http.disconnect"}
        sent_body = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = tuple(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))

    timeout = _read_timeout(request)
    try:
        await _within(timeout, lambda: app(scope, receive, send))
    except ConnectionDropped:
        raise _dropped(request) from None
    except TimeoutError:
        raise _timed_out(request, timeout) from None
    except Exception:
        if not answer.status:
            raise
    answer.body = b"".join(parts)
    return answer
