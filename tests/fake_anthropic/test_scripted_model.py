"""The scripted model: a fake Messages API the SDK cannot tell from the real one.

Each test drives it through the ``anthropic`` SDK (create, streaming, the tool runner with
threads on and off, sync and async, over HTTP) and checks what the SDK received and what
the fake recorded: the answers' shape, the event stream, the tool results, the server-held
threads, context editing, the errors, and the verification at the end of a test.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock
from anthropic.types.beta import BetaMessage, BetaMessageParam, BetaTextBlock

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool, wire
from fake_anthropic import (
    Conversation,
    ScriptedModel,
    ToolResult,
    memory,
    text,
    tool_use,
    turn,
)
from fake_anthropic.engine.assumptions import CLEARED_TOOL_RESULT_TEXT
from fake_contextq import FakeContextQ, Tenant

MODEL = "claude-opus-4-1"
THREADS = "message-threads-2026-08-12"
CONTEXT_MANAGEMENT = "context-management-2025-06-27"
PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
TOOLS: Any = [
    {"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}
]

VIEW_EMPTY = (
    "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
    "items:\n0B\t/memories"
)
CREATED = "File created successfully at: /memories/prefs.md"
EDITED = (
    "The memory file has been edited. Here is the snippet showing the change (with line "
    "numbers):\n     1\tPrefers TypeScript and Rust.\n     2\t"
)


def first_text(message: Message | BetaMessage) -> str:
    """The text of a reply whose first block must be a text block."""
    block = message.content[0]
    assert isinstance(block, TextBlock | BetaTextBlock), block
    return block.text


def estimate(value: object) -> int:
    """The documented default estimate, computed independently of the fake."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) / 4)


@dataclass
class Backend:
    """A fake ContextQ with a workspace, and memory tools bound to it."""

    fake: FakeContextQ
    tenant: Tenant
    key: str

    def tool(self) -> ContextQMemoryTool:
        return ContextQMemoryTool(self.key, http_client=self.fake.client(), workspace="acme")

    def async_tool(self) -> AsyncContextQMemoryTool:
        return AsyncContextQMemoryTool(
            self.key, http_client=self.fake.async_client(), workspace="acme"
        )

    def files(self) -> list[tuple[str, str]]:
        return [(c.title, c.content) for c in self.fake.contexts(self.tenant)]


@pytest.fixture
def backend() -> Backend:
    fake = FakeContextQ()
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "acme")
    return Backend(fake, tenant, fake.mint_key(tenant, wire.SCOPES))


def memory_script(model: ScriptedModel) -> None:
    model.script(
        memory.view("/memories"),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        memory.str_replace("/memories/prefs.md", "TypeScript", "TypeScript and Rust"),
        text("Noted: TypeScript and Rust."),
    )


# --- create ------------------------------------------------------------------------


def test_create_answers_like_the_api() -> None:
    model = ScriptedModel()
    model.script(text("Hello."), turn(text("Looking."), tool_use("lookup", {"word": "fake"})))
    plain = model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    beta = model.client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=PROMPT, tools=TOOLS
    )

    assert plain.id.startswith("msg_")
    assert beta.id.startswith("msg_")
    assert plain.id != beta.id
    assert (plain.type, plain.role, plain.model) == ("message", "assistant", MODEL)
    assert [b.model_dump(exclude_none=True) for b in plain.content] == [
        {"type": "text", "text": "Hello."}
    ]
    assert (plain.stop_reason, plain.stop_sequence) == ("end_turn", None)
    assert plain.usage.input_tokens == estimate({"messages": PROMPT})
    assert plain.usage.output_tokens == estimate([{"type": "text", "text": "Hello."}])

    assert beta.stop_reason == "tool_use"
    call = beta.content[1]
    assert call.type == "tool_use"
    assert (call.name, call.input) == ("lookup", {"word": "fake"})
    assert call.id.startswith("toolu_")
    assert beta.usage.input_tokens == estimate({"tools": TOOLS, "messages": PROMPT})

    first, second = model.requests
    assert (first.thread, first.betas, first.messages, first.turn) == (None, [], PROMPT, 1)
    assert first.body["max_tokens"] == 64
    assert second.response is not None
    assert second.response["id"] == beta.id
    assert model.remaining == 0
    model.verify()


def test_create_async() -> None:
    model = ScriptedModel()
    model.script(text("One."), text("Two."))

    async def main() -> list[str]:
        first = await model.async_client.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT
        )
        second = await model.async_client.beta.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT
        )
        return [first_text(first), first_text(second)]

    assert asyncio.run(main()) == ["One.", "Two."]
    assert [r.turn for r in model.requests] == [1, 2]
    model.verify()


