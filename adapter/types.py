"""Typed results of the ContextQ client, parsed from the wire through the shared contract."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from adapter import wire
from adapter.wire import CONTEXT_WIRE_NAMES, WORKSPACE_WIRE_NAMES, parse_timestamp


def _wire(obj: Mapping[str, Any], names: Mapping[str, str], attr: str, default: Any = None) -> Any:
    return obj.get(names[attr], default)


@dataclass(frozen=True, slots=True)
class ContextSummary:
    """A context as list and search rows carry it: everything but ``content``."""

    id: int
    workspace: str | None
    type: str
    title: str
    tags: tuple[str, ...]
    external_id: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ContextSummary:
        return cls(**_summary_fields(obj))


@dataclass(frozen=True, slots=True)
class Context(ContextSummary):
    """A whole context, with its ``content``."""

    content: str = ""

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Context:
        return cls(**_summary_fields(obj), content=_wire(obj, CONTEXT_WIRE_NAMES, "content", ""))


_N = CONTEXT_WIRE_NAMES  # hoisted: a listing parses up to 500 rows a page


def _summary_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": int(obj[_N["id"]]),
        "workspace": obj.get(_N["workspace"]),
        "type": obj[_N["type"]],
        "title": obj[_N["title"]],
        "tags": tuple(obj.get(_N["tags"]) or ()),
        "external_id": obj.get(_N["external_id"]),
        "metadata": dict(obj.get(_N["metadata"]) or {}),
        "created_at": parse_timestamp(obj[_N["created_at"]]),
        "updated_at": parse_timestamp(obj[_N["updated_at"]]),
    }


@dataclass(frozen=True, slots=True)
class ContextPage:
    items: list[ContextSummary]
    total: int
    limit: int
    offset: int

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ContextPage:
        rows, total, limit, offset = wire.read_page(obj)
        return cls([ContextSummary.from_wire(i) for i in rows], total, limit, offset)


@dataclass(frozen=True, slots=True)
class Workspace:
    id: int
    slug: str
    name: str
    archived: bool
    created_at: datetime

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Workspace:
        n = WORKSPACE_WIRE_NAMES
        return cls(
            id=int(_wire(obj, n, "id")),
            slug=_wire(obj, n, "slug"),
            name=_wire(obj, n, "name"),
            archived=bool(_wire(obj, n, "archived", False)),
            created_at=parse_timestamp(_wire(obj, n, "created_at")),
        )


@dataclass(frozen=True, slots=True)
class SearchResult:
    context: ContextSummary
    score: float
    snippet: str

    @classmethod
    def many_from_wire(cls, obj: Mapping[str, Any]) -> list[SearchResult]:
        """The results of a search answer, best first."""
        return [cls(ContextSummary.from_wire(c), s, t) for c, s, t in wire.read_search(obj)]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> SearchResult:
        """One result (a Boot Pack's fact has the same shape)."""
        summary, score, snippet = wire.read_hit(obj)
        return cls(ContextSummary.from_wire(summary), score, snippet)


@dataclass(frozen=True, slots=True)
class BulkUpsertResult:
    created: int
    updated: int
    items: list[Context] = field(default_factory=list)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> BulkUpsertResult:
        created, updated, rows = wire.read_bulk(obj)
        return cls(created, updated, [Context.from_wire(i) for i in rows])


@dataclass(frozen=True, slots=True)
class ContextInput:
    """One item of a create or bulk upsert, in Python names."""

    type: str
    title: str
    content: str
    external_id: str | None = None
    tags: tuple[str, ...] = ()
    workspace: str | None = None
    metadata: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return context_body(
            type=self.type,
            title=self.title,
            content=self.content,
            tags=self.tags,
            external_id=self.external_id,
            workspace=self.workspace,
            metadata=self.metadata,
        )


_UNSET: Any = object()


def context_body(**fields: Any) -> dict[str, Any]:
    """A context request body from Python names; ``None`` drops optional fields, except
    where ``keep_none`` names them (a PUT clearing ``external_id`` or ``workspace``)."""
    keep_none = set(fields.pop("keep_none", ()))
    body: dict[str, Any] = {}
    for attr, value in fields.items():
        if value is _UNSET or (value is None and attr not in keep_none):
            continue
        if attr == "tags":
            value = list(value)
        body[CONTEXT_WIRE_NAMES[attr]] = value
    return body


# ----- Agent Memory Layer (snake_case on the wire: field names are the attribute names) -----


def _ts(value: Any) -> datetime | None:
    return None if value is None else parse_timestamp(value)


def _fields(cls: Any, obj: Mapping[str, Any], times: tuple[str, ...] = ()) -> dict[str, Any]:
    from dataclasses import fields

    out: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in obj:
            continue
        value = obj[f.name]
        out[f.name] = _ts(value) if f.name in times else value
    return out


@dataclass(frozen=True, slots=True)
class AgentSession:
    id: int
    workspace: str | None
    parent_session_id: int | None
    status: str
    summary: str | None
    metadata: dict[str, Any]
    started_at: datetime
    ended_at: datetime | None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> AgentSession:
        return cls(**_fields(cls, obj, ("started_at", "ended_at")))


@dataclass(frozen=True, slots=True)
class Checkpoint:
    id: int
    session_id: int
    seq: int
    state: dict[str, Any]
    summary: str | None
    created_at: datetime

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Checkpoint:
        return cls(**_fields(cls, obj, ("created_at",)))


@dataclass(frozen=True, slots=True)
class AgentTask:
    id: int
    session_id: int
    key: str
    title: str
    status: str
    parent_id: int | None
    evidence: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> AgentTask:
        return cls(**_fields(cls, obj, ("created_at", "updated_at")))


@dataclass(frozen=True, slots=True)
class Lesson:
    id: int
    text: str
    workspace: str | None
    session_id: int | None
    tags: tuple[str, ...]
    embedded: bool
    created_at: datetime
    score: float | None = None

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Lesson:
        found = _fields(cls, obj, ("created_at",))
        found["tags"] = tuple(found.get("tags") or ())
        return cls(**found)


@dataclass(frozen=True, slots=True)
class Handoff:
    id: int
    workspace: str
    session_id: int | None
    content: str
    created_at: datetime

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Handoff:
        return cls(**_fields(cls, obj, ("created_at",)))


@dataclass(frozen=True, slots=True)
class Resume:
    session: AgentSession
    checkpoint: Checkpoint | None
    open_tasks: list[AgentTask]

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> Resume:
        cp = obj.get("checkpoint")
        return cls(
            session=AgentSession.from_wire(obj["session"]),
            checkpoint=None if cp is None else Checkpoint.from_wire(cp),
            open_tasks=[AgentTask.from_wire(t) for t in obj.get("open_tasks", [])],
        )


@dataclass(frozen=True, slots=True)
class BootPack:
    goal: str
    workspace: str | None
    resume: Resume | None
    handoff: Handoff | None
    lessons: list[Lesson]
    facts: list[SearchResult]
    token_budget: int
    tokens_used: int
    truncated: bool

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> BootPack:
        resume, handoff = obj.get("resume"), obj.get("handoff")
        return cls(
            goal=obj["goal"],
            workspace=obj.get("workspace"),
            resume=None if resume is None else Resume.from_wire(resume),
            handoff=None if handoff is None else Handoff.from_wire(handoff),
            lessons=[Lesson.from_wire(x) for x in obj.get("lessons", [])],
            facts=[SearchResult.from_wire(h) for h in obj.get("facts", [])],
            token_budget=int(obj["token_budget"]),
            tokens_used=int(obj["tokens_used"]),
            truncated=bool(obj.get("truncated", False)),
        )
