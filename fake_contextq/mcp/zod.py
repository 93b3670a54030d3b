"""Tool arguments checked as ContextQ's TypeScript server checks them: by the Zod schema its
advertised input schema was generated from, refused in Zod 4's words.

[assumed] Seed 003 puts ContextQ's MCP server in ``mcp/src/tools.ts``, a TypeScript server,
most likely on the official SDK's ``McpServer`` with Zod schemas (``zod`` 4, the SDK's own
since 1.23: ``import * as z from 'zod/v4'`` in ``src/types.ts`` of v1.29.0). ``McpServer``
parses the arguments with the tool's schema and refuses with the ``ZodError``'s message,
which Zod 4 makes ``JSON.stringify(issues, null, 2)``: every issue, each with its ``code``,
what it expected, its ``path`` as a JSON array and Zod's English ``message``. This module
reads the subset of JSON Schema the fake's tools declare (type, properties, required, enum,
minimum/maximum, minItems/maxItems, items, and ``oneOf`` of required names, a refine) and
yields the issues Zod 4 yields for the same schema. Unknown keys are stripped by Zod, not
refused, so they are not issues here either: ``stripped`` drops them, as Zod's output does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from fake_contextq import _msgs
from fake_contextq.domain._validate import json_type_name
from fake_contextq.service.tool_shapes import MCP_MAX_ID

__all__ = ["MAX_SAFE_INTEGER", "issues", "message", "stripped"]

Issue = dict[str, Any]
Path = tuple[str | int, ...]

#: Number.MAX_SAFE_INTEGER: the largest integer a JavaScript number holds exactly, and so
#: the largest that ``z.number().int()`` accepts (the MCP schemas' largest id).
MAX_SAFE_INTEGER: Final = MCP_MAX_ID

# JSON Schema's type names as Zod names what it expected
_EXPECTED: Final = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}


#: ``received`` of a value of each builtin JSON type, looked up before it asks in order
_RECEIVED_BY_TYPE: Final = {
    type(None): "null",
    bool: "boolean",
    int: "number",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def received(value: Any) -> str:
    """Zod 4's name for what it got (``parsedType`` of its English locale)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # and Infinity is a "number"
    known = _RECEIVED_BY_TYPE.get(type(value))
    if known is not None:
        return known
    return "undefined" if isinstance(value, _Undefined) else json_type_name(value)


class _Undefined:
    """JavaScript's ``undefined``: what a missing property is to Zod."""


_UNDEFINED: Final = _Undefined()


def _continues(found: Sequence[Issue]) -> bool:
    """Whether Zod goes on to the checks after ``found``: only bounds let it."""
    return all(i["code"] in ("too_big", "too_small") for i in found)


def _wrong_type(kind: str, value: Any, path: Path) -> Issue:
    expected = _EXPECTED.get(kind, "unknown")
    fields = {"expected": expected, "code": "invalid_type"}
    return _issue(
        path, fields, _msgs.ZOD_INVALID_TYPE.format(expected=expected, got=received(value))
    )


def _not_an_option(schema: Mapping[str, Any], path: Path) -> Issue:
    options = "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    fields = {"code": "invalid_value", "values": list(schema["enum"])}
    return _issue(path, fields, _msgs.ZOD_INVALID_OPTION.format(options=options))


def _issue(path: Path, fields: Mapping[str, Any], text: str) -> Issue:
    return {**fields, "path": list(path), "message": text}