def test_generated_tool_use_ids_are_unique_even_for_one_block_played_twice() -> None:
    model = ScriptedModel()
    call = tool_use("lookup", {"word": "x"})
    model.script(call, call)
    blocks = [
        model.client.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT, tools=TOOLS
        ).content[0]
        for _ in range(2)
    ]
    ids = [block.id for block in blocks if isinstance(block, ToolUseBlock)]
    assert len(ids) == 2
    assert ids[0] != ids[1]
    model.verify()


def test_token_estimate_is_pluggable() -> None:
    seen: list[str] = []

    def count(json_text: str) -> int:
        seen.append(json_text)
        return 7

    model = ScriptedModel(token_estimate=count)
    model.script(text("Hi."))
    reply = model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (7, 7)
    assert json.loads(seen[0]) == {"messages": PROMPT}
    assert json.loads(seen[-1]) == [{"type": "text", "text": "Hi."}]


# --- streaming ---------------------------------------------------------------------

RAW_EVENTS = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}
LONG_INPUT = {"command": "create", "path": "/memories/a.md", "file_text": "línea 1\nline 2\n"}


def check_events(events: list[Any], final: Any) -> None:
    raw = [e for e in events if e.type in RAW_EVENTS]
    kinds = [e.type for e in raw]
    pieces = [
        sum(1 for e in raw if e.type == "content_block_delta" and e.index == i) for i in (0, 1)
    ]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    start = raw[0].message
    assert (start.content, start.stop_reason) == ([], None)
    assert start.usage.input_tokens == final.usage.input_tokens

    opened = [e for e in raw if e.type == "content_block_start"]
    assert [e.content_block.type for e in opened] == ["text", "tool_use"]
    assert opened[0].content_block.text == ""
    assert opened[1].content_block.input == {}
    assert kinds == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * pieces[0],
        "content_block_stop",
        "content_block_start",
        *["content_block_delta"] * pieces[1],
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    text_pieces = [e.delta.text for e in raw if e.type == "content_block_delta" and e.index == 0]
    json_pieces = [
        e.delta.partial_json for e in raw if e.type == "content_block_delta" and e.index == 1
    ]
    assert {e.delta.type for e in raw if e.type == "content_block_delta" and e.index == 1} == {
        "input_json_delta"
    }
    assert len(text_pieces) > 1
    assert len(json_pieces) > 2
    assert "".join(text_pieces) == "Saving that to memory now."
    assert json.loads("".join(json_pieces)) == LONG_INPUT

    delta = raw[-2]
    assert delta.delta.stop_reason == "tool_use"
    assert delta.usage.output_tokens == final.usage.output_tokens > 1
    assert delta.usage.input_tokens == final.usage.input_tokens
    assert final.content[0].text == "Saving that to memory now."
    assert final.content[1].input == LONG_INPUT
    assert final.stop_reason == "tool_use"


def streaming_model() -> ScriptedModel:
    model = ScriptedModel()
    model.script(turn(text("Saving that to memory now."), tool_use("memory", LONG_INPUT)))
    return model


MEMORY_TOOL_PARAM: list[Any] = [{"type": "memory_20250818", "name": "memory"}]


def test_stream_sync_through_the_stream_helper() -> None:
    model = streaming_model()
    with model.client.beta.messages.stream(
        model=MODEL, max_tokens=256, messages=PROMPT, tools=MEMORY_TOOL_PARAM
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    check_events(events, final)
    assert model.requests[0].stream is True
    model.verify()


def test_stream_async_through_the_stream_helper() -> None:
    model = streaming_model()

    async def main() -> tuple[list[Any], Any]:
        async with model.async_client.beta.messages.stream(
            model=MODEL, max_tokens=256, messages=PROMPT, tools=MEMORY_TOOL_PARAM
        ) as stream:
            events = [e async for e in stream]
            return events, await stream.get_final_message()

    check_events(*asyncio.run(main()))
    model.verify()


def test_every_event_on_the_wire_has_its_event_line() -> None:
    model = streaming_model()
    http = httpx2.Client(transport=httpx2.MockTransport(model.handle))
    response = http.post(
        "http://scripted.test/v1/messages",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        json={
            "model": MODEL,
            "max_tokens": 256,
            "messages": PROMPT,
            "tools": MEMORY_TOOL_PARAM,
            "stream": True,
        },
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in response.text.split("\n\n") if f]
    for frame in frames:
        event_line, data_line = frame.split("\n")
        assert event_line.startswith("event: ")
        assert json.loads(data_line.removeprefix("data: "))["type"] == event_line[7:]
    names = [f.split("\n")[0][7:] for f in frames]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-1] == "message_stop"


