"""A misbehaving ContextQ for the agent-memory contract: an HTTP/1.1 proxy (asyncio and
h11, on a loopback port of its own) in front of a served fake, which answers every request
as its ``mode`` says when the request arrives: ``healthy`` forwards it, and each of
``MODES`` misbehaves in one way (REST and MCP alike, or MCP's tool results only)."""

from __future__ import annotations

import asyncio
import json
import threading
from types import TracebackType
from typing import Any, Final, Self

import h11
import httpx2

#: Misbehaving at the HTTP level, whatever the request.
HTTP_MODES: Final = ("hang", "drip-headers", "drip-body", "close", "500", "garbage", "deep")
#: A healthy MCP answer whose tool results carry no structuredContent: their text as sent
#: (JSON, as a TypeScript server writes it), text that is not JSON, or too deep a JSON.
TEXT_MODES: Final = ("text-only", "text-garbage", "text-deep")
MODES: Final = HTTP_MODES + TEXT_MODES
DRIP_SECONDS = 1.0  # a byte a second: every read of a per-read timeout is answered in time
DEEP: Final = b"[" * 100_000 + b"]" * 100_000
HOP_BY_HOP: Final = frozenset(
    {b"host", b"connection", b"keep-alive", b"content-length", b"transfer-encoding",
     b"content-encoding", b"te", b"trailer", b"upgrade"}
)  # fmt: skip


class MisbehavingServer:
    """Serves on ``url`` until closed; ``mode`` may change at any time (a request takes
    the mode of its arrival, so a drip already under way goes on dripping)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.mode = "healthy"
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="misbehaving", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the misbehaving server did not start")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        tasks: set[asyncio.Task[None]] = set()

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)
            try:
                await self._serve(reader, writer)
            except (OSError, h11.ProtocolError, asyncio.CancelledError):
                pass  # the client left, or the server stops
            finally:
                tasks.discard(task)
                writer.close()

        async with httpx2.AsyncClient(timeout=30) as http:
            self._http = http
            server = await asyncio.start_server(accept, "127.0.0.1", 0)
            self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            self._ready.set()
            await self._stop.wait()
            server.close()
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request, body = await _read_request(conn, reader)
            if request is None:
                return
            mode = self.mode
            if mode == "hang":
                await asyncio.Event().wait()  # until the server stops
            if mode == "close":
                return
            status, headers, content = await self._answer(mode, request, body)
            head = conn.send(h11.Response(status_code=status, headers=headers))
            rest = conn.send(h11.Data(data=content)) + conn.send(h11.EndOfMessage())
            if mode == "drip-headers":
                await _drip(writer, head + rest)
            elif mode == "drip-body":
                writer.write(head)
                await _drip(writer, rest)
            else:
                writer.write(head + rest)
                await writer.drain()
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()

    async def _answer(
        self, mode: str, request: h11.Request, body: bytes
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        json_type = [(b"content-type", b"application/json")]
        if mode == "500":
            return 500, [(b"content-type", b"text/plain")], b"Internal Server Error"
        if mode == "garbage":
            return 200, json_type, b"<html>not JSON at all</html>"
        if mode == "deep":
            return 200, json_type, DEEP
        response = await self._http.request(
            request.method.decode(),
            self.upstream + request.target.decode(),
            headers=[(k, v) for k, v in request.headers if k.lower() not in HOP_BY_HOP],
            content=body,
        )
        content = response.content
        if mode in TEXT_MODES and response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            content = _text_only(mode, content)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
        return response.status_code, [*headers, (b"content-length", b"%d" % len(content))], content


async def _read_request(
    conn: h11.Connection, reader: asyncio.StreamReader
) -> tuple[h11.Request | None, bytes]:
    """The next request and its body; (None, b"") when the client closed."""
    request: h11.Request | None = None
    body = b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return request, body
        else:  # ConnectionClosed (or PAUSED, which a finished cycle never is here)
            return None, b""


async def _drip(writer: asyncio.StreamWriter, data: bytes) -> None:
    for i in range(len(data)):
        writer.write(data[i : i + 1])
        await writer.drain()
        await asyncio.sleep(DRIP_SECONDS)


def _text_only(mode: str, content: bytes) -> bytes:
    """A JSON-RPC answer with its tool result's structuredContent taken out, its text as
    ``mode`` says; a tool listing without output schemas (a server that sends no
    structuredContent declares none: clients refuse a result missing what it declared)."""
    try:
        message: Any = json.loads(content)
    except ValueError:  # no body (a notification's 202) or not JSON: nothing to take out
        return content
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        for tool in result["tools"]:
            if isinstance(tool, dict):
                tool.pop("outputSchema", None)
        return json.dumps(message).encode()
    if not isinstance(result, dict) or "content" not in result:
        return content  # not a tool result
    result.pop("structuredContent", None)
    if mode != "text-only":
        text = "Done, all good." if mode == "text-garbage" else DEEP.decode()
        result["content"] = [{"type": "text", "text": text}]
    return json.dumps(message).encode()
