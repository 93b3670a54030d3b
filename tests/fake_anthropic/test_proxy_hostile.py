"""The recording proxy under a hostile client, over raw sockets on loopback.

The upstream is a served scripted model behind a counting ASGI layer, so what it actually
received (how many requests, with which targets and header values) is observable: a
smuggled request or a duplicate model call shows as one request too many. Each test is
one way the proxy once broke; each asserts what the client got, what the upstream got,
and what the recording holds.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest

from fake_anthropic import RecordingProxy, ScriptedModel, load_recording, text
from fake_anthropic.http import ASGIApp, Receive, Scope, Send
from fake_anthropic.record import proxy as proxy_module
from fake_anthropic.record.server import Limits, ServedProxy
from fake_server import ServedApp, bind_socket
from tests.support.raw_http import (
    Handler,
    RawUpstream,
    json_answer,
    read_all,
    read_request,
    send_raw,
    status_of,
)

KEY = "sk-ant-api03-hostile-client-test-key-0123456789abcdef"
MESSAGE = b'{"model":"claude-opus-4-1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}'


@dataclass
class Seen:
    """What the upstream received."""

    targets: list[bytes] = field(default_factory=list)
    headers: list[list[tuple[bytes, bytes]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def counting(app: ASGIApp, seen: Seen) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            target = scope["raw_path"] + (
                b"?" + scope["query_string"] if scope["query_string"] else b""
            )
            with seen.lock:
                seen.targets.append(target)
                seen.headers.append(list(scope["headers"]))
        await app(scope, receive, send)

    return wrapped


@dataclass
class Stack:
    """A counting served model, and the recording proxy in front of it."""

    model: ScriptedModel
    seen: Seen
    proxy: RecordingProxy
    port: int
    out: Path

    def request(
        self, head_extra: bytes = b"", body: bytes = MESSAGE, target: bytes = b"/v1/messages"
    ) -> bytes:
        head = (
            b"POST " + target + b" HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\n"
            b"x-api-key: " + KEY.encode() + b"\r\nanthropic-version: 2023-06-01\r\n"
            b"connection: close\r\n" + head_extra + b"content-length: %d\r\n\r\n" % len(body)
        )
        return send_raw(self.port, head + body)

    def recorded(self) -> list[Any]:
        self.proxy.settle()
        self.proxy.flush()
        return load_recording(self.out)


@pytest.fixture
def stack_for(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    stops: list[Callable[[], None]] = []

    def make(turns: int = 3, *, limits: Limits | None = None, via_httpx: bool = False) -> Stack:
        model = ScriptedModel()
        model.script(*[text(f"answer {i}") for i in range(turns)])
        model.allow_unused()
        seen = Seen()
        upstream = ServedApp(counting(model.app, seen), name="counted-model")
        upstream.start()
        out = tmp_path / f"rec{len(stops)}.json"
        with pytest.MonkeyPatch.context() as patch:
            if via_httpx:
                patch.setattr(proxy_module, "plain_origin", lambda _url: None)
            proxy = RecordingProxy(upstream.url, out)
        sock = bind_socket("127.0.0.1", 0)
        served = ServedProxy(proxy, sock, limits=limits)
        served.start()

        def stop() -> None:
            proxy.settle()
            proxy.close()
            served.stop()
            upstream.stop()

        stops.append(stop)
        return Stack(model, seen, proxy, sock.getsockname()[1], out)

    yield make
    for stop in stops:
        stop()


# --- a request cannot hang the proxy --------------------------------------------------


@pytest.mark.parametrize("size", [b"-6", b"0x60", b"6_0", b" 60", b"+60", b"1" * 25])
def test_a_malformed_chunk_size_is_a_400_and_the_proxy_serves_on(
    stack_for: Callable[..., Stack], size: bytes
) -> None:
    stack = stack_for()
    answer = send_raw(
        stack.port,
        b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ntransfer-encoding: chunked\r\n\r\n"
        + size
        + b"\r\n"
        + b"x" * 96
        + b"\r\n0\r\n\r\n",
    )
    assert status_of(answer) == 400
    assert b"malformed request" in answer
    assert status_of(stack.request()) == 200  # the next client is answered
    assert len(stack.seen.targets) == 1


# --- no smuggling ---------------------------------------------------------------------


def test_a_bare_lf_in_a_header_cannot_smuggle_a_request(stack_for: Callable[..., Stack]) -> None:
    stack = stack_for()
    smuggled = b"GET /v1/models HTTP/1.1\r\nhost: p\r\n\r\n"
    # The proxy reads a bare LF as a line end (RFC 9112 section 2.2), as the upstream does,
    # so the "content-length: 0" after it frames the body for both: the smuggled bytes
    # are that request's body, never a request of their own.
    first = stack.request(b"x-note: a\ncontent-length: 0\r\n", body=b"")
    assert status_of(first) == 400  # two different content-lengths
    answer = send_raw(
        stack.port,
        b"POST /v1/messages HTTP/1.1\r\nhost: p\r\nconnection: close\r\nx-note: a\n"
        b"content-length: %d\r\ncontent-type: application/json\r\n\r\n" % len(smuggled) + smuggled,
    )
    innocent = stack.request()
    assert status_of(answer) == 400  # the upstream refused the body, not JSON; no 2nd request
    assert status_of(innocent) == 200 and b"answer" in innocent
    assert [t for t in stack.seen.targets if t != b"/v1/messages"] == []
    for headers in stack.seen.headers:
        assert all(b"\n" not in v and b"\r" not in v for _, v in headers)


@pytest.mark.parametrize("value", [b"a\rb", b"a\x00b", b"\x00"])
def test_a_header_value_with_cr_or_nul_is_a_400(
    stack_for: Callable[..., Stack], value: bytes
) -> None:
    stack = stack_for()
    assert status_of(stack.request(b"x-note: " + value + b"\r\n")) == 400
    assert stack.seen.targets == []


@pytest.mark.parametrize(
    "extra",
    [
        b"content-length: 5\r\n",  # a second, different content-length
        b"transfer-encoding: chunked\r\n",  # content-length and transfer-encoding
    ],
)
def test_ambiguous_framing_is_refused_and_the_connection_closed(
    stack_for: Callable[..., Stack], extra: bytes
) -> None:
    stack = stack_for()
    answer = stack.request(extra, body=b"{}")
    assert status_of(answer) == 400
    assert answer.count(b"HTTP/1.1") == 1
    assert stack.seen.targets == []


# --- the target stays on the upstream ---------------------------------------------------


@pytest.mark.parametrize("via_httpx", [False, True])
@pytest.mark.parametrize(
    "target",
    [
        b"@127.0.0.1:{other}/v1/messages",
        b"*",
        b"http://127.0.0.1:{other}/v1/messages",
        b"v1/messages",
    ],
)
def test_only_origin_form_targets_are_taken(
    stack_for: Callable[..., Stack],
    upstream_for: Callable[[Handler], RawUpstream],
    target: bytes,
    via_httpx: bool,
) -> None:
    other = upstream_for(lambda conn, _server: conn.sendall(json_answer()))
    stack = stack_for(via_httpx=via_httpx)
    port = other.url.rsplit(":", 1)[1].encode()
    answer = stack.request(target=target.replace(b"{other}", port))
    assert status_of(answer) == 400
    assert b"only origin-form targets" in answer
    assert b"Traceback" not in answer
    assert other.accepted == 0 and stack.seen.targets == []


@pytest.mark.parametrize("via_httpx", [False, True])
def test_the_target_goes_upstream_byte_for_byte(
    stack_for: Callable[..., Stack], via_httpx: bool
) -> None:
    stack = stack_for(via_httpx=via_httpx)
    target = b"/v1/messages%3Fx=1%23frag?beta=true&q=%2F%40"
    stack.request(target=target)
    assert stack.seen.targets == [target]


# --- the key stays out of the recording ---------------------------------------------------


def test_every_credential_is_redacted_wherever_it_occurs(stack_for: Callable[..., Stack]) -> None:
    stack = stack_for()
    query_key = "qk-0123456789-query-secret"
    body = json.dumps(
        {
            "model": "claude-opus-4-1",
            "max_tokens": 10,
            "metadata": {KEY: "a key as a JSON object key"},
            "messages": [{"role": "user", "content": f"my key is {KEY}"}],
        }
    ).encode()
    stack.request(
        b"anthropic-beta: tools-2024, " + KEY.encode() + b"\r\n",
        body=body,
        target=b"/v1/messages?key=" + query_key.encode(),
    )
    # no credential header at all: the query parameter is the credential
    bare = (
        b"POST /v1/messages?api_key=ak-0123456789-bare-secret HTTP/1.1\r\nhost: p\r\n"
        b"connection: close\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        % len(MESSAGE)
        + MESSAGE
    )
    assert status_of(send_raw(stack.port, bare)) == 401  # the model wants an x-api-key
    stack.proxy.settle()
    stack.proxy.close()
    saved = stack.out.read_text()
    for secret in (KEY, query_key, "ak-0123456789-bare-secret"):
        assert secret not in saved
    first, second = load_recording(stack.out)
    assert first.path == "/v1/messages?key=[redacted]"
    assert second.path == "/v1/messages?api_key=[redacted]"
    assert first.betas == ["tools-2024", "[redacted]"]
    assert isinstance(first.body, dict)
    assert first.body["metadata"] == {"[redacted]": "a key as a JSON object key"}
    assert first.body["messages"][0]["content"] == "my key is [redacted]"


# --- limits -------------------------------------------------------------------------------


def test_a_body_over_the_limit_is_a_413_as_it_streams_in(stack_for: Callable[..., Stack]) -> None:
    stack = stack_for(limits=Limits(max_body=1024))
    huge = b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ncontent-length: %d\r\n\r\n"
    assert status_of(send_raw(stack.port, huge % 10**22)) == 400  # no such length
    declared = send_raw(stack.port, huge % 1025)
    assert status_of(declared) == 413  # refused before a byte of the body is read
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        conn.sendall(
            b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n" % (2**76)
        )
        conn.sendall(b"x" * 2048)  # past the limit: refused before the chunk's end
        chunked = read_all(conn)
    assert status_of(chunked) == 413
    assert b"over 1024 bytes" in chunked
    assert stack.seen.targets == []


def test_a_head_over_the_limit_is_refused_however_it_arrives(
    stack_for: Callable[..., Stack],
) -> None:
    stack = stack_for()
    big = b"x-pad: " + b"a" * 100 * 1024 + b"\r\n"
    assert status_of(stack.request(big)) == 431  # one write
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: p\r\n")
        for i in range(0, len(big), 4096):
            conn.sendall(big[i : i + 4096])
        assert status_of(read_all(conn)) == 431  # many writes
    assert stack.seen.targets == []


def test_a_client_still_sending_when_refused_reads_the_refusal(
    stack_for: Callable[..., Stack],
) -> None:
    """The proxy refuses a body over its limit from the head alone; a client that goes on
    sending the body, as plain HTTP clients do, still reads the 413 rather than a reset."""
    stack = stack_for(limits=Limits(max_body=1024))
    body = b"x" * (4 * 1024 * 1024)
    head = b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ncontent-length: %d\r\n\r\n" % len(body)
    for _ in range(3):
        answer = send_raw(stack.port, head + body)
        assert status_of(answer) == 413, answer[:200]
    assert stack.seen.targets == []


def test_idle_and_half_sent_requests_time_out(stack_for: Callable[..., Stack]) -> None:
    stack = stack_for(limits=Limits(head_timeout=0.3, read_timeout=0.3, idle_timeout=0.3))
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        assert read_all(conn) == b""  # idle: closed, nothing said
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: p\r\n")
        assert status_of(read_all(conn)) == 408  # half a head
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ncontent-length: 10\r\n\r\n{}")
        assert status_of(read_all(conn)) == 408  # half a body
    assert stack.seen.targets == []


# --- what held before, on the new ends ------------------------------------------------------


def test_bare_lf_http_1_0_expect_continue_and_pipelining_are_answered(
    stack_for: Callable[..., Stack],
) -> None:
    stack = stack_for(turns=6)
    auth = b"x-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
    json_length = b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(MESSAGE)
    close = b"connection: close\r\n"
    lf = b"POST /v1/messages HTTP/1.1\r\nhost: p\r\n" + close + auth + json_length + MESSAGE
    assert status_of(send_raw(stack.port, lf.replace(b"\r\n", b"\n"))) == 200
    got = send_raw(stack.port, b"POST /v1/messages HTTP/1.0\r\n" + auth + json_length + MESSAGE)
    assert status_of(got) == 200 and got.startswith(b"HTTP/1.1 200")
    with socket.create_connection(("127.0.0.1", stack.port), timeout=10) as conn:
        expect = b"expect: 100-continue\r\n"
        conn.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: p\r\n" + expect + auth + json_length)
        assert conn.recv(100).startswith(b"HTTP/1.1 100 ")
        conn.sendall(MESSAGE)
        one = b"POST /v1/messages HTTP/1.1\r\nhost: p\r\n" + auth + json_length + MESSAGE
        conn.sendall(one + one.replace(auth, auth + close))  # pipelined, in one write
        rest = read_all(conn)
    assert rest.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert len(stack.seen.targets) == len(stack.recorded()) == 5


def test_200_concurrent_connections_each_get_their_own_answer(
    stack_for: Callable[..., Stack],
) -> None:
    stack = stack_for(turns=200)
    answers: list[bytes] = [b""] * 200

    def one(i: int) -> None:
        body = MESSAGE.replace(b'"hi"', b'"hi %d"' % i)
        answers[i] = stack.request(body=body)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert all(status_of(a) == 200 for a in answers)
    recorded = stack.recorded()
    assert len(recorded) == len(stack.seen.targets) == 200
    pairs = {e.body["messages"][0]["content"]: e.message["content"][0]["text"] for e in recorded}
    assert len(pairs) == 200 and len(set(pairs.values())) == 200  # each its own answer
    texts = {json.loads(a.partition(b"\r\n\r\n")[2])["content"][0]["text"] for a in answers}
    assert texts == set(pairs.values())


# --- no duplicate upstream calls; only what the client got --------------------------------


def _proxy_to(
    upstream: str, tmp_path: Path, *, via_httpx: bool = False
) -> tuple[RecordingProxy, ServedProxy, int]:
    with pytest.MonkeyPatch.context() as patch:
        if via_httpx:
            patch.setattr(proxy_module, "plain_origin", lambda _url: None)
        proxy = RecordingProxy(upstream, tmp_path / "raw.json")
    sock = bind_socket("127.0.0.1", 0)
    served = ServedProxy(proxy, sock)
    served.start()
    return proxy, served, sock.getsockname()[1]


@pytest.mark.parametrize("via_httpx", [False, True])
def test_a_post_is_never_sent_upstream_twice(
    upstream_for: Callable[[Handler], RawUpstream], tmp_path: Path, via_httpx: bool
) -> None:
    received: list[bytes] = []

    def handler(conn: socket.socket, _server: RawUpstream) -> None:
        buffered = bytearray()
        while (request := read_request(conn, buffered)) is not None:
            received.append(request)
            if len(received) == 2:
                return  # read the whole request, then close without answering
            conn.sendall(json_answer())

    upstream = upstream_for(handler)
    proxy, served, port = _proxy_to(upstream.url, tmp_path, via_httpx=via_httpx)
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            first = client.post("/v1/messages", content=MESSAGE)
            second = client.post("/v1/messages", content=MESSAGE)
    finally:
        proxy.settle()
        proxy.close()
        served.stop()
    assert first.status_code == 200
    assert second.status_code == 502
    if not via_httpx:
        assert "not sent again" in second.json()["error"]["message"]
    assert second.headers["x-should-retry"] == "false"  # the upstream may have taken it
    assert len(received) == 2 and upstream.accepted == 1
    assert len(proxy.exchanges) == 1


@pytest.mark.parametrize("via_httpx", [False, True])
def test_a_refused_connection_is_a_502_the_client_may_retry(
    tmp_path: Path, via_httpx: bool
) -> None:
    """Nothing of the request left, so a retry cannot bill it twice. Before: ``false``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        proxy, served, proxy_port = _proxy_to(
            f"http://127.0.0.1:{port}", tmp_path, via_httpx=via_httpx
        )
        try:
            answer = send_raw(
                proxy_port,
                b"POST /v1/messages HTTP/1.1\r\nhost: p\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n" % len(MESSAGE) + MESSAGE,
            )
        finally:
            proxy.settle()
            proxy.close()
            served.stop()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_of(answer) == 502
    assert b"\r\nx-should-retry: true\r\n" in head
    error = json.loads(body)["error"]
    assert error["type"] == "api_error"
    assert error["message"].endswith("(nothing of the request was sent: a retry is safe)")
    assert proxy.exchanges == [] and len(proxy.failures) == 1


