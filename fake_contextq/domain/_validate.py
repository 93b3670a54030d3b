"""A small zod-like reader for JSON bodies that collects every issue before failing."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import errors


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float | None:
    """JSON.parse reads 1e400 as Infinity, which JSON.stringify writes as null."""
    value = float(text)
    return value if math.isfinite(value) else None


#: JSON.parse's reading of numbers, built once: ``json.loads`` with hooks builds a decoder
#: (and its scanner) on every call.
_DECODER = json.JSONDecoder(parse_constant=_no_constants, parse_float=_finite)


def _loads(text: str) -> Any:
    """``json.loads(text)`` with the hooks above; text that still starts with a BOM goes
    through ``json.loads`` itself, for its own error."""
    if text.startswith("\ufeff"):
        return json.loads(text, parse_constant=_no_constants, parse_float=_finite)
    return _DECODER.decode(text)


def decode_json(raw: bytes | str) -> Any:
    """Decode a request body as JSON.parse would, or fail with a 400 saying what is wrong.

    Python's json is laxer than JSON.parse (it reads NaN and Infinity) and fails on deep
    nesting with a RecursionError: both become 400s here, never a 500.
    """
    try:
        text = _body_text(raw) if isinstance(raw, bytes) else raw
        value = _loads(text)
    except json.JSONDecodeError as exc:
        detail = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except UnicodeDecodeError:
        detail = _msgs.BODY_NOT_UTF8
    except ValueError as exc:
        detail = str(exc)
    except RecursionError:
        detail = "nested too deeply"
    else:
        if _may_nest_too_deep(text) and _too_deep(value):
            detail = f"nested deeper than {wire.MAX_JSON_DEPTH} levels"
        elif _SURROGATE_ESCAPE.search(text) is None:  # no lone surrogate can be in it
            return value
        else:
            return wire.well_formed_json(value)
    raise _malformed(detail)


def body_json(raw: bytes | str | Mapping[str, Any]) -> Any:
    """A body as the rules read it: raw bytes decoded (``decode_json``), or a mapping the
    in-process API gave, held to the same depth limit and made well-formed the same way."""
    if isinstance(raw, bytes | str):
        return decode_json(raw)
    if _too_deep(raw):
        raise _malformed(f"nested deeper than {wire.MAX_JSON_DEPTH} levels")
    return wire.well_formed_json(raw)


def _malformed(detail: str) -> errors.ValidationFailed:
    return errors.ValidationFailed(
        [{"path": "", "message": _msgs.MALFORMED_JSON.format(detail=detail)}]
    )


#: Where a UTF-8 body can hold a lone surrogate at all: a JSON escape of one half.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _body_text(raw: bytes) -> str:
    """The body as text, read as UTF-8 only (``wire.BODY_ENCODING``; one leading UTF-8 BOM
    is skipped): Python's json would guess UTF-16 and UTF-32 from the first bytes."""
    if raw.startswith(wire.BODY_BOM):
        raw = raw[len(wire.BODY_BOM) :]
    return raw.decode(wire.BODY_ENCODING)


def _may_nest_too_deep(text: str) -> bool:
    """Whether JSON ``text`` holds more opening brackets than ContextQ's depth limit: if
    not, nothing in it can nest that deep, and the walk over the decoded value is skipped
    (counting brackets is a scan in C; the walk visits every array and object)."""
    return text.count("[") + text.count("{") > wire.MAX_JSON_DEPTH


def _too_deep(value: Any) -> bool:
    """Whether arrays and objects nest deeper than ContextQ's limit."""
    return wire.nested_too_deep(value)


def forbidden_text_paths(value: Any, limit: int = 10) -> list[tuple[str | int, ...]]:
    """Where free JSON (metadata, a checkpoint's state) holds a string, key or value, with a
    character no request may hold (``wire.FORBIDDEN_TEXT_CHARS``); the first ``limit``."""
    found: list[tuple[str | int, ...]] = []
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack and len(found) < limit:
        node, path = stack.pop()
        if isinstance(node, str):
            if wire.has_forbidden_char(node):
                found.append(path)
        elif isinstance(node, dict):
            for key, child in node.items():
                if wire.has_forbidden_char(key):
                    found.append((*path, key))
                stack.append((child, (*path, key)))
        elif isinstance(node, list):
            stack.extend((child, (*path, i)) for i, child in enumerate(node))
    return sorted(found, key=lambda p: [str(x) for x in p])


class Issues:
    """Collects ``{path, message}`` issues; ``check()`` raises them all at once."""

    def __init__(self, message: str = _msgs.INVALID_BODY) -> None:
        self.items: list[dict[str, str]] = []
        self.message = message

    def add(self, path: tuple[str | int, ...], message: str) -> None:
        self.items.append({"path": wire.issue_path(path), "message": message})

    def check(self) -> None:
        if self.items:
            raise errors.ValidationFailed(self.items, self.message)


def string_problem(
    value: str, min_len: int = 0, max_len: int | None = None, max_bytes: int | None = None
) -> str | None:
    """What is wrong with a string field's value (its issue's message), or None. A message,
    not an issue: the issue's path is built only for a value that has one."""
    if wire.has_forbidden_char(value):
        return _msgs.HAS_NUL
    if len(value) < min_len:
        return _msgs.TOO_SHORT.format(min=min_len)
    if max_len is not None and len(value) > max_len:
        return _msgs.TOO_LONG.format(max=max_len)
    if max_bytes is not None and len(value) * 4 > max_bytes:
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return _msgs.TOO_MANY_BYTES.format(max=max_bytes, got=size)
    return None


