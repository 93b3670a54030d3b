"""A small asyncio HTTP/1.1 server for the recording proxy, in place of uvicorn.

A proxy on loopback costs what its two extra HTTP ends cost, and on a small machine most
of that is socket writes (each one wakes the peer) and pure-Python parsing. This server
parses a request head with ``bytes`` methods, calls the ASGI app (``RecordingProxy``,
which stays a plain ASGI app) and writes each answer's head together with its first body
piece, so a JSON answer is one write. An answer whose body is all in its first piece goes
with a ``content-length``; one that goes on in pieces (an event stream) is chunked to an
HTTP/1.1 client, each piece written as soon as the app sends it; a head sent on its own
(the app waits for the upstream's first event) goes out at the event loop's next turn.

It serves what the proxy needs: requests framed by ``content-length`` or chunked,
``Expect: 100-continue``, keep-alive and pipelined requests, HTTP/1.0 clients, back
pressure both ways, a 400 for a malformed request, a 500 if the app fails before
answering. ``run_foreground`` serves until SIGINT or SIGTERM and then finishes the
requests in flight (as uvicorn does); ``ServedProxy`` serves on a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import MutableMapping
from http import HTTPStatus
from typing import Any, Final, cast
from urllib.parse import unquote

from fake_anthropic.http.asgi import ASGIApp

log: Final = logging.getLogger("fake_anthropic.record")

MAX_HEAD: Final = 64 * 1024
GRACE_SECONDS: Final = 30.0
"""How long a stop waits for the requests in flight before cancelling them."""
_NO_BODY_STATUS: Final = frozenset({204, 304})
_REASONS: Final = {200: b"OK", 400: b"Bad Request", 500: b"Internal Server Error"}

Message = MutableMapping[str, Any]


class _BadRequest(Exception):
    pass


def _reason(status: int) -> bytes:
    try:
        return _REASONS.get(status) or HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """A chunked request body beginning at ``start``, if all of it is buffered, and where it
    ends; None if more is to come."""
    body = bytearray()
    at = start
    while True:
        end = buffer.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(bytes(buffer[at:end]).split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _BadRequest("a malformed chunk size") from None
        at = end + 2
        if size == 0:
            while True:  # trailer fields, then an empty line
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    return None
                line_empty = end == at
                at = end + 2
                if line_empty:
                    return bytes(body), at
        if len(buffer) < at + size + 2:
            return None
        body += buffer[at : at + size]
        at += size + 2


class _Request:
    __slots__ = (
        "body_start",
        "chunked",
        "continue_sent",
        "headers",
        "keep_alive",
        "length",
        "method",
        "target",
        "version",
    )

    def __init__(self, head: bytes, body_start: int) -> None:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or parts[2] not in (b"HTTP/1.1", b"HTTP/1.0"):
            raise _BadRequest(f"a malformed request line {lines[0][:80]!r}")
        self.method = parts[0].decode("ascii", errors="replace")
        self.target = parts[1]
        self.version = parts[2]
        self.body_start = body_start
        self.headers: list[tuple[bytes, bytes]] = []
        self.length = 0
        self.chunked = False
        self.continue_sent = False
        self.keep_alive = self.version == b"HTTP/1.1"
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name != name.strip():
                raise _BadRequest(f"a malformed header line {line[:80]!r}")
            name = name.lower()
            value = value.strip(b" \t")
            self.headers.append((name, value))
            if name == b"content-length":
                if not value.isdigit():
                    raise _BadRequest(f"content-length {value[:40]!r}")
                self.length = int(value)
            elif name == b"transfer-encoding":
                self.chunked = value.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
                if not self.chunked:
                    raise _BadRequest(f"transfer-encoding {value[:40]!r}")
            elif name == b"connection":
                tokens = value.lower()
                if b"close" in tokens:
                    self.keep_alive = False
                elif b"keep-alive" in tokens:
                    self.keep_alive = True

    def expects_continue(self) -> bool:
        return any(k == b"expect" and v.lower() == b"100-continue" for k, v in self.headers)

    def body(self, buffer: bytearray) -> tuple[bytes, int] | None:
        """The body and where it ends in ``buffer``, once all of it is there."""
        if self.chunked:
            return _dechunk(buffer, self.body_start)
        end = self.body_start + self.length
        if len(buffer) < end:
            return None
        return bytes(buffer[self.body_start : end]), end


class _State:
    """What a server holds across its connections."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self.app = app
        self.connections: set[_Connection] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.stopping = False
        name = sock.getsockname()
        self.server: tuple[str, int] = (str(name[0]), int(name[1]))


