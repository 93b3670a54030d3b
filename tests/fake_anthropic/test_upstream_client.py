"""The recording proxy's own HTTP/1.1 ends: its client to a plain-``http`` upstream
(``fake_anthropic.record.upstream``) and its server (``fake_anthropic.record.server``), against
an upstream scripted byte by byte, so each framing and each failure is the one named."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest

from fake_anthropic import RecordingProxy, load_recording
from fake_anthropic.record import proxy as proxy_module
from fake_anthropic.record.recording import PAGE, RecordingFile
from fake_anthropic.record.server import ServedProxy
from fake_anthropic.record.upstream import UpstreamError, UpstreamPool, plain_origin
from fake_server import bind_socket, url_for
from tests.support.raw_http import (
    JSON_BODY,
    Handler,
    RawUpstream,
    answering,
    json_answer,
    read_request,
)


def pool_for(url: str) -> UpstreamPool:
    origin = plain_origin(url)
    assert origin is not None
    return UpstreamPool(origin)


async def fetch(pool: UpstreamPool, body: bytes = b"{}") -> tuple[int, list[bytes]]:
    answer = await pool.send("POST", b"/v1/messages", [(b"x-api-key", b"k")], body)
    pieces = []
    while not answer.done:
        pieces.append(await answer.read())
    return answer.status, [p for p in pieces if p]


# --- the client -----------------------------------------------------------------------


def test_which_upstreams_the_client_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    origin = plain_origin("http://127.0.0.1:8080/gateway/")
    assert origin is not None
    assert (origin.host, origin.port, origin.authority, origin.prefix) == (
        "127.0.0.1",
        8080,
        b"127.0.0.1:8080",
        b"/gateway",
    )
    assert plain_origin("https://api.anthropic.com") is None  # httpx2 does TLS
    assert plain_origin("http://user:pw@gw:1") is None
    monkeypatch.setenv("HTTP_PROXY", "http://corporate-proxy:3128")
    assert plain_origin("http://gw.example:80") is None  # httpx2 goes through the proxy
    monkeypatch.setenv("NO_PROXY", "gw.example")
    assert plain_origin("http://gw.example:80") is not None


def test_a_content_length_answer_and_keep_alive_reuse(
    upstream_for: Callable[[Handler], RawUpstream],
) -> None:
    seen: list[bytes] = []

    def handler(conn: socket.socket, _server: RawUpstream) -> None:
        buffered = bytearray()
        while (request := read_request(conn, buffered)) is not None:
            seen.append(request)
            conn.sendall(json_answer())

    upstream = upstream_for(handler)
    pool = pool_for(upstream.url + "/base")

    async def three() -> list[tuple[int, list[bytes]]]:
        return [await fetch(pool, b'{"n":%d}' % i) for i in range(3)]

    assert asyncio.run(three()) == [(200, [JSON_BODY])] * 3
    assert upstream.accepted == pool.opened == 1  # one kept-alive connection for all three
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /base/v1/messages HTTP/1.1"
    assert set(lines[1:]) == {
        b"host: " + upstream.url.removeprefix("http://").encode(),
        b"x-api-key: k",
        b"content-length: 7",
    }
    assert body == b'{"n":0}'


def test_a_chunked_answer_is_dechunked_whatever_the_cuts(
    upstream_for: Callable[[Handler], RawUpstream],
) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
        b'5;ext=1\r\n{"a":\r\n'
        b"1A\r\n" + b'"' + b"x" * 24 + b'"' + b"\r\n"
        b"1\r\n}\r\n0\r\ntrailer: dropped\r\n\r\n"
    )

    def handler(conn: socket.socket, _server: RawUpstream) -> None:
        buffered = bytearray()
        while read_request(conn, buffered) is not None:
            for i in range(0, len(chunked), 7):  # cut anywhere, a chunk line included
                conn.sendall(chunked[i : i + 7])

    upstream = upstream_for(handler)
    pool = pool_for(upstream.url)

    async def twice() -> list[bytes]:
        return [b"".join((await fetch(pool))[1]) for _ in range(2)]

    assert asyncio.run(twice()) == [b'{"a":"' + b"x" * 24 + b'"}'] * 2
    assert pool.opened == 1


def test_a_close_delimited_answer_ends_with_the_connection(
    upstream_for: Callable[[Handler], RawUpstream],
) -> None:
    answer = b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n" + JSON_BODY
    upstream = upstream_for(answering(answer, close=True))
    pool = pool_for(upstream.url)

    async def twice() -> list[tuple[int, list[bytes]]]:
        return [await fetch(pool), await fetch(pool)]

    got = asyncio.run(twice())
    assert [(s, b"".join(p)) for s, p in got] == [(200, JSON_BODY)] * 2
    assert pool.opened == 2  # not reused: its end was the body's end


def test_sse_arrives_event_by_event(upstream_for: Callable[[Handler], RawUpstream]) -> None:
    first = b'event: message_start\ndata: {"type":"message_start"}\n\n'
    second = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'

    def handler(conn: socket.socket, server: RawUpstream) -> None:
        read_request(conn, bytearray())
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(first), first)
        )
        server.released = server.gate.wait(5)  # the second event only once the first was read
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(second), second))

    upstream = upstream_for(handler)
    pool = pool_for(upstream.url)

    async def stream() -> list[bytes]:
        answer = await pool.send("POST", b"/v1/messages", [], b"{}")
        got = [await answer.read()]
        upstream.gate.set()
        while not answer.done:
            got.append(await answer.read())
        return [g for g in got if g]

    assert asyncio.run(stream()) == [first, second]
    assert upstream.released  # the first event was read before the second was sent


def test_a_dropped_kept_alive_connection_is_replaced(
    upstream_for: Callable[[Handler], RawUpstream],
) -> None:
    upstream = upstream_for(answering(json_answer(), close=True))  # closes after each answer
    pool = pool_for(upstream.url)

    async def twice() -> list[tuple[int, list[bytes]]]:
        first = await fetch(pool)
        await asyncio.sleep(0.05)  # the upstream's close arrives while the connection idles
        return [first, await fetch(pool)]

    assert asyncio.run(twice()) == [(200, [JSON_BODY])] * 2
    assert upstream.accepted == 2


def test_a_connection_closed_mid_answer_is_an_error(
    upstream_for: Callable[[Handler], RawUpstream],
) -> None:
    cut = json_answer()[:-5]
    upstream = upstream_for(answering(cut, close=True))
    pool = pool_for(upstream.url)
    with pytest.raises(UpstreamError, match="broke off"):
        asyncio.run(fetch(pool))
    upstream_no_answer = upstream_for(answering(b"", close=True))
    with pytest.raises(UpstreamError, match="no answer"):
        asyncio.run(fetch(pool_for(upstream_no_answer.url)))


def test_an_unreachable_upstream_is_an_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(UpstreamError, match="cannot connect"):
        asyncio.run(fetch(pool_for(f"http://127.0.0.1:{port}")))


# --- through the proxy (its own server and client) --------------------------------------


@pytest.fixture
def proxied(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], tuple[str, RecordingProxy]]]:
    """Serve a recording proxy in front of an upstream URL; ``request.param`` "httpx"
    makes it use httpx2 (its https path) instead of its own client."""
    stops: list[Callable[[], None]] = []
    use_httpx = getattr(request, "param", "own") == "httpx"

    def serve(upstream: str) -> tuple[str, RecordingProxy]:
        with pytest.MonkeyPatch.context() as patch:
            if use_httpx:
                patch.setattr(proxy_module, "plain_origin", lambda _url: None)
            proxy = RecordingProxy(upstream, tmp_path / f"rec{len(stops)}.json")
        sock = bind_socket("127.0.0.1", 0)
        served = ServedProxy(proxy, sock)
        served.start()

        def stop() -> None:
            proxy.settle()
            proxy.close()
            served.stop()

        stops.append(stop)
        return url_for("127.0.0.1", sock.getsockname()[1]), proxy

    yield serve
    for stop in stops:
        stop()


@pytest.mark.parametrize("proxied", ["own", "httpx"], indirect=True)
def test_a_5xx_passes_through_and_is_recorded(
    upstream_for: Callable[[Handler], RawUpstream],
    proxied: Callable[[str], tuple[str, RecordingProxy]],
) -> None:
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}'
    upstream = upstream_for(
        answering(json_answer(529, error, b"x-should-retry: true\r\nretry-after: 1\r\n"))
    )
    url, proxy = proxied(upstream.url)
    with httpx2.Client(base_url=url) as client:
        got = client.post("/v1/messages", content=b"{}", headers={"x-api-key": "k"})
    assert (got.status_code, got.content) == (529, error)
    assert got.headers["retry-after"] == "1"
    proxy.settle()
    [exchange] = proxy.exchanges
    assert (exchange.status, exchange.response) == (529, json.loads(error))
    assert exchange.headers == {
        "content-type": "application/json",
        "retry-after": "1",
        "x-should-retry": "true",
    }


@pytest.mark.parametrize("proxied", ["own", "httpx"], indirect=True)
def test_sse_streams_through_the_proxy_event_by_event(
    upstream_for: Callable[[Handler], RawUpstream],
    proxied: Callable[[str], tuple[str, RecordingProxy]],
) -> None:
    events = [
        b'event: message_start\ndata: {"type":"message_start","message":'
        b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],'
        b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}'
        b"\n\n",
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]

    def handler(conn: socket.socket, server: RawUpstream) -> None:
        read_request(conn, bytearray())
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(events[0]), events[0])
        )
        server.released = server.gate.wait(5)
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(events[1]), events[1]))

    upstream = upstream_for(handler)
    url, proxy = proxied(upstream.url)
    with (
        httpx2.Client(base_url=url, timeout=10) as client,
        client.stream("POST", "/v1/messages", content=b"{}") as got,
    ):
        pieces = got.iter_raw()
        received = next(pieces)  # arrives while the upstream holds the second event back
        upstream.gate.set()
        received += b"".join(pieces)
    assert got.headers["content-type"] == "text/event-stream"
    assert upstream.released  # the first event got through before the second was sent
    assert received == b"".join(events)
    proxy.settle()
    [exchange] = proxy.exchanges
    assert exchange.stream and exchange.response == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


@pytest.mark.parametrize("proxied", ["own", "httpx"], indirect=True)
def test_an_unreachable_upstream_is_a_502(
    proxied: Callable[[str], tuple[str, RecordingProxy]],
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url, proxy = proxied(f"http://127.0.0.1:{port}")
    with httpx2.Client(base_url=url) as client:
        got = client.post("/v1/messages", content=b"{}")
    assert got.status_code == 502
    assert got.json()["error"]["type"] == "api_error"
    assert proxy.exchanges == [] and len(proxy.failures) == 1


def test_the_proxy_server_speaks_http_1_1_to_a_raw_client(
    upstream_for: Callable[[Handler], RawUpstream],
    proxied: Callable[[str], tuple[str, RecordingProxy]],
) -> None:
    upstream = upstream_for(answering(json_answer()))
    url, _proxy = proxied(upstream.url)
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as conn:
        # a chunked request body, and two requests in one write (pipelined)
        request = (
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
            b"2\r\n{}\r\n0\r\n\r\n"
        )
        conn.sendall(request + request)
        buffered = bytearray()
        answers = [read_request(conn, buffered) for _ in range(2)]
        conn.sendall(b"NOT HTTP\r\n\r\n")
        refused = read_request(conn, buffered)
    for answer in answers:
        assert answer is not None
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert answer.endswith(b"\r\n\r\n" + JSON_BODY)
    assert refused is not None and refused.startswith(b"HTTP/1.1 400 Bad Request\r\n")


# --- the recording file -----------------------------------------------------------------


def test_the_recording_file_appends_in_place_within_a_page(tmp_path: Path) -> None:
    from fake_anthropic.record.recording import Exchange

    path = tmp_path / "run.json"
    recording = RecordingFile(path)
    reply = json.loads(JSON_BODY)
    small = Exchange("POST", "/v1/messages", {"n": 0}, 200, reply)
    for i in range(40):
        recording.append(Exchange("POST", "/v1/messages", {"n": i}, 200, reply))
        recording.flush()
        assert [e.body for e in load_recording(path)] == [{"n": n} for n in range(i + 1)]
    assert recording.rewrites < 10  # the first write and one a page, not one an exchange
    big = Exchange("POST", "/v1/messages", {"text": "x" * PAGE}, 200, small.response)
    recording.append(big)  # more than a page: rewritten whole
    recording.close()
    assert len(load_recording(path)) == 41
    assert "    " * 20 not in path.read_text()  # closed: indented, no padding left
