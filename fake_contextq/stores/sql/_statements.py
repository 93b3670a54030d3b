"""The statements both dialects run, built once per shape and reused (building a
statement and its cache key costs more than running it, and a request makes several),
and the row maps between records and table rows."""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from fake_contextq.domain.records import (
    AgentSession,
    AgentTask,
    ApiKey,
    AuditRow,
    Checkpoint,
    Context,
    ContextLink,
    Handoff,
    IngestJob,
    Lesson,
    SavedSearch,
    Tenant,
    Workspace,
)
from fake_contextq.stores import schema as s
from fake_contextq.stores._rows import RowMap


def _where(table: sa.Table, where: tuple[str, ...]) -> list[sa.ColumnElement[bool]]:
    return [table.c[name] == sa.bindparam(name) for name in where]


@functools.cache
def select_rows(
    table_name: str, where: tuple[str, ...], order: tuple[str, ...], limit: int | None
) -> sa.Select[Any]:
    t = s.metadata.tables[table_name]
    stmt = sa.select(t).where(*_where(t, where))
    for name in order:
        stmt = stmt.order_by(t.c[name[1:]].desc() if name.startswith("-") else t.c[name])
    return stmt if limit is None else stmt.limit(limit)


@functools.cache
def count_rows(table_name: str, where: tuple[str, ...]) -> sa.Select[Any]:
    t = s.metadata.tables[table_name]
    return sa.select(sa.func.count()).select_from(t).where(*_where(t, where))


@functools.cache
def delete_rows(table_name: str, where: tuple[str, ...]) -> sa.Delete:
    t = s.metadata.tables[table_name]
    return sa.delete(t).where(*_where(t, where))


@functools.cache
def insert_row(table_name: str) -> sa.Insert:
    return sa.insert(s.metadata.tables[table_name])


@functools.cache
def upsert_row(backend: str, table_name: str, columns: tuple[str, ...]) -> sa.Insert:
    """Insert, or on a clash of ids replace every given column (``ON CONFLICT``, which
    SQLite and Postgres spell alike in their own ``insert`` constructs)."""
    t = s.metadata.tables[table_name]
    stmt = (sqlite.insert if backend == "sqlite" else postgresql.insert)(t)
    changes = {name: stmt.excluded[name] for name in columns if name != "id"}
    upsert: sa.Insert = stmt.on_conflict_do_update(index_elements=["id"], set_=changes)
    return upsert


PLAN = sa.select(s.tenants.c.plan).where(s.tenants.c.id == sa.bindparam("id"))
CONTEXT_ID_BY_EXTERNAL = sa.select(s.contexts.c.id).where(
    s.contexts.c.tenant_id == sa.bindparam("tenant_id"),
    s.contexts.c.external_id == sa.bindparam("external_id"),
)
REVISION = sa.select(s.tenants.c.contexts_revision, s.tenants.c.created_at).where(
    s.tenants.c.id == sa.bindparam("id")
)
CHANGED_CONTEXTS = (
    sa.select(s.contexts)
    .where(
        s.contexts.c.tenant_id == sa.bindparam("tenant_id"),
        s.contexts.c.revision > sa.bindparam("since"),
    )
    .order_by(s.contexts.c.id)
)
LINKS_OF = (
    sa.select(s.context_links)
    .where(
        s.context_links.c.tenant_id == sa.bindparam("tenant_id"),
        sa.or_(
            s.context_links.c.source_id == sa.bindparam("context_id"),
            s.context_links.c.target_id == sa.bindparam("context_id"),
        ),
    )
    .order_by(s.context_links.c.id)
)
UNFINISHED_INGEST_JOBS = (
    sa.select(s.ingest_jobs)
    .where(
        s.ingest_jobs.c.status != sa.bindparam("done"),
        s.ingest_jobs.c.status != sa.bindparam("failed"),
    )
    .order_by(s.ingest_jobs.c.id)
)
CONTEXT_IDS = sa.select(s.contexts.c.id).where(s.contexts.c.tenant_id == sa.bindparam("tenant_id"))


# ----- rows to records and back, derived from the records' fields -----

TENANT = RowMap(Tenant)
KEY = RowMap(ApiKey)
WORKSPACE = RowMap(Workspace)
CONTEXT = RowMap(Context)
AUDIT = RowMap(AuditRow)
SESSION = RowMap(AgentSession)
CHECKPOINT = RowMap(Checkpoint)
TASK = RowMap(AgentTask)
LESSON = RowMap(Lesson)
HANDOFF = RowMap(Handoff)
SAVED_SEARCH = RowMap(SavedSearch)
SAVED_SEARCH_PAGE = (
    sa.select(s.saved_searches)
    .where(s.saved_searches.c.tenant_id == sa.bindparam("tenant_id"))
    .order_by(s.saved_searches.c.id)
    .limit(sa.bindparam("limit"))
    .offset(sa.bindparam("offset"))
)
LINK = RowMap(ContextLink)
INGEST_JOB = RowMap(IngestJob)
