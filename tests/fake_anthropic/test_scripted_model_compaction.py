"""Compaction through the scripted model: the SDK runner's ``compact_before_next_turn()``
with the ContextQ memory tool, the ``compaction`` request field and its refusals, and the
``compact_20260112`` context-management edit."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anthropic
import pytest

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool
from fake_anthropic import ScriptedModel, compaction, memory, text
from fake_contextq import FakeContextQ, Tenant

MODEL = "claude-opus-4-1"
COMPACT = "compact-2026-09-04"
PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
TOOLS: Any = [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}]
SUMMARY = "The user prefers TypeScript; /memories was empty."


def compaction_message(model: ScriptedModel, summary: str = SUMMARY) -> Any:
    """A compaction reply of ``model`` as the SDK sends it back (``to_param()``)."""
    model.script(compaction(summary))
    reply = model.client.beta.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=PROMPT,
        compaction={"type": "summarize"},
        betas=[COMPACT],
    )
    block = reply.content[0]
    assert block.type == "compaction"
    return {"role": "assistant", "content": [block.model_dump(exclude_none=True)]}


@pytest.mark.parametrize("scripted", [True, False], ids=["scripted-summary", "default-summary"])
def test_compact_before_next_turn_through_the_tool_runner(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    caplog: pytest.LogCaptureFixture,
    scripted: bool,
) -> None:
    items: list[Any] = [memory.view("/memories")]
    if scripted:
        items.append(compaction(SUMMARY))
    items += [memory.create("/memories/prefs.md", "Prefers TypeScript.\n"), text("Noted.")]
    scripted_model.script(*items)
    runner = scripted_model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=1024, tools=[memory_tool], messages=PROMPT, betas=[COMPACT]
    )
    replies = []
    with caplog.at_level(logging.WARNING):
        for message in runner:
            replies.append(message)
            if len(replies) == 1:
                runner.compact_before_next_turn()
    assert "no summary" not in caplog.text
    assert [m.stop_reason for m in replies] == ["tool_use", "compaction", "tool_use", "end_turn"]
    block = replies[1].content[0]
    assert block.type == "compaction"
    assert block.signature
    if scripted:
        assert block.content == SUMMARY
    else:
        assert block.content is not None
        assert block.content.startswith("Summary of 3 message(s): user: Remember that I prefer")
    # The compaction request carried the whole conversation and the `compaction` field.
    request = scripted_model.requests[1]
    assert request.body["compaction"] == {"type": "summarize"}
    assert [m["role"] for m in request.messages] == ["user", "assistant", "user"]
    assert request.turn == (2 if scripted else None)
    # Afterwards the model sees what the runner sends: the compaction block, then the turn.
    after = scripted_model.requests[2]
    assert after.seen_messages[0]["content"][0]["type"] == "compaction"
    assert after.seen_messages[0]["content"][0]["content"] == block.content
    assert len(after.seen_messages) == 1
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.content == "Prefers TypeScript.\n"
    assert [r.content for r in scripted_model.tool_results][1].startswith("File created")
    shown = f'compaction "{SUMMARY}"' if scripted else 'compaction "Summary of 3 message(s)'
    assert shown in scripted_model.transcript()


def test_compaction_async_and_streamed(
    async_memory_tool: AsyncContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    model = ScriptedModel()
    model.script(
        memory.view("/memories"),
        compaction(SUMMARY),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        text("Noted."),
    )

    async def main() -> list[Any]:
        runner = model.async_client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=1024,
            tools=[async_memory_tool],
            messages=PROMPT,
            betas=[COMPACT],
            stream=True,
        )
        replies = []
        async for stream in runner:
            replies.append(await stream.get_final_message())
            if len(replies) == 1:
                runner.compact_before_next_turn()
        return replies

    replies = asyncio.run(main())
    assert [m.stop_reason for m in replies] == ["tool_use", "compaction", "tool_use", "end_turn"]
    assert replies[1].content[0].type == "compaction"
    assert replies[1].content[0].content == SUMMARY
    assert [row.content for row in fake_contextq.contexts(contextq_tenant)] == [
        "Prefers TypeScript.\n"
    ]
    model.verify()


def test_a_compaction_item_never_answers_a_normal_turn() -> None:
    model = ScriptedModel()
    model.script(compaction(SUMMARY))
    with pytest.raises(anthropic.InternalServerError, match="asks for a turn, not a compaction"):
        model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    with pytest.raises(AssertionError, match="not a compaction"):
        model.verify()


def test_a_compaction_request_consumes_no_turn() -> None:
    model = ScriptedModel()
    model.script(text("After."))
    reply = model.client.beta.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=PROMPT,
        compaction={"type": "summarize"},
        betas=[COMPACT],
    )
    assert reply.stop_reason == "compaction"
    assert model.remaining == 1
    assert model.requests[0].turn is None
    model.allow_unused()
    model.verify()


# --- what the API refuses ----------------------------------------------------------


def refused(model: ScriptedModel, **kwargs: Any) -> anthropic.BadRequestError:
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": PROMPT}
    params.update(kwargs)
    with pytest.raises(anthropic.BadRequestError) as caught:
        model.client.beta.messages.create(**params)
    return caught.value


def test_compaction_needs_its_beta_and_no_context_management() -> None:
    model = ScriptedModel()
    assert "requires the beta" in str(refused(model, compaction={"type": "summarize"}))
    error = refused(
        model,
        compaction={"type": "summarize"},
        context_management={"edits": []},
        betas=[COMPACT, "context-management-2025-06-27"],
    )
    assert "cannot be combined with `context_management`" in str(error)
    error = refused(model, compaction={"type": "other"}, betas=[COMPACT])
    assert "compaction.type" in str(error)


def test_compaction_of_an_unfinished_turn_is_refused() -> None:
    model = ScriptedModel()
    history: Any = [
        *PROMPT,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}],
        },
    ]
    error = refused(
        model, messages=history, tools=TOOLS, compaction={"type": "summarize"}, betas=[COMPACT]
    )
    assert error.error_code == "compaction_incomplete_turn"


def test_a_compaction_block_sent_back_is_checked() -> None:
    model = ScriptedModel()
    good = compaction_message(model)
    block = good["content"][0]
    follow: Any = {"role": "user", "content": "Go on."}

    misplaced = refused(
        model,
        messages=[
            *PROMPT,
            {"role": "assistant", "content": [{"type": "text", "text": "x"}, block]},
        ],
    )
    assert misplaced.error_code == "compaction_block_misplaced"
    in_user = refused(model, messages=[{"role": "user", "content": [block]}])
    assert in_user.error_code == "compaction_block_misplaced"
    forged = {**block, "signature": "forged"}
    invalid = refused(model, messages=[{"role": "assistant", "content": [forged]}, follow])
    assert invalid.error_code == "compaction_signature_invalid"
    edited = {**block, "content": "Something else."}
    mismatch = refused(model, messages=[{"role": "assistant", "content": [edited]}, follow])
    assert mismatch.error_code == "compaction_content_mismatch"
    other = compaction_message(model, "Another summary.")
    ambiguous = refused(model, messages=[good, follow, other, follow])
    assert ambiguous.error_code == "compaction_block_ambiguous"

    # Sent back first, it stands in for what it summarizes, and the model sees from there.
    model.script(text("Carrying on."))
    earlier: Any = [
        {"role": "user", "content": "Old."},
        {"role": "assistant", "content": "Old reply."},
    ]
    model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=[good, follow])
    model.script(text("Again."))
    model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=[*earlier, good, follow])
    assert model.requests[-1].seen_messages == [good, follow]
    model.verify()


# --- compact_20260112 --------------------------------------------------------------


def compact_edit(**extra: Any) -> Any:
    edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}
    return {"edits": [{**edit, **extra}]}


BETAS = ["context-management-2025-06-27", "compact-2026-01-12"]


def test_the_compact_edit_compacts_once_the_trigger_is_exceeded() -> None:
    model = ScriptedModel(token_estimate=lambda text: 60_000 if "Big" in text else 10)
    model.script(compaction(SUMMARY), text("Continuing from the summary."))
    big: Any = [{"role": "user", "content": "Big history."}]
    reply = model.client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=big, context_management=compact_edit(), betas=BETAS
    )
    assert [b.type for b in reply.content] == ["compaction", "text"]
    assert reply.content[0].model_dump()["content"] == SUMMARY
    assert reply.stop_reason == "end_turn"
    assert reply.usage.iterations is not None
    assert [i.type for i in reply.usage.iterations] == ["compaction", "message"]
    assert reply.usage.iterations[0].input_tokens == 60_000
    [seen] = model.requests[0].seen_messages
    assert seen["role"] == "assistant"
    assert [(b["type"], b["content"]) for b in seen["content"]] == [("compaction", SUMMARY)]
    assert model.requests[0].turn == 2
    model.verify()


def test_the_compact_edit_pauses_after_compaction_and_stays_quiet_below_its_trigger() -> None:
    model = ScriptedModel(token_estimate=lambda text: 60_000 if "Big" in text else 10)
    big: Any = [{"role": "user", "content": "Big history."}]
    paused = model.client.beta.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=big,
        context_management=compact_edit(pause_after_compaction=True),
        betas=BETAS,
    )
    assert (paused.stop_reason, [b.type for b in paused.content]) == ("compaction", ["compaction"])
    model.script(text("Small."))
    small = model.client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=PROMPT, context_management=compact_edit(), betas=BETAS
    )
    assert [b.type for b in small.content] == ["text"]
    assert "requires the beta" in str(
        refused(model, context_management=compact_edit(), betas=BETAS[:1])
    )
    model.verify()