def test_requests_without_the_api_headers_are_refused() -> None:
    model = ScriptedModel()
    model.script(text("unused"))
    model.allow_unused()
    http = httpx2.Client(transport=httpx2.MockTransport(model.handle))
    body = {"model": MODEL, "max_tokens": 8, "messages": PROMPT}
    url = "http://scripted.test/v1/messages"
    no_key = http.post(url, headers={"anthropic-version": "2023-06-01"}, json=body)
    no_version = http.post(url, headers={"x-api-key": "k"}, json=body)
    assert (no_key.status_code, no_key.json()["error"]["type"]) == (401, "authentication_error")
    assert (no_version.status_code, no_version.json()["error"]["type"]) == (
        400,
        "invalid_request_error",
    )
    assert model.remaining == 1
    model.verify()


# --- the tool runner with the project's memory tool --------------------------------


def check_memory_run(model: ScriptedModel, backend: Backend, final: Any, threads: bool) -> None:
    assert final.content[0].text == "Noted: TypeScript and Rust."
    assert [(r.content, r.is_error, r.name) for r in model.tool_results] == [
        (VIEW_EMPTY, False, "memory"),
        (CREATED, False, "memory"),
        (EDITED, False, "memory"),
    ]
    assert all(isinstance(r, ToolResult) for r in model.tool_results)
    assert backend.files() == [("prefs.md", "Prefers TypeScript and Rust.\n")]

    requests = model.requests
    assert len(requests) == 4
    assert all(r.ok for r in requests)
    assert {"type": "memory_20250818", "name": "memory"} in requests[0].body["tools"]
    if threads:
        assert [r.thread for r in requests] == ["create", "continue", "continue", "continue"]
        assert all(THREADS in r.betas for r in requests)
        for before, after in itertools.pairwise(requests):
            assert before.response is not None
            assert after.previous_message_id == before.response["id"]
            assert "tools" not in after.body
            assert len(after.body["messages"]) == 1
    else:
        assert [r.thread for r in requests] == [None] * 4
        assert all(r.betas == [] for r in requests)
        assert [len(r.body["messages"]) for r in requests] == [1, 3, 5, 7]
    # Either way the fake rebuilds the same full conversation.
    last = requests[-1].messages
    assert [m["role"] for m in last] == ["user", "assistant"] * 3 + ["user"]
    assert last[0] == PROMPT[0]
    assert last[-1]["content"][0]["content"] == EDITED
    assert [len(r.new_messages) for r in requests] == [1, 1, 1, 1]
    model.verify()


@pytest.mark.parametrize("threads", [True, False], ids=["threads-on", "threads-off"])
@pytest.mark.parametrize("mode", ["sync", "sync-stream", "async", "async-stream"])
def test_tool_runner_with_the_memory_tool(backend: Backend, mode: str, threads: bool) -> None:
    model = ScriptedModel()
    memory_script(model)
    options: dict[str, Any] = {} if threads else {"thread": False}
    stream = mode.endswith("stream")

    if mode.startswith("sync"):
        runner = model.client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=1024,
            tools=[backend.tool()],
            messages=PROMPT,
            stream=stream,
            **options,
        )
        final = runner.until_done()
    else:

        async def main() -> Any:
            runner = model.async_client.beta.messages.tool_runner(
                model=MODEL,
                max_tokens=1024,
                tools=[backend.async_tool()],
                messages=PROMPT,
                stream=stream,
                **options,
            )
            return await runner.until_done()

        final = asyncio.run(main())
    check_memory_run(model, backend, final, threads)
    assert all(r.stream is stream for r in model.requests)


