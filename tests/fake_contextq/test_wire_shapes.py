"""The two sides of each answer shape agree: the fake renders its JSON from its own records
(``fake_contextq.domain.render``), the client parses it into its own types
(``adapter.types``, ``adapter.wire``'s readers), and neither is derived from the other.

For every answer shape a fake record is rendered, then held to the client's type: the same
field names (through the contract's wire-name maps where the wire is camelCase), each
value of the JSON type the client's annotation expects, and the client's parse of it
equal to the record's values. A field added, dropped or renamed on either side fails here.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

import pytest

from adapter import types as wt
from adapter import wire
from fake_contextq.domain import records as r
from fake_contextq.domain import render

T = TypeVar("T")
AT = datetime(2025, 3, 4, 5, 6, 7, 891_000, tzinfo=UTC)  # milliseconds: what the wire keeps
LATER = datetime(2025, 3, 5, 6, 7, 8, 912_000, tzinfo=UTC)

CONTEXT = r.Context(
    id=7,
    tenant_id=1,
    workspace_id=2,
    workspace="acme",
    type="reference",
    title="Prefs",
    content="Likes Go.",
    tags=("go", "prefs"),
    external_id="ext-7",
    metadata={"source": "test", "n": 1},
    created_at=AT,
    updated_at=LATER,
)
WORKSPACE = r.Workspace(id=2, tenant_id=1, slug="acme", name="Acme", created_at=AT, archived=True)
HIT = r.SearchHit(CONTEXT, 0.5, "Likes **Go**.")
SESSION = r.AgentSession(
    id=3,
    tenant_id=1,
    workspace_id=2,
    workspace="acme",
    parent_session_id=1,
    metadata={"run": "r-1"},
    status="completed",
    summary="done",
    started_at=AT,
    ended_at=LATER,
)
CHECKPOINT = r.Checkpoint(
    id=4, tenant_id=1, session_id=3, seq=2, state={"step": 2}, summary="half", created_at=AT
)
TASK = r.AgentTask(
    id=5,
    tenant_id=1,
    session_id=3,
    key="t-1",
    title="Write it",
    status="verified",
    parent_id=6,
    evidence="tests pass",
    created_at=AT,
    updated_at=LATER,
)
LESSON = r.Lesson(
    id=8,
    tenant_id=1,
    workspace_id=2,
    workspace="acme",
    session_id=3,
    text="Pin versions.",
    tags=("deps",),
    embedding=(0.25, 0.75),
    created_at=AT,
)
HANDOFF = r.Handoff(
    id=9, tenant_id=1, workspace_id=2, workspace="acme", session_id=3, content="Next", created_at=AT
)
RESUME = r.Resume(SESSION, CHECKPOINT, [TASK])
BOOT = r.BootPack(
    goal="ship it",
    workspace="acme",
    resume=RESUME,
    handoff=HANDOFF,
    lessons=[LESSON],
    facts=[HIT],
    token_budget=4_000,
    tokens_used=321,
    truncated=True,
    lesson_scores={LESSON.id: 0.75},
)

#: Where the wire's name of a client attribute is not the attribute's own name.
WIRE_NAMES: Mapping[type, Mapping[str, str]] = {
    wt.ContextSummary: wire.CONTEXT_WIRE_NAMES,
    wt.Context: wire.CONTEXT_WIRE_NAMES,
    wt.Workspace: wire.WORKSPACE_WIRE_NAMES,
}


def _names(cls: type) -> dict[str, str]:
    """Client attribute -> the JSON field it is read from."""
    names = WIRE_NAMES.get(cls, {})
    return {f.name: names.get(f.name, f.name) for f in dataclasses.fields(cls)}


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value is what the client's annotation ``hint`` reads."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is Any:
        return True
    if hint is datetime:  # the contract's timestamp text, exactly
        return isinstance(value, str) and wire.timestamp(wire.parse_timestamp(value)) == value
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float):
        numbers = (int,) if hint is int else (int, float)
        return isinstance(value, numbers) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin in (list, tuple):
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if hint is dict or origin is dict:
        return isinstance(value, dict)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            return False
        _check(value, hint)  # type: ignore[arg-type]
        return True
    raise AssertionError(f"this test has no rule for {hint!r}: add one")


def _check(body: Any, cls: type, *, omitted: tuple[str, ...] = ()) -> None:
    """``body``'s fields are exactly the client type's (less the ``omitted`` optional ones),
    each of the JSON type its annotation reads, nested types included."""
    assert isinstance(body, dict), f"{cls.__name__}: {body!r} is not an object"
    names = _names(cls)
    expected = {wire_name for attr, wire_name in names.items() if attr not in omitted}
    assert set(body) == expected, f"{cls.__name__}: the fake renders {sorted(body)}"
    hints = get_type_hints(cls)
    for attr, wire_name in names.items():
        if attr in omitted:
            continue
        assert _conforms(body[wire_name], hints[attr]), (
            f"{cls.__name__}.{attr}: {body[wire_name]!r} is not {hints[attr]}"
        )


def _as_client(record: Any, cls: type[T], **given: Any) -> T:
    """The client's value for a fake record: each of the client type's fields read from the
    record's attribute of that name (``given`` for those the fake derives)."""
    hints = get_type_hints(cls)
    values = dict(given)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in given:
            values[f.name] = _convert(getattr(record, f.name), hints[f.name])
    return cls(**values)