@pytest.mark.parametrize("via_httpx", [False, True])
@pytest.mark.parametrize(
    "target", [b"/v1/messages#frag", b"/v1/messages?beta=true&key=Qk-0123456789-secret#x"]
)
def test_a_raw_hash_in_the_target_is_a_400_in_the_apis_envelope(
    stack_for: Callable[..., Stack], target: bytes, via_httpx: bool
) -> None:
    """A target has no fragment. Before: a 500 with a traceback in the log (httpx2), or the
    target sent upstream as it was."""
    stack = stack_for(via_httpx=via_httpx)
    answer = stack.request(target=target)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_of(answer) == 400
    assert b"content-type: application/json" in head
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error"
    assert "holds a raw '#'; a request target has no fragment" in error["message"]
    assert b"Qk-0123456789-secret" not in answer  # a credential in the query is not echoed
    assert stack.seen.targets == [] and stack.recorded() == []
    assert status_of(stack.request()) == 200  # and it serves on


@pytest.mark.parametrize("via_httpx", [False, True])
@pytest.mark.parametrize(
    ("body", "fault"),
    [
        (b"[1]", 'response.body must be a Messages response (an object with "type": "message")'),
        (b'{"type":"message","content":[]}', "response.body.id must be a string"),
    ],
)
def test_an_answer_replay_could_not_serve_passes_through_but_is_not_recorded(
    upstream_for: Callable[[Handler], RawUpstream],
    tmp_path: Path,
    body: bytes,
    fault: str,
    via_httpx: bool,
) -> None:
    """Before: recorded, and the file then failed to load (or, unchecked, replayed as an
    empty event stream the SDK failed on)."""

    def handler(conn: socket.socket, _server: RawUpstream) -> None:
        read_request(conn, bytearray())
        conn.sendall(json_answer(body=body))

    upstream = upstream_for(handler)
    proxy, served, port = _proxy_to(upstream.url, tmp_path, via_httpx=via_httpx)
    try:
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            answer = client.post("/v1/messages?api_key=Qk-0123456789-secret", content=MESSAGE)
    finally:
        proxy.settle()
        proxy.close()
        served.stop()
    assert answer.status_code == 200 and answer.content == body
    assert load_recording(tmp_path / "raw.json") == []
    assert proxy.failures == [
        f"POST /v1/messages?api_key=[redacted]: not recorded, it could not be replayed: {fault}"
    ]


