"""``SyncMcpClient``: an ``mcp.Client`` for synchronous code (tests, ``McpAgentMemory``),
its session held open on an event loop of its own (a daemon thread) so that many calls
share one connection. Needs the ``mcp`` package (the ``mcp`` extra); ``import adapter``
does not load it.

Every call has a deadline (``timeout``, the whole call, opening a session included); a
session that broke (a dropped connection, an answer past the deadline) is dropped and the
next call opens a fresh one; ``close`` never raises and waits for a graceful end at most
``CLOSE_WAIT`` seconds. Nothing of it keeps the interpreter alive: the loop's thread is a
daemon and an unclosed client is closed at exit (or when it is collected). The loggers
that write the URL it connects to (``URL_LOGGERS``) show it masked, as ours do."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from contextlib import AbstractAsyncContextManager
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from adapter import _deadline, wire
from adapter._tls import default_ssl_context
from adapter.errors import redact

T = TypeVar("T")
LOG = logging.getLogger("adapter.mcp_client")

DEFAULT_TIMEOUT = 30.0  # seconds a call may take in all, opening a session included
CLOSE_WAIT = 5.0  # seconds close() lets a session end gracefully (a DELETE, a child's exit)
EXIT_WAIT = 1.0  # the same for a client closed at exit or when collected
#: A session that answered with one of these is broken: the next call opens another.
BROKEN_CODES = frozenset({CONNECTION_CLOSED, REQUEST_TIMEOUT})

Connect = Callable[[], AbstractAsyncContextManager[Client]]
#: Loggers that write the URL they connect to, query and password included: the MCP SDK's
#: transport (at DEBUG) and httpx2 (each request, at INFO).
URL_LOGGERS = ("mcp.client.streamable_http", "httpx2")


class _Redacting(logging.Filter):
    """Shows a record's URLs as every log line of this project does: passwords, tokens
    and fragments as ``***`` (``adapter.errors.redact``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        masked = redact(text)
        if masked != text:
            record.msg, record.args = masked, None
        return True


_REDACTING = _Redacting()


def _redact_url_logs() -> None:
    for name in URL_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACTING not in logger.filters:
            logger.addFilter(_REDACTING)


class SyncMcpClient:
    """Connects to an in-process ``Server``, to a streamable HTTP URL (with ``api_key``
    sent as ``Authorization: Bearer``), or to a stdio server it starts. ``mode`` is
    ``mcp.Client``'s: ``"auto"`` speaks the newest protocol the server offers, ``"legacy"``
    the initialize handshake. ``timeout``: each call's deadline in seconds (None: none);
    inside an agent-memory method, that method's deadline bounds it too."""

    def __init__(
        self,
        target: Server[Any] | str | StdioServerParameters,
        *,
        api_key: str | None = None,
        mode: str = "auto",
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self.target = target
        self.api_key = api_key
        self.mode = mode
        self.timeout = _deadline.check(timeout)
        if isinstance(target, str):
            _redact_url_logs()
        self._connection = _Connection(partial(_connect, target, api_key, mode, self.timeout))
        # closes what is still open at exit or when the client is collected, while the
        # loop's thread still runs (the connection holds no reference to the client)
        weakref.finalize(self, self._connection.close, EXIT_WAIT)

    def open(self) -> Self:
        """Open the session now (a call opens one when there is none)."""
        self._connection.client(_deadline.bounded(self.timeout))
        return self

    def _run(self, name: str, *args: Any) -> Any:
        async def run(client: Client) -> Any:
            return await getattr(client, name)(*args)

        return self._connection.call(run, _deadline.bounded(self.timeout))

    def list_tools(self) -> list[types.Tool]:
        result: types.ListToolsResult = self._run("list_tools")
        return list(result.tools)

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """The tool's result; a protocol error (unknown tool, arguments of the wrong
        shape) raises ``mcp.MCPError``, no answer within the deadline ``TimeoutError``."""
        result: types.CallToolResult = self._run("call_tool", name, arguments or {})
        return result

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """The ``structuredContent`` of a successful call; a tool error raises
        ``McpToolError`` with its text and error body."""
        result = self.call_tool(name, arguments)
        if result.is_error:
            raise McpToolError(name, result)
        return result.structured_content

    @property
    def protocol_version(self) -> str:
        return self._connection.client(_deadline.bounded(self.timeout)).protocol_version

    @property
    def is_open(self) -> bool:
        """Whether a session (or its loop) is held open now: after ``close()``, or before the
        first call, it is not."""
        return self._connection.is_open

    def close(self, *, wait: float = CLOSE_WAIT) -> None:
        """End the session (letting it end gracefully for at most ``wait`` seconds) and
        the loop; never raises. A later call opens them again."""
        self._connection.close(wait)

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextlib.asynccontextmanager
async def _connect(
    target: Server[Any] | str | StdioServerParameters,
    api_key: str | None,
    mode: str,
    timeout: float | None,
) -> AsyncIterator[Client]:
    async with contextlib.AsyncExitStack() as stack:
        server: Any = target
        if isinstance(target, str):
            headers = {} if api_key is None else {"Authorization": wire.authorization(api_key)}
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=headers,
                    verify=default_ssl_context(),
                    timeout=httpx2.Timeout(timeout or DEFAULT_TIMEOUT),
                )
            )
            server = streamable_http_client(target, http_client=http)
        yield await stack.enter_async_context(Client(server, mode=mode))


