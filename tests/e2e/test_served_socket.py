"""Served fakes answer a kept-alive connection's later requests without the delayed-ACK
stall: the connections they accept have ``TCP_NODELAY`` set (checked on the socket, not
timed). Every served path (``fake-contextq serve``, ``FakeContextQ.serve()``,
``fake-anthropic serve``, ``ScriptedModel.serve()``) listens through ``fake_server``."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ
from fake_server import ServedApp, bind_socket


async def _nodelay_probe(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
    """Answers with the TCP_NODELAY option of the connection the request came on."""
    if scope["type"] != "http":
        return
    await receive()
    transport = send.__self__.transport
    sock = transport.get_extra_info("socket")
    flag = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    body = json.dumps({"nodelay": bool(flag)}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


def test_an_accepted_connection_has_nodelay_set() -> None:
    with ServedApp(_nodelay_probe) as served:
        served.start()
        with httpx2.Client(base_url=served.url) as client:  # one kept-alive connection
            answers = [client.get("/").json() for _ in range(3)]
    assert answers == [{"nodelay": True}] * 3


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_the_listening_socket_is_bound_as_tcp(host: str) -> None:
    try:
        sock = bind_socket(host, 0)
    except OSError as exc:
        pytest.skip(f"{host} cannot be bound here: {exc}")
    with sock:
        assert sock.proto == socket.IPPROTO_TCP


# ----- the served fake under hostile requests ----------------------------------------------


class _CountingBody:
    """Wraps an ASGI app, counting the request body bytes the app reads (pulls through
    ``receive``): what the server must hold for it, since uvicorn stops reading the socket
    once 64 KiB wait unread."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.read = 0

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        async def counted() -> MutableMapping[str, Any]:
            message: MutableMapping[str, Any] = await receive()
            self.read += len(message.get("body", b""))
            return message

        await self.app(scope, counted, send)


def test_a_huge_chunked_upload_gets_413_without_being_read_past_the_limit() -> None:
    """A 120 MiB body with no length (chunked): the fake stops reading at the 8 MiB limit
    and answers 413, so what it holds stays flat however much the client sends."""
    mib = 1024 * 1024
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        block = b"x" * mib
        for _ in range(120):
            sent += len(block)
            yield block

    with FakeContextQ() as fake:
        key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
        counting = _CountingBody(fake.app)
        with ServedApp(counting) as served:
            served.start()
            with httpx2.Client(base_url=served.url, timeout=120) as client:
                response = client.post(
                    "/api/contexts",
                    content=chunks(),
                    headers={
                        "Authorization": wire.authorization(key),
                        "content-type": "application/json",
                    },
                )
        assert response.status_code == 413, response.text
        assert response.json()["error"] == "payload_too_large"
        assert "reading stopped" in response.json()["message"]
        assert wire.MAX_BODY_BYTES < counting.read <= wire.MAX_BODY_BYTES + 2 * mib
        assert fake.contexts(1) == []


@pytest.mark.parametrize(
    "header", ["Bearer \u00e9".encode("latin-1"), "Bearer \u00e9".encode(), b"Bearer \xff\xfe"]
)
def test_a_malformed_control_token_is_a_401(header: bytes) -> None:
    with (
        FakeContextQ() as fake,
        fake.serve(control_token="fkc_right") as served,
        httpx2.Client(base_url=served.url) as client,
    ):
        for path in ("/_fake/tenants", "/_fake/journal"):
            response = client.get(path, headers={b"Authorization": header})
            assert response.status_code == 401, response.text
            assert response.json()["error"] == "unauthorized"


def test_a_stop_answers_the_request_in_flight_first() -> None:
    """A stop is graceful: the request being answered gets its whole answer, then the
    server stops (and an idle kept-alive connection does not hold it up)."""
    entered, release = threading.Event(), threading.Event()

    async def slow(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        entered.set()
        while not release.is_set():
            await asyncio.sleep(0.005)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    answers: list[str] = []
    with ServedApp(slow) as served:
        served.start()
        idle = httpx2.Client(base_url=served.url, timeout=60)
        release.set()
        assert idle.get("/").text == "done"  # now an idle kept-alive connection
        entered.clear()
        release.clear()
        asking = threading.Thread(target=lambda: answers.append(idle.get("/").text))
        asking.start()
        assert entered.wait(30)
        stopping = threading.Thread(target=served.stop)
        stopping.start()
        stopping.join(0.3)
        assert stopping.is_alive(), "stop() did not wait for the request in flight"
        release.set()
        stopping.join(30)
        asking.join(30)
        idle.close()
    assert answers == ["done"]
