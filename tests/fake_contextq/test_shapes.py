"""A request shape is declared once (``domain.shapes``): what its reader accepts, its JSON
Schema accepts, and what the reader refuses the schema refuses too, but for the rules a
JSON Schema cannot say (sizes in bytes, NUL characters, a value repeated in a batch)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import errors, shapes
from fake_contextq.service import schemas

BODIES: dict[str, shapes.Shape] = {
    "CONTEXT_CREATE": shapes.CONTEXT_CREATE,
    "CONTEXT_UPDATE": shapes.CONTEXT_UPDATE,
    "BULK_UPSERT": shapes.BULK_UPSERT,
    "SEARCH": shapes.SEARCH,
    "WORKSPACE_CREATE": shapes.WORKSPACE_CREATE,
    "SESSION_START": shapes.SESSION_START,
    "SESSION_END": shapes.SESSION_END,
    "CHECKPOINT": shapes.CHECKPOINT,
    "TASK": shapes.TASK,
    "TICK": shapes.TICK,
    "LESSON": shapes.LESSON,
    "HANDOFF": shapes.HANDOFF,
    "BOOT": shapes.BOOT,
}

# What a JSON Schema cannot say; the only issues the reader may have where the schema has none.
UNSAID = (
    _msgs.HAS_NUL,
    _msgs.TOO_MANY_BYTES.split("{", 1)[0],
    _msgs.DUPLICATE_IN_BATCH.split("{", 1)[0],
)

_TEXTS = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["", "a", "a\x00b", "my-ws", "Upper", "a--b", "-a", "1.0", "\ud800", "é"]),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 1.0, 2.0, -1.0, 10.0, 1e20]),
    _TEXTS,
)
JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_TEXTS, inner, max_size=3)
    ),
    max_leaves=8,
)


def _sized_texts(low: int, high: int | None) -> st.SearchStrategy[str]:
    """Strings at and about the limits of a field, short and long."""
    lengths = {0, 1, 2, low, max(low - 1, 0)} | ({high, high + 1} if high is not None else set())
    return st.one_of(
        st.builds(lambda n, c: c * n, st.sampled_from(sorted(lengths)), st.sampled_from("aé\x00")),
        _TEXTS,
    )


def _text(field: shapes.Text) -> st.SearchStrategy[Any]:
    options = [_sized_texts(field.min_len, field.max_len)]
    if field.pattern is not None:
        options.append(st.from_regex(field.pattern, fullmatch=True).filter(lambda s: "\n" not in s))
    if field.max_bytes is not None:  # more bytes than allowed, fewer characters
        options.append(st.just("é" * (field.max_bytes // 2 + 1)))
    return st.one_of(*options)


def _integer(field: shapes.Integer) -> st.SearchStrategy[Any]:
    edges = [field.minimum - 1, field.minimum, field.maximum, field.maximum + 1]
    return st.one_of(
        st.sampled_from(edges),
        st.integers(field.minimum, min(field.maximum, field.minimum + 100)),
        st.sampled_from([float(field.minimum), field.minimum + 0.5, True]),
    )


def _json_object(field: shapes.JsonObject) -> st.SearchStrategy[Any]:
    big = {} if field.max_bytes is None else {"k": "x" * field.max_bytes}
    return st.one_of(st.dictionaries(_TEXTS, JSON, max_size=3), st.just(big))


def _items(field: shapes.Items) -> st.SearchStrategy[Any]:
    item = objects(field.shape, st.sampled_from(["a", "b", "c"]))
    sizes = {field.min_items, field.max_items + 1}
    return st.one_of(
        st.lists(item, max_size=4),
        st.builds(lambda n: [{}] * n, st.sampled_from(sorted(sizes))),
        st.lists(JSON, max_size=2),
    )


_NEAR: dict[type, Callable[[Any], st.SearchStrategy[Any]]] = {
    shapes.Text: _text,
    shapes.Integer: _integer,
    shapes.JsonObject: _json_object,
    shapes.Items: _items,
    shapes.Choice: lambda f: st.sampled_from([*f.options, "nope", f.options[0].upper()]),
    shapes.Strings: lambda f: st.lists(_sized_texts(f.min_item_len, f.max_item_len)),
}
_LETTERS = st.characters(codec="utf-8", exclude_characters="\x00")


def _valid_text(field: shapes.Text) -> st.SearchStrategy[Any]:
    if field.pattern is not None:
        return st.from_regex(field.pattern, fullmatch=True).filter(
            lambda s: field.min_len <= len(s) <= (field.max_len or len(s))
        )
    return st.text(_LETTERS, min_size=field.min_len, max_size=min(field.max_len or 20, 20))


_VALID: dict[type, Callable[[Any], st.SearchStrategy[Any]]] = {
    shapes.Text: _valid_text,
    shapes.Integer: lambda f: st.integers(f.minimum, min(f.maximum, f.minimum + 1000)),
    shapes.JsonObject: lambda _: st.dictionaries(st.text(_LETTERS, max_size=3), JSON, max_size=3),
    shapes.Items: lambda f: st.lists(
        objects(f.shape, st.sampled_from("abcdefgh")), min_size=f.min_items, max_size=3
    ),
    shapes.Choice: lambda f: st.sampled_from(f.options),
    shapes.Strings: lambda f: st.lists(
        st.text(_LETTERS, min_size=f.min_item_len, max_size=5), max_size=3
    ),
}


def field_values(
    field: shapes.Field, ids: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[Any]:
    """Mostly values the field takes (so whole bodies often pass), else values about its
    limits, or any JSON at all; ``ids``: the external ids of a batch, few so some repeat."""
    valid = _VALID[type(field)](field)
    if ids is not None and field.name == "externalId":
        valid = ids
    near = _NEAR[type(field)](field)
    return st.integers(0, 9).flatmap(lambda i: valid if i < 7 else near if i < 9 else JSON)


def objects(
    shape: shapes.Shape, ids: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of the shape's keys (and one it does not know), a required one now and then
    left out."""
    required = {f.name: field_values(f, ids) for f in shape if f.required}
    optional = {f.name: field_values(f, ids) for f in shape if not f.required}
    whole = st.fixed_dictionaries(required, optional={**optional, "unknown": JSON})
    if not required:
        return whole
    short = st.builds(
        lambda body, name: {k: v for k, v in body.items() if k != name},
        whole,
        st.sampled_from(sorted(required)),
    )
    return st.one_of(whole, whole, whole, short)


