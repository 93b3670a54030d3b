"""The drift guard (``fake_anthropic.engine.surface``): every beta, request field, tool type
and content-block type the installed SDK knows is classified, a new one fails here by name;
a request using a refused or unclassified one is a script problem that names it and says how
to play on (``ignore_betas``, ``serve --ignore-beta``); the docs' table is generated."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import types
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Union

import anthropic
import pydantic
import pytest
import typing_extensions

from fake_anthropic import ScriptedModel, text
from fake_anthropic.cli import main as cli_main
from fake_anthropic.engine import surface, surface_docs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "api-surface.md"
MODEL = "claude-sonnet-4-5"
PROMPT: Any = [{"role": "user", "content": "hi"}]
CLAUDE_CODE_BETAS = [
    "claude-code-20250219",
    "advanced-tool-use-2025-11-20",
    "effort-2025-11-24",
]


# --- reading the SDK's type definitions -----------------------------------------------------


def _members(annotation: object) -> Iterator[object]:
    """The members of a (nested, annotated) union; anything else is its own member."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        for arg in typing.get_args(annotation):
            yield from _members(arg)
    elif origin in (typing.Annotated, typing_extensions.Annotated):
        yield from _members(typing.get_args(annotation)[0])
    else:
        yield annotation


def _literals(annotation: object) -> set[str]:
    origin = typing.get_origin(annotation)
    if origin in (Literal, typing_extensions.Literal):
        return {a for a in typing.get_args(annotation) if isinstance(a, str)}
    if origin in (Union, typing_extensions.Required, typing_extensions.NotRequired):
        return {s for a in typing.get_args(annotation) for s in _literals(a)}
    if origin in (typing.Annotated, typing_extensions.Annotated):
        return _literals(typing.get_args(annotation)[0])
    return set()


def _type_literals(union: object) -> set[str]:
    """The ``type`` values of every member of a union of TypedDicts or pydantic models."""
    found: set[str] = set()
    for member in _members(union):
        if isinstance(member, type) and issubclass(member, pydantic.BaseModel):
            field = member.model_fields.get("type")
            found |= _literals(field.annotation) if field is not None else set()
        elif isinstance(member, type):
            hints = typing_extensions.get_type_hints(member, include_extras=True)
            found |= _literals(hints.get("type"))
    return found


def _keys(params: Iterable[Any]) -> set[str]:
    return {k for p in params for k in (*p.__required_keys__, *p.__optional_keys__)}


def sdk_surface(
    betas: object, params: Iterable[Any], tools: Iterable[object], blocks: Iterable[object]
) -> dict[surface.Kind, set[str]]:
    """Every name the SDK's types know, by kind (the beta type's literals, the params'
    keys, the tool and block unions' ``type`` values)."""
    return {
        "beta": {s for m in _members(betas) for s in _literals(m)},
        "field": _keys(params),
        "tool": {s for union in tools for s in _type_literals(union)},
        "block": {s for union in blocks for s in _type_literals(union)},
    }


def unclassified(names: dict[surface.Kind, set[str]]) -> list[str]:
    return [
        f"{kind} {name!r}"
        for kind, found in names.items()
        for name in sorted(found - surface.TABLES[kind].keys())
    ]


def installed_sdk() -> dict[surface.Kind, set[str]]:
    from anthropic.types import (
        AnthropicBetaParam,
        ContentBlock,
        ContentBlockParam,
        ToolUnionParam,
        message_count_tokens_params,
        message_create_params,
    )
    from anthropic.types.beta import (
        BetaContentBlock,
        BetaContentBlockParam,
        BetaToolResultBlockParam,
        BetaToolUnionParam,
    )
    from anthropic.types.beta import message_count_tokens_params as beta_count
    from anthropic.types.beta import message_create_params as beta_create

    result_content = typing_extensions.get_type_hints(BetaToolResultBlockParam)["content"]
    return sdk_surface(
        AnthropicBetaParam,
        [
            beta_create.MessageCreateParamsNonStreaming,
            beta_create.MessageCreateParamsStreaming,
            message_create_params.MessageCreateParamsNonStreaming,
            message_create_params.MessageCreateParamsStreaming,
            beta_count.MessageCountTokensParams,
            message_count_tokens_params.MessageCountTokensParams,
        ],
        [BetaToolUnionParam, ToolUnionParam],
        [
            BetaContentBlockParam,
            BetaContentBlock,
            ContentBlockParam,
            ContentBlock,
            *(typing.get_args(m)[0] for m in _members(result_content) if typing.get_args(m)),
        ],
    )


