"""The recording proxy: an ASGI app forwarding each request to an upstream Messages API (the
real one, a gateway, or a served scripted model) and recording the exchange.

The request goes upstream as the caller sent it, credentials included (the proxy holds none
of its own), minus hop-by-hop headers and with ``accept-encoding: identity`` so the answer
arrives uncompressed, to the configured upstream origin joined with the request's target
byte for byte (never decoded, so no target reaches another host): through the proxy's h11
client (``record.upstream``) to a plain-``http`` upstream, through httpx2 to an ``https``
one (the real API) or one behind an HTTP proxy from the environment. The answer comes back
unchanged, status, headers and body: an event stream chunk by chunk as it arrives, any other
answer whole, with its ``content-length`` (``_pass_on``). Served by ``record.server`` (h11).
Once the answer is complete and the client has it, the exchange is appended to the recording
(``record.recording.RecordingFile``, which writes it on its own thread, so the client never
waits for the disk), with credentials removed (``fake_anthropic.redact``). An answer that broke off,
or whose client went away before it had all of it, is not recorded (a client that retries is
then recorded once); an upstream that cannot be reached, or that closed the connection
before answering, answers 502 ``api_error`` (not recorded either), with ``x-should-retry:
true`` only when no connection was made (nothing was sent). An answer replay could not
serve (``record.answer_shape``) is not recorded and counts as a failure. A target with a raw
``#`` is a 400. The proxy's own answers are in the API's error envelope. The upstream URL is
shown masked (``fake_anthropic.redact.masked_url``) in every message.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, Final

import httpx2

from fake_anthropic.http import Receive, Scope, Send, read_body
from fake_anthropic.record.answer_shape import answer_problem
from fake_anthropic.record.answers import (
    HOP_BY_HOP,
    HOP_BY_HOP_BYTES,
    Answer,
    HttpxAnswer,
    PlainAnswer,
)
from fake_anthropic.record.capture import exchange_of
from fake_anthropic.record.recording import Exchange, RecordingFile
from fake_anthropic.record.server import ClientGone
from fake_anthropic.record.upstream import (
    Headers,
    NotSent,
    UpstreamError,
    UpstreamPool,
    plain_origin,
)
from fake_anthropic.redact import masked_url, redact_target, scrub_url, secrets_of

__all__ = ["DEFAULT_UPSTREAM", "HOP_BY_HOP", "RecordingProxy", "check_upstream"]

Json = dict[str, Any]

DEFAULT_UPSTREAM: Final = "https://api.anthropic.com"
UPSTREAM_TIMEOUT: Final = httpx2.Timeout(600.0, connect=10.0)
_TIMEOUT_EXTENSION: Final = UPSTREAM_TIMEOUT.as_dict()
NOT_SENT_ERRORS: Final = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
"""httpx2's failures before a connection to the upstream existed: nothing was sent."""


