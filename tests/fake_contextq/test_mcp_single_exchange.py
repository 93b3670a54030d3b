"""``/mcp`` answers a POST of one JSON-RPC request without the SDK's per-request transport
(``mcp.exchange.SingleExchange``): every answer, and what the journal keeps of it, must be
the one the SDK's stateless transport gives."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator, MutableMapping
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, ServedFake
from fake_contextq.mcp.exchange import SingleExchange

_JSON_AND_SSE = "application/json, text/event-stream"


def _rpc(method: str, params: Any = None, rid: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


_INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}

#: read as U+FFFD before either answers it (``endpoint.well_formed_body``)
_LONE = {"externalId": "\ud800"}

#: (what the request is, its JSON body or raw bytes, headers over the usual ones)
_REQUESTS: list[tuple[str, Any, dict[str, str]]] = [
    ("a tool call", _rpc("tools/call", {"name": "ctx_get", "arguments": {"id": 1}}), {}),
    ("a string id", _rpc("tools/call", {"name": "ctx_get", "arguments": {"id": 1}}, "a"), {}),
    ("a REST refusal", _rpc("tools/call", {"name": "ctx_get", "arguments": {"id": 99}}), {}),
    ("an unknown tool", _rpc("tools/call", {"name": "nope", "arguments": {}}), {}),
    ("bad arguments", _rpc("tools/call", {"name": "ctx_get", "arguments": {"id": "x"}}), {}),
    ("bad params", _rpc("tools/call", {"name": 3}), {}),
    ("no params", _rpc("tools/call"), {}),
    ("the listing", _rpc("tools/list"), {}),
    ("a ping", _rpc("ping"), {}),
    ("an unknown method", _rpc("nope/nothing"), {}),
    ("an unserved capability", _rpc("resources/list"), {}),
    ("initialize", _rpc("initialize", _INITIALIZE), {}),
    ("a lone surrogate", _rpc("tools/call", {"name": "ctx_get", "arguments": _LONE}), {}),
    ("an older version", _rpc("tools/list"), {"MCP-Protocol-Version": "2025-03-26"}),
    ("no version header", _rpc("tools/list"), {"MCP-Protocol-Version": ""}),
    ("a notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, {}),
    ("a batch", [_rpc("ping"), _rpc("tools/list", rid=2)], {}),
    ("a response", {"jsonrpc": "2.0", "id": 1, "result": {}}, {}),
    ("not JSON", b"{nope", {}),
    ("not JSON-RPC", {"id": 1}, {}),
    ("JSON only", _rpc("ping"), {"Accept": "application/json"}),
    ("no JSON accepted", _rpc("ping"), {"Accept": "text/event-stream"}),
    ("another content type", _rpc("ping"), {"Content-Type": "text/plain"}),
    ("a listed content type", _rpc("ping"), {"Content-Type": "application/json, text/x"}),
    ("a charset", _rpc("ping"), {"Content-Type": "application/json; charset=utf-8"}),
]
#: what only the SDK's transport answers: any other is the single exchange's to answer
_LEFT_TO_THE_SDK = {
    "a notification",
    "a batch",
    "a response",
    "not JSON",
    "not JSON-RPC",
    "no JSON accepted",
    "another content type",
}


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    tenant = fake.create_tenant("acme")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as client:
        client.post(
            "/api/contexts", json={"type": "reference", "title": "A", "content": "x"}
        ).raise_for_status()
    with fake.serve() as running:
        yield running


def _post(served: ServedFake, key: str, body: Any, headers: dict[str, str]) -> httpx2.Response:
    sent = {
        "Authorization": wire.authorization(key),
        "Accept": _JSON_AND_SSE,
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    sent.update(headers)
    sent = {k: v for k, v in sent.items() if v}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with httpx2.Client() as c:
        return c.post(served.mcp_url, content=content, headers=sent)


def _mcp_entries(fake: FakeContextQ) -> list[Any]:
    return [e for e in fake.journal if e.path == wire.MCP_PATH]


def _seen(served: ServedFake, key: str, body: Any, headers: dict[str, str]) -> tuple[Any, ...]:
    """The answer and the request's journal entry, less what differs by the moment. The
    entry is recorded once the request has ended, which for a 202 can be after its answer
    has reached the client."""
    fake = served.fake
    assert fake is not None
    before = len(_mcp_entries(fake))
    answer = _post(served, key, body, headers)
    deadline = time.monotonic() + 5
    while len(_mcp_entries(fake)) == before and time.monotonic() < deadline:
        time.sleep(0.001)
    entry = _mcp_entries(fake)[-1]
    headers_seen = [(k, v) for k, v in answer.headers.multi_items() if k.lower() != "date"]
    journaled = (entry.status, entry.tenant_id, entry.request_body, entry.response_body)
    return answer.status_code, headers_seen, answer.content, journaled


def test_each_answer_is_the_sdk_transports_own(
    fake: FakeContextQ, served: ServedFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = fake.mint_key(fake.tenants()[0], wire.SCOPES)
    answered: list[bool] = []
    answer = SingleExchange.answer

    async def watched(self: SingleExchange, *args: Any) -> bool:
        answered.append(await answer(self, *args))
        return answered[-1]

    async def declined(self: SingleExchange, *args: Any) -> bool:
        return False

    for what, body, headers in _REQUESTS:
        monkeypatch.setattr(SingleExchange, "answer", watched)
        alone = _seen(served, key, body, headers)
        monkeypatch.setattr(SingleExchange, "answer", declined)
        by_sdk = _seen(served, key, body, headers)
        assert alone == by_sdk, what
        assert answered.pop() is (what not in _LEFT_TO_THE_SDK), what


def _transports_made(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each per-request transport the SDK's session manager builds from now on."""
    from mcp.server import streamable_http

    made: list[object] = []
    transport = streamable_http.StreamableHTTPServerTransport

    class Counted(transport):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr("mcp.server.streamable_http_manager.StreamableHTTPServerTransport", Counted)
    return made