def test_every_name_the_installed_sdk_knows_is_classified() -> None:
    names = installed_sdk()
    assert all(names.values()), names  # the reader found something of every kind
    assert "tool_reference" in names["block"]  # a tool_result's content is read too
    missing = unclassified(names)
    assert not missing, (
        f"anthropic {anthropic.__version__} knows names fake_anthropic/engine/surface.py does "
        f"not classify: {', '.join(missing)}. Decide for each: modelled, ignored (say why) "
        "or refused; then regenerate the docs' table."
    )


class _StubTool(typing_extensions.TypedDict):
    type: Literal["brand_new_tool_20990101"]


class _StubBlock(typing_extensions.TypedDict):
    type: typing_extensions.Required[Literal["brand_new_block"]]


class _StubParams(typing_extensions.TypedDict, total=False):
    model: str
    brand_new_field: int


def test_an_sdk_with_a_name_the_module_does_not_classify_fails_naming_it() -> None:
    stub_betas = str | Literal["context-management-2025-06-27", "brand-new-2099-01-01"]
    names = sdk_surface(stub_betas, [_StubParams], [_StubTool], [_StubBlock])
    assert unclassified(names) == [
        "beta 'brand-new-2099-01-01'",
        "field 'brand_new_field'",
        "tool 'brand_new_tool_20990101'",
        "block 'brand_new_block'",
    ]


def test_every_refusal_and_every_ignore_says_why() -> None:
    for kind, table in surface.TABLES.items():
        for name, entry in table.items():
            assert entry.why.strip(), (kind, name)


# --- a request that uses what the model does not model ---------------------------------------


def _create(model: ScriptedModel, **kwargs: Any) -> Any:
    args: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": PROMPT, **kwargs}
    return model.client.beta.messages.create(**args)


def _refused(model: ScriptedModel, **kwargs: Any) -> str:
    with pytest.raises(anthropic.InternalServerError) as raised:
        _create(model, **kwargs)
    response = raised.value.response
    assert response.headers["x-should-retry"] == "false"  # no client retries it
    error = response.json()["error"]
    assert error["type"] == "api_error"
    message: str = error["message"]
    assert message.startswith("scripted model: ")  # never mistaken for the API's own answer
    assert f"request 1: {message.removeprefix('scripted model: ')}" in model.problems()
    return message


def test_claude_codes_known_betas_play() -> None:
    model = ScriptedModel().script(text("ok"))
    reply = _create(model, betas=CLAUDE_CODE_BETAS, output_config={"effort": "high"})
    assert reply.content[0].text == "ok"
    assert model.requests[0].betas == CLAUDE_CODE_BETAS
    model.verify()


def test_a_refused_beta_names_itself_and_how_to_play_it_anyway() -> None:
    model = ScriptedModel().script(text("ok"))
    message = _refused(model, betas=[*CLAUDE_CODE_BETAS, "per-turn-control-2026-07-01"])
    assert "the beta 'per-turn-control-2026-07-01' (anthropic-beta header) is not modelled" in (
        message
    )
    assert "ScriptedModel(ignore_betas=['per-turn-control-2026-07-01'])" in message
    assert "fake-anthropic serve --ignore-beta per-turn-control-2026-07-01" in message
    assert model.remaining == 1  # nothing played
    with pytest.raises(AssertionError, match="per-turn-control-2026-07-01"):
        model.verify()


def test_an_ignored_beta_plays_as_if_not_sent() -> None:
    beta = "per-turn-control-2026-07-01"
    model = ScriptedModel(ignore_betas=[beta]).script(text("ok"))
    reply = _create(model, betas=[*CLAUDE_CODE_BETAS, beta])
    assert reply.content[0].text == "ok"
    model.verify()
    scripted = ScriptedModel.from_json([[{"type": "text", "text": "json"}]], ignore_betas=[beta])
    assert _create(scripted, betas=[beta]).content[0].text == "json"
    scripted.verify()


def test_an_unclassified_beta_is_refused_as_unknown() -> None:
    message = _refused(ScriptedModel(), betas=["brand-new-2099-01-01"])
    assert "the beta 'brand-new-2099-01-01' (anthropic-beta header) is not one the scripted " in (
        message
    )
    assert "ignore_betas=['brand-new-2099-01-01']" in message
    assert "classified in fake_anthropic/engine/surface.py" in message


def test_the_2026_09_mcp_connector_beta_is_modelled_and_plays() -> None:
    model = ScriptedModel().script(text("ok"))
    assert _create(model, betas=["mcp-client-2026-09-15"]).content[0].text == "ok"
    model.verify()


def test_an_unknown_top_level_field_is_refused_saying_the_api_refuses_it_too() -> None:
    message = _refused(ScriptedModel(), extra_body={"brand_new_field": 1})
    assert "the request field 'brand_new_field' is not one the scripted model knows" in message
    assert "The real API refuses an unknown one too (400 invalid_request_error)" in message
    assert "Leave it out of the request" in message