class _Session:
    """One open ``mcp.Client``: a task on the loop holds it open until ``end``; ``ready``
    resolves to the client once the handshake is done (or to why it failed)."""

    def __init__(self, portal: BlockingPortal, connect: Connect) -> None:
        self.ready: Future[Client] = Future()
        self._stop: anyio.Event | None = None
        self.task: Future[None] = portal.start_task_soon(self._hold, connect)

    async def _hold(self, connect: Connect) -> None:
        self._stop = anyio.Event()
        try:
            async with connect() as client:
                self.ready.set_result(client)
                await self._stop.wait()
        except anyio.get_cancelled_exc_class():
            raise  # dropped or closed: the loop's business
        except BaseException as exc:  # a handshake that failed, or a session that broke
            if not self.ready.done():
                failed = exc if isinstance(exc, Exception) else ConnectionError(repr(exc))
                self.ready.set_exception(failed)
            LOG.debug("MCP session ended: %s", redact(str(exc)))
        finally:
            if not self.ready.done():  # cancelled before it opened
                self.ready.set_exception(ConnectionError("the MCP session was closed"))

    def end(self, portal: BlockingPortal, wait: float) -> None:
        """Leave an open session gracefully within ``wait`` seconds, else (or one still
        opening) cancel it."""
        opened = self.ready.done() and self.ready.exception() is None
        if wait > 0 and opened and self._stop is not None and not self.task.done():
            with contextlib.suppress(Exception):
                portal.start_task_soon(self._stop.set)
                wait_for([self.task], timeout=wait)
        self.task.cancel()


class _Connection:
    """The loop (a blocking portal on a daemon thread) and the current session, apart from
    ``SyncMcpClient`` so that its finaliser can close them."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self._session: _Session | None = None

    def _current(self) -> tuple[BlockingPortal, _Session]:
        with self._lock:
            if self._portal is None or self._thread is None or not self._thread.is_alive():
                self._portal, self._thread = _start_portal()
                self._session = None
            session = self._session
            if session is None or session.task.done():
                session = self._session = _Session(self._portal, self._connect)
            return self._portal, session

    def _drop(self, session: _Session) -> None:
        """Forget a broken session (the next call opens another) and cancel it."""
        with self._lock:
            if self._session is session:
                self._session = None
        session.task.cancel()

    def client(self, limit: float | None) -> Client:
        """The open session's client, opening one (within ``limit`` seconds) if needed."""
        return self._open(limit)[2]

    def _open(self, limit: float | None) -> tuple[BlockingPortal, _Session, Client]:
        portal, session = self._current()
        if not wait_for([session.ready], timeout=limit).done:
            self._drop(session)
            raise TimeoutError(f"no MCP session within {limit:.3g} s")
        try:
            return portal, session, session.ready.result()
        except Exception as exc:
            self._drop(session)
            raise _cause(exc) from exc

    def call(self, run: Callable[[Client], Awaitable[T]], limit: float | None) -> T:
        """``run(client)`` on the loop within ``limit`` seconds, opening a session first if
        there is none; a call past its limit is cancelled and its session dropped."""
        started = time.monotonic()
        portal, session, client = self._open(limit)
        left = None if limit is None else limit - (time.monotonic() - started)
        if left is not None and left <= 0:
            raise TimeoutError(f"no MCP answer within {limit:.3g} s")
        answer = portal.start_task_soon(run, client)
        if not wait_for([answer], timeout=left).done:
            answer.cancel()
            self._drop(session)
            raise TimeoutError(f"no MCP answer within {limit:.3g} s")
        try:
            return answer.result()
        except MCPError as exc:
            if exc.code in BROKEN_CODES:
                self._drop(session)
            raise
        except Exception as exc:
            self._drop(session)
            raise _cause(exc) from exc

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._portal is not None

    def close(self, wait: float) -> None:
        """End the session (gracefully within ``wait`` seconds) and stop the loop; never
        raises. On the loop's own thread (a collection there) nothing is waited for."""
        with self._lock:
            portal, thread, session = self._portal, self._thread, self._session
            self._portal = self._thread = self._session = None
        if portal is None or thread is None:
            return
        until = time.monotonic() + (0 if thread is threading.current_thread() else wait)
        try:
            if session is not None:
                session.end(portal, until - time.monotonic())
            portal.start_task_soon(portal.stop, True)
            thread.join(max(0.0, until - time.monotonic()))
        except Exception as exc:  # a loop that is gone, or this is its thread
            LOG.debug("closing the MCP client: %s", redact(str(exc)))


def _cause(exc: Exception) -> Exception:
    """The one error a task group wrapped (the SDK's transport runs in one), else ``exc``."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _start_portal() -> tuple[BlockingPortal, threading.Thread]:
    """A blocking portal on a daemon thread (anyio's ``start_blocking_portal`` joins its
    thread without a bound when closed, and at exit that can wait forever)."""
    made: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            made.set_result(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(serve)
        except BaseException as exc:  # the loop could not start
            if not made.done():
                made.set_exception(exc)

    thread = threading.Thread(target=run, name="adapter-mcp-client", daemon=True)
    thread.start()
    return made.result(), thread


def result_text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


class McpToolError(AssertionError):
    """A tool answered ``isError``: ``text`` is what the model would read, ``code`` the
    ContextQ error code its text names (or its error body's, when it sends one as
    ``structuredContent``, then ``body``)."""

    def __init__(self, tool: str, result: types.CallToolResult) -> None:
        self.tool = tool
        self.text = result_text(result)
        found = result.structured_content
        self.body: dict[str, Any] = found if isinstance(found, dict) else {}
        # a TypeScript server's tool error carries no body: its text names the code
        self.code = self.body.get("error") or wire.mcp_error_code(self.text)
        super().__init__(f"{tool}: {self.text}")
