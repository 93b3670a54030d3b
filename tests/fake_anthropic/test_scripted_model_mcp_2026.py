"""The scripted model's MCP connector under ``mcp-client-2026-09-15``: a toolset's default
and per-tool configs, a pinned ``tools`` listing (the server is not listed before
sampling), ``defer_loading`` validated, the ``mcp_tool_listing`` a reply carries when the
server was listed and that the next request sends back instead, and the SDK's tool runner
playing such a conversation end to end against the fake ContextQ's MCP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic import beta_tool

from fake_anthropic import ScriptedModel, mcp_tool_use, text, tool_search, tool_use, turn
from fake_contextq import FakeContextQ, ServedFake, Tenant
from fake_contextq.service import MCP_TOOLS

MODEL = "claude-sonnet-4-5"
BETA = "mcp-client-2026-09-15"
OLDER = "mcp-client-2025-11-20"
URL = "https://contextq.test/mcp"  # answered in-process (route_mcp)
UNREACHABLE = "http://127.0.0.1:9/mcp"
NOTHING: dict[str, Any] = {"type": "object", "properties": {}}


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve() as running:
        yield running


def routed(fake: FakeContextQ) -> ScriptedModel:
    model = ScriptedModel()
    model.route_mcp(URL, lambda token: fake.mcp_server(token or ""))
    return model


def server(url: str = URL, token: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "url", "url": url, "name": "contextq"}
    if token is not None:
        entry["authorization_token"] = token
    return entry


def toolset(**config: Any) -> dict[str, Any]:
    return {"type": "mcp_toolset", "mcp_server_name": "contextq", **config}


def ask(
    model: ScriptedModel,
    servers: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    betas: list[str] | None = None,
) -> Any:
    return model.client.beta.messages.create(
        model=MODEL,
        max_tokens=256,
        messages=messages or [{"role": "user", "content": "go"}],  # type: ignore[arg-type]
        mcp_servers=servers,  # type: ignore[arg-type]
        tools=[toolset()] if tools is None else tools,  # type: ignore[arg-type,list-item]
        betas=[BETA] if betas is None else betas,
    )


def refused(model: ScriptedModel, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(model, *args, **kwargs)
    message: str = caught.value.body["error"]["message"]  # type: ignore[index]
    return message


def problem(model: ScriptedModel, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(anthropic.InternalServerError):
        ask(model, *args, **kwargs)
    with pytest.raises(AssertionError) as caught:
        model.verify()
    return str(caught.value)


def listing(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "input_schema": NOTHING} for n in names]


# ----- default config: the reply carries the listing it fetched -----------------------------


def test_a_reply_carries_the_listing_it_fetched_first(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    model = routed(fake)
    model.script(turn(mcp_tool_use("ctx_save", {"content": "Ship"}, server="contextq"), text("ok")))
    reply = ask(model, [server(token=key)])
    model.verify()
    assert [b.type for b in reply.content] == [
        "mcp_tool_listing",
        "mcp_tool_use",
        "mcp_tool_result",
        "text",
    ]
    listed = reply.content[0]
    assert listed.mcp_server_name == "contextq"
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {t.name for t in MCP_TOOLS}
    assert tools["ctx_save"].input_schema["required"] == ["content"]
    assert tools["ctx_save"].description
    assert [c.content for c in fake.contexts(tenant)] == ["Ship"]


def test_the_listing_comes_before_the_turn_even_when_no_tool_is_called(
    fake: FakeContextQ, key: str
) -> None:
    model = routed(fake)
    model.script(text("No tools needed."))
    reply = ask(model, [server(token=key)])
    assert [b.type for b in reply.content] == ["mcp_tool_listing", "text"]


def test_the_stream_carries_the_listing_whole(fake: FakeContextQ, key: str) -> None:
    model = routed(fake)
    model.script(text("ok"))
    with model.client.beta.messages.stream(
        model=MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "go"}],
        mcp_servers=[server(token=key)],  # type: ignore[list-item]
        tools=[toolset()],  # type: ignore[list-item]
        betas=[BETA],
    ) as stream:
        final: Any = stream.get_final_message()
    assert final.content[0].type == "mcp_tool_listing"
    assert len(final.content[0].tools) == len(MCP_TOOLS)


def test_a_listing_sent_back_is_used_instead_of_asking_the_server() -> None:
    model = ScriptedModel()
    model.script(text("again"), mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    sent_back: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "mcp_tool_listing", "mcp_server_name": "contextq", "tools": listing("a")},
                {"type": "text", "text": "hi"},
            ],
        },
        {"role": "user", "content": "more"},
    ]
    # The server cannot be reached: listing it would be a 400.
    reply = ask(model, [server(UNREACHABLE)], messages=sent_back)
    assert [b.type for b in reply.content] == ["text"]
    found = problem(model, [server(UNREACHABLE)], messages=sent_back)
    assert "MCP tool 'ctx_save', which server 'contextq' does not list (its tools: ['a'])" in found


# ----- pinned tools: not looked up before sampling ------------------------------------------


@pytest.mark.parametrize("pinned", [listing("ctx_save"), []], ids=["one-tool", "empty"])
def test_a_pinned_toolset_does_not_list_the_server_before_sampling(
    pinned: list[dict[str, Any]],
) -> None:
    model = ScriptedModel()
    model.script(text("Nothing to call."))
    reply = ask(model, [server(UNREACHABLE)], [toolset(tools=pinned)])
    model.verify()
    assert [b.type for b in reply.content] == ["text"]


def test_a_pinned_tool_the_server_lacks_fails_as_a_failed_mcp_call(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    model = routed(fake)
    model.script(
        turn(
            mcp_tool_use("ctx_save", {"content": "pinned"}, server="contextq"),
            mcp_tool_use("ctx_no_such_tool", {}, server="contextq"),
            text("One of two."),
        )
    )
    reply = ask(
        model, [server(token=key)], [toolset(tools=listing("ctx_save", "ctx_no_such_tool"))]
    )
    model.verify()
    saved, missing = reply.content[1], reply.content[3]
    assert (saved.type, saved.is_error) == ("mcp_tool_result", False)
    assert (missing.type, missing.is_error) == ("mcp_tool_result", True)
    assert "ctx_no_such_tool" in missing.content[0].text
    assert [c.content for c in fake.contexts(tenant)] == ["pinned"]


def test_a_call_of_a_tool_the_pin_leaves_out_is_a_script_problem(
    fake: FakeContextQ, key: str
) -> None:
    model = routed(fake)
    model.script(mcp_tool_use("ctx_list", {}, server="contextq"))
    found = problem(model, [server(token=key)], [toolset(tools=listing("ctx_save"))])
    assert (
        "calls MCP tool 'ctx_list', which the mcp_toolset of server 'contextq' does not pin "
        "in `tools` (its tools: ['ctx_save'])"
    ) in found


def test_a_pinned_tool_the_config_disables_is_a_script_problem(
    fake: FakeContextQ, key: str
) -> None:
    model = routed(fake)
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    tools = [toolset(tools=listing("ctx_save"), configs={"ctx_save": {"enabled": False}})]
    assert "which the request's tool configuration disables" in problem(
        model, [server(token=key)], tools
    )


# ----- the tool runner plays a whole conversation -------------------------------------------


@beta_tool
def note(text: str) -> str:
    """Write a note for the user.

    Args:
        text: what to note.
    """
    return f"noted: {text}"


def test_the_tool_runner_plays_a_default_config_conversation(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    model = routed(fake)
    model.script(
        turn(
            mcp_tool_use("ctx_save", {"content": "Ship on Tuesdays"}, server="contextq"),
            tool_use("note", {"text": "saved"}),
        ),
        turn(
            mcp_tool_use("ctx_search", {"query": "Tuesdays"}, server="contextq"),
            text("You ship on Tuesdays."),
        ),
    )
    final = model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        tools=[note, toolset()],  # type: ignore[list-item]
        mcp_servers=[server(token=key)],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "Remember: we ship on Tuesdays."}],
        betas=[BETA],
    ).until_done()
    model.verify()
    first, second = (r.response for r in model.requests)
    assert first is not None and second is not None
    assert [b["type"] for b in first["content"]] == [
        "mcp_tool_listing",
        "mcp_tool_use",
        "mcp_tool_result",
        "tool_use",
    ]
    # The runner sent the listing back (on its server-held thread), so the second reply
    # lists nothing again.
    sent = model.requests[1].messages[1]["content"]
    assert sent[0]["type"] == "mcp_tool_listing"
    assert [b["type"] for b in second["content"]] == ["mcp_tool_use", "mcp_tool_result", "text"]
    found = json.loads(second["content"][1]["content"][0]["text"])
    assert "Ship on Tuesdays" in json.dumps(found)
    assert model.tool_results[0].content == "noted: saved"
    assert final.content[-1].text == "You ship on Tuesdays."  # type: ignore[union-attr]
    assert [c.content for c in fake.contexts(tenant)] == ["Ship on Tuesdays"]


def test_the_tool_runner_plays_a_pinned_and_deferred_toolset(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    model = routed(fake)
    model.script(
        turn(
            mcp_tool_use("ctx_save", {"content": "pinned"}, server="contextq"),
            tool_use("note", {"text": "a"}),
        ),
        text("Done."),
    )
    pinned = toolset(
        tools=listing("ctx_save", "ctx_search"),
        default_config={"defer_loading": True},
        configs={"ctx_save": {"defer_loading": False}},
    )
    final = model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        tools=[note, pinned],  # type: ignore[list-item]
        mcp_servers=[server(token=key)],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "go"}],
        betas=[BETA],
    ).until_done()
    model.verify()
    replies = [r.response for r in model.requests]
    assert all(
        b["type"] != "mcp_tool_listing" for reply in replies if reply for b in reply["content"]
    )
    assert final.content[-1].text == "Done."  # type: ignore[union-attr]
    assert [c.content for c in fake.contexts(tenant)] == ["pinned"]


def _run_deferred(model: ScriptedModel, key: str, *script: Any) -> None:
    """The tool runner on a pinned toolset that defers every tool but ``ctx_save``, with
    the server tool search declared."""
    model.script(*script)
    deferred = toolset(
        tools=listing("ctx_save", "ctx_search"),
        default_config={"defer_loading": True},
        configs={"ctx_save": {"defer_loading": False}},
    )
    search = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    model.client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=256,
        tools=[note, search, deferred],  # type: ignore[list-item]
        mcp_servers=[server(token=key)],  # type: ignore[list-item]
        messages=[{"role": "user", "content": "go"}],
        betas=[BETA],
    ).until_done()


def test_the_tool_runner_plays_a_deferred_mcp_tool_loaded_by_tool_search(
    fake: FakeContextQ, key: str
) -> None:
    model = routed(fake)
    _run_deferred(
        model,
        key,
        turn(
            tool_search("search", ["ctx_search"]),
            mcp_tool_use("ctx_search", {"query": "x"}, server="contextq"),
            text("ok"),
        ),
    )
    model.verify()
    lines = model.transcript().splitlines()
    assert "    tool_search_tool_result #1 [tool_reference ctx_search]" in lines
    assert '    mcp_tool_use #2 contextq.ctx_search {"query": "x"}' in lines


def test_a_deferred_mcp_tool_nothing_loaded_is_a_script_problem(
    fake: FakeContextQ, key: str
) -> None:
    model = routed(fake)
    with pytest.raises(anthropic.InternalServerError):
        _run_deferred(model, key, mcp_tool_use("ctx_search", {"query": "x"}, server="contextq"))
    with pytest.raises(AssertionError, match="deferred by its mcp_toolset"):
        model.verify()


# ----- the API's 400s for the new shapes (each rule its own test) ---------------------------


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"default_config": {"defer_loading": "yes"}}, "tools.0.default_config.defer_loading"),
        ({"configs": {"ctx_save": {"defer_loading": 1}}}, "tools.0.configs.ctx_save.defer_loading"),
        ({"default_config": {"enabled": "no"}}, "tools.0.default_config.enabled"),
    ],
    ids=["default-defer", "tool-defer", "default-enabled"],
)
def test_a_config_flag_that_is_not_a_boolean_is_refused(config: dict[str, Any], field: str) -> None:
    message = refused(ScriptedModel(), [server()], [toolset(**config)])
    assert message == f"{field}: Input should be a valid boolean"


@pytest.mark.parametrize(
    ("pinned", "expected"),
    [
        ("ctx_save", "tools.0.tools: Input should be a valid list"),
        ([{"input_schema": NOTHING}], "tools.0.tools.0.name: Field required"),
        ([{"name": "a"}], "tools.0.tools.0.input_schema: Field required (a JSON Schema object)"),
        (
            [{"name": "a", "input_schema": NOTHING, "description": 3}],
            "tools.0.tools.0.description: Input should be a valid string",
        ),
        (listing("a", "a"), "tools.0.tools.1.name: 'a' is listed twice; each tool is listed once"),
    ],
    ids=["not-a-list", "no-name", "no-schema", "bad-description", "twice"],
)
def test_a_malformed_pinned_listing_is_refused(pinned: object, expected: str) -> None:
    assert refused(ScriptedModel(), [server()], [toolset(tools=pinned)]) == expected


def test_a_pinned_listing_needs_the_2026_beta() -> None:
    message = refused(ScriptedModel(), [server()], [toolset(tools=listing("a"))], betas=[OLDER])
    assert message == (
        "tools.0.tools: a pinned tool listing needs the beta 'anthropic-beta: "
        f"{BETA}' (the request uses '{OLDER}')"
    )


def _with_listing(block: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [block, {"type": "text", "text": "hi"}]},
        {"role": "user", "content": "more"},
    ]


LISTED = {"type": "mcp_tool_listing", "mcp_server_name": "contextq", "tools": listing("a")}


def test_a_listing_sent_back_needs_the_2026_beta() -> None:
    message = refused(ScriptedModel(), [server()], messages=_with_listing(LISTED), betas=[OLDER])
    assert message.startswith("messages.1.content.0: an mcp_tool_listing block needs the beta")


def test_a_listing_sent_back_must_name_a_server_of_the_request() -> None:
    block = {**LISTED, "mcp_server_name": "ghost"}
    message = refused(ScriptedModel(), [server()], messages=_with_listing(block))
    assert message == (
        "messages.1.content.0.mcp_server_name: 'ghost' names no server of `mcp_servers` "
        "(its servers: ['contextq'])"
    )


def test_a_listing_sent_back_stands_in_an_assistant_message() -> None:
    messages = [{"role": "user", "content": [LISTED, {"type": "text", "text": "go"}]}]
    message = refused(ScriptedModel(), [server()], messages=messages)
    assert message.startswith("messages.0.content.0: an mcp_tool_listing block stands in an")


def test_a_listing_sent_back_without_the_connector_is_refused() -> None:
    model = ScriptedModel()
    with pytest.raises(anthropic.BadRequestError) as caught:
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=16,
            messages=_with_listing(LISTED),  # type: ignore[arg-type]
            betas=[BETA],
        )
    assert "an mcp_tool_listing block needs the MCP connector" in str(caught.value)


def test_a_malformed_listing_sent_back_is_refused() -> None:
    block = {**LISTED, "tools": [{"name": "a"}]}
    message = refused(ScriptedModel(), [server()], messages=_with_listing(block))
    assert message == (
        "messages.1.content.0.tools.0.input_schema: Field required (a JSON Schema object)"
    )


def test_a_server_the_api_cannot_list_is_its_400_and_uses_no_turn(served: ServedFake) -> None:
    model = ScriptedModel()
    model.script(text("never"))
    message = refused(model, [server(served.mcp_url, "sk_live_" + "0" * 40)])
    assert "MCP server 'contextq'" in message and "401" in message
    assert model.remaining == 1
    assert model.requests[0].turn is None
    model.allow_unused()


def test_the_transcript_shows_the_listing_in_one_line(fake: FakeContextQ, key: str) -> None:
    model = routed(fake)
    model.script(text("ok"))
    ask(model, [server(token=key)])
    assert f"    mcp_tool_listing contextq ({len(MCP_TOOLS)} tools)" in (
        model.transcript().splitlines()
    )