def test_a_header_parameter_in_the_body_is_an_unknown_field() -> None:
    message = _refused(ScriptedModel(), extra_body={"workspace_id": "wrkspc_1"})
    assert "'workspace_id' belongs in the anthropic-workspace-id header" in message
    assert "the real API refuses it there too" in message


def test_a_refused_field_says_what_is_not_modelled() -> None:
    message = _refused(ScriptedModel(), extra_body={"container": "c"})
    assert "the request field 'container' is not modelled: code-execution containers" in message


def test_sampling_fields_of_older_clients_play() -> None:
    model = ScriptedModel().script(text("ok"))
    _create(model, extra_body={"temperature": 1, "top_p": 0.9, "top_k": 5}, metadata={})
    model.verify()


def test_an_unknown_tool_type_is_refused_naming_where() -> None:
    tools = [{"name": "a", "input_schema": {"type": "object"}}, {"type": "new_20990101"}]
    message = _refused(ScriptedModel(), tools=tools)
    assert "the tool type 'new_20990101' (tools.1.type) is not one the scripted model" in message
    assert "The real API refuses an unknown one too" in message


def test_a_refused_tool_type_says_why() -> None:
    message = _refused(ScriptedModel(), tools=[{"type": "advisor_20260301", "name": "advisor"}])
    assert "'advisor_20260301' (tools.0.type) is not modelled: the advisor tool" in message


def test_a_refused_block_type_in_a_tool_result_is_found() -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "browser_state"}]}
            ],
        },
    ]
    message = _refused(ScriptedModel(), messages=history)
    assert "the content-block type 'browser_state' in `messages` is not modelled" in message


def test_count_tokens_is_guarded_too() -> None:
    model = ScriptedModel()
    with pytest.raises(anthropic.InternalServerError, match="'brand-new-2099-01-01'"):
        model.client.beta.messages.count_tokens(
            model=MODEL, messages=PROMPT, betas=["brand-new-2099-01-01"]
        )


@pytest.mark.parametrize("bad", ["", "a,b", " padded "])
def test_an_ignore_list_entry_that_is_no_beta_name_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"ignore_betas: .* is not a beta name"):
        ScriptedModel(ignore_betas=[bad])


def test_serve_refuses_an_ignore_beta_that_is_no_beta_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text("[]")
    assert cli_main(["serve", str(script), "--ignore-beta", "a,b"]) == 2
    assert "fake-anthropic serve: --ignore-beta: ignore_betas: 'a,b'" in capsys.readouterr().err


@pytest.mark.slow  # a subprocess: not in --quick
def test_serve_plays_an_ignored_beta(tmp_path: Path) -> None:
    beta = "per-turn-control-2026-07-01"
    script = tmp_path / "s.json"
    script.write_text(json.dumps([[{"type": "text", "text": "played"}]]))
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_anthropic", "serve", str(script), "--ignore-beta", beta],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdout is not None
    assert "listening on" in process.stdout.readline()
    url = process.stdout.readline().strip().removeprefix("ANTHROPIC_BASE_URL=")
    try:
        client = anthropic.Anthropic(base_url=url, api_key="x", max_retries=0)
        reply = client.beta.messages.create(
            model=MODEL,
            max_tokens=10,
            messages=PROMPT,
            betas=[beta],
        )
        assert reply.content[0].text == "played"  # type: ignore[union-attr]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr


# --- the docs' table ------------------------------------------------------------------------


def test_the_docs_table_is_the_modules() -> None:
    page = PAGE.read_text("utf-8")
    assert surface_docs.regenerate(page) == page, (
        "docs/reference/api-surface.md's table is stale: run "
        "`python -m fake_anthropic.engine.surface_docs --write docs/reference/api-surface.md`"
    )
    for table in surface.TABLES.values():
        for name in table:
            assert f"| `{name}` |" in page


def test_the_write_command_regenerates_a_stale_table(tmp_path: Path) -> None:
    stale = tmp_path / "page.md"
    stale.write_text(f"# Title\n\n{surface_docs.BEGIN}\n| old |\n{surface_docs.END}\n\nAfter.\n")
    assert surface_docs.main(["--write", str(stale)]) == 0
    written = stale.read_text("utf-8")
    assert written.startswith(f"# Title\n\n{surface_docs.BEGIN}\n### Betas")
    assert "| old |" not in written and written.endswith(f"{surface_docs.END}\n\nAfter.\n")
    assert "| `per-turn-control-2026-07-01` | refused |" in written
    with pytest.raises(ValueError, match=r"no .* block"):
        surface_docs.regenerate("no markers")