def _not_null(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """What ``z.X().nullable()`` checks a value other than null against: X alone (Zod 4's
    nullable hands it to X, whose issues are the answer). A list of several other types
    names no one Zod schema: it is left as it is, unchecked by type."""
    others = [k for k in schema["type"] if k != "null"]
    return {**schema, "type": others[0]} if len(others) == 1 else schema


def _is_type(kind: Any, value: Any) -> bool:
    return not isinstance(kind, str) or received(value) == _EXPECTED[kind]


def _number(schema: Mapping[str, Any], value: float, path: Path, out: list[Issue]) -> None:
    if not math.isfinite(value):  # z.number() takes neither, and runs no check after
        got = "NaN" if math.isnan(value) else "Infinity"
        fields = {"expected": "number", "code": "invalid_type", "received": got}
        text = _msgs.ZOD_INVALID_TYPE.format(expected="number", got=received(value))
        out.append(_issue(path, fields, text))
        return
    if schema.get("type") == "integer":
        if isinstance(value, float) and not value.is_integer():
            fields = {"expected": "int", "format": "safeint", "code": "invalid_type"}
            out.append(
                _issue(path, fields, _msgs.ZOD_INVALID_TYPE.format(expected="int", got="number"))
            )
            return
        if abs(value) > MAX_SAFE_INTEGER:
            big = value > 0
            bound = MAX_SAFE_INTEGER if big else -MAX_SAFE_INTEGER
            out.append(_bound(path, "int", big, bound, note=True))
    if "minimum" in schema and value < schema["minimum"]:
        out.append(_bound(path, "number", False, schema["minimum"]))
    if "maximum" in schema and value > schema["maximum"]:
        out.append(_bound(path, "number", True, schema["maximum"]))


def _bound(path: Path, origin: str, big: bool, limit: int, *, note: bool = False) -> Issue:
    code, key, sign = ("too_big", "maximum", "<=") if big else ("too_small", "minimum", ">=")
    fields: dict[str, Any] = {"origin": origin, "code": code, key: limit, "inclusive": True}
    if note:
        fields["note"] = _msgs.ZOD_SAFE_INTEGER_NOTE
    template = _msgs.ZOD_TOO_BIG if big else _msgs.ZOD_TOO_SMALL
    return _issue(path, fields, template.format(origin=origin, bound=f"{sign}{limit}"))


def _sized(path: Path, big: bool, limit: int) -> Issue:
    code, key, sign = ("too_big", "maximum", "<=") if big else ("too_small", "minimum", ">=")
    fields = {"origin": "array", "code": code, key: limit, "inclusive": True}
    template = _msgs.ZOD_TOO_MANY if big else _msgs.ZOD_TOO_FEW
    return _issue(path, fields, template.format(bound=f"{sign}{limit}"))


def _check(schema: Mapping[str, Any], value: Any, path: Path, out: list[Issue]) -> None:
    kind = schema.get("type")
    if isinstance(kind, list):
        if value is None and "null" in kind:
            return
        schema = _not_null(schema)
        kind = schema.get("type")
    if "enum" in schema:  # z.enum: one check, whatever the type
        if value not in schema["enum"] or not _is_type(kind, value):
            out.append(_not_an_option(schema, path))
        return
    nan = isinstance(value, float) and math.isnan(value)  # a number to z.number()'s check
    numeric_nan = nan and kind in ("integer", "number")
    if isinstance(kind, str) and received(value) != _EXPECTED[kind] and not numeric_nan:
        out.append(_wrong_type(kind, value, path))
        return
    if kind in ("integer", "number"):
        _number(schema, value, path, out)
    elif kind == "array":
        before = len(out)
        if "items" in schema:
            items = schema["items"]
            for index, item in enumerate(value):
                _check(items, item, (*path, index), out)
        if len(out) > before and not _continues(out[before:]):
            return  # Zod 4 runs no check (a length) after an issue that aborts
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            out.append(_sized(path, True, schema["maxItems"]))
        if "minItems" in schema and len(value) < schema["minItems"]:
            out.append(_sized(path, False, schema["minItems"]))
    elif kind == "object" and "properties" in schema:
        _object(schema, value, path, out)


def _object(
    schema: Mapping[str, Any], value: Mapping[str, Any], path: Path, out: list[Issue]
) -> None:
    required = schema.get("required", ())
    before = len(out)
    for name, field in schema["properties"].items():
        if name in value:
            _check(field, value[name], (*path, name), out)
        elif name in required:
            missing = (*path, name)
            found = _not_an_option(field, missing) if "enum" in field else None
            out.append(found or _wrong_type(field.get("type", ""), _UNDEFINED, missing))
    # a refine is a check: Zod 4 runs none after an issue that aborts
    choices: Sequence[Mapping[str, Any]] = schema.get("oneOf", ())
    if choices and (len(out) == before or _continues(out[before:])):
        held = [all(n in value for n in c.get("required", ())) for c in choices]
        if held.count(True) != 1:
            names = " and ".join(n for c in choices for n in c.get("required", ()))
            fields = {"code": "custom"}
            out.append(_issue(path, fields, _msgs.ZOD_EXACTLY_ONE.format(names=names)))


def issues(schema: Mapping[str, Any], value: Any) -> list[Issue]:
    """Every issue Zod 4 finds in ``value`` against the schema ``schema`` was made from,
    in Zod's order (properties in declared order, an array's items before its length)."""
    if _passes(schema)(value):  # most arguments have none: no walk naming each path
        return []
    out: list[Issue] = []
    _check(schema, value, (), out)
    return out


def stripped(schema: Mapping[str, Any], value: Any) -> Any:
    """What Zod's parse returns for a value it took: ``z.object`` drops the keys its shape
    does not declare, at every depth (an object schema without ``properties`` is a record,
    kept whole). So a name the schema does not list never reaches the handler. A whole
    number sent as ``5.0`` is the number 5, as to JavaScript (``z.number().int()`` takes it
    and ``JSON.stringify`` writes ``5``)."""
    if isinstance(value, float) and value.is_integer() and _integer(schema):
        return int(value)
    if isinstance(value, dict) and "properties" in schema:
        fields = schema["properties"]
        return {k: stripped(fields[k], v) for k, v in value.items() if k in fields}
    items = schema.get("items")
    walked = isinstance(items, Mapping) and ("properties" in items or _integer(items))
    if isinstance(value, list) and walked:
        return [stripped(items, item) for item in value]  # type: ignore[arg-type]
    return value  # nothing in it can be stripped: a scalar, a record, a list of those


def _integer(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "integer" or (isinstance(kind, list) and "integer" in kind)


# ----- the same checks, compiled: whether there is any issue, not which -----

Passes = Callable[[Any], bool]

#: Each schema's ``Passes``, by identity: a tool's schema is made once and never changed.
_COMPILED: dict[int, tuple[Mapping[str, Any], Passes]] = {}


def _passes(schema: Mapping[str, Any]) -> Passes:
    """A predicate that is True only where ``_check`` finds no issue (False: look)."""
    held = _COMPILED.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    if len(_COMPILED) > 1024:  # schemas made on the fly: keep no more than the tools'
        _COMPILED.clear()
    passes = _compile(schema)
    _COMPILED[id(schema)] = (schema, passes)
    return passes


def _never(_: Any) -> bool:
    return False


def _compile(schema: Mapping[str, Any]) -> Passes:
    """``_check``'s tests, each decided once for the schema, in a closure per node."""
    kind = schema.get("type")
    if isinstance(kind, list) and (one := _not_null(schema)) is not schema:
        nullable = "null" in kind
        inner = _compile(one)
        return lambda value: (nullable and value is None) or inner(value)
    if isinstance(kind, str) and kind not in _EXPECTED:
        return _never  # what _check makes of such a schema is its own business
    if "enum" in schema:
        options = schema["enum"]
        return lambda value: value in options and _is_type(kind, value)
    expected = _EXPECTED[kind] if isinstance(kind, str) else None
    within = _compile_kind(schema, kind)

    def passes(value: Any) -> bool:
        if expected is not None and received(value) != expected:
            return False
        return within is None or within(value)

    return passes


def _compile_kind(schema: Mapping[str, Any], kind: Any) -> Passes | None:
    if kind in ("integer", "number"):
        return _compile_number(schema)
    if kind == "array":
        return _compile_array(schema)
    if kind == "object" and "properties" in schema:
        return _compile_object(schema)
    return None


def _compile_number(schema: Mapping[str, Any]) -> Passes:
    integer = schema.get("type") == "integer"
    low: Any = schema.get("minimum")
    high: Any = schema.get("maximum")
    has_low, has_high = "minimum" in schema, "maximum" in schema

    def passes(value: float) -> bool:
        if not math.isfinite(value):
            return False
        if integer and (
            (isinstance(value, float) and not value.is_integer()) or abs(value) > MAX_SAFE_INTEGER
        ):
            return False
        return not ((has_low and value < low) or (has_high and value > high))

    return passes


def _compile_array(schema: Mapping[str, Any]) -> Passes:
    items = _passes(schema["items"]) if "items" in schema else None
    most: Any = schema.get("maxItems")
    least: Any = schema.get("minItems")
    has_most, has_least = "maxItems" in schema, "minItems" in schema

    def passes(value: list[Any]) -> bool:
        if items is not None and not all(items(item) for item in value):
            return False
        return not ((has_most and len(value) > most) or (has_least and len(value) < least))

    return passes


def _compile_object(schema: Mapping[str, Any]) -> Passes:
    required = schema.get("required", ())
    fields = [
        (name, _passes(field), name in required) for name, field in schema["properties"].items()
    ]
    choices = [tuple(c.get("required", ())) for c in schema.get("oneOf", ())]

    def passes(value: Mapping[str, Any]) -> bool:
        for name, field, needed in fields:
            if name in value:
                if not field(value[name]):
                    return False
            elif needed:
                return False
        return not choices or sum(all(n in value for n in names) for names in choices) == 1

    return passes


def message(found: Sequence[Issue]) -> str:
    """A ``ZodError``'s message: ``JSON.stringify(issues, null, 2)``."""
    return json.dumps(list(found), indent=2, ensure_ascii=False)