class _Connection(asyncio.Protocol):
    """One client connection: requests parsed from ``buffer``, answered one at a time."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.request: _Request | None = None
        self.busy = False
        self.closed = False
        self.client: tuple[str, int] | None = None
        self._disconnected: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self.paused = False

    # --- asyncio.Protocol ---------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.client = (str(peer[0]), int(peer[1]))
        self.state.connections.add(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: ARG002
        self.closed = True
        self.state.connections.discard(self)
        for waiter in (self._disconnected, self._drained):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    # --- requests -----------------------------------------------------------------

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def close_if_idle(self) -> None:
        if not self.busy:
            self.close()

    def _next(self) -> None:
        """Start on the next request if the buffer holds all of it."""
        if self.closed or self.state.stopping:
            return
        buffer = self.buffer
        try:
            if self.request is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD:
                        raise _BadRequest("a request head over 64 KiB")
                    return
                self.request = _Request(bytes(buffer[:end]), end + 4)
            request = self.request
            got = request.body(buffer)
        except _BadRequest as exc:
            self._refuse(str(exc))
            return
        if got is None:
            if not request.continue_sent and request.expects_continue():
                request.continue_sent = True
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return
        body, end = got
        del buffer[:end]
        self.request = None
        self.busy = True
        task = asyncio.get_running_loop().create_task(_Exchange(self, request, body).run())
        self.state.tasks.add(task)
        task.add_done_callback(self.state.tasks.discard)

    def done(self, keep_alive: bool) -> None:
        """The answer went out: read the next request, or close."""
        self.busy = False
        if not keep_alive or self.state.stopping:
            self.close()
        elif self.buffer:
            self._next()

    def _refuse(self, reason: str) -> None:
        body = f"Bad Request: {reason}".encode()
        self.write(
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        self.close()

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        if self.paused and not self.closed:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    async def disconnected(self) -> None:
        if not self.closed:
            if self._disconnected is None:
                self._disconnected = asyncio.get_running_loop().create_future()
            await self._disconnected


class _Exchange:
    """One request handed to the ASGI app, and the answer it sends written out."""

    def __init__(self, connection: _Connection, request: _Request, body: bytes) -> None:
        self.connection = connection
        self.request = request
        self.body: bytes | None = body
        self.started = False
        self.complete = False
        self.pending: list[bytes] | None = None  # the head's lines, until written
        self.framing = "chunked"  # or "length", "close" (HTTP/1.0), "none" (HEAD, 204...)
        self.keep_alive = request.keep_alive

    def scope(self) -> Message:
        raw_path, _, query = self.request.target.partition(b"?")
        connection = self.connection
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": self.request.version[5:].decode("ascii"),
            "server": connection.state.server,
            "client": connection.client,
            "scheme": "http",
            "method": self.request.method,
            "root_path": "",
            "path": unquote(raw_path.decode("latin-1")),
            "raw_path": raw_path,
            "query_string": query,
            "headers": self.request.headers,
        }

    async def run(self) -> None:
        try:
            await self.connection.state.app(self.scope(), self.receive, self.send)
        except Exception:
            log.exception("the recording proxy failed on %r", self.request.target[:200])
            if not self.started:
                self.complete, self.keep_alive = True, False
                self.connection.write(
                    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n"
                    b"connection: close\r\ncontent-length: 21\r\n\r\nInternal Server Error"
                )
        finally:
            if not self.complete:
                self.keep_alive = False  # the answer broke off: the client sees it end
                self._write_head()
            self.connection.done(self.keep_alive)

    async def receive(self) -> Message:
        body, self.body = self.body, None
        if body is not None:
            return {"type": "http.request", "body": body, "more_body": False}
        await self.connection.disconnected()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start" and not self.started:
            self.started = True
            self._start(int(message["status"]), message.get("headers") or [])
            asyncio.get_running_loop().call_soon(self._write_head)
        elif kind == "http.response.body" and self.started and not self.complete:
            self._body(message.get("body", b""), bool(message.get("more_body", False)))
            if self.connection.paused:
                await self.connection.drain()
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r} at this point of the answer")

    def _start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, _reason(status))]
        for name, value in headers:
            lower = name.lower()
            if lower == b"content-length":
                self.framing = "length"
            elif lower in (b"transfer-encoding", b"connection"):
                continue  # this server frames the body and says whether it closes
            lines += (name, b": ", value, b"\r\n")
        if self.request.method == "HEAD" or status < 200 or status in _NO_BODY_STATUS:
            self.framing = "none"
        elif self.framing == "chunked" and self.request.version != b"HTTP/1.1":
            self.framing, self.keep_alive = "close", False
        self.pending = lines

    def _head(self, lines: list[bytes]) -> bytes:
        if self.framing == "chunked":
            lines.append(b"transfer-encoding: chunked\r\n")
        if not self.keep_alive or self.connection.state.stopping:
            self.keep_alive = False
            lines.append(b"connection: close\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _write_head(self) -> None:
        """The head on its own: the app has not sent the first body piece this turn."""
        lines, self.pending = self.pending, None
        if lines is not None:
            self.connection.write(self._head(lines))

    def _body(self, body: bytes, more: bool) -> None:
        out: list[bytes] = []
        lines, self.pending = self.pending, None
        if lines is not None:
            if not more and self.framing == "chunked":  # all of it in one piece
                self.framing = "length"
                lines.append(b"content-length: %d\r\n" % len(body))
            out.append(self._head(lines))
        if self.framing == "chunked":
            if body:
                out += (b"%x\r\n" % len(body), body, b"\r\n")
            if not more:
                out.append(b"0\r\n\r\n")
        elif self.framing != "none" and body:
            out.append(body)
        if not more:
            self.complete = True
            if self.framing == "close":
                self.keep_alive = False
        if out:
            self.connection.write(out[0] if len(out) == 1 else b"".join(out))


async def serve(app: ASGIApp, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set, then stop accepting,
    close idle connections and finish the requests in flight (``GRACE_SECONDS`` at most)."""
    state = _State(app, sock)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Connection(state), sock=sock, backlog=128)
    try:
        await stop.wait()
    finally:
        state.stopping = True
        server.close()
        for connection in list(state.connections):
            connection.close_if_idle()
        if state.tasks:
            _, late = await asyncio.wait(set(state.tasks), timeout=GRACE_SECONDS)
            for task in late:
                task.cancel()
        for connection in list(state.connections):
            connection.close()


def run_foreground(app: ASGIApp, sock: socket.socket) -> None:
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
            await serve(app, sock, stop)
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

    def __init__(self, app: ASGIApp, sock: socket.socket, *, name: str = "proxy") -> None:
        self.app = app
        self.sock = sock
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
            await serve(self.app, self.sock, self._stop)

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
