"""Record a run once through the recording proxy, replay it offline.

The "real API" here is a served scripted model: each test records a run against it
through ``ScriptedModel.recorder`` (the proxy served in-process) or ``fake-anthropic
record`` (a subprocess), then replays the file with ``ScriptedModel.from_recording``
through the real SDK client, and checks what a test of an agent would: the final text,
the tool results, the rows in the fake ContextQ, and that drift fails with a diff.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

from adapter import ContextQMemoryTool, wire
from fake_anthropic import (
    ScriptedModel,
    api_error,
    compaction,
    load_recording,
    text,
    thinking,
    turn,
    web_search,
)
from fake_contextq import FakeContextQ
from tests.support.helpers import MEMORY_FINAL, MEMORY_PROMPT, memory_upstream

MODEL = "claude-opus-4-1"
KEY = "sk-ant-api03-obviously-fake-recording-key-0123456789"
PROMPT = MEMORY_PROMPT
FINAL = MEMORY_FINAL


class Store:
    """A fresh fake ContextQ with a workspace, and the memory tool bound to it."""

    def __init__(self) -> None:
        self.fake = FakeContextQ()
        self.tenant = self.fake.create_tenant()
        self.fake.create_workspace(self.tenant, "acme")
        key = self.fake.mint_key(self.tenant, wire.SCOPES)
        self.tool = ContextQMemoryTool(key, http_client=self.fake.client(), workspace="acme")

    def rows(self) -> list[tuple[str, str]]:
        return [(c.title, c.content) for c in self.fake.contexts(self.tenant)]


def run_agent(model: ScriptedModel, store: Store, *, threads: bool, stream: bool) -> Any:
    options: dict[str, Any] = {} if threads else {"thread": False}
    runner = model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=1024,
        tools=[store.tool],
        messages=PROMPT,
        stream=stream,
        **options,
    )
    return runner.until_done()


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A memory run recorded through the proxy (threads on, no stream)."""
    path = tmp_path / "run.json"
    record(path, threads=True, stream=False)
    return path


def record(path: Path, *, threads: bool, stream: bool) -> Any:
    upstream = memory_upstream()
    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(path, api_key=KEY, upstream=served.url)
        try:
            final = run_agent(recorder, Store(), threads=threads, stream=stream)
            recorder.verify()
        finally:
            recorder.close()
    upstream.verify()
    return final


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("threads", [True, False], ids=["threads-on", "threads-off"])
def test_a_recorded_memory_run_replays_offline(tmp_path: Path, threads: bool, stream: bool) -> None:
    path = tmp_path / "run.json"
    recorded_store = Store()
    upstream = memory_upstream()
    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(path, api_key=KEY, upstream=served.url)
        try:
            live = run_agent(recorder, recorded_store, threads=threads, stream=stream)
        finally:
            recorder.close()
    upstream.verify()
    assert live.content[0].text == FINAL
    assert [r.thread for r in recorder.requests] == (
        ["create", "continue", "continue", "continue"] if threads else [None] * 4
    )
    assert KEY not in path.read_text("utf-8")
    exchanges = load_recording(path)
    assert [e.stream for e in exchanges] == [stream] * 4
    assert all(e.message is not None for e in exchanges)

    replayed = ScriptedModel.from_recording(path)
    store = Store()
    final = run_agent(replayed, store, threads=threads, stream=stream)
    replayed.verify()
    assert final.content[0].text == FINAL
    assert [(r.content, r.is_error, r.name) for r in replayed.tool_results] == [
        (r.content, r.is_error, r.name) for r in recorder.tool_results
    ]
    assert len(replayed.tool_results) == 3
    assert store.rows() == recorded_store.rows() == [("prefs.md", "Prefers TypeScript and Rust.\n")]
    assert all(r.stream is stream for r in replayed.requests)


