"""A small asyncio HTTP/1.1 client for a plain-``http`` upstream: what the recording proxy
forwards to when the upstream is a served scripted model, a local gateway or anything else
on loopback, where a pure-Python client's parsing would be most of the proxy's cost.

It does one thing: send a request whose body is already in memory, in one write, on a
kept-alive connection from a small pool, and hand the answer back as it arrives (the
status, the raw header lines, then the body piece by piece; a chunked body is de-chunked,
so each piece is what the upstream sent, an SSE event as soon as it is on the wire).
Bodies framed by ``Content-Length``, by ``Transfer-Encoding: chunked`` or by the
connection closing are read; a connection goes back to the pool only when its answer was
read to the end and the upstream did not ask to close it. A request that finds a pooled
connection closed by the upstream before any byte of an answer is sent once more on a new
connection (an idle connection the upstream dropped). ``https`` and upstreams reached
through an HTTP proxy from the environment are not handled here (``record.proxy`` keeps httpx2
for those).
"""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import dataclass
from typing import Final, Literal, cast
from urllib.parse import urlsplit

CONNECT_TIMEOUT: Final = 10.0
READ_TIMEOUT: Final = 600.0
"""Seconds: to open a connection, and to wait for each next piece of an answer (as
httpx2's ``Timeout(600, connect=10)`` the proxy used before)."""
MAX_IDLE: Final = 20
MAX_HEAD: Final = 64 * 1024
MAX_CHUNK_LINE: Final = 4096
PAUSE_ABOVE: Final = 1 << 20
"""Bytes buffered from the upstream and not yet taken by the proxy above which the
connection stops reading (a slow client slows the upstream, instead of filling memory)."""

Headers = list[tuple[bytes, bytes]]
Framing = Literal["none", "length", "chunked", "close"]


class UpstreamError(Exception):
    """The upstream could not be reached, or closed or broke the connection, or answered
    something that is not HTTP/1.x."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a plain-``http`` upstream is: the address to connect to, the ``host`` header to
    send, and the path prefix of the upstream URL (``http://gw/anthropic`` → ``/anthropic``)."""

    host: str
    port: int
    authority: bytes
    prefix: bytes


