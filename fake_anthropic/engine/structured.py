"""What the API guarantees of a reply's shape, held against what a script plays.

With structured outputs (``output_config.format``, a JSON Schema) the API's reply text is
JSON valid under that schema, and a tool declared ``strict: true`` is only ever called
with input valid under its ``input_schema``: the model's sampling is constrained to them.
A scripted turn that breaks either is one the real model could not have produced, so it
is a script problem, reported like an overrun. The request's own schemas must be JSON
Schemas, or the API refuses the request (400).

The checks need ``jsonschema`` (in the ``fake`` extra); it is imported only when a
request carries a schema to hold a turn to.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import invalid, problem

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

Json = dict[str, Any]
_EXTRA = "pip install 'contextq-memory-tool[fake]'"


def output_schema(body: Json) -> Json | None:
    """The JSON Schema of ``output_config.format``, or None when the request sets none; a
    malformed format is the API's 400."""
    config = body.get("output_config")
    if config is None:
        return None
    if not isinstance(config, dict):
        raise invalid("output_config: Input should be an object")
    fmt = config.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        raise invalid("output_config.format.type: Input should be 'json_schema'")
    schema = fmt.get("schema")
    if not isinstance(schema, dict):
        raise invalid("output_config.format.schema: Field required (a JSON Schema object)")
    _validator(schema, "output_config.format.schema")
    return schema


def strict_schemas(tools: Sequence[Json] | None) -> dict[str, Json]:
    """The ``input_schema`` of each tool declared ``strict: true``, by name; one that is no
    JSON Schema is the API's 400."""
    found: dict[str, Json] = {}
    for i, tool in enumerate(tools or []):
        if tool.get("strict") is not True or not isinstance(tool.get("name"), str):
            continue
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            raise invalid(f"tools.{i}.input_schema: Field required")
        _validator(schema, f"tools.{i}.input_schema")
        found[tool["name"]] = schema
    return found


def check_turn(
    blocks: Sequence[Json],
    stop_reason: str,
    output: Json | None,
    strict: dict[str, Json],
    where: str,
) -> None:
    """A played turn the constrained model could have produced: every call of a strict
    tool valid under its schema, and the text of a turn that calls no tool valid JSON under
    the output schema (unless the turn was cut short, which the API does not guarantee)."""
    for block in blocks:
        if block["type"] == "tool_use" and block["name"] in strict:
            errors = _errors(strict[block["name"]], block["input"])
            if errors:
                raise problem(
                    f"{where} calls strict tool {block['name']!r} with input its input_schema "
                    f"refuses, which the API never sends: {errors}"
                )
    calls = any(b["type"] == "tool_use" for b in blocks)
    if output is None or calls or stop_reason in assumed.UNCONSTRAINED_STOP_REASONS:
        return
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise problem(
            f"{where} answers text that is not JSON ({exc}), but the request's "
            f"output_config.format asks for JSON under a schema: {text!r:.120}"
        ) from None
    errors = _errors(output, value)
    if errors:
        raise problem(
            f"{where} answers JSON that the request's output_config.format schema refuses, "
            f"which the API never sends: {errors}"
        )


def _validator(schema: Json, where: str) -> Validator:
    jsonschema = _jsonschema()
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise invalid(f"{where}: not a valid JSON Schema: {exc.message}") from None
    validator: Validator = cls(schema)
    return validator


def _errors(schema: Json, value: Any) -> str:
    """The schema's objections to ``value``, one line, or ''."""
    found = sorted(_validator(schema, "schema").iter_errors(value), key=lambda e: list(e.path))
    return "; ".join(
        f"{'/'.join(str(p) for p in e.path) or '(the whole value)'}: {e.message}" for e in found
    )


def _jsonschema() -> Any:
    try:
        import jsonschema
    except ImportError:
        raise problem(f"checking a JSON Schema needs jsonschema: {_EXTRA}") from None
    return jsonschema