def test_the_async_client_replays_too(recorded: Path) -> None:
    replayed = ScriptedModel.from_recording(recorded)
    store = Store()

    async def main() -> Any:
        from adapter import AsyncContextQMemoryTool

        key = store.fake.mint_key(store.tenant, wire.SCOPES)
        tool = AsyncContextQMemoryTool(key, http_client=store.fake.async_client(), workspace="acme")
        runner = replayed.async_client.beta.messages.tool_runner(
            model=MODEL, max_tokens=1024, tools=[tool], messages=PROMPT
        )
        return await runner.until_done()

    final = asyncio.run(main())
    replayed.verify()
    assert final.content[0].text == FINAL
    assert store.rows() == [("prefs.md", "Prefers TypeScript and Rust.\n")]


def test_another_user_message_fails_with_a_diff(recorded: Path) -> None:
    replayed = ScriptedModel.from_recording(recorded)
    store = Store()
    drifted: Any = [{"role": "user", "content": "Remember that I prefer Go."}]
    with pytest.raises(anthropic.InternalServerError) as raised:
        replayed.client.beta.messages.tool_runner(
            model=MODEL, max_tokens=1024, tools=[store.tool], messages=drifted
        ).until_done()
    message = str(raised.value)
    assert "does not match exchange 1 of the recording" in message
    assert 'messages[0] (user).content[0] (text).text: recorded "Remember that I prefer' in message
    with pytest.raises(AssertionError) as failed:
        replayed.verify()
    report = str(failed.value)
    assert "request 1 does not match exchange 1" in report
    assert 'sent "Remember that I prefer Go."' in report
    assert "4 recorded exchange(s)" in report and "never replayed" in report


def test_another_tool_set_fails_with_a_diff(recorded: Path) -> None:
    replayed = ScriptedModel.from_recording(recorded)
    extra: Any = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}
    with pytest.raises(anthropic.InternalServerError) as raised:
        replayed.client.beta.messages.create(
            model=MODEL,
            max_tokens=1024,
            tools=[{"type": "memory_20250818", "name": "memory"}, extra],
            messages=PROMPT,
            betas=["message-threads-2026-08-12"],
            thread={"type": "create"},
        )
    assert 'tools[1] (custom): sent {"description": "Look up."' in str(raised.value) or (
        "tools[1]" in str(raised.value) and "not recorded" in str(raised.value)
    )
    replayed.allow_unused()
    with pytest.raises(AssertionError, match=r"tools\[1\]"):
        replayed.verify()


def test_order_matching_checks_only_the_endpoints(recorded: Path) -> None:
    replayed = ScriptedModel.from_recording(recorded, match="order")
    store = Store()
    drifted: Any = [{"role": "user", "content": "Something else entirely."}]
    final = replayed.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[store.tool], messages=drifted
    ).until_done()
    assert final.content[0].type == "text" and final.content[0].text == FINAL
    replayed.verify()
    assert store.rows() == [("prefs.md", "Prefers TypeScript and Rust.\n")]


def test_a_used_up_recording_fails_at_verify(recorded: Path) -> None:
    replayed = ScriptedModel.from_recording(recorded, match="order")
    run_agent(replayed, Store(), threads=True, stream=False)
    with pytest.raises(anthropic.InternalServerError, match="is used up"):
        replayed.client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
    with pytest.raises(AssertionError, match="is used up"):
        replayed.verify()


