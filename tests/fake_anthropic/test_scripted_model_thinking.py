"""Thinking through the scripted model: scripted thinking and redacted thinking blocks,
their stream events, the rule that a tool-use continuation sends its thinking back
unaltered, and the ``clear_thinking_20251015`` edit."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel, memory, redacted_thinking, text, thinking, tool_use, turn
from fake_contextq import FakeContextQ, Tenant

MODEL = "claude-opus-4-1"
PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
TOOLS: Any = [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}]
THINK: Any = {"type": "enabled", "budget_tokens": 2048}


def test_thinking_is_streamed_with_its_signature() -> None:
    model = ScriptedModel()
    model.script(turn(thinking("Let me think about TypeScript."), text("TypeScript it is.")))
    with model.client.beta.messages.stream(
        model=MODEL, max_tokens=4096, messages=PROMPT, thinking=THINK
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    deltas = [e.delta.type for e in events if e.type == "content_block_delta" and e.index == 0]
    assert deltas[-1] == "signature_delta"
    assert set(deltas[:-1]) == {"thinking_delta"}
    assert len(deltas) > 2
    block = final.content[0]
    assert block.type == "thinking"
    assert block.thinking == "Let me think about TypeScript."
    assert block.signature.startswith("scripted-sig-")
    assert [e.type for e in events if e.type in ("thinking", "signature")][-1] == "signature"
    model.verify()


def test_a_given_signature_and_redacted_thinking_are_played() -> None:
    model = ScriptedModel()
    model.script(
        turn(thinking("Hmm.", signature="sig-1"), redacted_thinking("opaque"), text("Ok."))
    )
    reply = model.client.beta.messages.create(
        model=MODEL, max_tokens=4096, messages=PROMPT, thinking=THINK
    )
    assert [b.model_dump(exclude_none=True) for b in reply.content] == [
        {"type": "thinking", "thinking": "Hmm.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Ok."},
    ]
    assert 'thinking "Hmm."' in model.transcript()
    assert "redacted_thinking (6 chars)" in model.transcript()
    model.verify()


def test_thinking_without_thinking_enabled_is_a_script_problem() -> None:
    model = ScriptedModel()
    model.script(turn(thinking("Hmm."), text("Ok.")))
    with pytest.raises(anthropic.InternalServerError, match="does not enable `thinking`"):
        model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    with pytest.raises(AssertionError):
        model.verify()


def test_a_thinking_tool_runner_with_the_memory_tool(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    scripted_model.script(
        turn(thinking("I should save this."), memory.create("/memories/prefs.md", "TS\n")),
        turn(thinking("Saved; answer."), text("Noted.")),
    )
    final = scripted_model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=4096, thinking=THINK, tools=[memory_tool], messages=PROMPT
    ).until_done()
    assert [b.type for b in final.content] == ["thinking", "text"]
    # Thinking cannot be threaded (assumed), so the runner falls back to full histories;
    # the second turn sent the first one's thinking back, signature and all.
    answered = [r for r in scripted_model.requests if r.ok]
    assert len(answered) == 2
    continued = answered[1].messages[1]["content"]
    assert continued[0]["type"] == "thinking"
    assert continued[0]["thinking"] == "I should save this."
    assert [row.content for row in fake_contextq.contexts(contextq_tenant)] == ["TS\n"]


def tool_loop(model: ScriptedModel) -> list[Any]:
    """A first thinking turn that calls a tool, and the history its continuation sends."""
    model.script(turn(thinking("Look it up."), tool_use("lookup", {"w": "ts"})))
    reply = model.client.beta.messages.create(
        model=MODEL, max_tokens=4096, messages=PROMPT, thinking=THINK, tools=TOOLS
    )
    call = reply.content[1]
    assert call.type == "tool_use"
    assistant = [b.model_dump(exclude_none=True) for b in reply.content]
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "found"}
    return [
        *PROMPT,
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [result]},
    ]


def continue_with(model: ScriptedModel, history: list[Any]) -> Any:
    return model.client.beta.messages.create(
        model=MODEL, max_tokens=4096, messages=history, thinking=THINK, tools=TOOLS
    )


def test_dropping_thinking_on_a_tool_use_continuation_is_refused() -> None:
    model = ScriptedModel()
    history = tool_loop(model)
    dropped = [
        *history[:1],
        {"role": "assistant", "content": history[1]["content"][1:]},
        history[2],
    ]
    with pytest.raises(
        anthropic.BadRequestError, match="Expected `thinking` or `redacted_thinking`"
    ):
        continue_with(model, dropped)
    model.script(text("Fine."))
    assert continue_with(model, history).content[0].type == "text"
    model.verify()


def test_altered_thinking_is_refused() -> None:
    model = ScriptedModel()
    history = tool_loop(model)
    altered = [dict(b) for b in history[1]["content"]]
    altered[0]["thinking"] = "Something I never thought."
    changed = [history[0], {"role": "assistant", "content": altered}, history[2]]
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        continue_with(model, changed)
    forged = [dict(b) for b in history[1]["content"]]
    forged[0]["signature"] = "forged"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        continue_with(model, [history[0], {"role": "assistant", "content": forged}, history[2]])
    model.verify()


def test_thinking_settings_the_api_refuses() -> None:
    model = ScriptedModel()
    create = model.client.beta.messages.create
    with pytest.raises(anthropic.BadRequestError, match="greater than or equal to 1024"):
        create(
            model=MODEL,
            max_tokens=4096,
            messages=PROMPT,
            thinking={"type": "enabled", "budget_tokens": 100},
        )
    with pytest.raises(
        anthropic.BadRequestError, match=r"must be greater than `thinking\.budget_tokens`"
    ):
        create(model=MODEL, max_tokens=2048, messages=PROMPT, thinking=THINK)
    with pytest.raises(anthropic.BadRequestError, match="tool_choice forces tool use"):
        create(
            model=MODEL,
            max_tokens=4096,
            messages=PROMPT,
            thinking=THINK,
            tools=TOOLS,
            tool_choice={"type": "any"},
        )
    model.verify()


def test_clear_thinking_keeps_the_latest_thinking_turn() -> None:
    model = ScriptedModel()
    history = tool_loop(model)
    model.script(turn(thinking("Second look."), tool_use("lookup", {"w": "rs"})))
    second = continue_with(model, history)
    call = second.content[1]
    assert call.type == "tool_use"
    history = [
        *history,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}],
        },
    ]
    model.script(text("Done."))
    edit: Any = {"edits": [{"type": "clear_thinking_20251015"}]}
    reply = model.client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        thinking=THINK,
        tools=TOOLS,
        context_management=edit,
        betas=["context-management-2025-06-27"],
    )
    assert reply.context_management is not None
    [applied] = reply.context_management.applied_edits
    assert applied.type == "clear_thinking_20251015"
    assert applied.cleared_thinking_turns == 1
    assert applied.cleared_input_tokens > 0
    seen = model.requests[-1].seen_messages
    assert [b["type"] for b in seen[1]["content"]] == ["tool_use"]
    assert [b["type"] for b in seen[3]["content"]] == ["thinking", "tool_use"]
    assert model.requests[-1].messages[1]["content"][0]["type"] == "thinking"
    assert "clear_thinking_20251015 cleared 1 thinking turn(s)" in model.transcript()

    keep_all: Any = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
    model.script(text("Again."))
    model.client.beta.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=history,
        thinking=THINK,
        tools=TOOLS,
        context_management=keep_all,
        betas=["context-management-2025-06-27"],
    )
    assert model.requests[-1].applied_edits == []
    with pytest.raises(anthropic.BadRequestError, match="requires thinking to be enabled"):
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=4096,
            messages=PROMPT,
            context_management=edit,
            betas=["context-management-2025-06-27"],
        )
    both: Any = {"edits": [{"type": "clear_tool_uses_20250919"}, edit["edits"][0]]}
    with pytest.raises(anthropic.BadRequestError, match="must be the first edit"):
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=4096,
            messages=PROMPT,
            thinking=THINK,
            context_management=both,
            betas=["context-management-2025-06-27"],
        )
    model.verify()