def test_a_single_request_is_answered_without_the_sdks_transport(
    fake: FakeContextQ, served: ServedFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = fake.mint_key(fake.tenants()[0], wire.SCOPES)
    made = _transports_made(monkeypatch)
    for what, body, headers in _REQUESTS:
        answer = _post(served, key, body, headers)
        assert bool(made) is (what in _LEFT_TO_THE_SDK), (what, answer.text)
        made.clear()


@pytest.mark.parametrize("sdk", ["lacking the parts", "an unchecked release"])
def test_an_sdk_the_shortcut_cannot_trust_answers_through_its_transport(
    fake: FakeContextQ, served: ServedFake, monkeypatch: pytest.MonkeyPatch, sdk: str
) -> None:
    """The shortcut uses parts of the SDK that are not all its public API and repeats its
    transport's checks: on a release it was not held to the transport with, or one lacking
    those parts, ``/mcp`` still answers every request, through the SDK's transport."""
    import sys

    from fake_contextq.mcp import endpoint

    key = fake.mint_key(fake.tenants()[0], wire.SCOPES)
    if sdk == "lacking the parts":
        monkeypatch.setitem(sys.modules, "fake_contextq.mcp.exchange", None)  # ImportError
    else:
        monkeypatch.setattr(endpoint, "SHORTCUT_SDK_RELEASES", ("9.9.",))
    made = _transports_made(monkeypatch)
    call = _rpc("tools/call", {"name": "ctx_get", "arguments": {"id": 1}})
    answer = _post(served, key, call, {})
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["structuredContent"]["title"] == "A"
    assert len(made) == 1


async def _asgi_post(app: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> list[Any]:
    """What ``app`` (a served fake's, its lifespan running) sends for one POST to ``/mcp``,
    less the ``date`` header: for a request that no HTTP server's parser lets through."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": wire.MCP_PATH,
        "raw_path": wire.MCP_PATH.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # the client stays until answered
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            kept = sorted((k, v) for k, v in message["headers"] if k != b"date")
            sent.append((int(message["status"]), kept))
        else:
            sent.append(message.get("body", b""))

    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize("declared", [b"\xb2", b"\xb9\xb2"])  # latin-1 superscript digits
def test_a_content_length_int_cannot_read_is_the_sdks_to_answer(
    fake: FakeContextQ, monkeypatch: pytest.MonkeyPatch, declared: bytes
) -> None:
    """A ``Content-Length`` of digits other than ASCII ones (``str.isdigit`` holds, ``int``
    refuses; an HTTP server's parser refuses it, an ASGI caller need not): the SDK's body
    limit ignores a length it cannot read and answers the body, so the shortcut must leave
    it to the SDK rather than fail on it."""
    key = fake.mint_key(fake.create_tenant("acme"), wire.SCOPES)
    app = fake.served_app()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"authorization", wire.authorization(key).encode()),
        (b"accept", _JSON_AND_SSE.encode()),
        (b"content-type", b"application/json"),
        (b"mcp-protocol-version", b"2025-11-25"),
        (b"content-length", declared),
    ]
    body = json.dumps(_rpc("ping")).encode()
    answer = SingleExchange.answer

    async def declined(self: SingleExchange, *args: Any) -> bool:
        return False

    async def both() -> tuple[list[Any], list[Any]]:
        lifespan: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        lifespan.put_nowait({"type": "lifespan.startup"})
        started = asyncio.Event()

        async def sent(message: MutableMapping[str, Any]) -> None:
            started.set()

        async def served() -> None:
            await app({"type": "lifespan"}, lifespan.get, sent)

        running = asyncio.create_task(served())
        await started.wait()
        try:
            alone = await _asgi_post(app, list(headers), body)
            monkeypatch.setattr(SingleExchange, "answer", declined)
            by_sdk = await _asgi_post(app, list(headers), body)
            monkeypatch.setattr(SingleExchange, "answer", answer)
        finally:
            lifespan.put_nowait({"type": "lifespan.shutdown"})
            await running
        return alone, by_sdk

    alone, by_sdk = asyncio.run(both())
    assert by_sdk[0][0] == 200, by_sdk
    assert alone == by_sdk
