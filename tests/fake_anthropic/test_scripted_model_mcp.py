"""The scripted model's MCP connector: requests validated as the API validates them, and a
scripted ``mcp_tool_use`` played by really calling the request's MCP server (the fake
ContextQ's ``/mcp``), streamed and not, recorded and replayed without any MCP server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from adapter import wire
from fake_anthropic import (
    API_KEY,
    ScriptedModel,
    mcp_tool_use,
    text,
    tool_use,
    turn,
)
from fake_contextq import FakeContextQ, ServedFake, Tenant

MODEL = "claude-sonnet-4-5"
BETA = "mcp-client-2025-11-20"
LEGACY = "mcp-client-2025-04-04"


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve() as running:
        yield running


def server(url: str, token: str | None, name: str = "contextq") -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "url", "url": url, "name": name}
    if token is not None:
        entry["authorization_token"] = token
    return entry


def ask(
    model: ScriptedModel,
    servers: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    *,
    betas: list[str] | None = None,
    prompt: str = "go",
) -> Any:
    toolsets = [{"type": "mcp_toolset", "mcp_server_name": s["name"]} for s in servers]
    return model.client.beta.messages.create(
        model=MODEL,
        max_tokens=256,
        messages=[{"role": "user", "content": prompt}],
        mcp_servers=servers,  # type: ignore[arg-type]
        tools=toolsets if tools is None else tools,  # type: ignore[arg-type]
        betas=[BETA] if betas is None else betas,
    )


def refused(model: ScriptedModel, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(anthropic.BadRequestError) as caught:
        ask(model, *args, **kwargs)
    message: str = caught.value.body["error"]["message"]  # type: ignore[index]
    return message


# ----- a scripted mcp_tool_use really lands a context ---------------------------------------


def test_a_scripted_mcp_tool_use_lands_a_context_through_the_connector(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    model = ScriptedModel()
    model.script(
        turn(
            mcp_tool_use("ctx_save", {"content": "Ship on Tuesdays"}, server="contextq"),
            text("Saved."),
        )
    )
    reply = ask(model, [server(served.mcp_url, key)])
    model.verify()
    use, result, final = reply.content
    assert (use.type, use.name, use.server_name) == ("mcp_tool_use", "ctx_save", "contextq")
    assert use.id.startswith("mcptoolu_")
    assert (result.type, result.tool_use_id, result.is_error) == ("mcp_tool_result", use.id, False)
    saved = json.loads(result.content[0].text)
    assert final.text == "Saved."
    assert reply.stop_reason == "end_turn"
    assert fake.context_json(tenant) == [saved]
    assert saved["content"] == "Ship on Tuesdays"


def test_the_stream_carries_the_same_blocks_in_the_apis_event_sequence(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    model = ScriptedModel()
    model.script(
        turn(mcp_tool_use("ctx_save", {"content": "streamed"}, server="contextq"), text("Done."))
    )
    with model.client.beta.messages.stream(
        model=MODEL,
        max_tokens=256,
        messages=[{"role": "user", "content": "go"}],
        mcp_servers=[server(served.mcp_url, key)],  # type: ignore[list-item]
        tools=[{"type": "mcp_toolset", "mcp_server_name": "contextq"}],
        betas=[BETA],
    ) as stream:
        events: list[tuple[str, Any]] = [
            (e.type, getattr(e, "content_block", None)) for e in stream
        ]
        final: Any = stream.get_final_message()
    opened = [block for kind, block in events if kind == "content_block_start"]
    assert [block.type for block in opened] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert opened[0].input == {}
    assert opened[1].is_error is False
    assert final.content[0].input == {"content": "streamed"}
    assert final.content[1].is_error is False
    assert [c.content for c in fake.contexts(tenant)] == ["streamed"]


def test_a_contextq_refusal_is_an_mcp_tool_result_with_is_error(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant
) -> None:
    reader = fake.mint_key(tenant, (wire.READ,))
    model = ScriptedModel()
    model.script(
        turn(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"), text("Could not."))
    )
    reply = ask(model, [server(served.mcp_url, reader)])
    model.verify()
    result = reply.content[1]
    assert result.is_error is True
    assert result.content[0].text.startswith("ContextQ 403 scope_denied:")
    assert fake.contexts(tenant) == []


def test_arguments_of_the_wrong_shape_come_back_as_an_error_result(
    served: ServedFake, key: str
) -> None:
    model = ScriptedModel()
    model.script(
        turn(mcp_tool_use("ctx_save", {"tags": ["no content"]}, server="contextq"), text("Oops."))
    )
    result = ask(model, [server(served.mcp_url, key)]).content[1]
    assert result.is_error is True
    assert "Input validation error: Invalid arguments for tool ctx_save" in result.content[0].text
    assert "Invalid input: expected string, received undefined" in result.content[0].text


def test_in_process_routing_reaches_the_fake_with_no_socket(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    url = "https://contextq.test/mcp"
    model = ScriptedModel()
    model.route_mcp(url, lambda token: fake.mcp_server(token or ""))
    model.script(
        turn(mcp_tool_use("ctx_save", {"content": "in memory"}, server="contextq"), text("ok"))
    )
    ask(model, [server(url, key)])
    model.verify()
    assert [c.content for c in fake.contexts(tenant)] == ["in memory"]


def test_the_transcript_shows_both_blocks(served: ServedFake, key: str) -> None:
    model = ScriptedModel()
    model.script(turn(mcp_tool_use("ctx_list", {}, server="contextq"), text("Listed.")))
    ask(model, [server(served.mcp_url, key)])
    lines = model.transcript().splitlines()
    assert "    mcp_tool_use #1 contextq.ctx_list {}" in lines
    assert any(line.startswith("    mcp_tool_result #1 ok ") for line in lines)


# ----- what the script cannot play is a script problem, reported like an overrun ------------


def _problem(model: ScriptedModel, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(anthropic.InternalServerError):
        ask(model, *args, **kwargs)
    with pytest.raises(AssertionError) as caught:
        model.verify()
    return str(caught.value)


def test_a_tool_the_server_does_not_list_is_a_script_problem(served: ServedFake, key: str) -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_no_such_tool", {}, server="contextq"))
    found = _problem(model, [server(served.mcp_url, key)])
    assert "MCP tool 'ctx_no_such_tool', which server 'contextq' does not list" in found
    assert "ctx_save" in found


@pytest.mark.parametrize(
    "toolset",
    [
        {"default_config": {"enabled": False}},
        {"configs": {"ctx_save": {"enabled": False}}},
    ],
    ids=["default-off", "tool-off"],
)
def test_a_tool_the_toolset_disables_is_a_script_problem(
    served: ServedFake, key: str, toolset: dict[str, Any]
) -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    tools = [{"type": "mcp_toolset", "mcp_server_name": "contextq", **toolset}]
    found = _problem(model, [server(served.mcp_url, key)], tools)
    assert "which the request's tool configuration disables" in found


def test_a_toolset_that_enables_one_tool_lets_it_through(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    model = ScriptedModel()
    model.script(turn(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"), text("ok")))
    tools = [
        {
            "type": "mcp_toolset",
            "mcp_server_name": "contextq",
            "default_config": {"enabled": False},
            "configs": {"ctx_save": {"enabled": True}},
        }
    ]
    ask(model, [server(served.mcp_url, key)], tools)
    model.verify()
    assert len(fake.contexts(tenant)) == 1


def test_a_server_the_request_does_not_name_is_a_script_problem(
    served: ServedFake, key: str
) -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="elsewhere"))
    found = _problem(model, [server(served.mcp_url, key)])
    assert "server 'elsewhere', which the request's mcp_servers do not name" in found


# ----- servers the API cannot use: the API's 400 -------------------------------------------


def test_an_unreachable_server_is_the_apis_400_naming_it() -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    message = refused(model, [server("http://127.0.0.1:9/mcp", "t")])
    assert message.startswith("MCP server 'contextq' at http://127.0.0.1:9/mcp could not be used")


def test_an_unusable_servers_url_is_named_without_its_credentials() -> None:
    """A token in the server URL's query or fragment, or a password in it, never reaches
    the message."""
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    url = "http://user:S3CRETPW@127.0.0.1:9/mcp?token=T0KENVALUE&x=1#access_token=FRAGSECRET"
    message = refused(model, [server(url, "t")])
    assert all(s not in message for s in ("S3CRETPW", "T0KENVALUE", "FRAGSECRET")), message
    assert "http://user:***@127.0.0.1:9/mcp?token=***&x=1#***" in message, message
    bad = "ftp://user:S3CRETPW@example.com/mcp?token=T0KENVALUE#FRAGSECRET"
    message = refused(ScriptedModel(), [server(bad, "t")])
    assert all(s not in message for s in ("S3CRETPW", "T0KENVALUE", "FRAGSECRET")), message


def test_a_refused_token_is_the_apis_400_naming_the_server(served: ServedFake) -> None:
    model = ScriptedModel()
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    message = refused(model, [server(served.mcp_url, "sk_live_" + "0" * 40)])
    assert "MCP server 'contextq'" in message
    assert "401" in message


# ----- a request refused before any turn is played uses none --------------------------------

CONNECTOR_BETAS = ["mcp-client-2026-09-15", BETA, LEGACY]


def _retried_after_a_refusal(
    model: ScriptedModel, beta: str, bad: dict[str, Any], good: dict[str, Any]
) -> Any:
    """``bad`` refused with the API's 400, then ``good`` answered by the first turn."""
    tools: list[dict[str, Any]] | None = [] if beta == LEGACY else None
    model.script(turn(mcp_tool_use("ctx_list", {}, server="contextq"), text("Listed.")))
    with pytest.raises(anthropic.BadRequestError):
        ask(model, [bad], tools, betas=[beta])
    assert model.remaining == 1
    assert model.requests[0].turn is None
    reply = ask(model, [good], tools, betas=[beta])
    model.verify()
    return reply