def test_a_script_function_reacts_to_tool_results(backend: Backend) -> None:
    model = ScriptedModel()
    shown: list[Conversation] = []

    def after_create(conversation: Conversation) -> Any:
        shown.append(conversation)
        [result] = conversation.last_tool_results
        if result.is_error:
            return text("Could not save it.")
        return memory.view("/memories/prefs.md")

    def after_view(conversation: Conversation) -> Any:
        shown.append(conversation)
        [result] = conversation.last_tool_results
        numbered = [line for line in result.content.splitlines() if "\t" in line]
        return text(f"Saved; it reads: {numbered[0].split(chr(9))[1]}")

    model.script(memory.create("/memories/prefs.md", "Prefers TypeScript.\n"), after_create)
    model.script(after_view)
    final = model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
    ).until_done()

    assert first_text(final) == "Saved; it reads: Prefers TypeScript."
    assert shown[0].last_tool_results == [
        ToolResult(model.tool_results[0].tool_use_id, CREATED, False, "memory")
    ]
    assert len(shown[0].messages) == 3
    assert len(shown[1].messages) == 5
    assert shown[1].tools == [{"type": "memory_20250818", "name": "memory"}]
    model.verify()


def test_tool_errors_reach_the_record_as_errors(backend: Backend) -> None:
    model = ScriptedModel()
    model.script(memory.view("/memories/../etc/passwd"), text("Sorry."))
    model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
    ).until_done()
    [result] = model.tool_results
    assert result.is_error is True
    assert "would escape /memories" in result.content
    model.verify()


def test_the_runner_runs_tools_only_on_a_tool_use_stop(backend: Backend) -> None:
    model = ScriptedModel()
    model.script(turn(memory.create("/memories/prefs.md", "x\n"), stop_reason="end_turn"))
    final = model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
    ).until_done()
    assert (final.stop_reason, final.content[0].type) == ("end_turn", "tool_use")
    assert len(model.requests) == 1
    assert model.tool_results == []
    assert backend.files() == []
    model.verify()


def test_all_results_of_a_turn_come_back_in_one_user_message(backend: Backend) -> None:
    model = ScriptedModel()
    model.script(
        turn(memory.create("/memories/a.md", "A\n"), memory.create("/memories/b.md", "B\n")),
        text("Both saved."),
    )
    model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
    ).until_done()
    [results_message] = model.requests[1].new_messages
    assert results_message["role"] == "user"
    assert [b["type"] for b in results_message["content"]] == ["tool_result", "tool_result"]
    assert [r.content for r in model.tool_results] == [
        "File created successfully at: /memories/a.md",
        "File created successfully at: /memories/b.md",
    ]
    assert sorted(backend.files()) == [("a.md", "A\n"), ("b.md", "B\n")]
    model.verify()


# --- script exhaustion, both ways --------------------------------------------------


def test_a_request_after_the_script_is_used_up_fails_and_verify_says_so(
    backend: Backend,
) -> None:
    model = ScriptedModel()
    model.script(memory.create("/memories/prefs.md", "Prefers TypeScript.\n"))
    with pytest.raises(anthropic.APIStatusError) as caught:
        model.client.beta.messages.tool_runner(
            model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
        ).until_done()
    assert caught.value.status_code == 500
    assert "script is used up" in str(caught.value)
    assert f'tool_result #1 ok "{CREATED}"' in str(caught.value)

    over = model.requests[-1]
    assert over.error is not None
    assert over.turn is None
    assert [r.content for r in model.tool_results] == [CREATED]
    with pytest.raises(AssertionError, match="used up: 1 turn"):
        model.verify()
    model.allow_unused()  # the opt-out covers unplayed turns, never an overrun
    with pytest.raises(AssertionError, match="request 2"):
        model.verify()


def test_overrun_message_shows_the_user_message() -> None:
    model = ScriptedModel()
    with pytest.raises(anthropic.InternalServerError, match="What now"):
        model.client.messages.create(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "What now?"}]
        )
    assert model.requests[0].error is not None
    assert model.requests[0].error.type == "api_error"


def test_unplayed_turns_fail_verify_unless_allowed() -> None:
    model = ScriptedModel()
    model.script(text("One."), text("Two."), turn(text("Three.")))
    model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert model.remaining == 2
    with pytest.raises(AssertionError, match=r"2 scripted turn\(s\) never played") as caught:
        model.verify()
    assert 'text "Two."' in str(caught.value)
    model.allow_unused()
    model.verify()


def test_script_mistakes_are_problems() -> None:
    model = ScriptedModel()

    def broken(conversation: Conversation) -> Any:
        raise RuntimeError("no idea")

    def not_a_turn(conversation: Conversation) -> Any:
        return "not a turn"

    model.script(broken, not_a_turn, tool_use("undeclared", {}))
    for expected in ["RuntimeError: no idea", "returned 'not a turn'", "'undeclared'"]:
        with pytest.raises(anthropic.InternalServerError, match=expected):
            model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    with pytest.raises(AssertionError) as caught:
        model.verify()
    assert str(caught.value).count("\n- request") == 3
    with pytest.raises(TypeError):
        model.script(42)  # type: ignore[arg-type]


