"""The answers' bytes rendered from kept text (``render.page_body``, ``context_body``) are
the bytes of encoding the record's JSON afresh, whatever the text holds, and a record's
kept text never outlives it nor outlasts a change to its row."""

from __future__ import annotations

import gc
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter import wire
from fake_contextq import FakeContextQ
from fake_contextq.domain import _fragments, render
from fake_contextq.domain.records import Context, Page

AT = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
# any text, lone surrogates included (a store may hold one from before)
TEXT = st.text(st.characters(exclude_characters="\x00"), max_size=12)
NUMBER = st.integers() | st.floats(allow_nan=False, allow_infinity=False)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBER | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def fresh_bytes(value: Any) -> bytes:
    """The bytes the answers had before kept text: the whole body encoded at once."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        well = wire.well_formed_json(value)
        return json.dumps(well, ensure_ascii=False, separators=(",", ":")).encode()


def context(i: int, title: str = "t", metadata: dict[str, Any] | None = None) -> Context:
    return Context(
        id=i,
        tenant_id=1,
        workspace_id=None,
        workspace=None,
        type="project",
        title=title,
        content=f"content {title}",
        tags=(title, "x"),
        external_id=None if i % 2 else f"e/{title}",
        metadata=metadata or {},
        created_at=AT,
        updated_at=AT,
    )


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.tuples(TEXT, st.dictionaries(TEXT, JSON, max_size=3)), max_size=6),
    total=st.integers(0, 10**6),
    offset=st.integers(0, 10**6),
)
def test_page_and_context_bytes_are_the_fresh_encoding(
    rows: list[tuple[str, dict[str, Any]]], total: int, offset: int
) -> None:
    items = [context(i, title, meta) for i, (title, meta) in enumerate(rows, start=1)]
    page = Page(items, total, 50, offset)
    for _ in range(2):  # rendered, then from kept text
        assert render.page_body(page) == fresh_bytes(render.page_json(page))
        for c in items:
            assert render.context_body(c) == fresh_bytes(render.context_json(c))
            assert render.written_context_body(c) == fresh_bytes(render.context_json(c))
    assert render.json_body(render.page_json(page)) == fresh_bytes(render.page_json(page))


def test_a_changed_row_is_rendered_anew() -> None:
    fake = FakeContextQ()
    with fake.client(fake.mint_key(fake.create_tenant())) as client:
        made = client.post(
            "/api/contexts", json={"type": "project", "title": "before", "content": "c"}
        ).json()
        (old,) = fake.backend.contexts(1)
        page = Page([old], 1, 50, 0)
        assert b'"title":"before"' in render.page_body(page)
        client.put(f"/api/contexts/{made['id']}", json={"title": "after"})
        (new,) = fake.backend.contexts(1)
        assert b'"title":"after"' in render.page_body(Page([new], 1, 50, 0))
        assert b'"title":"after"' in render.context_body(new)
    fake.close()


def test_kept_text_leaves_with_its_record() -> None:
    gc.collect()
    rows = [context(10_000 + i, f"gone {i}") for i in range(5)]
    render.page_body(Page(rows, 5, 50, 0))
    keys = [id(row) for row in rows]
    assert all(key in render._SUMMARIES._held for key in keys)
    del rows
    gc.collect()
    # counted by key, not by size: another test's records (a fake in another thread) may
    # die meanwhile too; a key still there must belong to a new, living record
    held = render._SUMMARIES._held
    left = [entry for entry in map(held.get, keys) if entry is not None]
    assert all(ref() is not None for ref, _ in left)
    # a record built after another died (its id may be the dead one's) is rendered anew
    assert b'"title":"fresh"' in render.page_body(Page([context(10_000, "fresh")], 1, 50, 0))


def test_a_record_is_kept_by_identity_not_equality() -> None:
    first = context(7, "same", {"k": 1})
    twin = replace(first)
    assert render.context_body(first) == render.context_body(twin)
    assert render.context_body(replace(first, title="other")) != render.context_body(first)


@settings(max_examples=200, deadline=None)
@given(value=JSON)
def test_the_encoders_made_once_write_what_the_stdlib_writes(value: Any) -> None:
    """``to_text`` builds the stdlib's C encoder once; it writes what ``json.dumps``
    writes with the same options, and refuses what it refuses."""
    assert _fragments.to_text(value) == json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


def test_the_encoders_made_once_refuse_as_the_stdlib_does() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        _fragments.to_text({"x": [float("nan")]})
    with pytest.raises(TypeError, match="Object of type object is not JSON serializable"):
        _fragments.to_text({"x": object()})
    assert _fragments.to_text("\u00e9") == '"\u00e9"'