@pytest.mark.parametrize("beta", CONNECTOR_BETAS)
def test_a_refused_token_uses_no_turn(served: ServedFake, key: str, beta: str) -> None:
    model = ScriptedModel()
    bad = server(served.mcp_url, "sk_live_" + "0" * 40)
    reply = _retried_after_a_refusal(model, beta, bad, server(served.mcp_url, key))
    assert reply.content[-1].text == "Listed."


@pytest.mark.parametrize("beta", CONNECTOR_BETAS)
def test_an_unreachable_server_uses_no_turn(served: ServedFake, key: str, beta: str) -> None:
    model = ScriptedModel()
    bad = server("http://127.0.0.1:9/mcp", key)
    reply = _retried_after_a_refusal(model, beta, bad, server(served.mcp_url, key))
    assert reply.content[-1].text == "Listed."


@pytest.mark.parametrize("beta", CONNECTOR_BETAS)
def test_a_bad_server_definition_uses_no_turn(served: ServedFake, key: str, beta: str) -> None:
    model = ScriptedModel()
    bad = server("http://mcp.example/mcp", key)  # not https
    reply = _retried_after_a_refusal(model, beta, bad, server(served.mcp_url, key))
    assert reply.content[-1].text == "Listed."


# ----- requests the API refuses (each rule its own test) -----------------------------------


