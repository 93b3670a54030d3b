"""Scripted API failures and stop reasons, the API's own 400s (one test each), and the
transcript of tool results made of ``tool_reference`` blocks."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx2
import pytest

from adapter import AsyncContextQMemoryTool
from fake_anthropic import ScriptedModel, api_error, memory, text, tool_use, turn

MODEL = "claude-opus-4-1"
PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
TOOLS: Any = [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}]


# --- scripted failures -------------------------------------------------------------


def test_a_scripted_429_is_retried_after_its_retry_after() -> None:
    model = ScriptedModel()
    model.script(api_error(429, "rate_limit_error", "Slow down.", retry_after=0.01), text("Hi."))
    client = model.client.with_options(max_retries=2)
    reply = client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert reply.content[0].type == "text"
    refused, answered = model.requests
    assert refused.error is not None
    assert (refused.error.status, refused.error.type, refused.turn) == (429, "rate_limit_error", 1)
    assert answered.turn == 2
    assert "scripted error: 429 rate_limit_error: Slow down." in model.transcript()
    model.verify()


def test_a_scripted_error_reaches_an_agent_without_retries() -> None:
    model = ScriptedModel()
    model.script(
        api_error(429, "rate_limit_error", "Slow down.", retry_after=7),
        api_error(529, "overloaded_error", "Overloaded"),
        api_error(500, "api_error", "Internal server error"),
    )
    with pytest.raises(anthropic.RateLimitError) as limited:
        model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert limited.value.response.headers["retry-after"] == "7"
    assert limited.value.response.headers["request-id"].startswith("req_")
    assert isinstance(limited.value.body, dict)
    assert limited.value.body["error"] == {"type": "rate_limit_error", "message": "Slow down."}
    with pytest.raises(anthropic.OverloadedError):
        model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    with pytest.raises(anthropic.InternalServerError) as failed:
        model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert "x-should-retry" not in failed.value.response.headers
    model.verify()  # scripted errors are the script's, not problems


def test_the_async_tool_runner_retries_through_a_529(
    async_memory_tool: AsyncContextQMemoryTool,
) -> None:
    model = ScriptedModel()
    model.script(
        memory.view("/memories"),
        api_error(529, "overloaded_error", "Overloaded", retry_after=0.01),
        text("Nothing stored yet."),
    )

    async def main() -> Any:
        client = model.async_client.with_options(max_retries=1)
        return await client.beta.messages.tool_runner(
            model=MODEL, max_tokens=64, tools=[async_memory_tool], messages=PROMPT
        ).until_done()

    final = asyncio.run(main())
    assert final.content[0].text == "Nothing stored yet."
    assert [r.error.status if r.error else 200 for r in model.requests] == [200, 529, 200]
    model.verify()


@pytest.mark.parametrize(
    "stop", ["max_tokens", "pause_turn", "refusal", "model_context_window_exceeded"]
)
def test_scripted_stop_reasons(stop: str) -> None:
    model = ScriptedModel()
    model.script(turn(text("Cut"), stop_reason=stop))
    reply = model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert (reply.stop_reason, reply.stop_sequence) == (stop, None)
    model.verify()


def test_a_stop_sequence_must_be_one_the_request_gave() -> None:
    model = ScriptedModel()
    model.script(turn(text("a"), stop_reason="stop_sequence", stop_sequence="###"))
    with pytest.raises(anthropic.InternalServerError, match="not among the request's"):
        model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    with pytest.raises(AssertionError):
        model.verify()
    with pytest.raises(ValueError):
        turn(text("a"), stop_reason="stop_sequence")


def test_a_pause_turn_is_resumed_by_the_runner() -> None:
    model = ScriptedModel()
    model.script(turn(text("Searching"), stop_reason="pause_turn"), text("Done."))
    final = model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=64, tools=[], messages=PROMPT
    ).until_done()
    assert final.content[0].model_dump()["text"] == "Done."
    assert model.requests[1].messages[-1]["role"] == "assistant"
    model.verify()


# --- the API's own 400s --------------------------------------------------------------


def refused(scripted: ScriptedModel, **kwargs: Any) -> str:
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": PROMPT}
    params.update(kwargs)
    with pytest.raises(anthropic.BadRequestError) as caught:
        scripted.client.beta.messages.create(**params)
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    return str(caught.value)


def call(use_id: str = "t1") -> Any:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": use_id, "name": "lookup", "input": {}}],
    }


def result(use_id: str = "t1") -> Any:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": use_id, "content": "x"}],
    }


def test_a_tool_result_answering_no_tool_use_is_refused() -> None:
    model = ScriptedModel()
    answers = {"role": "user", "content": [*result("t1")["content"], *result("t2")["content"]]}
    message = refused(model, messages=[*PROMPT, call("t1"), answers], tools=TOOLS)
    assert "unexpected `tool_use_id`" in message
    assert "t2" in message


def test_a_tool_use_left_unanswered_is_refused() -> None:
    model = ScriptedModel()
    last = refused(model, messages=[*PROMPT, call("t1")], tools=TOOLS)
    assert "without `tool_result` blocks immediately after: t1" in last
    middle = refused(
        model, messages=[*PROMPT, call("t1"), {"role": "user", "content": "hm"}], tools=TOOLS
    )
    assert "t1" in middle


def test_a_conversation_must_open_with_a_user_turn() -> None:
    model = ScriptedModel()
    opening: Any = [{"role": "assistant", "content": "Hello."}, *PROMPT]
    assert "first message must use the 'user' role" in refused(model, messages=opening)
    misplaced: Any = [*PROMPT, {"role": "assistant", "content": result()["content"]}]
    assert "belong in a `user` message" in refused(model, messages=misplaced)
    assert "'user' or 'assistant'" in refused(
        model, messages=[{"role": "system", "content": "Be brief."}, *PROMPT]
    )


def test_tool_choice_must_name_a_given_tool() -> None:
    model = ScriptedModel()
    message = refused(model, tools=TOOLS, tool_choice={"type": "tool", "name": "search"})
    assert "tool 'search' not found" in message
    assert "needs `tools`" in refused(model, tool_choice={"type": "any"})


def test_a_turn_breaking_tool_choice_is_a_script_problem() -> None:
    model = ScriptedModel()
    model.script(text("No call."))
    with pytest.raises(anthropic.InternalServerError, match="tool_choice forces"):
        model.client.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=PROMPT,
            tools=TOOLS,
            tool_choice={"type": "tool", "name": "lookup"},
        )
    model.script(tool_use("lookup", {}))
    with pytest.raises(anthropic.InternalServerError, match="tool_choice is 'none'"):
        model.client.messages.create(
            model=MODEL, max_tokens=64, messages=PROMPT, tools=TOOLS, tool_choice={"type": "none"}
        )
    with pytest.raises(AssertionError):
        model.verify()


def _ask(model: ScriptedModel, stream: bool) -> None:
    if not stream:
        model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
        return
    with model.client.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT) as events:
        events.get_final_message()


@pytest.mark.parametrize("stream", [False, True])
def test_a_scripted_lone_surrogate_is_a_script_problem_naming_it(stream: bool) -> None:
    """Not 'failed: UnicodeEncodeError': the script holds text no API answer can carry."""
    model = ScriptedModel()
    model.script(text("half a pair: \ud83d"))
    with pytest.raises(anthropic.InternalServerError, match=r"unpaired surrogate \(U\+D83D"):
        _ask(model, stream)
    with pytest.raises(AssertionError, match="write the whole character"):
        model.verify()


def test_max_tokens_missing_or_above_the_models_limit() -> None:
    model = ScriptedModel()
    http = httpx2.Client(transport=httpx2.MockTransport(model.handle))
    missing = http.post(
        "http://scripted.test/v1/messages",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        json={"model": MODEL, "messages": PROMPT},
    )
    assert missing.status_code == 400
    assert missing.json()["error"]["message"] == "max_tokens: Field required"
    haiku = "claude-3-5-haiku-20241022"
    message = refused(model, model=haiku, max_tokens=8_193)
    assert "8193 > 8192" in message
    assert haiku in message
    with (
        pytest.raises(anthropic.BadRequestError, match="64001 > 64000"),
        model.client.messages.stream(
            model="claude-haiku-4-5", max_tokens=64_001, messages=PROMPT
        ) as stream,
    ):
        stream.get_final_message()
    model.script(text("Unknown models are not checked."))
    model.client.messages.create(model="m", max_tokens=20_000, messages=PROMPT)
    model.verify()


# --- the transcript --------------------------------------------------------------------


def test_tool_reference_results_are_shown_in_the_transcript() -> None:
    model = ScriptedModel()
    model.script(text("Ok."))
    references: Any = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [{"type": "tool_reference", "tool_name": "lookup"}],
            }
        ],
    }
    model.client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=[*PROMPT, call("t1"), references], tools=TOOLS
    )
    assert "tool_result #1 ok [tool_reference lookup]" in model.transcript()
    model.verify()