def test_count_tokens_errors_compaction_and_rich_blocks_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "rich.json"
    upstream = ScriptedModel()
    upstream.script(
        api_error(429, "rate_limit_error", "slow down", retry_after=0),
        turn(
            thinking("Let me search."),
            web_search("typescript", [("https://ts.example", "TS")]),
            text("Found it."),
        ),
        compaction("They like TypeScript."),
    )
    web: Any = {"type": "web_search_20250305", "name": "web_search"}
    thinking_on: Any = {"type": "enabled", "budget_tokens": 2048}
    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(path, api_key=KEY, upstream=served.url)
        try:
            client = recorder.client
            with pytest.raises(anthropic.RateLimitError):
                client.messages.create(model=MODEL, max_tokens=4096, messages=PROMPT)
            live = client.messages.create(
                model=MODEL, max_tokens=4096, messages=PROMPT, tools=[web], thinking=thinking_on
            )
            counted = client.messages.count_tokens(model=MODEL, messages=PROMPT)
            history: Any = [*PROMPT, {"role": "assistant", "content": "Found it."}]
            compacted = client.beta.messages.create(
                model=MODEL,
                max_tokens=4096,
                messages=history,
                compaction={"type": "summarize"},
                betas=["compact-2026-09-04"],
                stream=True,
            )
            events = list(compacted)
        finally:
            recorder.close()
    upstream.verify()
    assert [e.status for e in load_recording(path)] == [429, 200, 200, 200]
    assert KEY not in path.read_text("utf-8")

    replayed = ScriptedModel.from_recording(path)
    client = replayed.client
    with pytest.raises(anthropic.RateLimitError, match="slow down"):
        client.messages.create(model=MODEL, max_tokens=4096, messages=PROMPT)
    again = client.messages.create(
        model=MODEL, max_tokens=4096, messages=PROMPT, tools=[web], thinking=thinking_on
    )
    assert again.model_dump() == live.model_dump()
    assert client.messages.count_tokens(model=MODEL, messages=PROMPT) == counted
    stream_again = client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        compaction={"type": "summarize"},
        betas=["compact-2026-09-04"],
        stream=True,
    )
    assert [e.type for e in stream_again] == [e.type for e in events]
    replayed.verify()
    assert "counted" in replayed.transcript()
    assert "They like TypeScript." in replayed.transcript()


def test_credentials_never_reach_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    upstream = ScriptedModel()
    upstream.script(text("ok"), text("ok"))
    mcp: Any = [
        {
            "type": "url",
            "url": "https://mcp.example",
            "name": "x",
            "authorization_token": "mcp-token-0123456789",
        }
    ]
    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(path, api_key=KEY, upstream=served.url)
        try:
            said: Any = [{"role": "user", "content": f"my key is {KEY}"}]
            recorder.client.beta.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=said,
                mcp_servers=mcp,
                tools=[{"type": "mcp_toolset", "mcp_server_name": "x"}],
                betas=["mcp-client-2025-11-20"],
            )
            bearer = anthropic.Anthropic(
                auth_token="bearer-secret-0123456789", base_url=recorder.client.base_url
            )
            bearer.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
        finally:
            recorder.close()
    saved = path.read_text("utf-8")
    for secret in (KEY, "mcp-token-0123456789", "bearer-secret-0123456789", "x-api-key"):
        assert secret not in saved
    exchange, _ = load_recording(path)
    assert isinstance(exchange.body, dict)
    assert exchange.body["messages"][0]["content"] == "my key is [redacted]"
    assert exchange.body["mcp_servers"][0]["authorization_token"] == "[redacted]"
    assert set(exchange.headers) <= {"content-type", "request-id", "retry-after", "x-should-retry"}


# --- the command ------------------------------------------------------------------------


