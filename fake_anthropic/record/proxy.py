"""The recording proxy: an ASGI app forwarding each request to an upstream Messages API
(the real one, a gateway, or a served scripted model) and recording the exchange.

The request goes upstream as the caller sent it, credentials included (the proxy holds
none of its own), minus hop-by-hop headers and with ``accept-encoding: identity`` so the
answer arrives uncompressed: through the proxy's own HTTP/1.1 client (``record.upstream``) to a
plain-``http`` upstream, through httpx2 to an ``https`` one (the real API) or one behind
an HTTP proxy from the environment. The answer comes back unchanged, status, headers and
body: an event stream chunk by chunk as it arrives, any other answer whole, with its
``content-length`` (``_pass_on``). Served by ``record.server``, not uvicorn. Once the answer is
complete the exchange is appended to the recording (``record.recording.RecordingFile``, which
writes it on its own thread, so the client never waits for the disk), with credentials
removed (``record.redact``). An answer that broke off is not recorded; an upstream that cannot
be reached answers 502 ``api_error`` (not recorded either).
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

from fake_anthropic.http.asgi import Receive, Scope, Send
from fake_anthropic.record.answers import (
    HOP_BY_HOP,
    HOP_BY_HOP_BYTES,
    Answer,
    HttpxAnswer,
    PlainAnswer,
)
from fake_anthropic.record.recording import RESPONSE_HEADERS, Exchange, RecordingFile
from fake_anthropic.record.redact import redact, secrets_of
from fake_anthropic.record.sse_read import accumulate, parse_events
from fake_anthropic.record.upstream import Headers, UpstreamError, UpstreamPool, plain_origin

__all__ = ["DEFAULT_UPSTREAM", "HOP_BY_HOP", "RecordingProxy"]

Json = dict[str, Any]

DEFAULT_UPSTREAM: Final = "https://api.anthropic.com"
UPSTREAM_TIMEOUT: Final = httpx2.Timeout(600.0, connect=10.0)
_TIMEOUT_EXTENSION: Final = UPSTREAM_TIMEOUT.as_dict()


def _response_body(content_type: str, data: bytes) -> tuple[bool, object]:
    """Whether the answer was a stream, and the body to record."""
    if content_type.startswith("text/event-stream"):
        state = accumulate(parse_events(data))
        if state.error is not None:
            return True, state.error
        return True, state.message
    try:
        return False, json.loads(data) if data else None
    except ValueError:
        return False, data.decode("utf-8", errors="replace")


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


class RecordingProxy:
    """Forwards to ``upstream`` and appends each finished exchange to ``out``."""

    def __init__(
        self,
        upstream: str,
        out: str | os.PathLike[str],
        *,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.file = RecordingFile(out)
        self._on_exchange = on_exchange
        origin = plain_origin(self.upstream)
        self._pool = UpstreamPool(origin) if origin is not None else None
        self._client: httpx2.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.failures: list[str] = []
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
        raw = bytearray()
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            raw += event.get("body", b"")
            if not event.get("more_body", False):
                break
        with self._settled:
            self._pending += 1
        try:
            await self._forward(scope, bytes(raw), send)
        finally:
            with self._settled:
                self._pending -= 1
                self._settled.notify_all()

    async def _forward(self, scope: Scope, raw: bytes, send: Send) -> None:
        method: str = scope["method"]
        path: str = scope["path"]
        query: bytes = scope.get("query_string", b"")
        try:
            answer = await self._send_upstream(scope, method, path, query, raw)
        except UpstreamError as exc:
            await self._unreachable(send, str(exc))
            return
        except httpx2.HTTPError as exc:
            await self._unreachable(send, f"{type(exc).__name__}: {exc}")
            return
        try:
            received = await _pass_on(answer, method, send)
        except (UpstreamError, httpx2.HTTPError, OSError) as exc:
            self.failures.append(f"{method} {path}: the answer broke off: {exc}")
            return
        finally:
            await answer.aclose()
        self._record(
            method, path, query, scope["headers"], raw, answer.status, answer.headers, received
        )

    async def _send_upstream(
        self, scope: Scope, method: str, path: str, query: bytes, raw: bytes
    ) -> Answer:
        """Send the request as the caller sent it (less hop-by-hop headers, and asking for
        an uncompressed answer); the answer once its head has arrived."""
        forwarded = [(k, v) for k, v in scope["headers"] if k.lower() not in HOP_BY_HOP_BYTES]
        forwarded.append((b"accept-encoding", b"identity"))
        if self._pool is not None:
            target = scope.get("raw_path") or path.encode("utf-8")
            if query:
                target += b"?" + query
            return PlainAnswer(await self._pool.send(method, target, forwarded, raw))
        # Built here, not with client.build_request: nothing of the client's (its default
        # headers, cookies an upstream set) is added to what the caller sent, and the
        # merging it skips is a tenth of its time per request.
        request = httpx2.Request(
            method,
            self.upstream + path + (f"?{query.decode('latin-1')}" if query else ""),
            headers=forwarded,
            content=raw,
            extensions={"timeout": _TIMEOUT_EXTENSION},
        )
        return HttpxAnswer(await self._http().send(request, stream=True))

    def _record(
        self,
        method: str,
        path: str,
        query: bytes,
        raw_headers: list[tuple[bytes, bytes]],
        raw: bytes,
        status: int,
        answer_headers: list[tuple[bytes, bytes]],
        received: list[bytes],
    ) -> None:
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw_headers]
        secrets = secrets_of(headers)
        try:
            body: object = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        kept: dict[str, str] = {}
        for k, v in answer_headers:
            name = k.decode("latin-1").lower()
            if name in RESPONSE_HEADERS:
                value = v.decode("latin-1")
                kept[name] = f"{kept[name]}, {value}" if name in kept else value
        data = received[0] if len(received) == 1 else b"".join(received)
        stream, answer = _response_body(kept.get("content-type", ""), data)
        version = next((v for k, v in headers if k.lower() == "anthropic-version"), None)
        betas = [
            b.strip()
            for k, v in headers
            if k.lower() == "anthropic-beta"
            for b in v.split(",")
            if b.strip()
        ]
        query_text = query.decode("latin-1")
        exchange = Exchange(
            method=method,
            path=path + (f"?{query_text}" if query_text else ""),
            body=redact(body, secrets),
            status=status,
            response=redact(answer, secrets),
            betas=betas,
            anthropic_version=version,
            headers={k: str(redact(kept[k], secrets)) for k in RESPONSE_HEADERS if k in kept},
            stream=stream,
        )
        self.file.append(exchange)
        if self._on_exchange is not None:
            self._on_exchange(exchange)

    async def _unreachable(self, send: Send, reason: str) -> None:
        message = f"recording proxy: cannot reach the upstream {self.upstream}: {reason}"
        self.failures.append(message)
        print(f"fake-anthropic record: {message}", file=sys.stderr, flush=True)
        payload = {"type": "error", "error": {"type": "api_error", "message": message}}
        await send(
            {
                "type": "http.response.start",
                "status": 502,
                "headers": [(b"content-type", b"application/json"), (b"x-should-retry", b"false")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(payload).encode()})
