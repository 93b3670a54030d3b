"""In-process httpx2 transports: a request goes straight into the ASGI app, no socket.

One coroutine (``call_app``) does the ASGI exchange; the async transport awaits it
and the sync transport runs it on an event loop of its own. That loop belongs to the
calling thread, or, when that thread is already running a loop (a sync client used
inside an async test), to a helper thread, so a sync call never needs the caller's
loop to be free.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx2

from fake_contextq.http._io import ASGIApp, Message
from fake_contextq.http.faults import ConnectionDropped

T = TypeVar("T")


async def call_app(app: ASGIApp, request: httpx2.Request, body: bytes) -> httpx2.Response:
    """Send one request through the ASGI app and collect its whole response."""
    url = request.url
    raw_path = url.raw_path.split(b"?", 1)[0]
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": url.scheme,
        "path": url.path,
        "raw_path": raw_path,
        "query_string": url.query,
        "root_path": "",
        "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        "client": ("127.0.0.1", 50000),
    }
    sent_body = False
    status = 0
    headers: list[tuple[bytes, bytes]] = []
    parts: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if sent_body:
            return {"type": "http.disconnect"}
        sent_body = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunk = message.get("body", b"")
            if chunk and request.method != "HEAD":
                parts.append(chunk)

    timeout = request.extensions.get("timeout", {}).get("read")
    try:
        if timeout is None:
            await app(scope, receive, send)
        else:
            async with asyncio.timeout(timeout):
                await app(scope, receive, send)
    except ConnectionDropped:
        raise httpx2.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        ) from None
    except TimeoutError:
        raise httpx2.ReadTimeout(
            f"The fake took longer than the read timeout ({timeout}s).", request=request
        ) from None
    except Exception:
        if not status:
            raise
    return httpx2.Response(status, headers=headers, content=b"".join(parts), request=request)


class _ThreadLoop:
    """A thread's own event loop, held in a thread-local: when the thread ends, this goes,
    and its finaliser closes the loop (and its file descriptors)."""

    __slots__ = ("__weakref__", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop


class LoopRunner:
    """Runs coroutines to completion from sync code, whatever the calling thread is doing.

    Each calling thread gets an event loop of its own, closed once the thread is gone, so
    threads that come and go leave no loops behind."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._loops: set[asyncio.AbstractEventLoop] = set()
        self._helper: asyncio.AbstractEventLoop | None = None
        self._helper_thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._own_loop().run_until_complete(coro)
        return asyncio.run_coroutine_threadsafe(coro, self._helper_loop()).result()

    def _own_loop(self) -> asyncio.AbstractEventLoop:
        held: _ThreadLoop | None = getattr(self._local, "held", None)
        if held is None or held.loop.is_closed():
            loop = asyncio.new_event_loop()
            held = _ThreadLoop(loop)
            self._local.held = held
            with self._lock:
                self._loops.add(loop)
            weakref.finalize(held, self._forget, loop)
        return held.loop

    def _forget(self, loop: asyncio.AbstractEventLoop) -> None:
        """Close the loop of a thread that has ended."""
        with self._lock:
            self._loops.discard(loop)
        if not loop.is_running() and not loop.is_closed():
            loop.close()

    def loops(self) -> int:
        """How many threads' loops are open (threads still alive that made requests)."""
        with self._lock:
            return len(self._loops)

    def _helper_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._helper is None or self._helper.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="fake-contextq-sync-client", daemon=True
                )
                thread.start()
                self._helper, self._helper_thread = loop, thread
            return self._helper

    def close(self) -> None:
        with self._lock:
            loops, self._loops = self._loops, set()
            helper, thread = self._helper, self._helper_thread
            self._helper = self._helper_thread = None
        for loop in loops:
            if not loop.is_running():
                loop.close()
        if helper is not None and thread is not None:
            helper.call_soon_threadsafe(helper.stop)
            thread.join(timeout=5)
            helper.close()


class InProcessTransport(httpx2.BaseTransport):
    """A sync transport into an ASGI app; works inside a running event loop too."""

    def __init__(self, app: ASGIApp, runner: LoopRunner | None = None) -> None:
        self.app = app
        self._runner = runner or LoopRunner()
        self._owns_runner = runner is None

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        body = request.read()
        return self._runner.run(call_app(self.app, request, body))

    def close(self) -> None:
        if self._owns_runner:
            self._runner.close()


class AsyncInProcessTransport(httpx2.AsyncBaseTransport):
    """An async transport into an ASGI app, leaner than a general-purpose one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        return await call_app(self.app, request, body)
