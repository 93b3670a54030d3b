"""``fake-contextq mcp`` against a ContextQ that misbehaves: whatever the REST end answers
(not JSON, the wrong shape, too deep, a byte at a time, nothing at all), each tool call is
a tool error (``isError``) the model can read, within the bridge's deadline, and nothing
of the URL's password, query or fragment, nor of the key, is in what it reads or prints.

One bridge subprocess serves the module, against a raw HTTP server on loopback whose
answer each test sets.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mcp import MCPError, StdioServerParameters

from adapter import wire
from fake_contextq.mcp import McpToolError, SyncMcpClient
from tests.support.raw_http import RawUpstream, json_answer, read_request

pytestmark = pytest.mark.slow  # a subprocess and a socket: not in --quick

PASSWORD, TOKEN, FRAGMENT = "S3CRETPW", "T0KENVAL", "FRAGSECRET"
KEY = "sk_live_" + "5eC7e7" * 6 + "ab12"
DEADLINE = 1.5  # seconds: the bridge's --deadline here
Answer = Callable[[socket.socket], bool]  # writes one answer; False closes the connection


class Upstream:
    """What the REST end answers next: every request gets ``answer`` until a test sets
    another."""

    def __init__(self) -> None:
        self.answer: Answer = _raw(
            json_answer(200, b'{"items":[],"total":0,"limit":50,"offset":0}')
        )
        self.server = RawUpstream(self._handle)

    def _handle(self, conn: socket.socket, _server: RawUpstream) -> None:
        buffered = bytearray()
        while read_request(conn, buffered) is not None:
            if not self.answer(conn):
                return


def _raw(data: bytes) -> Answer:
    def send(conn: socket.socket) -> bool:
        conn.sendall(data)
        return True

    return send


def _hang_up(_conn: socket.socket) -> bool:
    return False


def _dripping(conn: socket.socket) -> bool:
    """A 200 that promises 400 bytes of JSON and sends one every 50 ms (20 s in all)."""
    body = b'{"id":1,"pad":"' + b"x" * 380 + b'"}'
    conn.sendall(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
        % len(body)
    )
    for byte in body:
        conn.sendall(bytes([byte]))
        time.sleep(0.05)
    return True


BRIDGE = (
    "import os, sys\n"
    "os.dup2(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2)\n"
    "from fake_contextq.cli.main import main\n"
    "sys.exit(main(['mcp', '--deadline', sys.argv[2]]))\n"
)


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    made = Upstream()
    yield made
    made.server.close()


@pytest.fixture(scope="module")
def stderr_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bridge") / "stderr.txt"


@pytest.fixture(scope="module")
def secret_url(upstream: Upstream) -> str:
    port = upstream.server.sock.getsockname()[1]
    return f"http://agent:{PASSWORD}@127.0.0.1:{port}/?token={TOKEN}#{FRAGMENT}"


@pytest.fixture(scope="module")
def bridge(secret_url: str, stderr_file: Path) -> Iterator[SyncMcpClient]:
    env = {**os.environ, wire.MCP_API_URL_ENV: secret_url, wire.MCP_API_KEY_ENV: KEY}
    params = StdioServerParameters(
        command=sys.executable, args=["-c", BRIDGE, str(stderr_file), str(DEADLINE)], env=env
    )
    with SyncMcpClient(params) as session:
        yield session


def shown() -> str:
    """The base URL as every message must show it."""
    return "http://agent:***@127.0.0.1:"


def assert_nothing_secret(text: str) -> None:
    for secret in (PASSWORD, TOKEN, FRAGMENT, KEY, KEY[len(wire.KEY_PREFIX) :]):
        assert secret not in text, (secret, text)


#: A whole context as REST answers it: a success must satisfy the tool's output schema.
CONTEXT_ROW = json.dumps(
    {
        "id": 1,
        "workspace": None,
        "type": "reference",
        "title": "t",
        "content": "c",
        "tags": [],
        "externalId": None,
        "metadata": {},
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
    }
)


def tool_error(bridge: SyncMcpClient, tool: str, args: dict[str, object]) -> McpToolError:
    """The call's result, which must be a tool error (a protocol error or a success fails)."""
    with pytest.raises(McpToolError) as caught:
        bridge.call(tool, args)
    assert_nothing_secret(caught.value.text)
    assert caught.value.body == {}  # as McpServer's tool errors: the text only
    return caught.value


# ----- unusable answers: a tool error saying so, never a success or a protocol error ------