def _convert(value: Any, hint: Any) -> Any:
    if value is None:
        return None
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        [hint] = [a for a in args if a is not type(None)]
        origin, args = get_origin(hint), get_args(hint)
    if origin is list:
        return [_convert(v, args[0]) for v in value]
    if dataclasses.is_dataclass(hint):
        return _as_client(value, hint)  # type: ignore[arg-type]
    return value


def _lesson(lesson: r.Lesson, score: float | None) -> wt.Lesson:
    return _as_client(lesson, wt.Lesson, embedded=lesson.embedding is not None, score=score)


# ----- contexts and workspaces (camelCase, through the contract's name maps) -------------


def test_a_whole_context() -> None:
    body = render.context_json(CONTEXT)
    _check(body, wt.Context)
    assert wt.Context.from_wire(body) == _as_client(CONTEXT, wt.Context)


def test_a_context_summary_carries_everything_but_content() -> None:
    body = render.context_json(CONTEXT, with_content=False)
    _check(body, wt.ContextSummary)
    assert wt.ContextSummary.from_wire(body) == _as_client(CONTEXT, wt.ContextSummary)


def test_a_context_without_its_optional_values() -> None:
    bare = dataclasses.replace(CONTEXT, workspace=None, workspace_id=None, external_id=None)
    body = render.context_json(bare)
    _check(body, wt.Context)
    assert wt.Context.from_wire(body) == _as_client(bare, wt.Context)


def test_a_page_of_contexts() -> None:
    page = r.Page(items=[CONTEXT], total=12, limit=1, offset=3)
    body = render.page_json(page)
    _check(body, wt.ContextPage)
    assert wt.ContextPage.from_wire(body) == _as_client(page, wt.ContextPage)
    assert wire.read_keys(body) == ([(7, "ext-7", {"source": "test", "n": 1})], 12)


def test_a_search_answer() -> None:
    body = render.search_json([HIT])
    assert set(body) == {"results"}  # what wire.read_search reads
    [result] = body["results"]
    _check(result, wt.SearchResult)
    assert wt.SearchResult.many_from_wire(body) == [_as_client(HIT, wt.SearchResult)]


def test_a_bulk_upsert_answer() -> None:
    result = r.BulkResult(created=1, updated=2, items=[CONTEXT])
    body = render.bulk_json(result)
    _check(body, wt.BulkUpsertResult)
    assert wt.BulkUpsertResult.from_wire(body) == _as_client(result, wt.BulkUpsertResult)


def test_a_workspace_and_the_workspace_list() -> None:
    body = render.workspace_json(WORKSPACE)
    _check(body, wt.Workspace)
    assert wt.Workspace.from_wire(body) == _as_client(WORKSPACE, wt.Workspace)
    listing = render.workspaces_json([WORKSPACE])
    assert wire.read_items(listing) == [body]
    assert set(listing) == {"items"}


# ----- the Agent Memory Layer (snake_case: field names are attribute names) -------------

AGENT_SHAPES: list[tuple[str, Callable[[], Any], type, Any]] = [
    ("session", lambda: render.session_json(SESSION), wt.AgentSession, SESSION),
    ("checkpoint", lambda: render.checkpoint_json(CHECKPOINT), wt.Checkpoint, CHECKPOINT),
    ("task", lambda: render.task_json(TASK), wt.AgentTask, TASK),
    ("handoff", lambda: render.handoff_json(HANDOFF), wt.Handoff, HANDOFF),
    ("resume", lambda: render.resume_json(RESUME), wt.Resume, RESUME),
]


@pytest.mark.parametrize(
    ("rendered", "shape", "record"),
    [shape[1:] for shape in AGENT_SHAPES],
    ids=[shape[0] for shape in AGENT_SHAPES],
)
def test_an_agent_answer(rendered: Callable[[], Any], shape: type, record: Any) -> None:
    body = rendered()
    _check(body, shape)
    assert shape.from_wire(body) == _as_client(record, shape)  # type: ignore[attr-defined]


def test_an_open_session_and_a_resume_without_a_checkpoint() -> None:
    open_session = dataclasses.replace(SESSION, status="active", summary=None, ended_at=None)
    resume = r.Resume(open_session, None, [])
    body = render.resume_json(resume)
    _check(body, wt.Resume)
    assert wt.Resume.from_wire(body) == _as_client(resume, wt.Resume)


def test_a_lesson_recalled_by_meaning_and_one_by_recency() -> None:
    scored = render.lesson_json(LESSON, 0.75)
    _check(scored, wt.Lesson)
    assert wt.Lesson.from_wire(scored) == _lesson(LESSON, 0.75)
    unembedded = dataclasses.replace(LESSON, embedding=None, workspace=None, session_id=None)
    plain = render.lesson_json(unembedded)
    _check(plain, wt.Lesson, omitted=("score",))
    assert wt.Lesson.from_wire(plain) == _lesson(unembedded, None)


def test_a_boot_pack() -> None:
    body = render.boot_json(BOOT)
    _check(body, wt.BootPack)
    expected = _as_client(BOOT, wt.BootPack, lessons=[_lesson(LESSON, 0.75)])
    assert wt.BootPack.from_wire(body) == expected


def test_an_empty_boot_pack() -> None:
    empty = dataclasses.replace(BOOT, workspace=None, resume=None, handoff=None, lessons=[])
    body = render.boot_json(empty)
    _check(body, wt.BootPack)
    assert wt.BootPack.from_wire(body) == _as_client(empty, wt.BootPack, lessons=[])