def check_upstream(url: str) -> str:
    """``url`` without a trailing slash, if it can be an upstream: ``http`` or ``https``,
    a host, and no query or fragment (requests bring their own); ``ValueError`` (its
    message shows the URL masked) if not."""
    shown = masked_url(url)
    try:
        parts = httpx2.URL(url)
    except (httpx2.InvalidURL, TypeError) as exc:
        raise ValueError(
            f"the upstream {shown!r} is not a URL: {scrub_url(str(exc), url)}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.host:
        raise ValueError(f"the upstream {shown!r} must be an http:// or https:// URL with a host")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise ValueError(
            f"the upstream {shown!r} has a query or fragment; give the origin and path only "
            "(each request brings its own query; a gateway key goes in a header)"
        )
    return url.rstrip("/")


def _is_stream(headers: Headers) -> bool:
    for name, value in headers:
        if name.lower() == b"content-type":
            return value.lower().startswith(b"text/event-stream")
    return False


async def _pass_on(answer: Answer, method: str, send: Send) -> list[bytes]:
    """Send the answer on to the client; the body's pieces as they came.

    An event stream goes on piece by piece as it arrives. Any other answer (JSON, which no
    client reads before its end) is read whole first and goes on in one piece with its
    ``content-length``: the server in front then writes it without chunking it again, in
    two writes instead of three or more, which is most of what a proxy costs on loopback.
    """
    received: list[bytes] = []
    if _is_stream(answer.headers):
        await send(
            {"type": "http.response.start", "status": answer.status, "headers": answer.headers}
        )
        while True:
            chunk = await answer.read()
            received.append(chunk)
            if answer.done:
                await send({"type": "http.response.body", "body": chunk, "more_body": False})
                return received
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
    while not answer.done:
        received.append(await answer.read())
    body = received[0] if len(received) == 1 else b"".join(received)
    headers = answer.headers
    if method != "HEAD" and answer.status >= 200 and answer.status not in (204, 304):
        headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    return [body]


def _shown(target: bytes, headers: Headers) -> str:
    """A request's target as a message may show it: credentials redacted, then cut short."""
    text = target.decode("latin-1")
    pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
    return redact_target(text, secrets_of(pairs, text.partition("?")[2]))[:200]


async def _error(send: Send, status: int, kind: str, message: str, *, retry: bool = False) -> None:
    """An answer of the proxy's own, in the API's error envelope."""
    payload = {"type": "error", "error": {"type": kind, "message": message}}
    headers = [
        (b"content-type", b"application/json"),
        (b"x-should-retry", b"true" if retry else b"false"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


class RecordingProxy:
    """Forwards to ``upstream`` and appends each finished exchange to ``out``."""

    def __init__(
        self,
        upstream: str,
        out: str | os.PathLike[str],
        *,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.upstream = check_upstream(upstream)
        self.shown_upstream = masked_url(self.upstream)
        """The upstream as it may be printed: no password, no credential query value."""
        self._base = httpx2.URL(self.upstream)
        self._prefix = self._base.raw_path.rstrip(b"/")
        self.file = RecordingFile(out)
        self._on_exchange = on_exchange
        origin = plain_origin(self.upstream)
        self._pool = UpstreamPool(origin) if origin is not None else None
        self._client: httpx2.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.failures: list[str] = []
        self.abandoned: list[str] = []
        """Exchanges whose client went away before it had the whole answer (not recorded)."""
        self._pending = 0  # requests received and not yet recorded (or given up on)
        self._settled = threading.Condition()

    @property
    def exchanges(self) -> list[Exchange]:
        return self.file.exchanges

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=UPSTREAM_TIMEOUT, follow_redirects=False)
        return self._client

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every request received so far is recorded or given up on: a client
        has the whole answer a moment before the proxy records the exchange."""
        with self._settled:
            self._settled.wait_for(lambda: self._pending == 0, timeout)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until the file holds every finished exchange."""
        self.file.flush(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Close the upstream connections (from any thread while the server still runs) and
        finish the file."""
        client, loop = self._client, self._loop
        self._client = self._loop = None
        try:
            if loop is not None and loop.is_running():
                asyncio.run_coroutine_threadsafe(self._close_upstream(client), loop).result(timeout)
        finally:
            self.file.close()

    async def _close_upstream(self, client: httpx2.AsyncClient | None) -> None:
        if self._pool is not None:
            self._pool.aclose()
        if client is not None:
            await client.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    client, self._client = self._client, None
                    await self._close_upstream(client)
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        raw = await read_body(receive)
        if raw is None:
            return
        with self._settled:
            self._pending += 1
        try:
            await self._forward(scope, raw, send)
        finally:
            with self._settled:
                self._pending -= 1
                self._settled.notify_all()

    async def _forward(self, scope: Scope, raw: bytes, send: Send) -> None:
        method: str = scope["method"]
        target: bytes = scope.get("raw_path") or scope["path"].encode("latin-1")
        query: bytes = scope.get("query_string", b"")
        if query:
            target += b"?" + query
        if b"#" in target:
            # A fragment is never part of a request target (RFC 9112 3.2.1); servers differ
            # on whether it ends the path, and httpx2 cannot put it in a URL at all.
            shown = _shown(target, scope["headers"])
            await _error(
                send,
                400,
                "invalid_request_error",
                f"recording proxy: the target {shown!r} holds a raw '#'; a request target has "
                "no fragment (send it percent-encoded, %23)",
            )
            return
        try:
            answer = await self._send_upstream(scope, method, target, raw)
        except NotSent as exc:
            await self._unreachable(send, str(exc), sent=False)
            return
        except UpstreamError as exc:
            await self._unreachable(send, str(exc), sent=True)
            return
        except httpx2.HTTPError as exc:
            sent = not isinstance(exc, NOT_SENT_ERRORS)
            await self._unreachable(send, f"{type(exc).__name__}: {exc}", sent=sent)
            return
        except httpx2.InvalidURL as exc:  # what h11 took and httpx2 cannot put in a URL
            await _error(
                send,
                400,
                "invalid_request_error",
                f"recording proxy: the target {_shown(target, scope['headers'])!r} cannot be "
                f"sent upstream: {exc}",
            )
            return
        try:
            received = await _pass_on(answer, method, send)
        except ClientGone:
            shown = _shown(target, scope["headers"])
            self.abandoned.append(f"{method} {shown}: the client went away before the answer's end")
            return
        except (UpstreamError, httpx2.HTTPError, OSError) as exc:
            shown = _shown(target, scope["headers"])
            self.failures.append(f"{method} {shown}: the answer broke off: {exc}")
            return
        finally:
            await answer.aclose()
        self._record(method, target, scope["headers"], raw, answer.status, answer.headers, received)

    async def _send_upstream(self, scope: Scope, method: str, target: bytes, raw: bytes) -> Answer:
        """Send the request as the caller sent it (less hop-by-hop headers, and asking for
        an uncompressed answer) to the upstream origin joined with ``target`` as received;
        the answer once its head has arrived."""
        forwarded = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP_BYTES]
        forwarded.append((b"accept-encoding", b"identity"))
        if self._pool is not None:
            return PlainAnswer(await self._pool.send(method, target, forwarded, raw))
        # Built here, not with client.build_request: nothing of the client's (its default
        # headers, cookies an upstream set) is added to what the caller sent, and the
        # merging it skips is a tenth of its time per request.
        request = httpx2.Request(
            method,
            self._base.copy_with(raw_path=self._prefix + target),
            headers=forwarded,
            content=raw,
            extensions={"timeout": _TIMEOUT_EXTENSION},
        )
        return HttpxAnswer(await self._http().send(request, stream=True))

    def _record(
        self,
        method: str,
        target: bytes,
        raw_headers: list[tuple[bytes, bytes]],
        raw: bytes,
        status: int,
        answer_headers: list[tuple[bytes, bytes]],
        received: list[bytes],
    ) -> None:
        data = received[0] if len(received) == 1 else b"".join(received)
        try:
            exchange = exchange_of(
                method,
                target.decode("latin-1"),
                [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers],
                raw,
                status,
                [(k.decode("latin-1"), v.decode("latin-1")) for k, v in answer_headers],
                data,
            )
        except ValueError as exc:
            problem: str | None = str(exc)
        else:
            problem = answer_problem(
                exchange.method, exchange.path, exchange.status, exchange.stream, exchange.response
            )
        if problem is not None:  # the file would not load: it holds only what replays
            shown = _shown(target, raw_headers)
            message = f"{method} {shown}: not recorded, it could not be replayed: {problem}"
            self.failures.append(message)
            print(f"fake-anthropic record: {message}", file=sys.stderr, flush=True)
            return
        self.file.append(exchange)
        if self._on_exchange is not None:
            self._on_exchange(exchange)

    async def _unreachable(self, send: Send, reason: str, *, sent: bool) -> None:
        """A 502; ``x-should-retry: true`` only if the request provably never left (no
        connection was made), since a request the upstream may have taken is billed."""
        reason = scrub_url(reason, self.upstream)
        message = f"recording proxy: no answer from the upstream {self.shown_upstream}: {reason}"
        if not sent:
            message += " (nothing of the request was sent: a retry is safe)"
        self.failures.append(message)
        print(f"fake-anthropic record: {message}", file=sys.stderr, flush=True)
        await _error(send, 502, "api_error", message, retry=not sent)