def plain_origin(url: str) -> Origin | None:
    """The ``Origin`` of an ``http://`` URL this client can reach directly; None for https,
    for a URL with credentials in it, or when the environment routes the host through an
    HTTP proxy (``HTTP_PROXY``/``ALL_PROXY`` without a ``NO_PROXY`` match), which httpx2
    honours and this client does not."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or not parts.hostname or "@" in parts.netloc:
        return None
    if not (parts.netloc.isascii() and parts.path.isascii()):
        return None
    try:
        port = parts.port or 80
    except ValueError:
        return None
    proxies = urllib.request.getproxies_environment()
    if ("http" in proxies or "all" in proxies) and not urllib.request.proxy_bypass(parts.hostname):
        return None
    return Origin(
        host=parts.hostname,
        port=port,
        authority=parts.netloc.encode("ascii"),
        prefix=parts.path.rstrip("/").encode("ascii"),
    )


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(UpstreamError(f"no answer from the upstream for {READ_TIMEOUT:g} s"))


class _Connection(asyncio.Protocol):
    """One TCP connection to the upstream: what arrived (``buffer``), and a way to wait for
    more (``more``)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.received = 0  # bytes received since the request now on this connection was sent
        self.closed = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.received += len(data)
        if len(self.buffer) > PAUSE_ABOVE and self.transport is not None and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def taken(self) -> None:
        """The proxy took data from ``buffer``: read again if reading was paused."""
        if self._paused and len(self.buffer) < PAUSE_ABOVE // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    async def more(self) -> None:
        """Wait until more data arrives or the connection closes (at once if it is closed);
        ``UpstreamError`` if nothing happens for ``READ_TIMEOUT`` seconds."""
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(READ_TIMEOUT, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def closed_reason(self) -> str:
        return f"the upstream closed the connection{f': {self.error}' if self.error else ''}"

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _framing(method: str, status: int, headers: Headers) -> tuple[Framing, int]:
    """How the answer's body is delimited (RFC 9112 section 6.3), and its length if known."""
    if method == "HEAD" or status < 200 or status in (204, 304):
        return "none", 0
    coding: bytes | None = None
    length: int | None = None
    for name, value in headers:
        lower = name.lower()
        if lower == b"transfer-encoding":
            coding = value.lower()
        elif lower == b"content-length":
            try:
                got = int(value)
            except ValueError:
                raise UpstreamError(f"the upstream sent content-length {value!r}") from None
            if got < 0 or (length is not None and got != length):
                raise UpstreamError(f"the upstream sent content-length {value!r}")
            length = got
    if coding is not None:
        return ("chunked" if coding.rsplit(b",", 1)[-1].strip() == b"chunked" else "close"), 0
    if length is not None:
        return ("length", length) if length else ("none", 0)
    return "close", 0


class UpstreamResponse:
    """An answer whose head has arrived: ``status``, ``headers`` (as sent, hop-by-hop ones
    included), then ``read()`` for each next piece of the body until ``done``."""

    def __init__(
        self,
        pool: UpstreamPool,
        connection: _Connection,
        status: int,
        headers: Headers,
        framing: Framing,
        length: int,
        reusable: bool,
    ) -> None:
        self.status = status
        self.headers = headers
        self.framing: Framing = framing
        self.done = framing == "none"
        self._pool = pool
        self._connection: _Connection | None = connection
        self._left = length  # of the body (length) or of the current chunk (chunked)
        self._chunk_state: Literal["size", "data", "crlf", "trailer"] = "size"
        self._reusable = reusable
        if self.done:
            self._finish()

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (``name`` lower-case)."""
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    async def read(self) -> bytes:
        """The body's next piece, waiting for it if none is buffered; b"" once ``done``.
        ``UpstreamError`` if the connection broke off before the body's end."""
        while not self.done:
            connection = self._connection
            assert connection is not None
            piece = self._take(connection)
            ended = self._ended()  # (a method: _take may have set done)
            if ended:
                self._finish()
            if piece or ended:
                connection.taken()
                return piece
            if connection.closed:
                if self.framing == "close" and connection.error is None:
                    self.done = True  # the close delimits the body
                    self._finish()
                    return b""
                self.aclose()
                raise UpstreamError(f"the answer broke off: {connection.closed_reason()}")
            try:
                await connection.more()
            except UpstreamError:
                self.aclose()
                raise
        return b""

    def _ended(self) -> bool:
        return self.done

    def _take(self, connection: _Connection) -> bytes:
        buffer = connection.buffer
        if self.framing == "chunked":
            return self._take_chunked(buffer)
        if self.framing == "close":
            piece = bytes(buffer)
            buffer.clear()
            return piece
        n = min(self._left, len(buffer))
        piece = bytes(buffer[:n])
        del buffer[:n]
        self._left -= n
        self.done = self._left == 0
        return piece

    def _take_chunked(self, buffer: bytearray) -> bytes:
        out = bytearray()
        while True:
            if self._chunk_state == "data":
                n = min(self._left, len(buffer))
                out += buffer[:n]
                del buffer[:n]
                self._left -= n
                if self._left:
                    break
                self._chunk_state = "crlf"
            if self._chunk_state == "crlf":
                if len(buffer) < 2:
                    break
                if buffer[:2] != b"\r\n":
                    raise self._broken("a chunk not followed by CRLF")
                del buffer[:2]
                self._chunk_state = "size"
            end = buffer.find(b"\r\n")
            if end < 0:
                if len(buffer) > MAX_CHUNK_LINE:
                    raise self._broken("a chunk-size line too long")
                break
            line = bytes(buffer[:end])
            del buffer[: end + 2]
            if self._chunk_state == "trailer":
                if not line:
                    self.done = True
                    break
                continue  # a trailer field: dropped
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise self._broken(f"chunk size {line[:40]!r}") from None
            if size < 0:
                raise self._broken(f"chunk size {line[:40]!r}")
            if size == 0:
                self._chunk_state = "trailer"
            else:
                self._left = size
                self._chunk_state = "data"
        return bytes(out)

    def _broken(self, what: str) -> UpstreamError:
        self.aclose()
        return UpstreamError(f"the upstream sent {what}")

    def _finish(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._reusable and not connection.buffer and not connection.closed:
            self._pool.release(connection)
        else:
            connection.close()

    def aclose(self) -> None:
        """Give the connection up (closed if the body was not read to its end)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            if self.done and self._reusable and not connection.buffer and not connection.closed:
                self._pool.release(connection)
            else:
                connection.close()
        self.done = True


class UpstreamPool:
    """Kept-alive connections to one plain-``http`` origin; ``send`` a request on one."""

    def __init__(self, origin: Origin, *, max_idle: int = MAX_IDLE) -> None:
        self.origin = origin
        self.max_idle = max_idle
        self._idle: list[_Connection] = []
        self.opened = 0  # connections opened so far (a test reads it to see reuse)

    def release(self, connection: _Connection) -> None:
        if len(self._idle) < self.max_idle and not connection.closed:
            self._idle.append(connection)
        else:
            connection.close()

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(_Connection, self.origin.host, self.origin.port),
                CONNECT_TIMEOUT,
            )
        except TimeoutError:
            raise UpstreamError(
                f"connecting to {self.origin.host}:{self.origin.port} timed out"
            ) from None
        except OSError as exc:
            raise UpstreamError(f"cannot connect: {exc.strerror or exc}") from None
        self.opened += 1
        return connection

    def _reused(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and not connection.buffer:
                return connection
            connection.close()
        return None

    async def send(
        self, method: str, target: bytes, headers: Headers, body: bytes
    ) -> UpstreamResponse:
        """Send the request (``target``: the path and query, under the origin's prefix;
        ``headers`` without ``host``, ``content-length`` or ``transfer-encoding``: they are
        added here) and return its answer once the head has arrived."""
        lines = [
            method.encode("ascii"),
            b" ",
            self.origin.prefix,
            target,
            b" HTTP/1.1\r\nhost: ",
            self.origin.authority,
            b"\r\n",
        ]
        for name, value in headers:
            lines += (name, b": ", value, b"\r\n")
        if body or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            lines += (b"content-length: ", str(len(body)).encode("ascii"), b"\r\n")
        lines += (b"\r\n", body)
        data = b"".join(lines)
        while True:
            connection = self._reused()
            reused = connection is not None
            if connection is None:
                connection = await self._open()
            connection.received = 0
            assert connection.transport is not None
            connection.transport.write(data)
            try:
                return await self._answer(method, connection)
            except UpstreamError:
                connection.close()
                if reused and connection.received == 0:
                    continue  # a kept-alive connection the upstream had dropped: a new one
                raise
            except BaseException:
                connection.close()
                raise

    async def _answer(self, method: str, connection: _Connection) -> UpstreamResponse:
        while True:
            buffer = connection.buffer
            start = 0
            while (end := buffer.find(b"\r\n\r\n", start)) < 0:
                if connection.closed:
                    raise UpstreamError(f"no answer: {connection.closed_reason()}")
                if len(buffer) > MAX_HEAD:
                    raise UpstreamError("the upstream sent a response head over 64 KiB")
                start = max(0, len(buffer) - 3)
                await connection.more()
            head = bytes(buffer[:end])
            del buffer[: end + 4]
            version, status, headers = _parse_head(head)
            if 100 <= status < 200 and status != 101:
                continue  # an interim answer (100 Continue, 103 Early Hints): the next one
            framing, length = _framing(method, status, headers)
            reusable = version == b"HTTP/1.1" and status != 101
            for name, value in headers:
                if name.lower() == b"connection" and b"close" in value.lower():
                    reusable = False
            if framing == "close":
                reusable = False
            return UpstreamResponse(self, connection, status, headers, framing, length, reusable)

    def aclose(self) -> None:
        """Close the idle connections (answers still being read keep theirs)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def _parse_head(head: bytes) -> tuple[bytes, int, Headers]:
    lines = head.split(b"\r\n")
    version, _, rest = lines[0].partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise UpstreamError(f"the upstream answered {lines[0][:80]!r}, not HTTP/1.x")
    headers: Headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise UpstreamError(f"the upstream sent a malformed header line {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return version, int(code), headers