# --- threads -----------------------------------------------------------------------


def test_an_unknown_thread_id_is_the_apis_not_found_error() -> None:
    model = ScriptedModel()
    with pytest.raises(anthropic.NotFoundError) as caught:
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=PROMPT,
            thread={"type": "continue", "previous_message_id": "msg_unknown"},
            betas=[THREADS],
        )
    error = caught.value
    assert error.status_code == 404
    assert error.error_code == "thread_not_found"
    assert isinstance(error.body, dict)
    assert error.body["type"] == "error"
    assert error.body["error"]["type"] == "not_found_error"
    assert "msg_unknown" in error.body["error"]["message"]
    assert model.requests[0].thread == "continue"
    model.verify()  # the API's answer, not a script problem


def test_a_thread_continues_once_and_keeps_its_history() -> None:
    model = ScriptedModel()
    model.script(text("First."), text("Second."))
    client = model.client.beta.messages
    first = client.create(
        model=MODEL, max_tokens=64, messages=PROMPT, thread={"type": "create"}, betas=[THREADS]
    )
    more: list[BetaMessageParam] = [{"role": "user", "content": "And?"}]
    cont: Any = {"type": "continue", "previous_message_id": first.id}
    client.create(model=MODEL, max_tokens=64, messages=more, thread=cont, betas=[THREADS])
    assert model.requests[1].messages == [
        *PROMPT,
        {"role": "assistant", "content": [{"type": "text", "text": "First."}]},
        *more,
    ]
    with pytest.raises(anthropic.BadRequestError) as again:
        client.create(model=MODEL, max_tokens=64, messages=more, thread=cont, betas=[THREADS])
    assert again.value.error_code == "thread_already_continued"
    with pytest.raises(anthropic.BadRequestError, match="requires the beta"):
        client.create(model=MODEL, max_tokens=64, messages=PROMPT, thread={"type": "create"})
    assert model.remaining == 0
    model.verify()


def test_a_thread_keeps_its_own_history_whatever_a_test_changes() -> None:
    """The server's copy: changing what the records hand out (the messages, a reply's
    content) reaches no thread, however many turns deep."""
    model = ScriptedModel()
    model.script(text("First."), text("Second."), text("Third."))
    client = model.client.beta.messages
    more: list[BetaMessageParam] = [{"role": "user", "content": "And?"}]
    first = client.create(
        model=MODEL, max_tokens=64, messages=PROMPT, thread={"type": "create"}, betas=[THREADS]
    )
    cont: Any = {"type": "continue", "previous_message_id": first.id}
    second = client.create(model=MODEL, max_tokens=64, messages=more, thread=cont, betas=[THREADS])
    for request in model.requests:
        request.messages[0]["content"] = "changed"
        request.messages[-1]["role"] = "assistant"
        request.messages.append({"role": "user", "content": "added"})
        assert request.response is not None
        request.response["content"][0]["text"] = "changed"
    cont = {"type": "continue", "previous_message_id": second.id}
    client.create(model=MODEL, max_tokens=64, messages=more, thread=cont, betas=[THREADS])
    assert model.requests[2].messages == [
        *PROMPT,
        {"role": "assistant", "content": [{"type": "text", "text": "First."}]},
        *more,
        {"role": "assistant", "content": [{"type": "text", "text": "Second."}]},
        *more,
    ]
    model.verify()


def test_a_continue_holds_the_earlier_reply_as_the_client_was_answered_it() -> None:
    """The server holds JSON: a tuple a script put in a call's input comes back a list,
    as it does when the client sends the reply back itself."""
    model = ScriptedModel()
    model.script(tool_use("lookup", {"pair": (1, 2)}), text("Done."))
    client = model.client.beta.messages
    first = client.create(
        model=MODEL,
        max_tokens=64,
        messages=PROMPT,
        tools=TOOLS,
        thread={"type": "create"},
        betas=[THREADS],
    )
    call = first.content[0]
    assert isinstance(call, anthropic.types.beta.BetaToolUseBlock)
    answer: Any = {"type": "tool_result", "tool_use_id": call.id, "content": "found"}
    cont: Any = {"type": "continue", "previous_message_id": first.id}
    client.create(
        model=MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": [answer]}],
        thread=cont,
        betas=[THREADS],
    )
    assert model.requests[1].messages[1]["content"][0]["input"] == {"pair": [1, 2]}
    model.verify()


