"""The rows the fake stores, as immutable values.

Field names are snake_case and wire-neutral; ``contract`` turns them into ContextQ's
JSON. Records are frozen so state handed to a test for assertions cannot be changed
behind the model's back.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

_T = TypeVar("_T")


def detached(value: _T) -> _T:
    """A deep copy of records for code outside the fake (a test's assertions, an LLM
    hook): a record is frozen, but its JSON fields (a context's ``metadata``, a
    checkpoint's ``state``) are dicts a store may hand out again, so changing one in place
    would change what the fake serves next."""
    return copy.deepcopy(value)


@dataclass(frozen=True, slots=True)
class Tenant:
    id: int
    name: str
    plan: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: int
    tenant_id: int
    key_hash: str
    prefix: str
    scopes: tuple[str, ...]
    created_at: datetime
    revoked: bool = False


@dataclass(frozen=True, slots=True)
class Workspace:
    id: int
    tenant_id: int
    slug: str
    name: str
    created_at: datetime
    archived: bool = False


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakly kept: render's text cache
class Context:
    id: int
    tenant_id: int
    workspace_id: int | None
    workspace: str | None
    type: str
    title: str
    content: str
    tags: tuple[str, ...]
    external_id: str | None
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class AuditDraft(NamedTuple):
    """An audit row's own fields, before the store gives it an id and chains it after the
    chain's head (``audit.chain_row``)."""

    tenant_id: int
    actor_key_prefix: str | None
    action: str
    entity: str
    entity_id: str | None
    at: str


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    tenant_id: int
    actor_key_prefix: str | None
    action: str
    entity: str
    entity_id: str | None
    at: str
    prev_hash: str | None
    hash: str

    def hashed_fields(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant_id": self.tenant_id,
            "actor_key_prefix": self.actor_key_prefix,
            "action": self.action,
            "entity": self.entity,
            "entity_id": self.entity_id,
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the tenant a key binds to, and the key's scopes."""

    tenant_id: int
    scopes: tuple[str, ...]
    key_prefix: str | None


@dataclass(frozen=True, slots=True)
class ContextInput:
    """A validated create, update or upsert item; ``None`` means 'not given'."""

    type: str | None = None
    title: str | None = None
    content: str | None = None
    tags: tuple[str, ...] | None = None
    external_id: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] | None = None
    given: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True, slots=True)
class ListQuery:
    workspace: str | None = None
    tag: str | None = None
    type: str | None = None
    limit: int = 50
    offset: int = 0
    types: tuple[str, ...] = ()  # when given: only contexts of one of these types


@dataclass(frozen=True, slots=True)
class SavedSearch:
    """A tenant's named ``POST /api/search`` body; ``None``: the field is not sent."""

    id: int
    tenant_id: int
    name: str
    query: str
    type: str | None
    workspace: str | None
    tags: tuple[str, ...]
    limit: int | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of a context's content: ``text`` is ``content[start:end]``."""

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class SearchQuery:
    query: str
    type: str | None = None
    workspace: str | None = None
    tags: tuple[str, ...] = ()
    limit: int = 10


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Context]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class SavedSearchPage:
    items: list[SavedSearch]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    context: Context
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class BulkResult:
    created: int
    updated: int
    items: list[Context]


@dataclass(frozen=True, slots=True)
class MocRegeneration:
    """What one MOC regeneration did to a workspace's generated MOCs."""

    workspace: str
    created: list[Context]
    updated: list[Context]
    unchanged: list[Context]
    removed: list[int]


@dataclass(frozen=True, slots=True)
class AgentSession:
    id: int
    tenant_id: int
    workspace_id: int | None
    workspace: str | None
    parent_session_id: int | None
    metadata: dict[str, Any]
    status: str
    summary: str | None
    started_at: datetime
    ended_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    id: int
    tenant_id: int
    session_id: int
    seq: int
    state: dict[str, Any]
    summary: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AgentTask:
    id: int
    tenant_id: int
    session_id: int
    key: str
    title: str
    status: str
    parent_id: int | None
    evidence: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Lesson:
    id: int
    tenant_id: int
    workspace_id: int | None
    workspace: str | None
    session_id: int | None
    text: str
    tags: tuple[str, ...]
    embedding: tuple[float, ...] | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Handoff:
    id: int
    tenant_id: int
    workspace_id: int
    workspace: str
    session_id: int | None
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SessionState:
    """One session with everything it wrote: checkpoints by ``seq``, tasks."""

    session: AgentSession
    checkpoints: tuple[Checkpoint, ...]
    tasks: tuple[AgentTask, ...]


@dataclass(frozen=True, slots=True)
class AgentState:
    """A tenant's whole Agent Memory Layer, read in one transaction (for a person to look
    at, or a test to assert on)."""

    sessions: tuple[SessionState, ...]
    lessons: tuple[Lesson, ...]
    handoffs: tuple[Handoff, ...]


@dataclass(frozen=True, slots=True)
class Resume:
    session: AgentSession
    checkpoint: Checkpoint | None
    open_tasks: list[AgentTask]


@dataclass(frozen=True, slots=True)
class BootPack:
    goal: str
    workspace: str | None
    resume: Resume | None
    handoff: Handoff | None
    lessons: list[Lesson]
    facts: list[SearchHit]
    token_budget: int
    tokens_used: int
    truncated: bool
    lesson_scores: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ContextLink:
    """A directed link between two contexts of one tenant, named by its relation."""

    id: int
    tenant_id: int
    source_id: int
    target_id: int
    relation: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Links:
    """The links of one context, both directions, each with the context at its other end."""

    context: Context
    outgoing: list[tuple[ContextLink, Context]]
    incoming: list[tuple[ContextLink, Context]]


@dataclass(frozen=True, slots=True)
class IngestJob:
    """An ingest job: the parts its text was split into (``titles[i]``, ``contents[i]``),
    what each context it makes gets, its state, and what it made or why it failed."""

    id: int
    tenant_id: int
    actor_key_prefix: str | None  # the key that asked: the audit row of its completion names it
    status: str
    source: str  # "text" or "data"
    media_type: str
    type: str
    tags: tuple[str, ...]
    workspace: str | None  # as asked; resolved when the contexts are made
    titles: tuple[str, ...]
    contents: tuple[str, ...]
    context_ids: tuple[int, ...]
    failure_code: str | None
    failure_message: str | None
    created_at: datetime
    updated_at: datetime
