"""The recording proxy's HTTP/1.1 server: h11 parses every request and frames every
answer; this module moves bytes between a socket and h11 and calls the ASGI app.

What it adds to h11 is policy. Only origin-form targets (``/path?query``) are taken; a
request with both ``content-length`` and ``transfer-encoding`` is refused; a head is at
most ``Limits.max_head`` bytes however it arrives (h11 bounds an incomplete head, this
server a complete one) and a body at most ``Limits.max_body`` (a ``content-length`` over
it at once, a chunked body as soon as it grows past it: 413); a head must arrive whole
within ``head_timeout`` seconds, each next piece of a request within ``read_timeout``, and
a kept-alive connection with no request is closed after ``idle_timeout`` (408 if a request
had begun). The app gets the whole body in one ``http.request`` message. An answer's head
goes out with its first body piece (a JSON answer is one write, framed by its
``content-length``); an event stream is chunked piece by piece as the app sends it. A
``send`` after the client went away raises ``ClientGone``, and so does the last one when
the client is gone before the answer left this process, so the app knows the client never
got the whole answer. ``run_foreground`` serves until SIGINT or SIGTERM and then finishes
the requests in flight (as uvicorn does); ``ServedProxy`` serves on a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final, cast

import h11

from fake_anthropic.http import ASGIApp
from fake_anthropic.record._wait import wait_for_wake

__all__ = [
    "GRACE_SECONDS",
    "MAX_BODY",
    "ClientGone",
    "Limits",
    "ServedProxy",
    "run_foreground",
    "serve",
]

log: Final = logging.getLogger("fake_anthropic.record")

GRACE_SECONDS: Final = 30.0
"""How long a stop waits for the requests in flight before cancelling them."""

LINGER_SECONDS: Final = 2.0
"""How long a refused connection keeps reading (and dropping) what its client still sends."""

Message = MutableMapping[str, Any]

MAX_BODY: Final = 32 * 1024 * 1024
"""The largest request body the proxy takes (``Limits.max_body``), and the largest body
``import-cassette`` inflates from a compressed answer."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What a client may send, and how slowly."""

    max_head: int = 64 * 1024
    max_body: int = MAX_BODY
    head_timeout: float = 30.0
    read_timeout: float = 30.0
    idle_timeout: float = 75.0
    """Longer than the 5 s for which httpx-based clients (the Anthropic SDK) keep an idle
    connection, so the client, not this server, ends an idle one."""


class ClientGone(ConnectionError):
    """The client closed the connection before it had the whole answer."""


class _Refused(Exception):
    """A request this server answers itself, with ``status``, and closes."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


def _phrase(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def _head_size(request: h11.Request) -> int:
    """The request head's size as sent, less any padding whitespace."""
    size = len(request.method) + len(request.target) + 12
    for name, value in request.headers:
        size += len(name) + len(value) + 4
    return size


class _Server:
    """What a server holds across its connections."""

    def __init__(self, app: ASGIApp, sock: socket.socket, limits: Limits) -> None:
        self.app = app
        self.limits = limits
        self.connections: set[_Connection] = set()
        self.stopping = False
        name = sock.getsockname()
        self.address: tuple[str, int] = (str(name[0]), int(name[1]))


