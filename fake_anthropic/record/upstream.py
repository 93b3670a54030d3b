"""The recording proxy's HTTP/1.1 client for a plain-``http`` upstream (a served scripted
model, a local gateway, anything on loopback): h11 frames each request and parses each
answer; this module keeps a few kept-alive connections and moves bytes.

A request, its body already in memory, goes out in one write on a kept-alive connection
or a new one, and its answer comes back as it arrives: the status and headers, then the
body piece by piece (an SSE event as soon as it is on the wire). A connection goes back to
the pool only when h11 says both sides finished the exchange and may start another. A
request is never sent twice: a pooled connection found closed (or closing, or idle longer
than ``IDLE_EXPIRY``) before anything was written is put aside for a new one, but once
a byte of the request went out, any failure is an ``UpstreamError`` for the caller (a
model call is billed; a second send would bill it twice). ``https`` and upstreams reached
through an HTTP proxy from the environment are not handled here (``record.proxy`` sends
those through httpx2).
"""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import dataclass
from typing import Final, cast
from urllib.parse import urlsplit

import h11

from fake_anthropic.record._wait import wait_for_wake

__all__ = [
    "CONNECT_TIMEOUT",
    "IDLE_EXPIRY",
    "READ_TIMEOUT",
    "Headers",
    "NotSent",
    "Origin",
    "UpstreamError",
    "UpstreamPool",
    "UpstreamResponse",
    "plain_origin",
]

CONNECT_TIMEOUT: Final = 10.0
READ_TIMEOUT: Final = 600.0
"""Seconds: to open a connection, and to wait for each next piece of an answer (as
httpx2's ``Timeout(600, connect=10)`` for the https path)."""
IDLE_EXPIRY: Final = 4.0
"""Seconds a pooled connection may idle and still be used: under the 5 s after which
uvicorn (and most servers) close an idle one, so a request is not written onto a
connection the upstream is closing at that moment."""
MAX_IDLE: Final = 20
MAX_HEAD: Final = 64 * 1024
PAUSE_ABOVE: Final = 1 << 20
"""Bytes received from the upstream and not yet taken by the proxy above which the
connection stops reading (a slow client slows the upstream, instead of filling memory)."""

Headers = list[tuple[bytes, bytes]]


class UpstreamError(Exception):
    """The upstream could not be reached, closed or broke the connection, or answered
    something that is not HTTP/1.x."""


class NotSent(UpstreamError):
    """No connection to the upstream could be made: nothing of the request left, so the
    client may safely send it again."""


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