def test_a_continue_is_checked_as_its_whole_conversation() -> None:
    """The thread's part is not checked again, but what is sent is checked against it:
    a call id the thread already holds, a result answering no call of the reply."""
    model = ScriptedModel()
    model.script(text("First."), text("Second."))
    client = model.client.beta.messages
    call: Any = {"type": "tool_use", "id": "toolu_x", "name": "lookup", "input": {}}
    answer: Any = {"type": "tool_result", "tool_use_id": "toolu_x", "content": "found"}
    opened: Any = [
        *PROMPT,
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [answer]},
    ]
    first = client.create(
        model=MODEL,
        max_tokens=64,
        messages=opened,
        tools=TOOLS,
        thread={"type": "create"},
        betas=[THREADS],
    )
    cont: Any = {"type": "continue", "previous_message_id": first.id}
    again: Any = [
        {"role": "user", "content": "More."},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [answer]},
    ]
    with pytest.raises(
        anthropic.BadRequestError, match=r"messages\.5: `tool_use` ids must be unique \(toolu_x\)"
    ):
        client.create(model=MODEL, max_tokens=64, messages=again, thread=cont, betas=[THREADS])
    stray: Any = [{"role": "user", "content": [{**answer, "tool_use_id": "toolu_y"}]}]
    with pytest.raises(
        anthropic.BadRequestError, match=r"messages\.4\.content\.0: unexpected `tool_use_id`"
    ):
        client.create(model=MODEL, max_tokens=64, messages=stray, thread=cont, betas=[THREADS])
    ok: Any = [{"role": "user", "content": "More."}]
    client.create(model=MODEL, max_tokens=64, messages=ok, thread=cont, betas=[THREADS])
    assert [r.ok for r in model.requests] == [True, False, False, True]
    model.verify()


def test_a_history_the_api_refuses_is_refused() -> None:
    model = ScriptedModel()
    model.allow_unused()
    model.script(text("unused"))
    history = [
        *PROMPT,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_x", "name": "lookup", "input": {}}],
        },
        {"role": "user", "content": "no result here"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks"):
        model.client.messages.create(model=MODEL, max_tokens=64, messages=history)
    assert model.remaining == 1


# --- context editing ----------------------------------------------------------------


def clearing(**edit: Any) -> Any:
    """A ``context_management`` body; untyped, as the fake is also sent invalid ones."""
    return {"edits": [{"type": "clear_tool_uses_20250919", **edit}]}


def run_with_clearing(backend: Backend, edit: Any) -> tuple[ScriptedModel, list[Any]]:
    """create, then view, then the model looks at what it sees: with a trigger of one tool
    use and keep 1, the first (memory) result is the one to clear."""
    model = ScriptedModel()
    seen: list[Any] = []

    def look(conversation: Conversation) -> Any:
        seen.extend(conversation.messages)
        return text("Done.")

    model.script(
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        memory.view("/memories/prefs.md"),
        look,
    )
    model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=1024,
        tools=[backend.tool()],
        messages=PROMPT,
        context_management=edit,
        betas=[CONTEXT_MANAGEMENT],
        thread=False,
    ).until_done()
    model.verify()
    return model, seen


EDIT = {"trigger": {"type": "tool_uses", "value": 1}, "keep": {"type": "tool_uses", "value": 1}}


def test_context_editing_clears_an_old_memory_result_from_what_the_model_sees(
    backend: Backend,
) -> None:
    model, seen = run_with_clearing(backend, clearing(**EDIT))
    last = model.requests[-1]
    assert seen == last.seen_messages
    assert seen[2]["content"][0]["content"] == CLEARED_TOOL_RESULT_TEXT
    assert seen[4]["content"][0]["content"].startswith("Here's the content of /memories/prefs.md")
    # The client's own history is untouched: it sent the full result, and keeps it.
    assert last.body["messages"][2]["content"][0]["content"] == CREATED
    assert last.messages[2]["content"][0]["content"] == CREATED
    tools = last.body["tools"]
    cleared = estimate({"tools": tools, "messages": last.messages}) - estimate(
        {"tools": tools, "messages": seen}
    )
    edits = [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": 1,
            "cleared_input_tokens": cleared,
        }
    ]
    assert cleared > 0
    assert last.applied_edits == edits
    assert last.response is not None
    assert last.response["context_management"] == {"applied_edits": edits}
    assert last.response["usage"]["input_tokens"] == estimate({"tools": tools, "messages": seen})
    # Two tool uses only from the third request on: the second saw no edit.
    assert model.requests[-2].applied_edits == []
    assert "context editing: clear_tool_uses_20250919 cleared 1" in model.transcript()


