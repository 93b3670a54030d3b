"""Every table and column the SQL store uses, in one place (SQLAlchemy Core, no ORM).

The names the live dev stack is known to use are kept (``tenants``, ``users``,
``api_keys``, ``workspaces``, ``contexts.external_id``, ``agent_sessions.parent_session_id``,
``agent_sessions.metadata``, ``agent_checkpoints``, ``activity_logs.prev_hash``); everything
else is this project's choice. Timestamps keep their time zone and microseconds exactly
(ISO-8601 text on SQLite, ``timestamptz`` on PostgreSQL); tuples are stored as JSON lists.

A denormalised ``workspace_slug`` sits next to each ``workspace_id`` because the records
carry both and a store must give back exactly what it was given.

Foreign keys are declared where the model can never break them. The agent tables'
``workspace_id`` has none: a workspace with no contexts may be deleted while sessions,
lessons or handoffs still name it, and the model keeps those rows as they are.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from fake_contextq.domain.quota import DEFAULT_PLAN

#: The one version this module creates and understands; bump it with every change.
SCHEMA_VERSION = 3

#: Older versions whose tables are a subset of this one's (each later version only added
#: tables), with the tables added since: a database of one that holds every other table is
#: upgraded in place by creating those, so a dev stack's state survives an upgrade of the
#: fake. Version 2 lacked the links, ingest jobs and saved searches.
UPGRADES_FROM: dict[int, frozenset[str]] = {
    2: frozenset({"context_links", "ingest_jobs", "saved_searches"}),
}

#: The length of an embedding vector (``agent_lessons.embedding``).
EMBEDDING_DIMENSIONS = 768

#: Starts a ``SafeText`` value stored as JSON (a private-use character).
ESCAPED_TEXT_MARKER = "\ue000"


class Timestamp(TypeDecorator[datetime]):
    """A datetime that round-trips exactly: ``timestamptz`` on PostgreSQL, ISO text elsewhere."""

    impl = sa.String(40)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(sa.DateTime(timezone=True))
        return dialect.type_descriptor(sa.String(40))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None or dialect.name == "postgresql":
            return value
        return value.isoformat()

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:  # noqa: ARG002
        if value is None or isinstance(value, datetime):
            return value
        return datetime.fromisoformat(str(value))


class SafeText(TypeDecorator[str]):
    """Text that also round-trips lone surrogates, which JSON requests may carry but no
    UTF-8 database accepts, and on PostgreSQL NUL characters, which its text cannot hold:
    such a value (or one that starts with the marker) is stored as the marker followed by
    its ASCII JSON encoding. Everything else is stored unchanged, so equality lookups
    (``external_id``) still work, through the same encoding."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if value is None:
            return value
        if "\0" in value and dialect.name == "postgresql":
            return ESCAPED_TEXT_MARKER + json.dumps(value)
        if value.isascii():
            return value
        if not value.startswith(ESCAPED_TEXT_MARKER):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                pass
            else:
                return value
        return ESCAPED_TEXT_MARKER + json.dumps(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:  # noqa: ARG002
        if value is None:
            return None
        text = str(value)
        if text.startswith(ESCAPED_TEXT_MARKER):
            decoded: str = json.loads(text[len(ESCAPED_TEXT_MARKER) :])
            return decoded
        return text


def _json() -> sa.JSON:
    """A JSON column where Python ``None`` is SQL NULL."""
    return sa.JSON(none_as_null=True)


metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
)


def _id() -> sa.Column[int]:
    """An id the database hands out, so a row inserted by plain SQL (as the live fixtures
    provision tenants, users and keys) never collides with one the fake writes: an
    identity column on PostgreSQL, ``INTEGER PRIMARY KEY AUTOINCREMENT`` on SQLite. Ids
    are never reused, even after a delete or a restart."""
    return sa.Column(
        "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), sa.Identity(), primary_key=True
    )


tenants = sa.Table(
    "tenants",
    metadata,
    _id(),
    sa.Column("name", SafeText, nullable=False),
    sa.Column("plan", sa.String(32), nullable=False, server_default=DEFAULT_PLAN),
    sa.Column("created_at", Timestamp, nullable=False),
    # Bumped by every context write or delete of the tenant: the search cache's check.
    sa.Column("contexts_revision", sa.BigInteger, nullable=False, server_default="0"),
    sqlite_autoincrement=True,
)