class Reader:
    """Reads typed fields from one JSON object, recording issues under ``base`` path."""

    def __init__(self, obj: Any, issues: Issues, base: tuple[str | int, ...] = ()) -> None:
        self.issues = issues
        self.base = base
        if isinstance(obj, Mapping):
            self.obj: Mapping[str, Any] = obj
            self.ok = True
        else:
            self.obj = {}
            self.ok = False
            issues.add(base, _msgs.EXPECTED.format(expected="object", received=json_type_name(obj)))

    def has(self, name: str) -> bool:
        return name in self.obj

    def get(self, name: str, required: bool) -> tuple[bool, Any]:
        """Whether the object holds ``name``, and its value; a missing required one is told."""
        if name not in self.obj:
            if required and self.ok:
                self.issues.add((*self.base, name), _msgs.REQUIRED)
            return False, None
        return True, self.obj[name]

    def expect(self, name: str, expected: str, value: Any) -> None:
        """Tell ``name`` it holds the wrong type of JSON value."""
        self.issues.add(
            (*self.base, name),
            _msgs.EXPECTED.format(expected=expected, received=json_type_name(value)),
        )

    def string(
        self,
        name: str,
        *,
        required: bool = False,
        nullable: bool = False,
        min_len: int = 0,
        max_len: int | None = None,
        max_bytes: int | None = None,
        pattern: re.Pattern[str] | None = None,
        pattern_message: str = "",
    ) -> str | None:
        """A string field; one that must also match ``pattern`` in full is told
        ``pattern_message`` when it does not (its other limits checked first)."""
        present, value = self.get(name, required)
        if not present or (value is None and nullable):
            return None
        if not isinstance(value, str):
            self.expect(name, "string", value)
            return None
        problem = string_problem(value, min_len, max_len, max_bytes)
        if problem is None and pattern is not None and not pattern.fullmatch(value):
            problem = pattern_message
        if problem is not None:
            self.issues.add((*self.base, name), problem)
            return None
        return value

    def enum(self, name: str, options: Collection[str], *, required: bool = False) -> str | None:
        present, value = self.get(name, required)
        if not present:
            return None
        if not isinstance(value, str) or value not in options:
            self.issues.add(
                (*self.base, name),
                _msgs.INVALID_ENUM.format(
                    options=" | ".join(repr(o) for o in options), received=value
                ),
            )
            return None
        return value

    def string_list(
        self, name: str, *, max_items: int, min_item_len: int = 1, max_item_len: int
    ) -> tuple[str, ...] | None:
        present, value = self.get(name, False)
        if not present:
            return None
        if not isinstance(value, list):
            self.expect(name, "array", value)
            return None
        if len(value) > max_items:
            self.issues.add((*self.base, name), _msgs.TOO_MANY_ITEMS.format(max=max_items))
            return None
        out: list[str] = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                problem: str | None = _msgs.EXPECTED.format(
                    expected="string", received=json_type_name(item)
                )
            else:
                problem = string_problem(item, min_item_len, max_item_len)
            if problem is None:
                out.append(item)
            else:
                self.issues.add((*self.base, name, i), problem)
        return tuple(out)

    def mapping(
        self,
        name: str,
        *,
        required: bool = False,
        nullable: bool = False,
        max_bytes: int | None = None,
    ) -> dict[str, Any] | None:
        """A JSON object field, held to ``max_bytes`` as canonical JSON in UTF-8."""
        present, value = self.get(name, required)
        if not present or (value is None and nullable):
            return None
        if not isinstance(value, dict):
            self.expect(name, "object", value)
            return None
        bad = forbidden_text_paths(value)
        for path in bad:
            self.issues.add((*self.base, name, *path), _msgs.HAS_NUL)
        if bad:
            return None
        if max_bytes is not None and (size := json_size(value)) > max_bytes:
            self.issues.add(
                (*self.base, name), _msgs.TOO_MANY_BYTES.format(max=max_bytes, got=size)
            )
            return None
        return value

    def integer(
        self, name: str, *, required: bool = False, minimum: int, maximum: int
    ) -> int | None:
        present, value = self.get(name, required)
        if not present:
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.expect(name, "integer", value)
            return None
        return self._in_range(name, value, minimum, maximum)

    def query_integer(self, name: str, *, minimum: int, maximum: int) -> int | None:
        """An integer given as query-string text: up to 19 digits, a sign, spaces around."""
        present, value = self.get(name, False)
        if not present:
            return None
        if not isinstance(value, str) or not _QUERY_INT.fullmatch(value.strip()):
            self.issues.add(
                (*self.base, name), _msgs.EXPECTED.format(expected="integer", received=repr(value))
            )
            return None
        return self._in_range(name, int(value), minimum, maximum)

    def _in_range(self, name: str, value: int, minimum: int, maximum: int) -> int | None:
        if not minimum <= value <= maximum:
            self.issues.add((*self.base, name), _msgs.OUT_OF_RANGE.format(min=minimum, max=maximum))
            return None
        return value


_QUERY_INT = re.compile(r"-?[0-9]{1,19}")


def json_size(value: Any) -> int:
    """The size of ``value`` as canonical JSON in UTF-8, as ContextQ counts free JSON."""
    return len(wire.canonical_json(value).encode("utf-8", "surrogatepass"))
