"""Serving an ASGI fake over real HTTP with uvicorn, on a thread or in the foreground."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import TracebackType
from typing import Any, Self

import uvicorn

ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


_DRAIN_POLL = 0.002  # how often a stop looks whether the connections have closed
_READY_POLL = 0.001  # how often a start looks whether uvicorn is ready (it takes 1-2 ms)


class _Server(uvicorn.Server):
    """uvicorn's server, with two changes for fakes that start and stop by the hundred:

    - an app with a ``shutting_down()`` method is told that the server begins to shut
      down, before uvicorn waits for the requests in flight: an app that streams without
      end (a live page) then ends its streams, and the server stops at once;
    - ``request_exit()`` wakes the main loop at once, where uvicorn looks whether to exit
      every tenth of a second (a fake stopped by a test would wait for that tick);
    - ``shutdown()`` waits for the connections to close instead of sleeping a fixed
      tenth of a second first.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 0.1)  # uvicorn's tick
            should_exit = await self.on_tick(counter)

    def request_exit(self) -> None:
        """Stop serving, from any thread."""
        self.should_exit = True
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already closed
                loop.call_soon_threadsafe(wake.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's graceful shutdown, less its fixed tenth-of-a-second sleep (and its
        tenth-of-a-second polls): it waits as long as the connections and requests in
        flight take, which for a test's idle kept-alive connection is no time at all."""
        hook = getattr(self.config.app, "shutting_down", None)
        if callable(hook):
            hook()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            async with asyncio.timeout(self.config.timeout_graceful_shutdown):
                await self._drained()
        except TimeoutError:
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drained(self) -> None:
        state = self.server_state
        while (state.connections or state.tasks) and not self.force_exit:
            await asyncio.sleep(_DRAIN_POLL)
        for server in self.servers:
            await server.wait_closed()


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket; binding here (not in uvicorn) makes port 0 knowable up front.

    The protocol is named (TCP, not 0): asyncio sets ``TCP_NODELAY`` only on accepted
    sockets whose protocol is TCP, and without it every request after the first on a
    kept-alive connection waits out the peer's delayed ACK (about 40 ms).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def make_server(app: ASGIApp, log_level: str = "warning", *, lifespan: bool = False) -> _Server:
    """``lifespan``: the app needs the ASGI lifespan protocol (start-up and shut-down); off
    by default, since most apps here need none and the in-process transports skip it too."""
    config = uvicorn.Config(
        app, lifespan="on" if lifespan else "off", log_level=log_level, access_log=False
    )
    return _Server(config)


class ServedApp:
    """An app behind uvicorn on a background thread, with its ``url`` once it is ready."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ready_timeout: float = 10.0,
        name: str = "fake",
        lifespan: bool = False,
    ) -> None:
        self.app = app
        self.lifespan = lifespan
        self.host = host
        self.requested_port = port
        self.ready_timeout = ready_timeout
        self.name = name
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def port(self) -> int:
        if self._sock is None:
            raise RuntimeError("the server is not running")
        port: int = self._sock.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        return url_for(self.host, self.port)

    def start(self) -> None:
        self._sock = bind_socket(self.host, self.requested_port)
        self._server = make_server(self.app, lifespan=self.lifespan)
        # uvicorn installs signal handlers only on the main thread; a thread has none.
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            name=f"{self.name}-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + self.ready_timeout
        while not self._server.started:
            if not self._thread.is_alive():
                self.stop()
                raise RuntimeError(f"{self.name} server thread died during start-up")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(
                    f"{self.name} did not become ready on {self.host} within {self.ready_timeout}s"
                )
            time.sleep(_READY_POLL)

    def stop(self) -> None:
        if self._server is not None:
            self._server.request_exit()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()
        self._server = self._thread = None
        self._sock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._sock is not None else "stopped"
        return f"<{type(self).__name__} {self.name} {where}>"


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    """Make SIGTERM (``kill PID``, a supervisor, a test) stop a foreground server the way
    Ctrl-C does: uvicorn shuts down gracefully on either, then raises the signal again
    under the handler that was there before it started; with the default one, SIGTERM
    would kill the process before the command prints its last lines. Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def run_foreground(
    app: ASGIApp, sock: socket.socket, log_level: str = "warning", *, lifespan: bool = False
) -> None:
    """Serve ``app`` on the bound ``sock`` until Ctrl-C or SIGTERM, then close the socket.

    Both signals ask the server to stop from the moment it exists: uvicorn installs its
    own handlers only once it runs, and a signal that came in between used to cancel
    its start-up, which could leave it serving with nobody able to stop it but SIGKILL.
    """
    server = make_server(app, log_level, lifespan=lifespan)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda _signum, _frame: server.request_exit())
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