HTML = b"<html><body>Bad gateway</body></html>"
UNUSABLE: list[tuple[str, str, dict[str, object], bytes, str]] = [
    (
        "a 200 that is not JSON",
        "ctx_get",
        {"id": 1},
        b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n%s"
        % (len(HTML), HTML),
        "200 and something unusable: a body that is not JSON",
    ),
    (
        "a 502 that is not JSON",
        "ctx_save",
        {"content": "x"},
        b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\ncontent-length: %d\r\n\r\n%s"
        % (len(HTML), HTML),
        "502 and something unusable: a body that is not JSON",
    ),
    (
        "an array for a context",
        "ctx_get",
        {"id": 1},
        json_answer(200, b"[1,2]"),
        "a JSON array where a JSON object was due",
    ),
    (
        "no body for a context",
        "ctx_get",
        {"externalId": "e"},
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        "no body where a JSON object was due",
    ),
    (
        "a page without items, two tags",
        "ctx_list",
        {"tags": ["a", "b"]},
        json_answer(200, b'{"total":3}'),
        "a list answer that is no page: no 'items'",
    ),
    (
        "a page without items, stats",
        "ctx_stats",
        {},
        json_answer(200, b'{"total":3}'),
        "a list answer that is no page: no 'items'",
    ),
    (
        "a page whose rows are no objects",
        "ctx_list",
        {"tags": ["a", "b"]},
        json_answer(200, b'{"items":[1],"total":1,"limit":50,"offset":0}'),
        "a list answer that is no page: a row that is not an object",
    ),
    (
        "an import answer without items",
        "ctx_import",
        {"contexts": [{"content": "x"}]},
        json_answer(200, b'{"created":1,"updated":0}'),
        "an import answer that is not one: no 'items'",
    ),
    (
        "an import answer whose item has no id",
        "ctx_import",
        {"contexts": [{"content": "x"}]},
        json_answer(200, b'{"created":1,"updated":0,"items":[{"title":"x"}]}'),
        "an import answer that is not one: no 'id'",
    ),
    (
        "an import answer whose count is no number",
        "ctx_import",
        {"contexts": [{"content": "x"}]},
        json_answer(200, b'{"created":"one","updated":0,"items":[]}'),
        "an import answer that is not one: a count that is not an integer",
    ),
    (
        "an import answer whose items are no list of objects",
        "ctx_import",
        {"contexts": [{"content": "x"}]},
        json_answer(200, b'{"created":1,"updated":0,"items":[7]}'),
        "an import answer that is not one: items that are not a list of objects",
    ),
    (
        "an import answer whose id is no integer",
        "ctx_import",
        {"contexts": [{"content": "x"}]},
        json_answer(200, b'{"created":1,"updated":0,"items":[{"id":"7"}]}'),
        "an import answer that is not one: an id that is not an integer",
    ),
    (
        "JSON nested too deep for the parser",
        "ctx_get",
        {"id": 1},
        json_answer(200, b"[" * 100_000 + b"]" * 100_000),
        f"JSON nested deeper than {wire.MAX_JSON_DEPTH} levels",
    ),
    (
        "JSON nested past the limit",
        "ctx_get",
        {"id": 1},
        json_answer(200, b'{"a":' + b"[" * 300 + b"]" * 300 + b"}"),
        f"JSON nested deeper than {wire.MAX_JSON_DEPTH} levels",
    ),
    (
        "NaN",
        "ctx_get",
        {"id": 1},
        json_answer(200, b'{"id":NaN}'),
        "a body that is not JSON (NaN is not JSON)",
    ),
    (
        "an error status without ContextQ's error body",
        "ctx_get",
        {"id": 1},
        json_answer(404, b'{"detail":"nope"}'),
        "404 and something unusable: a JSON object where ContextQ's error body was due",
    ),
    (
        "a redirect",
        "ctx_get",
        {"id": 1},
        b"HTTP/1.1 302 Found\r\nlocation: /elsewhere\r\ncontent-length: 0\r\n\r\n",
        "302 and something unusable: no answer to use",
    ),
]


@pytest.mark.parametrize(
    ("tool", "args", "answer", "what"),
    [pytest.param(*case[1:], id=case[0]) for case in UNUSABLE],
)
def test_an_unusable_answer_is_a_tool_error_saying_what_came(
    bridge: SyncMcpClient,
    upstream: Upstream,
    tool: str,
    args: dict[str, object],
    answer: bytes,
    what: str,
) -> None:
    upstream.answer = _raw(answer)
    error = tool_error(bridge, tool, args)
    assert error.text.startswith(f"The ContextQ at {shown()}"), error.text
    assert what in error.text, error.text


