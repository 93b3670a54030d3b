"""The scripted model as a plain ASGI app, so a subprocess can reach it over HTTP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Protocol

from fake_anthropic.engine.engine import Answer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Handler(Protocol):
    """What answers a request: the scripted engine, or a replayed recording."""

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> Answer: ...


async def read_body(receive: Receive) -> bytes | None:
    """A request's whole body from its ``http.request`` messages; None if the client went
    away first."""
    body = bytearray()
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return None
        body += event.get("body", b"")
        if not event.get("more_body", False):
            return bytes(body)


def asgi_app(engine: Handler) -> ASGIApp:
    """An ASGI app answering every HTTP request through ``engine``, one SSE event a chunk."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif event["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        if body is None:
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        query = scope.get("query_string", b"").decode("latin-1")
        answer = engine.handle(scope["method"], scope["path"], query, headers, body)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers],
            }
        )
        for chunk in answer.chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app