class _Connection(asyncio.Protocol):
    """One client connection, served by its own task: requests one at a time."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.limits = server.limits
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=server.limits.max_head)
        self.transport: asyncio.Transport | None = None
        self.client: tuple[str, int] | None = None
        self.closed = False
        self.busy = False  # the app is answering a request
        self.task: asyncio.Task[None] | None = None
        self._data: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._gone: asyncio.Future[None] | None = None
        self._paused_writing = False
        self._paused_reading = False
        self._ahead = 0  # bytes received while the app answers (pipelined requests)
        self._head_started: float | None = None  # loop time of a coming head's first byte
        self._discarding = False  # refused: what still arrives is read and dropped

    # --- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=0)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.client = (str(peer[0]), int(peer[1]))
        self.server.connections.add(self)
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            self._wake(self._data)
            return
        self.h11.receive_data(data)
        if self._head_started is None and not self.busy and self.h11.their_state is h11.IDLE:
            self._head_started = asyncio.get_running_loop().time()
        if self.busy:
            self._ahead += len(data)
            if self._ahead > self.limits.max_head and self.transport is not None:
                self._paused_reading = True
                self.transport.pause_reading()
        self._wake(self._data)

    def eof_received(self) -> bool:
        # A client that closes its side is gone (as uvicorn takes it): an answer being
        # written to it is not what it got.
        self.h11.receive_data(b"")
        self.closed = True
        self._wake(self._data)
        self._wake(self._gone)
        return False

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002
        self.closed = True
        self.server.connections.discard(self)
        self._wake(self._data)
        self._wake(self._drained)
        self._wake(self._gone)

    def pause_writing(self) -> None:
        self._paused_writing = True

    def resume_writing(self) -> None:
        self._paused_writing = False
        self._wake(self._drained)

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # --- the connection's task ----------------------------------------------------

    async def _serve(self) -> None:
        try:
            while not self.server.stopping:
                request = await self._request()
                if request is None:
                    return
                if not await self._answer(*request):
                    return
                self.h11.start_next_cycle()
                if self._ahead:  # a pipelined request has begun
                    self._head_started = asyncio.get_running_loop().time()
                self._ahead = 0
                if self._paused_reading and self.transport is not None:
                    self._paused_reading = False
                    self.transport.resume_reading()
        except _Refused as refused:
            self._refuse(refused.status, str(refused))
            await self._linger()
        except h11.RemoteProtocolError as exc:
            self._refuse(exc.error_status_hint, f"a malformed request: {exc}")
            await self._linger()
        finally:
            self.close()

    async def _linger(self) -> None:
        """Close a refused connection the way HTTP servers do: say no more (FIN), then read
        and drop what the client still sends until it closes or LINGER_SECONDS pass. A
        socket closed with unread data is reset by the kernel, and the reset can destroy the
        refusal before the client has read it."""
        if self.closed or self.transport is None:
            return
        self._discarding = True
        if self._paused_reading:
            self._paused_reading = False
            self.transport.resume_reading()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LINGER_SECONDS
        while not self.closed and not self.server.stopping:
            if not await self._wait(deadline - loop.time()):
                return

    async def _wait(self, seconds: float) -> bool:
        """Wait until data arrives or the connection closes; False after ``seconds``."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._data = waiter
        try:
            return await wait_for_wake(waiter, seconds)
        finally:
            self._data = None

    async def _request(self) -> tuple[h11.Request, bytes] | None:
        """The next request and its whole body; None when the client is done."""
        limits = self.limits
        loop = asyncio.get_running_loop()
        while True:
            event = self.h11.next_event()
            if isinstance(event, h11.Request):
                self._head_started = None
                return await self._whole(event)
            if isinstance(event, h11.ConnectionClosed) or self.closed:
                return None
            if event is not h11.NEED_DATA:
                raise _Refused(400, f"unexpected {type(event).__name__} before a request")
            started = self._head_started
            if started is None:
                wait = limits.idle_timeout
            else:
                wait = min(limits.read_timeout, started + limits.head_timeout - loop.time())
            if not await self._wait(wait):
                if started is not None:
                    raise _Refused(408, "the request head did not arrive in time")
                return None  # an idle kept-alive connection

    async def _whole(self, request: h11.Request) -> tuple[h11.Request, bytes]:
        """The body of ``request``, once the head passed this server's rules."""
        limits = self.limits
        if not request.target.startswith(b"/"):
            raise _Refused(
                400,
                f"the target {request.target[:80].decode('latin-1')!r}: only origin-form "
                "targets (/path?query) are taken",
            )
        if _head_size(request) > limits.max_head:
            raise _Refused(431, f"a request head over {limits.max_head} bytes")
        length: int | None = None
        chunked = False
        for name, value in request.headers:
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = True
        if chunked and length is not None:
            raise _Refused(400, "both content-length and transfer-encoding")
        if length is not None and length > limits.max_body:
            raise _Refused(413, f"a request body over {limits.max_body} bytes")
        body = bytearray()
        while True:
            event = self.h11.next_event()
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > limits.max_body:
                    raise _Refused(413, f"a request body over {limits.max_body} bytes")
            elif isinstance(event, h11.EndOfMessage):
                return request, bytes(body)
            elif event is h11.NEED_DATA and not self.closed:
                if self.h11.they_are_waiting_for_100_continue:
                    self._write(
                        self.h11.send(h11.InformationalResponse(status_code=100, headers=[]))
                    )
                if not await self._wait(limits.read_timeout):
                    raise _Refused(408, "the request body did not arrive in time")
            else:
                raise _Refused(400, "the request ended before its body")

    async def _answer(self, request: h11.Request, body: bytes) -> bool:
        """Run the app on one request; whether the connection can take another."""
        exchange = _Exchange(self, request, body)
        self.busy = True
        try:
            await self.server.app(exchange.scope(), exchange.receive, exchange.send)
        except ClientGone:
            return False
        except Exception:
            log.exception("the recording proxy failed on %r", request.target[:200])
            if not exchange.started:
                self._refuse(500, "the recording proxy failed; its log says why")
            return False
        finally:
            self.busy = False
        if not exchange.complete:
            return False  # the answer broke off: the client sees it end
        return (
            not self.closed and self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE
        )

    # --- writing ------------------------------------------------------------------

    def _refuse(self, status: int, reason: str) -> None:
        """Answer ``status`` with ``reason`` as plain text, if nothing was answered yet."""
        if self.closed or self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        text = f"{_phrase(status).decode()}: {reason}".encode()
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(text)).encode("ascii")),
            (b"connection", b"close"),
        ]
        with contextlib.suppress(h11.LocalProtocolError):
            self._write(
                self.h11.send(
                    h11.Response(status_code=status, headers=headers, reason=_phrase(status))
                )
                + (self.h11.send(h11.Data(data=text)) or b"")
                + (self.h11.send(h11.EndOfMessage()) or b"")
            )

    def _write(self, data: bytes | None) -> None:
        if data and not self.closed and self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the transport holds nothing back (its write buffer limit is 0, so a
        write the kernel did not take whole pauses writing); ``ClientGone`` if the
        connection is lost meanwhile or was before."""
        while self._paused_writing and not self.closed:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        if self.closed:
            raise ClientGone("the client closed the connection")

    async def disconnected(self) -> None:
        if not self.closed:
            if self._gone is None:
                self._gone = asyncio.get_running_loop().create_future()
            await self._gone

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def close_if_idle(self) -> None:
        if not self.busy:
            self.close()


class _Exchange:
    """One request handed to the ASGI app, and the answer it sends given to h11."""

    def __init__(self, connection: _Connection, request: h11.Request, body: bytes) -> None:
        self.connection = connection
        self.request = request
        self.body: bytes | None = body
        self.started = False
        self.complete = False
        self._head: h11.Response | None = None  # until written with the first body piece

    def scope(self) -> Message:
        raw_path, _, query = self.request.target.partition(b"?")
        connection = self.connection
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": self.request.http_version.decode("ascii"),
            "server": connection.server.address,
            "client": connection.client,
            "scheme": "http",
            "method": self.request.method.decode("ascii"),
            "root_path": "",
            "path": raw_path.decode("latin-1"),
            "raw_path": raw_path,
            "query_string": query,
            "headers": list(self.request.headers),
        }

    async def receive(self) -> Message:
        body, self.body = self.body, None
        if body is not None:
            return {"type": "http.request", "body": body, "more_body": False}
        await self.connection.disconnected()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        connection = self.connection
        if connection.closed:
            raise ClientGone("the client closed the connection")
        kind = message["type"]
        if kind == "http.response.start" and not self.started:
            self.started = True
            status = int(message["status"])
            headers = [
                (k, v)
                for k, v in message.get("headers") or []
                if k.lower() not in (b"transfer-encoding", b"connection")
            ]
            if connection.server.stopping:
                headers.append((b"connection", b"close"))
            self._head = h11.Response(status_code=status, headers=headers, reason=_phrase(status))
            asyncio.get_running_loop().call_soon(self._write_head)
        elif kind == "http.response.body" and self.started and not self.complete:
            more = bool(message.get("more_body", False))
            self._body(bytes(message.get("body", b"")), more)
            await connection.drain()
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r} at this point of the answer")

    def _write_head(self) -> None:
        """The head on its own: the app did not send a body piece in the same turn."""
        head, self._head = self._head, None
        if head is not None and not self.connection.closed:
            self.connection._write(self.connection.h11.send(head))

    def _body(self, body: bytes, more: bool) -> None:
        h = self.connection.h11
        out = b""
        head, self._head = self._head, None
        if head is not None:
            if not more and not any(k.lower() == b"content-length" for k, _ in head.headers):
                head = h11.Response(
                    status_code=head.status_code,
                    headers=[*head.headers.raw_items(), (b"content-length", b"%d" % len(body))],
                    reason=head.reason,
                )
            out += h.send(head) or b""
        if body and h.our_state is h11.SEND_BODY:
            out += h.send(h11.Data(data=body)) or b""
        if not more:
            out += h.send(h11.EndOfMessage()) or b""
            self.complete = True
        self.connection._write(out)


async def serve(
    app: ASGIApp, sock: socket.socket, stop: asyncio.Event, limits: Limits | None = None
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set, then stop accepting,
    close idle connections and finish the requests in flight (``GRACE_SECONDS`` at most)."""
    server = _Server(app, sock, limits or Limits())
    loop = asyncio.get_running_loop()
    listening = await loop.create_server(lambda: _Connection(server), sock=sock, backlog=128)
    try:
        await stop.wait()
    finally:
        server.stopping = True
        listening.close()
        for connection in list(server.connections):
            connection.close_if_idle()
        tasks = {c.task for c in server.connections if c.task is not None and not c.task.done()}
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=GRACE_SECONDS)
            for task in late:
                task.cancel()
        for connection in list(server.connections):
            connection.close()


