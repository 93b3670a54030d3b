"""Structured outputs and strict tools: the API guarantees a reply's shape, so a scripted
turn that breaks ``output_config.format`` or a strict tool's ``input_schema`` is a script
problem; the request's own schemas must be JSON Schemas (400)."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import beta_tool
from pydantic import BaseModel

from fake_anthropic import ScriptedModel, text, tool_use, turn

MODEL = "claude-sonnet-4-5"
PROMPT: Any = [{"role": "user", "content": "Where is the office?"}]
CITY: Any = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "floor": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
}
JSON_OUTPUT: Any = {"format": {"type": "json_schema", "schema": CITY}}
STRICT_TOOLS: Any = [
    {"name": "move", "strict": True, "input_schema": CITY},
    {"name": "note", "input_schema": CITY},
]


class Office(BaseModel):
    city: str
    floor: int


def test_a_reply_under_the_output_schema_parses_into_the_model() -> None:
    model = ScriptedModel()
    model.script(text('{"city": "Oslo", "floor": 3}'))
    reply = model.client.messages.parse(
        model=MODEL, max_tokens=256, messages=PROMPT, output_format=Office
    )
    assert reply.parsed_output == Office(city="Oslo", floor=3)
    model.verify()


@pytest.mark.parametrize(
    ("played", "said"),
    [
        ('{"city": 7}', "city: 7 is not of type 'string'"),
        ('{"town": "Oslo"}', "'city' is a required property"),
        ("The office is in Oslo.", "answers text that is not JSON"),
    ],
)
def test_a_reply_the_output_schema_refuses_is_a_script_problem(played: str, said: str) -> None:
    model = ScriptedModel()
    model.script(text(played))
    with pytest.raises(anthropic.InternalServerError, match=r"output_config\.format"):
        model.client.messages.create(
            model=MODEL, max_tokens=256, messages=PROMPT, output_config=JSON_OUTPUT
        )
    [found] = model.problems()
    assert said in found and found.startswith("request 1: script item 1")
    with pytest.raises(AssertionError, match=r"output_config\.format"):
        model.verify()


def test_text_in_several_blocks_is_read_as_one_reply() -> None:
    model = ScriptedModel()
    model.script(turn(text('{"city": '), text('"Oslo"}')))
    reply = model.client.messages.create(
        model=MODEL, max_tokens=256, messages=PROMPT, output_config=JSON_OUTPUT
    )
    assert "".join(b.text for b in reply.content if b.type == "text") == '{"city": "Oslo"}'
    model.verify()


@pytest.mark.parametrize("stop_reason", ["max_tokens", "refusal"])
def test_a_reply_cut_short_is_not_held_to_the_schema(stop_reason: str) -> None:
    model = ScriptedModel()
    model.script(turn(text('{"city": "Os'), stop_reason=stop_reason))
    reply = model.client.messages.create(
        model=MODEL, max_tokens=256, messages=PROMPT, output_config=JSON_OUTPUT
    )
    assert reply.stop_reason == stop_reason
    model.verify()


def test_a_strict_tool_called_with_input_its_schema_refuses_is_a_script_problem() -> None:
    model = ScriptedModel()
    model.script(tool_use("move", {"city": "Oslo", "floor": "third"}))
    with pytest.raises(anthropic.InternalServerError, match="strict tool 'move'"):
        model.client.messages.create(
            model=MODEL, max_tokens=256, messages=PROMPT, tools=STRICT_TOOLS
        )
    [found] = model.problems()
    assert "floor: 'third' is not of type 'integer'" in found


def test_a_tool_that_is_not_strict_may_get_any_input() -> None:
    model = ScriptedModel()
    model.script(tool_use("note", {"floor": "third"}))
    reply = model.client.messages.create(
        model=MODEL, max_tokens=256, messages=PROMPT, tools=STRICT_TOOLS
    )
    assert reply.stop_reason == "tool_use"
    model.verify()


def test_a_turn_that_calls_a_tool_is_not_held_to_the_output_schema() -> None:
    model = ScriptedModel()
    model.script(turn(text("Let me look."), tool_use("move", {"city": "Oslo"})))
    reply = model.client.messages.create(
        model=MODEL,
        max_tokens=256,
        messages=PROMPT,
        tools=STRICT_TOOLS,
        output_config=JSON_OUTPUT,
    )
    assert [b.type for b in reply.content] == ["text", "tool_use"]
    model.verify()


@pytest.mark.parametrize(("city", "problem"), [("Oslo", None), (7, "is not of type 'string'")])
def test_a_strict_function_tool_in_the_tool_runner(city: object, problem: str | None) -> None:
    @beta_tool(strict=True)
    def floor_of(city: str) -> str:
        """The floor of the office in a city."""
        return "3" if city == "Oslo" else "unknown"

    model = ScriptedModel()
    model.script(tool_use("floor_of", {"city": city}), text('{"city": "Oslo", "floor": 3}'))
    runner = model.client.beta.messages.tool_runner(
        model=MODEL, max_tokens=256, messages=PROMPT, tools=[floor_of], output_config=JSON_OUTPUT
    )
    if problem is None:
        final = runner.until_done()
        assert final.content[-1].type == "text"
        assert [r.content for r in model.tool_results] == ["3"]
        model.verify()
        return
    with pytest.raises(anthropic.InternalServerError, match="strict tool 'floor_of'"):
        runner.until_done()
    found, unplayed = model.problems()
    assert problem in found and "never played" in unplayed


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"output_config": {"format": {"type": "xml"}}}, "format.type: Input should be"),
        ({"output_config": {"format": {"type": "json_schema"}}}, "format.schema: Field required"),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": 5}}}},
            "output_config.format.schema: not a valid JSON Schema",
        ),
        (
            {"tools": [{"name": "t", "strict": True, "input_schema": {"required": "x"}}]},
            "tools.0.input_schema: not a valid JSON Schema",
        ),
    ],
)
def test_a_schema_that_is_no_json_schema_is_the_apis_400(fields: Any, said: str) -> None:
    model = ScriptedModel()
    model.script(text("{}"))
    with pytest.raises(anthropic.BadRequestError, match=said):
        model.client.messages.create(model=MODEL, max_tokens=256, messages=PROMPT, **fields)
    assert model.remaining == 1  # a refused request plays no turn
    model.allow_unused()
    model.verify()
