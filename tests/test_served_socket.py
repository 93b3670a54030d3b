"""Served fakes answer a kept-alive connection's later requests without the delayed-ACK
stall: the connections they accept have ``TCP_NODELAY`` set (checked on the socket, not
timed). Every served path (``fake-contextq serve``, ``FakeContextQ.serve()``,
``fake-anthropic serve``, ``ScriptedModel.serve()``) listens through ``fake_server``."""

from __future__ import annotations

import json
import socket
from collections.abc import MutableMapping
from typing import Any

import httpx2
import pytest

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