def test_context_editing_never_clears_an_excluded_tool(backend: Backend) -> None:
    model, seen = run_with_clearing(backend, clearing(**EDIT, exclude_tools=["memory"]))
    last = model.requests[-1]
    assert seen == last.messages
    assert seen[2]["content"][0]["content"] == CREATED
    assert last.applied_edits == []
    assert last.response is not None
    assert last.response["context_management"] == {"applied_edits": []}


def test_context_management_with_threads_falls_back_to_unthreaded(backend: Backend) -> None:
    model = ScriptedModel()
    model.script(text("Done."))
    final = model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=1024,
        tools=[backend.tool()],
        messages=PROMPT,
        context_management=clearing(),
        betas=[CONTEXT_MANAGEMENT],
    ).until_done()
    assert final.context_management is not None
    assert final.context_management.applied_edits == []
    refused, answered = model.requests
    assert refused.error is not None
    assert refused.error.error_code == "thread_unsupported_request"
    assert (refused.thread, answered.thread) == ("create", None)
    model.verify()


def edit_request(model: ScriptedModel, edit: Any) -> Any:
    """A raw request over a history of three tool uses: lookup, memory, lookup."""
    history: list[Any] = [{"role": "user", "content": "Go."}]
    for n, name in enumerate(["lookup", "memory", "lookup"]):
        history.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {"n": n}}
                ],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"r{n} " * 40}
                ],
            }
        )
    model.script(text("ok"))
    model.client.beta.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=history,
        context_management=edit,
        betas=[CONTEXT_MANAGEMENT],
    )
    return model.requests[-1]


def results(messages: list[Any]) -> list[str]:
    return [m["content"][0]["content"] for m in messages[2::2]]


def test_keep_exclude_and_clear_tool_inputs() -> None:
    model = ScriptedModel()
    got = edit_request(
        model,
        clearing(
            trigger={"type": "input_tokens", "value": 10},
            keep={"type": "tool_uses", "value": 1},
            exclude_tools=["memory"],
            clear_tool_inputs=True,
        ),
    )
    assert results(got.seen_messages) == [CLEARED_TOOL_RESULT_TEXT, "r1 " * 40, "r2 " * 40]
    assert [m["content"][0]["input"] for m in got.seen_messages[1::2]] == [{}, {"n": 1}, {"n": 2}]
    assert results(got.messages) == ["r0 " * 40, "r1 " * 40, "r2 " * 40]
    assert got.applied_edits[0]["cleared_tool_uses"] == 1

    # Uses of an excluded tool take places among the `keep` most recent (assumed): with
    # keep 2, memory and the last lookup are kept, so only the first lookup is cleared.
    keep_two = edit_request(
        model,
        clearing(
            trigger={"type": "input_tokens", "value": 10},
            keep={"type": "tool_uses", "value": 2},
            exclude_tools=["memory"],
        ),
    )
    assert results(keep_two.seen_messages) == [CLEARED_TOOL_RESULT_TEXT, "r1 " * 40, "r2 " * 40]

    # A trigger fires when the prompt exceeds it (assumed `>`): three uses do not exceed 3.
    at_three = clearing(
        trigger={"type": "tool_uses", "value": 3}, keep={"type": "tool_uses", "value": 0}
    )
    assert edit_request(model, at_three).applied_edits == []

    # The default trigger, 100,000 input tokens, is far away: nothing is cleared.
    untouched = edit_request(model, clearing())
    assert untouched.seen_messages == untouched.messages
    assert untouched.applied_edits == []

    # Clearing happens only if it frees at least clear_at_least tokens.
    at_least = clearing(
        trigger={"type": "tool_uses", "value": 0},
        keep={"type": "tool_uses", "value": 0},
        clear_at_least={"type": "input_tokens", "value": 100_000},
    )
    assert edit_request(model, at_least).applied_edits == []
    everything = edit_request(model, {"edits": [{**at_least["edits"][0], "clear_at_least": None}]})
    assert results(everything.seen_messages) == [CLEARED_TOOL_RESULT_TEXT] * 3
    assert everything.applied_edits[0]["cleared_tool_uses"] == 3

    with pytest.raises(anthropic.BadRequestError, match="keep"):
        edit_request(model, clearing(keep={"type": "input_tokens", "value": 1}))
    with pytest.raises(anthropic.BadRequestError, match="requires the beta"):
        model.client.beta.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT, context_management=clearing()
        )
    model.allow_unused()
    model.verify()