def test_the_connector_without_its_beta_is_refused() -> None:
    message = refused(ScriptedModel(), [server("https://mcp.example/mcp", None)], betas=[])
    assert message.startswith("mcp_servers: the MCP connector requires the beta header")
    assert BETA in message


def test_a_toolset_naming_no_server_is_refused() -> None:
    tools = [
        {"type": "mcp_toolset", "mcp_server_name": "contextq"},
        {"type": "mcp_toolset", "mcp_server_name": "ghost"},
    ]
    message = refused(ScriptedModel(), [server("https://mcp.example/mcp", None)], tools)
    assert message == (
        "tools.1.mcp_server_name: 'ghost' names no server of `mcp_servers` "
        "(its servers: ['contextq'])"
    )


def test_a_toolset_without_any_mcp_servers_is_refused() -> None:
    model = ScriptedModel()
    with pytest.raises(anthropic.BadRequestError) as caught:
        model.client.beta.messages.create(
            model=MODEL,
            max_tokens=16,
            messages=[{"role": "user", "content": "go"}],
            tools=[{"type": "mcp_toolset", "mcp_server_name": "contextq"}],
            betas=[BETA],
        )
    assert "an mcp_toolset needs its server in `mcp_servers`" in str(caught.value)


def test_a_server_without_a_toolset_is_refused() -> None:
    servers = [
        server("https://a.example/mcp", None, "a"),
        server("https://b.example/mcp", None, "b"),
    ]
    tools = [{"type": "mcp_toolset", "mcp_server_name": "a"}]
    message = refused(ScriptedModel(), servers, tools)
    assert message == (
        "mcp_servers.1: MCP server 'b' has no mcp_toolset in `tools`; each server needs exactly one"
    )


def test_two_toolsets_for_one_server_are_refused() -> None:
    tools = [{"type": "mcp_toolset", "mcp_server_name": "contextq"}] * 2
    message = refused(ScriptedModel(), [server("https://mcp.example/mcp", None)], tools)
    assert message == "tools.1: MCP server 'contextq' already has an mcp_toolset"


def test_duplicate_server_names_are_refused() -> None:
    servers = [server("https://a.example/mcp", None), server("https://b.example/mcp", None)]
    message = refused(
        ScriptedModel(),
        servers,
        [servers and {"type": "mcp_toolset", "mcp_server_name": "contextq"}],
    )
    assert message == "mcp_servers.1.name: MCP server names must be unique; 'contextq' is repeated"


@pytest.mark.parametrize(
    "url",
    ["http://mcp.example/mcp", "http://10.0.0.7:8000/mcp", "ftp://mcp.example/", "mcp.example"],
)
def test_a_url_that_is_not_https_or_loopback_http_is_refused(url: str) -> None:
    message = refused(ScriptedModel(), [server(url, None)])
    assert message.startswith(f"mcp_servers.0.url: the MCP server URL must use https (got {url!r})")


@pytest.mark.parametrize(
    "url", ["https://mcp.example/mcp", "http://127.0.0.1:1/mcp", "http://localhost:1/mcp"]
)
def test_https_and_loopback_http_are_accepted(url: str) -> None:
    model = ScriptedModel()
    model.script(text("No tools needed."))
    assert ask(model, [server(url, None)]).content[0].text == "No tools needed."
    model.verify()


