"""Tool search on the scripted model: deferred tools (``defer_loading: true``) stay out of
the model's view until a ``tool_reference`` loads them, from a server tool search
(``tool_search()``) or a client tool's result (Claude Code's ``ToolSearch``); the API's
400s; script problems that say how to load a tool; JSON scripts, streams, recordings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anthropic
import pytest
from anthropic import beta_async_tool, beta_tool

from fake_anthropic import (
    ScriptedModel,
    mcp_tool_use,
    server_tool_use,
    text,
    tool_search,
    tool_use,
    turn,
)

MODEL = "claude-sonnet-4-5"
PROMPT: Any = [{"role": "user", "content": "What is the weather in Paris?"}]
REGEX: Any = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
BM25: Any = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
SCHEMA: Any = {"type": "object", "properties": {"city": {"type": "string"}}}


def tool(name: str, *, deferred: bool = True) -> Any:
    entry: Any = {"name": name, "description": f"The {name} tool.", "input_schema": SCHEMA}
    if deferred:
        entry["defer_loading"] = True
    return entry


def create(model: ScriptedModel, tools: Any, messages: Any = PROMPT, **kwargs: Any) -> Any:
    return model.client.beta.messages.create(
        model=MODEL, max_tokens=256, messages=messages, tools=tools, **kwargs
    )


def problem(model: ScriptedModel, tools: Any, messages: Any = PROMPT) -> str:
    with pytest.raises(anthropic.InternalServerError) as caught:
        create(model, tools, messages)
    message: str = caught.value.body["error"]["message"]  # type: ignore[index]
    assert model.problems(), "a script problem fails verify()"
    return message


def refused(model: ScriptedModel, tools: Any, messages: Any = PROMPT) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(model, tools, messages)
    message: str = caught.value.body["error"]["message"]  # type: ignore[index]
    return message


def weather_tools(calls: list[str]) -> tuple[Any, Any]:
    @beta_tool(defer_loading=True)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    @beta_async_tool(name="get_weather", defer_loading=True)
    async def get_weather_async(city: str) -> str:
        """The weather in a city."""
        calls.append(city)
        return f"Sunny in {city}"

    return get_weather, get_weather_async


# ----- the SDK's tool runner plays a tool-search conversation ---------------------------------


@pytest.mark.parametrize("threads", [True, False], ids=["threads-on", "threads-off"])
@pytest.mark.parametrize("mode", ["sync", "sync-stream", "async"])
def test_the_tool_runner_calls_a_deferred_tool_loaded_by_a_search_in_the_same_reply(
    mode: str, threads: bool
) -> None:
    calls: list[str] = []
    sync_tool, async_tool = weather_tools(calls)
    model = ScriptedModel()
    model.script(
        turn(
            tool_search("weather", ["get_weather"]),
            tool_use("get_weather", {"city": "Paris"}),
        ),
        text("It is sunny in Paris."),
    )
    options: dict[str, Any] = {} if threads else {"thread": False}
    final: Any
    if mode.startswith("sync"):
        final = model.client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=256,
            messages=PROMPT,
            tools=[sync_tool, REGEX],
            stream=mode.endswith("stream"),
            **options,
        ).until_done()
    else:

        async def main() -> Any:
            return await model.async_client.beta.messages.tool_runner(
                model=MODEL,
                max_tokens=256,
                messages=PROMPT,
                tools=[async_tool, REGEX],
                **options,
            ).until_done()

        final = asyncio.run(main())
    model.verify()
    assert calls == ["Paris"]
    assert final.content[0].text == "It is sunny in Paris."
    first = model.requests[0].response
    assert first is not None
    assert [b["type"] for b in first["content"]] == [
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
    ]
    assert first["content"][1]["content"]["tool_references"] == [
        {"type": "tool_reference", "tool_name": "get_weather"}
    ]
    assert first["stop_reason"] == "tool_use"
    shown = model.transcript()
    assert "server_tool_use #1 tool_search_tool_regex" in shown
    assert "tool_search_tool_result #1 [tool_reference get_weather]" in shown


def test_claude_codes_toolsearch_loads_a_deferred_tool_through_its_tool_result() -> None:
    """No server search tool: the client's ``ToolSearch`` answers ``select:`` with
    ``tool_reference`` blocks, and that loads the deferred MCP tool for the next turn."""
    saved: list[str] = []

    @beta_tool
    def ToolSearch(query: str) -> Any:  # Claude Code's name for it
        """Fetch the definitions of deferred tools."""
        names = query.removeprefix("select:").split(",")
        return [{"type": "tool_reference", "tool_name": n} for n in names]

    @beta_tool(name="mcp__contextq__ctx_save", defer_loading=True)
    def ctx_save(content: str) -> str:
        """Save a context."""
        saved.append(content)
        return "saved"

    model = ScriptedModel()
    model.script(
        tool_use("ToolSearch", {"query": "select:mcp__contextq__ctx_save"}),
        tool_use("mcp__contextq__ctx_save", {"content": "Ship on Tuesdays"}),
        text("Saved."),
    )
    model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=256, messages=PROMPT, tools=[ToolSearch, ctx_save]
    ).until_done()
    model.verify()
    assert saved == ["Ship on Tuesdays"]
    assert "[tool_reference mcp__contextq__ctx_save]" in model.transcript()
    found = model.tool_results[0]
    assert found.name == "ToolSearch"
    assert found.tool_references == ("mcp__contextq__ctx_save",)
    assert found.content == "[tool_reference mcp__contextq__ctx_save]"  # failure pages show it


# ----- script problems say how to load the tool ---------------------------------------------


def test_calling_a_deferred_tool_nothing_loaded_names_it_and_says_how_to_load_it() -> None:
    model = ScriptedModel()
    model.script(tool_use("get_weather", {"city": "Paris"}))
    message = problem(model, [tool("get_weather"), REGEX])
    assert "script item 1 calls deferred tool 'get_weather'" in message
    assert "tool_search('get_weather', ['get_weather'])" in message


def test_a_call_before_the_search_of_the_same_reply_is_a_problem() -> None:
    model = ScriptedModel()
    model.script(
        turn(tool_use("get_weather", {"city": "Paris"}), tool_search("weather", ["get_weather"]))
    )
    message = problem(model, [tool("get_weather"), REGEX])
    assert "script item 1 calls deferred tool 'get_weather'" in message


def test_a_server_tool_named_search_is_not_taken_for_a_client_search_tool() -> None:
    model = ScriptedModel()
    model.script(tool_use("get_weather", {"city": "Paris"}))
    web_search: Any = {"type": "web_search_20250305", "name": "web_search"}
    message = problem(model, [web_search])
    assert "does not declare" in message
    assert "probably behind" not in message


def test_a_search_naming_an_mcp_tool_its_toolset_does_not_defer_is_a_problem() -> None:
    model = ScriptedModel()
    model.script(tool_search("save", ["ctx_save"]))
    with pytest.raises(anthropic.InternalServerError) as caught:
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=256,
            messages=PROMPT,
            mcp_servers=[{"type": "url", "url": "https://mcp.example/mcp", "name": "contextq"}],
            tools=[
                {
                    "type": "mcp_toolset",
                    "mcp_server_name": "contextq",
                    "configs": {"ctx_save": {"defer_loading": False}},
                },
                REGEX,
            ],
            betas=["mcp-client-2025-11-20"],
        )
    message = caught.value.body["error"]["message"]  # type: ignore[index]
    assert "naming tool 'ctx_save', which is not deferred" in message


def test_a_search_in_an_earlier_turn_loads_the_tool_for_the_rest_of_the_conversation() -> None:
    model = ScriptedModel()
    model.script(
        tool_search("weather", ["get_weather"], variant="bm25"),
        tool_use("get_weather", {"city": "Paris"}),
    )
    tools = [tool("get_weather"), BM25]
    first = create(model, tools)
    history = [*PROMPT, {"role": "assistant", "content": first.model_dump()["content"]}]
    history.append({"role": "user", "content": "go on"})
    second = create(model, tools, history)
    model.verify()
    assert second.content[0].name == "get_weather"
    assert first.content[0].name == "tool_search_tool_bm25"


def test_with_a_client_search_tool_the_problem_says_to_call_it_first() -> None:
    model = ScriptedModel()
    model.script(tool_use("get_weather", {"city": "Paris"}))
    message = problem(model, [tool("ToolSearch", deferred=False), tool("get_weather")])
    assert "calls deferred tool 'get_weather'" in message
    assert "call 'ToolSearch' first" in message
    assert "select:get_weather" in message


def test_a_call_of_an_undeclared_tool_behind_a_client_search_tool_says_so() -> None:
    model = ScriptedModel()
    model.script(tool_use("mcp__contextq__ctx_save", {"content": "x"}))
    message = problem(model, [tool("ToolSearch", deferred=False)])
    assert "calls tool 'mcp__contextq__ctx_save', which the request does not declare" in message
    assert "probably behind the request's search tool 'ToolSearch'" in message
    assert "must call 'ToolSearch' first" in message


def test_a_search_naming_an_undeclared_tool_is_a_problem_with_the_item_index() -> None:
    model = ScriptedModel()
    model.script(text("first"), tool_search("weather", ["get_forecast"]))
    create(model, [tool("get_weather"), REGEX])
    message = problem(model, [tool("get_weather"), REGEX])
    assert "script item 2 plays a tool_search_tool_regex result naming tool 'get_forecast'" in (
        message
    )
    assert "does not declare" in message
    assert "declares with defer_loading: true" in message


def test_a_search_naming_a_tool_that_is_not_deferred_is_a_problem() -> None:
    model = ScriptedModel()
    model.script(tool_search("weather", ["get_weather"]))
    message = problem(model, [tool("get_weather", deferred=False), REGEX])
    assert "script item 1 plays a tool_search_tool_regex result naming tool 'get_weather'" in (
        message
    )
    assert "which is not deferred" in message


def test_a_tool_search_the_request_does_not_declare_is_a_problem() -> None:
    model = ScriptedModel()
    model.script(tool_search("weather", ["get_weather"]))
    message = problem(model, [tool("ToolSearch", deferred=False), tool("get_weather")])
    assert "uses server tool 'tool_search_tool_regex', which the request does not declare" in (
        message
    )


def test_an_mcp_tool_deferred_by_its_toolset_must_be_loaded_first() -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    with pytest.raises(anthropic.InternalServerError) as caught:
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=256,
            messages=PROMPT,
            mcp_servers=[{"type": "url", "url": "https://mcp.example/mcp", "name": "contextq"}],
            tools=[
                {
                    "type": "mcp_toolset",
                    "mcp_server_name": "contextq",
                    "default_config": {"defer_loading": True},
                },
                REGEX,
            ],
            betas=["mcp-client-2025-11-20"],
        )
    message = caught.value.body["error"]["message"]  # type: ignore[index]
    assert "calls MCP tool 'ctx_save' of server 'contextq', deferred by its mcp_toolset" in message
    assert "tool_search('ctx_save', ['ctx_save'])" in message


# ----- the API's 400s -----------------------------------------------------------------------


def test_every_tool_deferred_is_refused() -> None:
    message = refused(ScriptedModel(), [tool("get_weather"), tool("get_forecast")])
    assert "At least one tool must be non-deferred" in message


def test_the_search_tool_itself_cannot_be_deferred() -> None:
    message = refused(ScriptedModel(), [tool("get_weather"), {**REGEX, "defer_loading": True}])
    assert message.startswith("tools.1.defer_loading: the tool search tool")


def test_defer_loading_must_be_a_boolean() -> None:
    message = refused(ScriptedModel(), [REGEX, {**tool("get_weather"), "defer_loading": "yes"}])
    assert message == "tools.1.defer_loading: Input should be a valid boolean"


def test_a_search_tool_with_the_wrong_name_is_refused() -> None:
    message = refused(ScriptedModel(), [{**REGEX, "name": "search"}, tool("get_weather")])
    assert message == "tools.0.name: Input should be 'tool_search_tool_regex'"


def test_a_tool_reference_to_no_declared_tool_is_refused() -> None:
    messages: Any = [
        *PROMPT,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "tool_reference", "tool_name": "get_forecast"}],
                }
            ],
        },
    ]
    tools = [tool("ToolSearch", deferred=False), tool("get_weather")]
    message = refused(ScriptedModel(), tools, messages)
    assert "Tool reference 'get_forecast' has no corresponding tool definition" in message


# ----- token counting -----------------------------------------------------------------------


def test_a_deferred_tool_counts_toward_input_tokens_only_once_loaded() -> None:
    model = ScriptedModel(token_estimate=len)  # one token a character: exact differences

    def count(tools: Any, messages: Any = PROMPT) -> int:
        result = model.client.beta.messages.count_tokens(
            model=MODEL, messages=messages, tools=tools
        )
        return result.input_tokens

    assert count([REGEX, tool("get_weather")]) == count([REGEX])
    model.script(tool_search("weather", ["get_weather"]))
    reply = create(model, [REGEX, tool("get_weather")])
    assert reply.usage.input_tokens == count([REGEX])
    history = [*PROMPT, {"role": "assistant", "content": reply.model_dump()["content"]}]
    history.append({"role": "user", "content": "go on"})
    loaded = count([REGEX, tool("get_weather")], history)
    undeferred = count([REGEX, tool("get_weather", deferred=False)], history)
    assert loaded - undeferred == len(',"defer_loading":true')  # counted whole, once loaded
    assert count([REGEX, tool("get_weather"), tool("get_forecast")], history) == loaded
    model.verify()


# ----- builders, JSON scripts, streams, recordings ------------------------------------------


def test_the_builders_refuse_a_malformed_search_result() -> None:
    with pytest.raises(ValueError, match="variant must be 'regex' or 'bm25'"):
        tool_search("x", ["a"], variant="fuzzy")
    with pytest.raises(TypeError, match="list of tool names"):
        tool_search("x", "get_weather")
    with pytest.raises(ValueError, match=r"content.tool_references.0.tool_name"):
        server_tool_use(
            "tool_search_tool_regex",
            {"query": "x"},
            {
                "type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference"}],
            },
        )


def json_pair(content: Any, query: Any = "weather") -> Any:
    return [
        [
            {
                "type": "server_tool_use",
                "name": "tool_search_tool_regex",
                "input": {"query": query},
            },
            {"type": "tool_search_tool_result", "content": content},
            {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}},
        ]
    ]


FOUND: Any = {
    "type": "tool_search_tool_search_result",
    "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}],
}


def test_a_json_script_plays_the_search_pair() -> None:
    model = ScriptedModel.from_json(json_pair(FOUND))
    reply = create(model, [REGEX, tool("get_weather")])
    model.verify()
    assert [b.type for b in reply.content] == [
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
    ]
    assert reply.content[1].tool_use_id == reply.content[0].id


@pytest.mark.parametrize(
    ("content", "query", "field"),
    [
        ({**FOUND, "tool_references": "get_weather"}, "w", "content.tool_references: must be"),
        (
            {**FOUND, "tool_references": [{"type": "tool_reference", "tool_name": 3}]},
            "w",
            "content.tool_references.0.tool_name",
        ),
        ({"type": "tool_search_tool_result_error", "error_code": "boom"}, "w", "error_code"),
        ({"type": "found"}, "w", "content.type"),
        (FOUND, 7, "input.query"),
    ],
)
def test_a_malformed_json_search_item_is_refused_at_load(
    content: Any, query: Any, field: str
) -> None:
    with pytest.raises(ValueError) as caught:
        ScriptedModel.from_json([[{"type": "text", "text": "hi"}], *json_pair(content, query)])
    assert str(caught.value).startswith("turn 1, block 0:")
    assert field in str(caught.value)


def test_a_stream_carries_the_search_blocks() -> None:
    model = ScriptedModel()
    model.script(turn(tool_search("weather", ["get_weather"]), text("Found it.")))
    with model.client.beta.messages.stream(
        model=MODEL, max_tokens=256, messages=PROMPT, tools=[REGEX, tool("get_weather")]
    ) as stream:
        final: Any = stream.get_final_message()
    model.verify()
    assert [b.type for b in final.content] == ["server_tool_use", "tool_search_tool_result", "text"]
    assert final.content[0].input == {"query": "weather"}
    assert final.content[1].content.tool_references[0].tool_name == "get_weather"


def test_a_recorded_tool_search_run_replays(tmp_path: Path) -> None:
    """A tool-runner run through the recording proxy, replayed strictly: the second
    request sends the search pair back (its ids renamed by the match), and the replayed
    replies carry the blocks as recorded."""
    path = tmp_path / "search.json"
    calls: list[str] = []
    get_weather, _ = weather_tools(calls)
    upstream = ScriptedModel()
    upstream.script(
        turn(tool_search("weather", ["get_weather"]), tool_use("get_weather", {"city": "Paris"})),
        text("Sunny."),
    )

    def run(model: ScriptedModel) -> Any:
        return model.client.beta.messages.tool_runner(
            model=MODEL, max_tokens=256, messages=PROMPT, tools=[get_weather, REGEX], thread=False
        ).until_done()

    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(path, api_key="sk-ant-recording", upstream=served.url)
        try:
            live = run(recorder)
        finally:
            recorder.close()
    upstream.verify()
    replayed = ScriptedModel.from_recording(path)
    again = run(replayed)
    replayed.verify()
    assert again.content[0].text == live.content[0].text == "Sunny."
    assert calls == ["Paris", "Paris"]
    first = replayed.requests[0].response
    assert first is not None
    assert first["content"][1]["content"]["tool_references"][0]["tool_name"] == "get_weather"
    assert "tool_search_tool_result #1 [tool_reference get_weather]" in replayed.transcript()