# --- transcript, JSON scripts, HTTP ------------------------------------------------


def transcript_of_one_run() -> str:
    fake = FakeContextQ()
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "acme")
    backend = Backend(fake, tenant, fake.mint_key(tenant, wire.SCOPES))
    model = ScriptedModel()
    memory_script(model)
    model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[backend.tool()], messages=PROMPT
    ).until_done()
    return model.transcript()


def test_the_transcript_is_stable_across_runs() -> None:
    first, second = transcript_of_one_run(), transcript_of_one_run()
    assert first == second
    assert "msg_" not in first
    assert "toolu_" not in first
    lines = first.splitlines()
    assert lines[0] == f"request 1 · thread create · betas {THREADS}"
    assert '    tool_use #1 memory {"command": "view", "path": "/memories"}' in lines
    assert f"    tool_result #2 ok {json.dumps(CREATED)}" in lines
    assert lines[-1] == '    text "Noted: TypeScript and Rust."'
    assert sum(1 for line in lines if line.startswith("request ")) == 4


def test_from_json_list_and_file(tmp_path: Path) -> None:
    script: list[object] = [
        [{"type": "tool_use", "name": "lookup", "input": {"word": "a"}}],
        {"content": [{"type": "text", "text": "cut"}], "stop_reason": "max_tokens"},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    for model in (ScriptedModel.from_json(script), ScriptedModel.from_json(str(path))):
        first = model.client.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT, tools=TOOLS
        )
        second = model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
        assert (first.stop_reason, first.content[0].type) == ("tool_use", "tool_use")
        assert (second.stop_reason, first_text(second)) == ("max_tokens", "cut")
        model.verify()
    with pytest.raises(ValueError, match="turn 0, block 0"):
        ScriptedModel.from_json([[{"type": "image"}]])


def test_served_over_http() -> None:
    model = ScriptedModel()
    model.script(text("Over HTTP."), turn(text("Streamed over HTTP.")))
    with model.serve() as served:
        client = anthropic.Anthropic(base_url=served.url, api_key="x")
        reply = client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
        assert first_text(reply) == "Over HTTP."
        with client.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT) as stream:
            assert "".join(stream.text_stream) == "Streamed over HTTP."
        unknown = httpx2.post(f"{served.url}/v1/other", json={})
        assert unknown.status_code == 404
        assert unknown.json()["error"]["type"] == "not_found_error"
    assert [r.turn for r in model.requests] == [1, 2, None]
    assert model.requests[1].stream is True
    model.verify()


@pytest.mark.slow
def test_served_to_a_subprocess() -> None:
    model = ScriptedModel()
    model.script(text("From a subprocess."))
    with model.serve() as served:
        code = textwrap.dedent(
            """
            import anthropic
            reply = anthropic.Anthropic().messages.create(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
            print(reply.content[0].text)
            """
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=served.url, ANTHROPIC_API_KEY="x")
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "From a subprocess.", done.stderr
    assert model.requests[0].body["model"] == "m"
    model.verify()


def test_script_accepts_blocks_turns_and_functions() -> None:
    model = ScriptedModel()
    answers: list[Callable[[Conversation], Any]] = [lambda c: turn(text(f"{len(c.messages)}"))]
    model.script(text("a")).script(
        turn(text("b"), stop_reason="stop_sequence", stop_sequence="END"), *answers
    )
    replies = [
        model.client.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT, stop_sequences=["END"]
        )
        for _ in range(3)
    ]
    assert [(first_text(r), r.stop_reason, r.stop_sequence) for r in replies] == [
        ("a", "end_turn", None),
        ("b", "stop_sequence", "END"),
        ("1", "end_turn", None),
    ]
    model.verify()


def test_as_a_context_manager_the_model_verifies_on_leaving() -> None:
    from fake_anthropic import ScriptedModel, text

    with ScriptedModel() as model:
        model.script(text("played"))
        model.client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(AssertionError, match="never played"), ScriptedModel() as unplayed:
        unplayed.script(text("left over"))

    def failing_block() -> None:
        with ScriptedModel() as failing:
            failing.script(text("left over"))
            raise KeyError("the test's own failure")

    with pytest.raises(KeyError):  # the block's own error wins over the unplayed turn
        failing_block()