def _read(shape: shapes.Shape, body: Any) -> list[dict[str, str]]:
    """The reader's issues with ``body`` (none: it accepted it)."""
    try:
        shape.read(json.dumps(body).encode())
    except errors.ValidationFailed as exc:
        return exc.issues
    return []


def _schema_errors(schema: dict[str, Any], body: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [e.message for e in validator.iter_errors(body)]


@pytest.mark.parametrize("name", list(BODIES))
def test_each_derived_schema_is_a_valid_json_schema(name: str) -> None:
    for for_mcp in (False, True):
        jsonschema.Draft202012Validator.check_schema(BODIES[name].json_schema(for_mcp))


@pytest.mark.parametrize("name", list(BODIES))
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_the_reader_and_the_schema_agree(name: str, data: st.DataObject) -> None:
    """Accepted by one, accepted by the other; refused by the reader alone only for what a
    schema cannot say."""
    shape = BODIES[name]
    body = data.draw(st.one_of(objects(shape), objects(shape), JSON), label="body")
    issues = _read(shape, body)
    schema_errors = _schema_errors(shape.json_schema(), body)
    if not issues:
        assert schema_errors == [], body
    elif not schema_errors:
        unsaid = [i for i in issues if not i["message"].startswith(UNSAID)]
        assert unsaid == [], body


@pytest.mark.parametrize("name", list(BODIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_mcp_schema_takes_what_the_reader_takes_without_nulls(
    name: str, data: st.DataObject
) -> None:
    """A tool's arguments have no use for null: every body the reader accepts that holds no
    null at its top level, the MCP flavour of the schema accepts."""
    shape = BODIES[name]
    body = data.draw(objects(shape), label="body")
    body = {k: v for k, v in body.items() if v is not None}
    if not _read(shape, body):
        assert _schema_errors(shape.json_schema(for_mcp=True), body) == []


def test_the_openapi_document_carries_the_derived_schemas() -> None:
    """No request body of the document is written by hand beside its shape."""
    bodies = {"CHECKPOINT", "TASK", "TICK", "LESSON", "HANDOFF", "BOOT"}  # named *_BODY there
    documented = {
        name: getattr(schemas, f"{name}_BODY" if name in bodies else name) for name in BODIES
    }
    assert documented == {name: shape.json_schema() for name, shape in BODIES.items()}


def test_a_context_body_holds_the_fields_of_the_contract() -> None:
    assert [f.name for f in shapes.CONTEXT_CREATE] == list(wire.CONTEXT_FIELDS)
    assert shapes.CONTEXT_CREATE.required == list(wire.CONTEXT_REQUIRED_ON_CREATE)
    assert shapes.CONTEXT_UPDATE.required == []


def test_values_name_every_field_and_what_the_body_gave() -> None:
    values = shapes.CONTEXT_UPDATE.read({"title": "t", "workspace": None})
    assert values.given == {"title", "workspace"}
    assert values == dict.fromkeys(wire.CONTEXT_FIELDS) | {"title": "t"}
    assert shapes.SEARCH.read(b'{"query": "q"}')["limit"] == wire.SEARCH_DEFAULT_LIMIT
    assert shapes.SESSION_START.read(b'{"metadata": null}')["metadata"] == {}


def test_an_optional_body_may_be_empty_and_another_may_not() -> None:
    assert shapes.TICK.read(b"") == {"evidence": None}
    with pytest.raises(errors.ValidationFailed) as caught:
        shapes.BOOT.read(b"")
    assert caught.value.issues[0]["message"].startswith("Malformed JSON body")


def test_issues_come_in_field_order_with_their_paths() -> None:
    body = {"contexts": [{"externalId": "a"}, 3, {"externalId": "a", "type": "x"}]}
    with pytest.raises(errors.ValidationFailed) as caught:
        shapes.BULK_UPSERT.read(body)
    assert [i["path"] for i in caught.value.issues] == [
        "contexts.0.type",
        "contexts.0.title",
        "contexts.0.content",
        "contexts.1",
        "contexts.2.type",
        "contexts.2.title",
        "contexts.2.content",
        "contexts.2.externalId",
    ]
    assert caught.value.issues[-1]["message"] == _msgs.DUPLICATE_IN_BATCH.format(value="a")


def test_a_query_string_reads_integers_from_their_digits() -> None:
    assert shapes.LIST_QUERY.read_query({"limit": " 7 "})["limit"] == 7
    with pytest.raises(errors.ValidationFailed) as caught:
        shapes.LIST_QUERY.read_query({"limit": "7.0", "offset": "-1"})
    assert caught.value.message == _msgs.INVALID_QUERY
    assert [i["path"] for i in caught.value.issues] == ["limit", "offset"]


def test_the_mcp_flavour_drops_null_and_keeps_the_rest() -> None:
    rest, mcp = shapes.SEARCH.properties(), shapes.SEARCH.properties(for_mcp=True)
    slug = {"type": "string", "minLength": 1, "maxLength": wire.MAX_WORKSPACE_SLUG_CHARS}
    described = {"description": "workspace slug"}
    assert rest["workspace"] == {"anyOf": [slug, {"type": "null"}], **described}
    assert mcp["workspace"] == slug | described
    assert mcp["limit"]["default"] == wire.SEARCH_DEFAULT_LIMIT


def test_with_fields_swaps_a_field_by_name_and_no_other() -> None:
    evidence = shapes.Text(name="evidence", required=True, min_len=1)
    strict = shapes.TICK.with_fields(evidence)
    assert strict.required == ["evidence"]
    assert strict.optional_body and shapes.TICK.required == []
    with pytest.raises(KeyError):
        shapes.TICK.with_fields(shapes.Text(name="nope"))
    with pytest.raises(ValueError, match="named twice"):
        shapes.Shape(shapes.Text(name="a"), shapes.Text(name="a"))