class _Connection(asyncio.Protocol):
    """One TCP connection to the upstream and its h11 state."""

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._unread = 0  # bytes given to h11 and not yet taken as events
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.h11.receive_data(data)
        self._unread += len(data)
        if self._unread > PAUSE_ABOVE and self.transport is not None and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.h11.receive_data(b"")
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def usable(self, now: float) -> bool:
        """Whether a request may be written on this idle connection now."""
        transport = self.transport
        return (
            not self.closed
            and transport is not None
            and not transport.is_closing()
            and self.h11.our_state is h11.IDLE
            and now - self.idle_since < IDLE_EXPIRY
        )

    async def event(self) -> h11.Event:
        """The next event of the answer, waiting for data as needed."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise UpstreamError(f"the upstream sent a malformed answer: {exc}") from None
            if event is h11.NEED_DATA:
                if self.closed:  # lost without an EOF (a reset): h11 cannot know
                    raise UpstreamError(self.closed_reason())
                await self._more()
                continue
            if isinstance(event, h11.Data):
                self._unread = max(0, self._unread - len(event.data))
                if self._paused and self._unread < PAUSE_ABOVE // 2 and self.transport:
                    self._paused = False
                    self.transport.resume_reading()
            if isinstance(event, h11.ConnectionClosed):
                raise UpstreamError(self.closed_reason())
            return cast(h11.Event, event)

    async def _more(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiter = waiter
        try:
            if not await wait_for_wake(waiter, READ_TIMEOUT):
                raise UpstreamError(f"no answer from the upstream for {READ_TIMEOUT:g} s")
        finally:
            self._waiter = None

    def closed_reason(self) -> str:
        return f"the upstream closed the connection{f': {self.error}' if self.error else ''}"

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class UpstreamResponse:
    """An answer whose head has arrived: ``status``, ``headers`` (as sent), then ``read()``
    for each next piece of the body until ``done``."""

    def __init__(self, pool: UpstreamPool, connection: _Connection, head: h11.Response) -> None:
        self.status = head.status_code
        self.headers: Headers = list(head.headers.raw_items())
        self.done = False
        self._pool = pool
        self._connection: _Connection | None = connection

    async def read(self) -> bytes:
        """The body's next piece, waiting for it; b"" once ``done``. ``UpstreamError`` if
        the connection broke off before the body's end."""
        connection = self._connection
        if self.done or connection is None:
            return b""
        try:
            event = await connection.event()
        except UpstreamError as exc:
            self.aclose()
            raise UpstreamError(f"the answer broke off: {exc}") from None
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            self.done = True
            self._finish(connection)
            return b""
        self.aclose()
        raise UpstreamError(f"the upstream sent {type(event).__name__} inside an answer")

    def _finish(self, connection: _Connection) -> None:
        self._connection = None
        state = connection.h11
        if state.our_state is h11.DONE and state.their_state is h11.DONE and not connection.closed:
            state.start_next_cycle()
            self._pool.release(connection)
        else:
            connection.close()

    def aclose(self) -> None:
        """Give the connection up (closed unless the body was read to its end)."""
        connection, self._connection = self._connection, None
        if connection is not None:
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
            connection.idle_since = asyncio.get_running_loop().time()
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
            raise NotSent(
                f"connecting to {self.origin.host}:{self.origin.port} timed out"
            ) from None
        except OSError as exc:
            raise NotSent(f"cannot connect: {exc.strerror or exc}") from None
        self.opened += 1
        return connection

    async def _connection(self) -> _Connection:
        """An idle connection that can take a request now, or a new one."""
        now = asyncio.get_running_loop().time()
        while self._idle:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return await self._open()

    async def send(
        self, method: str, target: bytes, headers: Headers, body: bytes
    ) -> UpstreamResponse:
        """Send the request (``target``: the path and query as the client sent them, put
        under the origin's prefix; ``headers`` without ``host``, ``content-length`` or
        ``transfer-encoding``: they are set here) and return its answer once its head has
        arrived."""
        connection = await self._connection()
        state = connection.h11
        fields: Headers = [(b"host", self.origin.authority), *headers]
        if body or method not in ("GET", "HEAD", "DELETE", "OPTIONS"):
            fields.append((b"content-length", b"%d" % len(body)))
        try:
            data = (
                state.send(
                    h11.Request(method=method, target=self.origin.prefix + target, headers=fields)
                )
                or b""
            )
            if body:
                data += state.send(h11.Data(data=body)) or b""
            data += state.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            connection.close()
            raise UpstreamError(f"the request cannot be sent upstream: {exc}") from None
        assert connection.transport is not None
        connection.transport.write(data)
        try:
            while True:
                event = await connection.event()
                if isinstance(event, h11.Response):
                    return UpstreamResponse(self, connection, event)
                if not isinstance(event, h11.InformationalResponse):
                    raise UpstreamError(f"the upstream sent {type(event).__name__} for an answer")
        except UpstreamError as exc:
            connection.close()
            raise UpstreamError(
                f"no answer: {exc} after the request was sent (it is not sent again: the "
                "upstream may have taken it)"
            ) from None
        except BaseException:
            connection.close()
            raise

    def aclose(self) -> None:
        """Close the idle connections (answers still being read keep theirs)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