def test_a_call_after_an_unusable_answer_works(bridge: SyncMcpClient, upstream: Upstream) -> None:
    upstream.answer = _raw(json_answer(200, b"not json"))
    tool_error(bridge, "ctx_get", {"id": 1})
    upstream.answer = _raw(json_answer(200, b'{"items":[],"total":0,"limit":50,"offset":0}'))
    assert bridge.call("ctx_list", {})["total"] == 0


def test_a_lone_surrogate_in_an_answer_reaches_the_model_as_u_fffd(
    bridge: SyncMcpClient, upstream: Upstream
) -> None:
    """JSON.stringify writes a lone surrogate as an escape; the bridge's answer stays JSON."""
    row = {**json.loads(CONTEXT_ROW), "title": "TITLE"}
    answer = json.dumps(row).replace("TITLE", "a\\ud800b").encode()
    upstream.answer = _raw(json_answer(200, answer))
    assert bridge.call("ctx_get", {"id": 1})["title"] == "a\ufffdb"


# ----- secrets -------------------------------------------------------------------------------


def test_an_unreachable_contextq_is_named_without_the_urls_secrets_or_the_key(
    bridge: SyncMcpClient, upstream: Upstream, stderr_file: Path
) -> None:
    upstream.answer = _hang_up
    error = tool_error(bridge, "ctx_list", {})
    assert error.text.startswith(f"ContextQ could not be reached at {shown()}"), error.text
    assert "/?token=***#***" in error.text
    upstream.answer = _raw(json_answer(200, b"<oops>"))
    tool_error(bridge, "ctx_search", {"query": "x"})
    assert_nothing_secret(stderr_file.read_text("utf-8", "replace"))


# ----- the deadline ---------------------------------------------------------------------------


def test_a_dripping_contextq_is_a_tool_error_at_the_deadline_of_the_whole_call(
    bridge: SyncMcpClient, upstream: Upstream
) -> None:
    """Each byte comes well within any read timeout; the whole answer would take 20 s."""
    upstream.answer = _dripping
    started = time.monotonic()
    error = tool_error(bridge, "ctx_get", {"id": 1})
    elapsed = time.monotonic() - started
    assert f"within {DEADLINE:g} s" in error.text and shown() in error.text
    assert elapsed < DEADLINE + 1


def test_no_protocol_error_for_any_of_them(bridge: SyncMcpClient, upstream: Upstream) -> None:
    """A protocol error (code 0, a bare Python message) would reach the model as neither."""
    upstream.answer = _raw(json_answer(200, b'{"total":1}'))
    try:
        result = bridge.call_tool("ctx_stats", {})
    except MCPError as exc:  # pragma: no cover - the failure this test is for
        pytest.fail(f"a protocol error {exc.code}: {exc}")
    assert result.is_error


@pytest.mark.parametrize("key", [KEY[:20] + "\n" + KEY[20:], KEY + "é", KEY[:20] + " x"])
def test_a_key_no_header_can_carry_is_refused_at_start_without_showing_it(key: str) -> None:
    env = {**os.environ, wire.MCP_API_KEY_ENV: key}
    done = subprocess.run(
        [sys.executable, "-m", "fake_contextq.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "CONTEXT_API_KEY holds a space, a control character" in done.stderr
    assert KEY[10:20] not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "url",
    [
        f"http://u:{PASSWORD}@[::1/p?token={TOKEN}#{FRAGMENT}",  # no URL at all
        f"http://u:{PASSWORD}@127.0.0.1:99999/p?token={TOKEN}#{FRAGMENT}",
        f"ftp://u:{PASSWORD}@127.0.0.1/p?token={TOKEN}#{FRAGMENT}",
    ],
)
def test_a_url_the_bridge_cannot_use_is_refused_at_start_without_showing_its_secrets(
    url: str,
) -> None:
    """One line saying which variable to fix, not a traceback from the HTTP client (or a
    tool error on every call for a scheme it cannot speak)."""
    env = {**os.environ, wire.MCP_API_KEY_ENV: KEY, wire.MCP_API_URL_ENV: url}
    done = subprocess.run(
        [sys.executable, "-m", "fake_contextq.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fake-contextq mcp: CONTEXT_API_URL is no http(s) URL"), done
    assert "Traceback" not in done.stderr
    shown = done.stderr + done.stdout
    assert all(s not in shown for s in (PASSWORD, TOKEN, FRAGMENT, KEY[10:20])), shown