def test_an_answer_the_client_did_not_get_is_not_recorded(
    upstream_for: Callable[[Handler], RawUpstream], tmp_path: Path
) -> None:
    first = (
        b'event: message_start\ndata: {"type":"message_start","message":'
        b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],'
        b'"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}'
        b"\n\n"
    )
    last = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    gone = threading.Event()

    def handler(conn: socket.socket, server: RawUpstream) -> None:
        buffered = bytearray()
        n = 0
        while read_request(conn, buffered) is not None:
            n += 1
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(first), first)
            )
            if n == 1:
                gone.wait(10)  # the client leaves before the stream's end
            conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))

    upstream = upstream_for(handler)
    proxy, served, port = _proxy_to(upstream.url, tmp_path)
    request = (
        b"POST /v1/messages HTTP/1.1\r\nhost: p\r\ncontent-length: %d\r\n\r\n" % len(MESSAGE)
        + MESSAGE
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(request)
            assert conn.recv(65536).startswith(b"HTTP/1.1 200")
        gone.set()
        retried = send_raw(
            port, request.replace(b"host: p\r\n", b"host: p\r\nconnection: close\r\n")
        )
        assert retried.endswith(b"0\r\n\r\n")
    finally:
        proxy.settle()
        proxy.close()
        served.stop()
    assert len(load_recording(tmp_path / "raw.json")) == 1  # the retry, once
    assert len(proxy.abandoned) == 1 and proxy.failures == []


# --- a password in --upstream is never shown ---------------------------------------------


@pytest.mark.slow  # a subprocess: not in --quick
def test_a_password_in_the_upstream_is_masked_everywhere(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there: every request is a 502
    upstream = f"http://user:Pw-0123456789-secret@127.0.0.1:{port}"
    command = [sys.executable, "-m", "fake_anthropic", "record", "--upstream", upstream]
    process = subprocess.Popen(
        [*command, "--out", str(tmp_path / "r.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = [process.stdout.readline(), process.stdout.readline()]
    url = lines[1].strip().split("=", 1)[1]
    with httpx2.Client(base_url=url, timeout=10) as client:
        answer = client.post("/v1/messages", content=MESSAGE)
    process.terminate()
    out, err = process.communicate(timeout=30)
    assert answer.status_code == 502
    shown = "".join(lines) + out + err + answer.text
    assert "Pw-0123456789-secret" not in shown
    assert "user:***@127.0.0.1" in lines[0]
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "fake_anthropic",
            "record",
            "--out",
            str(tmp_path / "q.json"),
            "--upstream",
            "http://gw.example/?key=Qk-0123456789-secret",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert refused.returncode == 2
    assert "Qk-0123456789-secret" not in refused.stdout + refused.stderr
    assert "key=***" in refused.stderr and "Traceback" not in refused.stderr
