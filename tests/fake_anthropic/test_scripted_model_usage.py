"""The scripted model's usage counters, request ids and ``count_tokens``, and the SDK memory
example's flow (its ``/debug`` usage arithmetic and its clear-all command) played through
the scripted model and the ContextQ memory tool."""

from __future__ import annotations

import json
import math
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types.beta import BetaMessage

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel, memory, text, turn, web_search
from fake_contextq import FakeContextQ, Tenant

MODEL = "claude-opus-4-1"
PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
TOOLS: Any = [{"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}]
CONTEXT_MANAGEMENT = "context-management-2025-06-27"
EDIT: Any = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 0},
            "keep": {"type": "tool_uses", "value": 0},
        }
    ]
}


def estimate(value: object) -> int:
    return math.ceil(len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) / 4)


def test_usage_has_every_counter_the_api_sends_with_zeros() -> None:
    model = ScriptedModel()
    model.script(text("Hi."))
    reply = model.client.beta.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    usage = reply.usage
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
    assert usage.cache_creation is not None
    assert (
        usage.cache_creation.ephemeral_5m_input_tokens,
        usage.cache_creation.ephemeral_1h_input_tokens,
    ) == (0, 0)
    assert usage.server_tool_use is not None
    assert (
        usage.server_tool_use.web_search_requests,
        usage.server_tool_use.web_fetch_requests,
    ) == (
        0,
        0,
    )
    assert usage.service_tier == "standard"
    assert usage.input_tokens == estimate({"messages": PROMPT})
    model.verify()


def test_output_tokens_never_pass_max_tokens_and_a_cut_reply_is_at_it() -> None:
    """The API stops at ``max_tokens``: a long scripted reply counts no more, and one the
    script ends with ``max_tokens`` counts exactly that (a caller's cost arithmetic and a
    continue-after-cut loop read it)."""
    long = "word " * 400
    model = ScriptedModel()
    model.script(text(long), text(long), turn(text(long), stop_reason="max_tokens"))
    whole = model.client.messages.create(model=MODEL, max_tokens=4096, messages=PROMPT)
    assert whole.usage.output_tokens == estimate([{"type": "text", "text": long}]) < 4096
    capped = model.client.messages.create(model=MODEL, max_tokens=16, messages=PROMPT)
    assert (capped.stop_reason, capped.usage.output_tokens) == ("end_turn", 16)
    cut = model.client.messages.create(model=MODEL, max_tokens=700, messages=PROMPT)
    assert (cut.stop_reason, cut.usage.output_tokens) == ("max_tokens", 700)
    model.verify()


def test_a_turn_sets_usage_counters_for_cost_and_cache_tests() -> None:
    model = ScriptedModel()
    cached = {"cache_read_input_tokens": 900, "cache_creation_input_tokens": 100, "input_tokens": 5}
    model.script(turn(text("Cached."), usage=cached), turn(text("Streamed."), usage=cached))
    plain = model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT)
    assert (plain.usage.input_tokens, plain.usage.cache_read_input_tokens) == (5, 900)
    assert plain.usage.cache_creation_input_tokens == 100
    with model.client.beta.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT) as stream:
        final = stream.get_final_message()
    assert (final.usage.input_tokens, final.usage.cache_read_input_tokens) == (5, 900)
    assert "900 cache read, 100 cache written" in model.transcript()
    model.verify()


def test_server_tool_use_counts_web_searches() -> None:
    model = ScriptedModel()
    search = web_search("typescript", [("https://example.test/ts", "TS")])
    model.script(turn(search, text("Found it.")))
    tools: Any = [{"type": "web_search_20250305", "name": "web_search"}]
    reply = model.client.beta.messages.create(
        model=MODEL, max_tokens=64, messages=PROMPT, tools=tools
    )
    assert [b.type for b in reply.content] == [
        "server_tool_use",
        "web_search_tool_result",
        "text",
    ]
    assert reply.stop_reason == "end_turn"
    assert reply.usage.server_tool_use is not None
    assert reply.usage.server_tool_use.web_search_requests == 1
    lines = model.transcript()
    assert 'server_tool_use #1 web_search {"query": "typescript"}' in lines
    assert "web_search_tool_result #1 1 result(s)" in lines
    model.verify()


def test_replies_carry_the_request_id_header_and_body() -> None:
    model = ScriptedModel()
    model.script(text("Hi."))
    raw = model.client.messages.with_raw_response.create(
        model=MODEL, max_tokens=64, messages=PROMPT
    )
    assert raw.headers["request-id"].startswith("req_")
    assert raw.parse()._request_id == raw.headers["request-id"]
    model.verify()


# --- count_tokens ------------------------------------------------------------------