def test_the_legacy_beta_takes_tool_configuration_and_refuses_toolsets(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    legacy = {**server(served.mcp_url, key), "tool_configuration": {"allowed_tools": ["ctx_list"]}}
    message = refused(ScriptedModel(), [legacy], betas=[LEGACY])
    assert message.startswith("tools: mcp_toolset entries need the beta 'mcp-client-2025-11-20'")
    model = ScriptedModel()
    model.script(turn(mcp_tool_use("ctx_list", {}, server="contextq"), text("ok")))
    reply = ask(model, [legacy], [], betas=[LEGACY])
    assert reply.content[1].is_error is False
    model.script(mcp_tool_use("ctx_save", {"content": "x"}, server="contextq"))
    found = _problem(model, [legacy], [], betas=[LEGACY])
    assert "disables" in found
    assert fake.contexts(tenant) == []


def test_tool_configuration_is_refused_under_the_current_beta() -> None:
    legacy = {**server("https://mcp.example/mcp", None), "tool_configuration": {"enabled": True}}
    message = refused(ScriptedModel(), [legacy])
    assert message.startswith("mcp_servers.0.tool_configuration: not accepted under")


def test_client_tools_beside_a_toolset_keep_their_name_checks(served: ServedFake, key: str) -> None:
    tools = [
        {"type": "mcp_toolset", "mcp_server_name": "contextq"},
        {"name": "local", "description": "d", "input_schema": {"type": "object"}},
    ]
    model = ScriptedModel()
    model.script(tool_use("undeclared", {}))
    found = _problem(model, [server(served.mcp_url, key)], tools)
    assert "calls tool 'undeclared', which the request does not declare" in found


# ----- JSON scripts, recordings ---------------------------------------------------------------


def test_a_json_script_calls_or_plays_recorded_results(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    recorded = {
        "type": "mcp_tool_result",
        "is_error": False,
        "content": [{"type": "text", "text": '{"total": 0}'}],
    }
    model = ScriptedModel.from_json(
        [
            [
                {
                    "type": "mcp_tool_use",
                    "name": "ctx_save",
                    "server_name": "contextq",
                    "input": {"content": "from json"},
                },
                {"type": "text", "text": "a"},
            ],
            [
                {
                    "type": "mcp_tool_use",
                    "name": "ctx_list",
                    "server_name": "contextq",
                    "input": {},
                },
                recorded,
                {"type": "text", "text": "b"},
            ],
        ]
    )
    ask(model, [server(served.mcp_url, key)])
    played = ask(model, [server("https://unreachable.example/mcp", key)])
    model.verify()
    assert played.content[1].content[0].text == '{"total": 0}'
    assert [c.content for c in fake.contexts(tenant)] == ["from json"]


def test_a_recorded_connector_run_replays_without_any_mcp_server(
    tmp_path: Path, fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    path = tmp_path / "mcp.json"
    upstream = ScriptedModel()
    upstream.script(
        turn(mcp_tool_use("ctx_save", {"content": "recorded"}, server="contextq"), text("Saved."))
    )
    with fake.serve() as running, upstream.serve() as model_url:
        recorder = ScriptedModel.recorder(path, api_key="sk-ant-recording", upstream=model_url.url)
        try:
            live = ask(recorder, [server(running.mcp_url, key)])
        finally:
            recorder.close()
        mcp_url = running.mcp_url
    assert key not in path.read_text("utf-8")
    assert len(fake.contexts(tenant)) == 1
    replayed = ScriptedModel.from_recording(path)
    again = ask(replayed, [server(mcp_url, key)])  # the served fake is gone
    replayed.verify()
    assert [b.model_dump() for b in again.content] == [b.model_dump() for b in live.content]
    assert len(fake.contexts(tenant)) == 1


def test_the_served_model_plays_mcp_for_a_client_in_another_process(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    model = ScriptedModel()
    model.script(
        turn(mcp_tool_use("ctx_save", {"content": "over http"}, server="contextq"), text("ok"))
    )
    body = {
        "model": MODEL,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "go"}],
        "mcp_servers": [server(served.mcp_url, key)],
        "tools": [{"type": "mcp_toolset", "mcp_server_name": "contextq"}],
    }
    headers = {"x-api-key": API_KEY, "anthropic-version": "2023-06-01", "anthropic-beta": BETA}
    with model.serve() as running:
        answer = httpx2.post(f"{running.url}/v1/messages", json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert [b["type"] for b in answer.json()["content"]] == [
        "mcp_tool_use",
        "mcp_tool_result",
        "text",
    ]
    assert [c.content for c in fake.contexts(tenant)] == ["over http"]