def start_recording(out: Path, upstream: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_anthropic", "record", "--upstream", upstream, "--out", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert "listening on" in first, first + (process.stderr.read() if process.stderr else "")
    url = process.stdout.readline().strip().removeprefix("ANTHROPIC_BASE_URL=")
    return process, url


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
@pytest.mark.slow  # a subprocess: not in --quick
def test_the_record_command_streams_through_and_stops_cleanly(
    tmp_path: Path, stop: signal.Signals
) -> None:
    out = tmp_path / "cli.json"
    upstream = ScriptedModel()
    upstream.script(text("One."), text("Two, streamed."))
    with upstream.serve() as served:
        process, url = start_recording(out, served.url)
        try:
            client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
            one = client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
            with client.messages.stream(model=MODEL, max_tokens=10, messages=PROMPT) as stream:
                pieces = list(stream.text_stream)
        finally:
            process.send_signal(stop)
            stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert "recorded 2 exchange(s)" in stdout
    assert one.content[0].type == "text" and one.content[0].text == "One."
    assert "".join(pieces) == "Two, streamed."
    assert len(pieces) > 1  # the events came through as events
    assert [e.stream for e in load_recording(out)] == [False, True]
    assert KEY not in out.read_text("utf-8")


@pytest.mark.slow  # a subprocess: not in --quick
def test_a_recording_cut_by_sigkill_still_loads(tmp_path: Path) -> None:
    out = tmp_path / "killed.json"
    upstream = ScriptedModel()
    upstream.script(text("One."), text("Two."))
    upstream.allow_unused()
    with upstream.serve() as served:
        process, url = start_recording(out, served.url)
        try:
            client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
            client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
            client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
            deadline = time.monotonic() + 10  # the writer thread follows the answers
            while len(load_recording(out)) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.communicate(timeout=20)
    exchanges = load_recording(out)
    assert len(exchanges) == 2
    replayed = ScriptedModel.from_recording(out)
    assert replayed.client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
    replayed.allow_unused()
    replayed.verify()
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_unreachable_upstream_is_a_502_and_recorded_as_nothing(tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    recorder = ScriptedModel.recorder(out, api_key=KEY, upstream="http://127.0.0.1:9")
    try:
        with pytest.raises(anthropic.APIStatusError) as raised:
            recorder.client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
    finally:
        recorder.close()
    assert raised.value.status_code == 502
    assert load_recording(out) == []
    with pytest.raises(
        AssertionError,
        match=re.escape("no answer from the upstream http://127.0.0.1:9: cannot connect"),
    ):
        recorder.verify()


@pytest.mark.slow  # a subprocess: not in --quick
def test_serve_replays_a_recording_over_http(recorded: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_anthropic", "serve", str(recorded), "--match", "order"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert "listening on" in process.stdout.readline()
    url = process.stdout.readline().strip().removeprefix("ANTHROPIC_BASE_URL=")
    try:
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        first = client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
        assert first.stop_reason == "tool_use"
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 1  # three exchanges never replayed
    assert "never replayed" in stderr


# --- JSON scripts share the item vocabulary ---------------------------------------------


def test_a_json_script_holds_every_item_kind(tmp_path: Path) -> None:
    script = [
        {
            "type": "api_error",
            "status": 529,
            "error": {"type": "overloaded_error", "message": "busy"},
        },
        {
            "content": [
                {"type": "thinking", "thinking": "Hmm."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "q"},
                },
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {"type": "text", "text": "Cited.", "citations": None},
            ],
            "stop_reason": "end_turn",
            "usage": {"cache_read_input_tokens": 7},
        },
        {"type": "compaction", "summary": "Short."},
        [{"type": "tool_use", "id": "toolu_x", "name": "lookup", "input": {"w": 1}}],
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), "utf-8")
    model = ScriptedModel.from_json(path)
    assert model.remaining == 4
    client = model.client
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT)
    assert raised.value.status_code == 529
    reply = client.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=PROMPT,
        tools=[{"type": "web_search_20250305", "name": "web_search"}],
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    assert [b.type for b in reply.content] == [
        "thinking",
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]
    assert reply.usage.cache_read_input_tokens == 7
    history: Any = [*PROMPT, {"role": "assistant", "content": "Cited."}]
    compacted = client.beta.messages.create(
        model=MODEL,
        max_tokens=10,
        messages=history,
        compaction={"type": "summarize"},
        betas=["compact-2026-09-04"],
    )
    assert compacted.stop_reason == "compaction"
    lookup: Any = [{"name": "lookup", "input_schema": {"type": "object"}}]
    call = client.messages.create(model=MODEL, max_tokens=10, messages=PROMPT, tools=lookup)
    assert call.content[0].type == "tool_use" and call.content[0].id == "toolu_x"
    model.verify()


@pytest.mark.parametrize(
    ("item", "fault"),
    [
        ({"type": "compaction"}, "a compaction is"),
        ({"type": "api_error", "status": 429}, "an api error is"),
        ([{"type": "server_tool_use", "name": "web_search", "input": {}}], "followed by its"),
        ({"content": [], "stop_reason": "sleepy"}, "stop_reason must be one of"),
        ([{"type": "image"}], "the scripted model plays"),
    ],
)
def test_a_bad_json_item_is_named(item: object, fault: str) -> None:
    with pytest.raises(ValueError, match=fault) as raised:
        ScriptedModel.from_json([[{"type": "text", "text": "fine"}], item])
    assert str(raised.value).startswith(("item 1", "turn 1"))