def test_count_tokens_uses_the_estimate_and_consumes_no_turn() -> None:
    model = ScriptedModel()
    model.script(text("Hi."))
    count = model.client.messages.count_tokens(model=MODEL, messages=PROMPT, tools=TOOLS)
    beta = model.client.beta.messages.count_tokens(model=MODEL, messages=PROMPT, system="Be brief.")
    assert count.input_tokens == estimate({"tools": TOOLS, "messages": PROMPT})
    assert beta.input_tokens == estimate({"system": "Be brief.", "messages": PROMPT})
    assert model.remaining == 1
    reply = model.client.messages.create(model=MODEL, max_tokens=64, messages=PROMPT, tools=TOOLS)
    assert reply.usage.input_tokens == count.input_tokens
    first, second, _ = model.requests
    assert first.path == "/v1/messages/count_tokens"
    assert (first.turn, first.response) == (None, {"input_tokens": count.input_tokens})
    assert "token-counting-2024-11-01" in second.betas
    assert f"counted {count.input_tokens} input tokens" in model.transcript()
    model.verify()


def test_count_tokens_applies_context_editing_and_reports_the_original_count() -> None:
    model = ScriptedModel()
    history: Any = [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 400}],
        },
    ]
    count = model.client.beta.messages.count_tokens(
        model=MODEL,
        messages=history,
        tools=TOOLS,
        context_management=EDIT,
        betas=[CONTEXT_MANAGEMENT],
    )
    assert count.context_management is not None
    assert count.context_management.original_input_tokens == estimate(
        {"tools": TOOLS, "messages": history}
    )
    assert count.input_tokens < count.context_management.original_input_tokens
    model.verify()


def test_count_tokens_refuses_what_the_api_refuses() -> None:
    model = ScriptedModel()
    orphan: Any = [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}
    ]
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        model.client.messages.count_tokens(model=MODEL, messages=orphan)


# --- the SDK memory example's flow -------------------------------------------------


def debug_lines(usage: dict[str, Any], threshold: int) -> list[str]:
    """The SDK memory example's ``/debug`` arithmetic over ``usage.model_dump()``, written
    anew: it subtracts the cached tokens from the input tokens."""
    input_tokens = usage.get("input_tokens", 0)
    cached_tokens = usage.get("cache_read_input_tokens", 0)
    uncached = input_tokens - cached_tokens
    lines = [
        f"Total input: {input_tokens:,}",
        f"Cached: {cached_tokens:,}",
        f"Uncached: {uncached:,}",
    ]
    if input_tokens >= threshold * 0.8:
        lines.append("Approaching context clearing threshold")
    return lines


def test_the_memory_example_flow_with_debug_and_clear_all(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    edit: Any = {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 30000},
                "keep": {"type": "tool_uses", "value": 3},
                "clear_at_least": {"type": "input_tokens", "value": 5000},
                "exclude_tools": ["web_search"],
            }
        ]
    }
    scripted_model.script(
        memory.view("/memories"),
        memory.create("/memories/user.xml", "<user><lang>TypeScript</lang></user>\n"),
        text("I'll remember that."),
    )
    messages: list[Any] = [{"role": "user", "content": "I prefer TypeScript."}]
    runner = scripted_model.client.beta.messages.tool_runner(
        betas=[CONTEXT_MANAGEMENT],
        model="claude-sonnet-4-20250514",
        max_tokens=2048,
        system="Store facts about the user.",
        messages=messages,
        tools=[memory_tool],
        context_management=edit,
    )
    last_usage: dict[str, Any] = {}
    seen: list[BetaMessage] = []
    for message in runner:
        seen.append(message)
        last_usage = message.usage.model_dump()
        assert message.context_management is not None
        assert message.context_management.applied_edits == []
    assert debug_lines(last_usage, 30000)[2] == f"Uncached: {last_usage['input_tokens']:,}"
    assert [m.stop_reason for m in seen] == ["tool_use", "tool_use", "end_turn"]
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.content == "<user><lang>TypeScript</lang></user>\n"
    # The example's /memory_clear command.
    assert memory_tool.clear_all_memory()
    assert fake_contextq.contexts(contextq_tenant) == []


def test_a_raw_request_sees_zero_cache_counters_over_http() -> None:
    model = ScriptedModel()
    model.script(text("Hi."))
    http = httpx2.Client(transport=httpx2.MockTransport(model.handle))
    response = http.post(
        "http://scripted.test/v1/messages",
        headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        json={"model": MODEL, "max_tokens": 8, "messages": PROMPT},
    )
    usage = response.json()["usage"]
    assert usage["cache_read_input_tokens"] == 0
    assert usage["cache_creation_input_tokens"] == 0
    assert response.headers["request-id"].startswith("req_")
    model.verify()