# Part of the schema the seeds use (a throwaway tenant has an owner user); the API the
# fake serves has no users, only keys.
users = sa.Table(
    "users",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("email", sa.String(320), nullable=False, unique=True),
    sa.Column("role", sa.String(32), nullable=False, server_default="member"),
    sa.Column("created_at", Timestamp, nullable=False),
    sqlite_autoincrement=True,
)

api_keys = sa.Table(
    "api_keys",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("key_hash", sa.String(128), nullable=False, unique=True),
    sa.Column("prefix", sa.String(64), nullable=False),
    sa.Column("scopes", _json(), nullable=False),
    sa.Column("revoked", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_api_keys_tenant", "tenant_id"),
    sqlite_autoincrement=True,
)
#: Keys are found by their prefix, then verified (a salted hash is no lookup key). Added
#: without a new schema version: a database made before it gets it when next opened.
api_keys_prefix = sa.Index("ix_api_keys_prefix", api_keys.c.prefix)

workspaces = sa.Table(
    "workspaces",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("slug", sa.String(128), nullable=False),
    sa.Column("name", SafeText, nullable=False),
    sa.Column("archived", sa.Boolean, nullable=False, default=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.UniqueConstraint("tenant_id", "slug", name="uq_workspaces_tenant_slug"),
    sqlite_autoincrement=True,
)

contexts = sa.Table(
    "contexts",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workspace_id", sa.BigInteger, sa.ForeignKey("workspaces.id"), nullable=True),
    sa.Column("workspace_slug", sa.String(128), nullable=True),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("title", SafeText, nullable=False),
    sa.Column("content", SafeText, nullable=False),
    sa.Column("tags", _json(), nullable=False),
    sa.Column("external_id", SafeText, nullable=True),
    sa.Column("metadata", _json(), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    # The tenant's contexts_revision when this row was last written.
    sa.Column("revision", sa.BigInteger, nullable=False, server_default="0"),
    sa.UniqueConstraint("tenant_id", "external_id", name="uq_contexts_tenant_external_id"),
    sa.Index("ix_contexts_tenant_id", "tenant_id", "id"),
    sa.Index("ix_contexts_workspace", "tenant_id", "workspace_id"),
    sa.Index("ix_contexts_revision", "tenant_id", "revision"),
    sqlite_autoincrement=True,
)

agent_sessions = sa.Table(
    "agent_sessions",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workspace_id", sa.BigInteger, nullable=True),
    sa.Column("workspace_slug", sa.String(128), nullable=True),
    sa.Column(
        "parent_session_id", sa.BigInteger, sa.ForeignKey("agent_sessions.id"), nullable=True
    ),
    sa.Column("metadata", _json(), nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("summary", SafeText, nullable=True),
    sa.Column("started_at", Timestamp, nullable=False),
    sa.Column("ended_at", Timestamp, nullable=True),
    sa.Index("ix_agent_sessions_tenant", "tenant_id", "workspace_id", "id"),
    sqlite_autoincrement=True,
)

agent_checkpoints = sa.Table(
    "agent_checkpoints",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("session_id", sa.BigInteger, sa.ForeignKey("agent_sessions.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("state", _json(), nullable=False),
    sa.Column("summary", SafeText, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.UniqueConstraint("session_id", "seq", name="uq_agent_checkpoints_session_seq"),
    sqlite_autoincrement=True,
)

agent_tasks = sa.Table(
    "agent_tasks",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("session_id", sa.BigInteger, sa.ForeignKey("agent_sessions.id"), nullable=False),
    sa.Column("key", SafeText, nullable=False),
    sa.Column("title", SafeText, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("parent_id", sa.BigInteger, sa.ForeignKey("agent_tasks.id"), nullable=True),
    sa.Column("evidence", SafeText, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.UniqueConstraint("session_id", "key", name="uq_agent_tasks_session_key"),
    sqlite_autoincrement=True,
)

agent_lessons = sa.Table(
    "agent_lessons",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workspace_id", sa.BigInteger, nullable=True),
    sa.Column("workspace_slug", sa.String(128), nullable=True),
    sa.Column("session_id", sa.BigInteger, sa.ForeignKey("agent_sessions.id"), nullable=True),
    sa.Column("text", SafeText, nullable=False),
    sa.Column("tags", _json(), nullable=False),
    # a JSON list of EMBEDDING_DIMENSIONS floats, or NULL when not embedded
    sa.Column("embedding", _json(), nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_agent_lessons_tenant", "tenant_id", "id"),
    sqlite_autoincrement=True,
)

agent_handoffs = sa.Table(
    "agent_handoffs",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("workspace_id", sa.BigInteger, nullable=False),
    sa.Column("workspace_slug", sa.String(128), nullable=False),
    sa.Column("session_id", sa.BigInteger, sa.ForeignKey("agent_sessions.id"), nullable=True),
    sa.Column("content", SafeText, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Index("ix_agent_handoffs_tenant", "tenant_id", "workspace_id", "id"),
    sqlite_autoincrement=True,
)

#: A tenant's saved searches: a name (unique per tenant) and a POST /api/search body's
#: fields. The workspace is kept as the slug given (running it with an unknown one finds
#: nothing, as a search does), so it has no foreign key.
saved_searches = sa.Table(
    "saved_searches",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("name", SafeText, nullable=False),
    sa.Column("query", SafeText, nullable=False),
    sa.Column("type", sa.String(32), nullable=True),
    sa.Column("workspace_slug", SafeText, nullable=True),
    sa.Column("tags", _json(), nullable=False),
    sa.Column("result_limit", sa.Integer, nullable=True),  # the record's ``limit``
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.UniqueConstraint("tenant_id", "name", name="uq_saved_searches_tenant_name"),
    sa.Index("ix_saved_searches_tenant", "tenant_id", "id"),
    sqlite_autoincrement=True,
)

#: Links between two contexts of a tenant; a context's delete takes its links with it.
context_links = sa.Table(
    "context_links",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column(
        "source_id",
        sa.BigInteger,
        sa.ForeignKey("contexts.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "target_id",
        sa.BigInteger,
        sa.ForeignKey("contexts.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("relation", sa.String(64), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.UniqueConstraint(
        "source_id", "target_id", "relation", name="uq_context_links_source_target_relation"
    ),
    sa.Index("ix_context_links_target", "target_id"),
    sqlite_autoincrement=True,
)

#: Ingest jobs, with the parts their text was split into until the job makes contexts.
ingest_jobs = sa.Table(
    "ingest_jobs",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("actor_key_prefix", sa.String(64), nullable=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("source", sa.String(16), nullable=False),
    sa.Column("media_type", sa.String(64), nullable=False),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("tags", _json(), nullable=False),
    sa.Column("workspace_slug", sa.String(128), nullable=True),
    sa.Column("titles", _json(), nullable=False),
    sa.Column("contents", _json(), nullable=False),
    sa.Column("context_ids", _json(), nullable=False),
    sa.Column("failure_code", sa.String(64), nullable=True),
    sa.Column("failure_message", SafeText, nullable=True),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index("ix_ingest_jobs_status", "status", "id"),
    sqlite_autoincrement=True,
)

#: The global audit hash chain, in id order.
activity_logs = sa.Table(
    "activity_logs",
    metadata,
    _id(),
    sa.Column("tenant_id", sa.BigInteger, sa.ForeignKey("tenants.id"), nullable=False),
    sa.Column("actor_key_prefix", sa.String(64), nullable=True),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("entity", sa.String(64), nullable=False),
    sa.Column("entity_id", SafeText, nullable=True),
    sa.Column("at", sa.String(40), nullable=False),  # the exact hashed string
    sa.Column("prev_hash", sa.String(128), nullable=True),
    sa.Column("hash", sa.String(128), nullable=False),
    sqlite_autoincrement=True,
)

#: The tables ``reset()`` empties (everything but ``schema_version``), children first.
DATA_TABLES: tuple[sa.Table, ...] = tuple(
    t for t in reversed(metadata.sorted_tables) if t is not schema_version
)

#: The table whose identity hands out each kind of id (``SqlStore.next_id(kind)``).
ID_TABLES: dict[str, sa.Table] = {
    "tenant": tenants,
    "user": users,
    "api_key": api_keys,
    "workspace": workspaces,
    "context": contexts,
    "agent_session": agent_sessions,
    "agent_checkpoint": agent_checkpoints,
    "agent_task": agent_tasks,
    "agent_lesson": agent_lessons,
    "agent_handoff": agent_handoffs,
    "saved_search": saved_searches,
    "context_link": context_links,
    "ingest_job": ingest_jobs,
    "activity_log": activity_logs,
}
