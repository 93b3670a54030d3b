"""The JSON Schemas of scripts and recordings (``fake_anthropic.schemas``) say what the
loaders accept: every script and recording in this repository and every recording the
proxy writes validates, and on a corpus of items the schema and ``from_json`` agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fake_anthropic import ScriptedModel, api_error, load_recording, text
from fake_anthropic.schemas import RECORDING, SCRIPT, load

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    p for d in ("examples", "docs") for p in (ROOT / d).rglob("*.json") if "scripts" in p.parts
)
RECORDINGS = sorted(
    p for d in ("examples", "e2e") for p in (ROOT / d).rglob("*.json") if "recordings" in p.parts
)


def validator(name: str) -> jsonschema.protocols.Validator:
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_schemas_are_json_schemas_and_unknown_names_are_refused() -> None:
    validator(SCRIPT)
    validator(RECORDING)
    with pytest.raises(ValueError, match="the schemas are"):
        load("other.json")


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_script_here_validates_and_loads(path: Path) -> None:
    validator(SCRIPT).validate(json.loads(path.read_text()))
    ScriptedModel.from_json(path).allow_unused()


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_recording_here_validates_and_loads(path: Path) -> None:
    validator(RECORDING).validate(json.loads(path.read_text()))
    assert load_recording(path)


def test_there_are_files_to_check() -> None:
    assert SCRIPTS and RECORDINGS


def test_what_the_proxy_writes_validates(tmp_path: Path) -> None:
    upstream = ScriptedModel()
    upstream.script(
        text("Plain."),
        text("Streamed."),
        api_error(429, "rate_limit_error", "Slow down.", retry_after=0),
    )
    out = tmp_path / "run.json"
    ask: Any = {"model": "claude-sonnet-4-5", "max_tokens": 32}
    hi: Any = [{"role": "user", "content": "hi"}]
    with upstream.serve() as served:
        recorder = ScriptedModel.recorder(out, api_key="sk-ant-schema-test", upstream=served.url)
        client = recorder.client.with_options(max_retries=0)
        client.messages.create(**ask, messages=hi)
        with client.messages.stream(**ask, messages=hi) as stream:
            stream.until_done()
        client.messages.count_tokens(model="claude-sonnet-4-5", messages=hi)
        with pytest.raises(Exception, match="Slow down"):
            client.messages.create(**ask, messages=hi)
        recorder.close()
    data = json.loads(out.read_text())
    validator(RECORDING).validate(data)
    assert [e["response"]["status"] for e in data["exchanges"]] == [200, 200, 200, 429]
    assert data["exchanges"][1]["response"]["stream"] is True


GOOD_ITEMS: list[Any] = [
    [{"type": "text", "text": "Hi."}],
    [{"type": "text", "text": "a", "citations": None}],
    [{"type": "tool_use", "name": "memory", "input": {"command": "view", "path": "/memories"}}],
    [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
    {"content": [{"type": "text", "text": "x"}], "stop_reason": "max_tokens"},
    {"content": [{"type": "text", "text": "x"}], "stop_reason": None, "usage": {"input_tokens": 3}},
    {"type": "compaction", "summary": "so far"},
    {"type": "api_error", "status": 529, "error": {"type": "overloaded_error", "message": "busy"}},
    {"type": "api_error", "status": 429, "error": {"type": "rate_limit_error", "message": "m"},
     "retry_after": 1},
    [{"type": "redacted_thinking", "data": "abc"}],
    [
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "ctx_get", "server_name": "contextq",
         "input": {"id": 1}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "is_error": False,
         "content": []},
    ],
    [
        {"type": "server_tool_use", "name": "tool_search_tool_regex", "input": {"query": "w"}},
        {"type": "tool_search_tool_result", "content": {"type": "tool_search_tool_search_result",
         "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}},
    ],
    [
        {"type": "server_tool_use", "name": "tool_search_tool_bm25", "input": {"query": "w"}},
        {"type": "tool_search_tool_result", "content": {"type": "tool_search_tool_result_error",
         "error_code": "unavailable"}},
    ],
]  # fmt: skip
BAD_ITEMS: list[Any] = [
    "just text",
    [{"type": "text"}],
    [{"type": "tool_use", "input": {}}],
    [{"type": "sparkle", "text": "?"}],
    {"content": [], "stop_reason": "bored"},
    {"content": [], "colour": "red"},
    {"type": "compaction"},
    {"type": "compaction", "summary": "s", "extra": 1},
    {"type": "api_error", "status": 429, "error": {"type": "rate_limit_error"}},
    {"type": "api_error", "status": 429, "error": {"message": "m"}},
    [{"type": "redacted_thinking"}],
    [{"type": "mcp_tool_use", "name": "ctx_get", "input": {}}],
    [
        {"type": "server_tool_use", "name": "tool_search_tool_regex", "input": {"query": "w"}},
        {"type": "tool_search_tool_result", "content": {"type": "tool_search_tool_search_result",
         "tool_references": [{"type": "tool_reference"}]}},
    ],
    [
        {"type": "server_tool_use", "name": "tool_search_tool_regex", "input": {"query": "w"}},
        {"type": "tool_search_tool_result", "content": {"type": "tool_search_tool_result_error",
         "error_code": "boom"}},
    ],
]  # fmt: skip


def _loads(item: Any) -> bool:
    try:
        ScriptedModel.from_json([item]).allow_unused()
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("item", GOOD_ITEMS)
def test_an_item_the_schema_accepts_the_loader_accepts(item: Any) -> None:
    assert validator(SCRIPT).is_valid([item])
    assert _loads(item)


@pytest.mark.parametrize("item", BAD_ITEMS)
def test_an_item_the_schema_refuses_the_loader_refuses(item: Any) -> None:
    assert not validator(SCRIPT).is_valid([item])
    assert not _loads(item)