def run_foreground(app: ASGIApp, sock: socket.socket, limits: Limits | None = None) -> None:
    """Serve ``app`` on ``sock`` until Ctrl-C or SIGTERM; the signal handlers there before
    are there again after."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        installed: list[tuple[signal.Signals, Any]] = []
        for signum in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(signum)
            try:
                loop.add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):
                continue  # no signal handlers here: Ctrl-C raises KeyboardInterrupt
            installed.append((signum, before))
        try:
            await serve(app, sock, stop, limits)
        finally:
            for signum, before in installed:
                loop.remove_signal_handler(signum)
                if before is not None:
                    signal.signal(signum, before)

    try:
        asyncio.run(main())
    finally:
        sock.close()


class ServedProxy:
    """``app`` served on a background thread on the listening ``sock``."""

    def __init__(
        self,
        app: ASGIApp,
        sock: socket.socket,
        *,
        name: str = "proxy",
        limits: Limits | None = None,
    ) -> None:
        self.app = app
        self.sock = sock
        self.limits = limits
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._loop.call_soon(self._ready.set)
            await serve(self.app, self.sock, self._stop, self.limits)

        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by start()
            self._failed = exc
            self._ready.set()

    def start(self, timeout: float = 10.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"{self._thread.name} did not start within {timeout}s")
        if self._failed is not None:
            raise RuntimeError(f"{self._thread.name} failed to start") from self._failed

    def stop(self, timeout: float = 10.0) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and self._thread.is_alive():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(stop.set)
        if self._thread.ident is not None:
            self._thread.join(timeout)
        self.sock.close()
