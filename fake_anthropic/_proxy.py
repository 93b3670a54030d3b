"""The recording proxy: an ASGI app forwarding each request to an upstream Messages API
(the real one, a gateway, or a served scripted model) and recording the exchange.

The request goes upstream as the caller sent it, credentials included (the proxy holds
none of its own), minus hop-by-hop headers and with ``accept-encoding: identity`` so the
answer arrives uncompressed; the answer comes back unchanged, status, headers and body,
each chunk passed on as it arrives (a stream streams through). Once the answer is
complete the exchange is appended to the recording (``_recording.RecordingFile``, which
writes it on its own thread, so the client never waits for the disk), with credentials
removed (``_redact``). An answer that broke off is not recorded; an upstream that cannot
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

from fake_anthropic._asgi import Receive, Scope, Send
from fake_anthropic._recording import RESPONSE_HEADERS, Exchange, RecordingFile
from fake_anthropic._redact import redact, secrets_of
from fake_anthropic._sse_read import accumulate, parse_events

Json = dict[str, Any]

DEFAULT_UPSTREAM: Final = "https://api.anthropic.com"
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
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
            self._loop = asyncio.get_running_loop()
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
            if client is not None and loop is not None and loop.is_running():
                asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout)
        finally:
            self.file.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    if self._client is not None:
                        await self._client.aclose()
                        self._client = None
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
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
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        query = scope.get("query_string", b"").decode("latin-1")
        path: str = scope["path"]
        target = self.upstream + path + (f"?{query}" if query else "")
        forwarded = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        forwarded.append(("accept-encoding", "identity"))
        client = self._http()
        # Built here, not with client.build_request: nothing of the client's (its default
        # headers, cookies an upstream set) is added to what the caller sent, and the
        # merging it skips is a tenth of the proxy's time per request.
        request = httpx2.Request(
            scope["method"],
            target,
            headers=forwarded,
            content=raw,
            extensions={"timeout": _TIMEOUT_EXTENSION},
        )
        try:
            upstream = await client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            await self._unreachable(send, f"{type(exc).__name__}: {exc}")
            return
        received = bytearray()
        try:
            out_headers = [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in upstream.headers.multi_items()
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding"
            ]
            await send(
                {
                    "type": "http.response.start",
                    "status": upstream.status_code,
                    "headers": out_headers,
                }
            )
            async for chunk in upstream.aiter_raw():
                received += chunk
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except (httpx2.HTTPError, OSError) as exc:
            self.failures.append(f"{scope['method']} {path}: the answer broke off: {exc}")
            return
        finally:
            await upstream.aclose()
        self._record(scope["method"], path, query, headers, raw, upstream, bytes(received))

    def _record(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        raw: bytes,
        upstream: httpx2.Response,
        received: bytes,
    ) -> None:
        secrets = secrets_of(headers)
        try:
            body: object = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        stream, answer = _response_body(upstream.headers.get("content-type", ""), received)
        version = next((v for k, v in headers if k.lower() == "anthropic-version"), None)
        betas = [
            b.strip()
            for k, v in headers
            if k.lower() == "anthropic-beta"
            for b in v.split(",")
            if b.strip()
        ]
        kept = {k: upstream.headers[k] for k in RESPONSE_HEADERS if k in upstream.headers}
        exchange = Exchange(
            method=method,
            path=path + (f"?{query}" if query else ""),
            body=redact(body, secrets),
            status=upstream.status_code,
            response=redact(answer, secrets),
            betas=betas,
            anthropic_version=version,
            headers={k: str(redact(v, secrets)) for k, v in kept.items()},
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
