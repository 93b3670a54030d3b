"""``SqlStore``: the ``Store`` interface on SQLAlchemy Core, for SQLite or PostgreSQL.

Same meaning as ``MemoryStore``, method by method; the model keeps every rule. A
``transaction()`` is one database transaction: ``BEGIN IMMEDIATE`` on SQLite, so writers
(and readers) serialise across processes on one file as ``MemoryStore``'s lock
serialises threads, and a transaction-scoped advisory lock on PostgreSQL for the same
effect. The store methods use the connection of the current thread's transaction;
nested ``transaction()`` calls join it. An exception leaving the outermost block rolls
everything back (``MemoryStore`` has no rollback; the model validates before writing,
so only ids drawn by a request that then failed differ: here they are not consumed).

Search loads the tenant's contexts and ranks them with the same BM25 code as the memory
store (``SearchIndex``), so scores and ties are identical; it is correct, not fast.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from fake_contextq import schema as s
from fake_contextq.records import (
    AgentSession,
    AgentTask,
    ApiKey,
    AuditRow,
    Checkpoint,
    Context,
    Handoff,
    Lesson,
    ListQuery,
    Tenant,
    Workspace,
)
from fake_contextq.search import SearchIndex

#: The PostgreSQL advisory lock key every transaction takes (any constant will do).
PG_LOCK_KEY = 0x436F6E7465787451  # "ContextQ"


class SchemaVersionError(RuntimeError):
    """The database was made by another schema version (or not by this store at all)."""


class NoTransaction(RuntimeError):
    """A store method was called outside ``transaction()``."""


class _Local(threading.local):
    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.depth = 0


class SqlStore:
    """The model's rows in a SQL database, one ``transaction()`` per DB transaction."""

    def __init__(
        self, url: str | sa.URL, *, echo: bool = False, busy_timeout: float = 30.0
    ) -> None:
        self.url = sa.make_url(url)
        self._local = _Local()
        # An in-memory SQLite database lives in one connection: share it between threads
        # and serialise transactions on it with a lock (a file database serialises itself).
        self._memory_lock: threading.RLock | None = None
        kwargs: dict[str, Any] = {"echo": echo}
        backend = self.url.get_backend_name()
        if backend == "sqlite":
            connect_args: dict[str, Any] = {"timeout": busy_timeout, "check_same_thread": False}
            if self.url.database in (None, "", ":memory:"):
                kwargs["poolclass"] = StaticPool
                self._memory_lock = threading.RLock()
            kwargs["connect_args"] = connect_args
        self.engine: Engine = sa.create_engine(self.url, **kwargs)
        self._dialect = self.engine.dialect.name
        if self._dialect == "sqlite":
            _sqlite_immediate(self.engine, in_memory=self._memory_lock is not None)
        self._create_schema()

    # ----- transactions -----

    def transaction(self) -> AbstractContextManager[object]:
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[object]:
        local = self._local
        if local.conn is not None:
            local.depth += 1
            try:
                yield local.conn
            finally:
                local.depth -= 1
            return
        lock = self._memory_lock
        if lock is not None:
            lock.acquire()
        try:
            with self.engine.begin() as conn:  # BEGIN IMMEDIATE on SQLite (see below)
                if self._dialect == "postgresql":
                    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_LOCK_KEY)))
                local.conn, local.depth = conn, 1
                try:
                    yield conn
                finally:
                    local.conn, local.depth = None, 0
        finally:
            if lock is not None:
                lock.release()

    @property
    def _c(self) -> Connection:
        conn = self._local.conn
        if conn is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        return conn

    def close(self) -> None:
        """Close the pooled connections (the database stays)."""
        self.engine.dispose()

    # ----- schema -----

    def _create_schema(self) -> None:
        with self.transaction():
            conn = self._c
            inspector = sa.inspect(conn)
            existing = set(inspector.get_table_names())
            if s.schema_version.name in existing:
                versions = list(conn.execute(sa.select(s.schema_version.c.version)).scalars())
                if versions != [s.SCHEMA_VERSION]:
                    raise SchemaVersionError(
                        f"{self.url.render_as_string(hide_password=True)}: schema_version "
                        f"{versions or 'empty'} is not {s.SCHEMA_VERSION}, the only version "
                        "this SqlStore understands; migrate the database or use a new one"
                    )
            else:
                ours = {t.name for t in s.metadata.sorted_tables} & existing
                if ours:
                    raise SchemaVersionError(
                        f"{self.url.render_as_string(hide_password=True)}: tables "
                        f"{sorted(ours)} exist but there is no schema_version table; "
                        "this database was not created by SqlStore"
                    )
            s.metadata.create_all(conn, checkfirst=True)
            if s.schema_version.name not in existing:
                conn.execute(sa.insert(s.schema_version).values(version=s.SCHEMA_VERSION))

    def reset(self) -> None:
        with self.transaction():
            for table in s.DATA_TABLES:
                self._c.execute(sa.delete(table))

    def next_id(self, kind: str) -> int:
        t = s.id_counters
        conn = self._c
        current = conn.execute(sa.select(t.c.value).where(t.c.kind == kind)).scalar_one_or_none()
        if current is None:
            conn.execute(sa.insert(t).values(kind=kind, value=1))
            return 1
        value = int(current) + 1
        conn.execute(sa.update(t).where(t.c.kind == kind).values(value=value))
        return value

    def _put(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        """Insert the row, or replace every column of the row with the same id."""
        changes = {k: v for k, v in values.items() if k != "id"}
        if self._dialect in ("sqlite", "postgresql"):
            dialect_insert = sqlite.insert if self._dialect == "sqlite" else postgresql.insert
            stmt = dialect_insert(table).values(**values)
            self._c.execute(stmt.on_conflict_do_update(index_elements=["id"], set_=changes))
            return
        done = self._c.execute(sa.update(table).where(table.c.id == values["id"]).values(changes))
        if done.rowcount == 0:
            self._c.execute(sa.insert(table).values(**values))

    def _one(self, stmt: sa.Select[Any]) -> sa.Row[Any] | None:
        return self._c.execute(stmt.limit(1)).first()

    def _all(self, stmt: sa.Select[Any]) -> list[sa.Row[Any]]:
        return list(self._c.execute(stmt).all())

    # ----- tenants and keys -----

    def put_tenant(self, tenant: Tenant) -> None:
        self._put(
            s.tenants,
            {
                "id": tenant.id,
                "name": tenant.name,
                "plan": tenant.plan,
                "created_at": tenant.created_at,
            },
        )

    def tenant(self, tenant_id: int) -> Tenant | None:
        row = self._one(sa.select(s.tenants).where(s.tenants.c.id == tenant_id))
        return None if row is None else _tenant(row)

    def tenants(self) -> list[Tenant]:
        return [_tenant(row) for row in self._all(sa.select(s.tenants).order_by(s.tenants.c.id))]

    def put_key(self, key: ApiKey) -> None:
        self._put(
            s.api_keys,
            {
                "id": key.id,
                "tenant_id": key.tenant_id,
                "key_hash": key.key_hash,
                "prefix": key.prefix,
                "scopes": list(key.scopes),
                "revoked": key.revoked,
                "created_at": key.created_at,
            },
        )

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._one(sa.select(s.api_keys).where(s.api_keys.c.key_hash == key_hash))
        return None if row is None else _key(row)

    def keys(self, tenant_id: int) -> list[ApiKey]:
        t = s.api_keys
        rows = self._all(sa.select(t).where(t.c.tenant_id == tenant_id).order_by(t.c.id))
        return [_key(row) for row in rows]

    # ----- workspaces -----

    def put_workspace(self, workspace: Workspace) -> None:
        self._put(
            s.workspaces,
            {
                "id": workspace.id,
                "tenant_id": workspace.tenant_id,
                "slug": workspace.slug,
                "name": workspace.name,
                "archived": workspace.archived,
                "created_at": workspace.created_at,
            },
        )

    def workspace(self, tenant_id: int, slug: str) -> Workspace | None:
        t = s.workspaces
        row = self._one(sa.select(t).where(t.c.tenant_id == tenant_id, t.c.slug == slug))
        return None if row is None else _workspace(row)

    def workspaces(self, tenant_id: int) -> list[Workspace]:
        t = s.workspaces
        rows = self._all(sa.select(t).where(t.c.tenant_id == tenant_id).order_by(t.c.id))
        return [_workspace(row) for row in rows]

    def delete_workspace(self, workspace: Workspace) -> None:
        t = s.workspaces
        self._c.execute(
            sa.delete(t).where(t.c.tenant_id == workspace.tenant_id, t.c.slug == workspace.slug)
        )

    # ----- contexts -----

    def put_context(self, context: Context) -> None:
        self._put(
            s.contexts,
            {
                "id": context.id,
                "tenant_id": context.tenant_id,
                "workspace_id": context.workspace_id,
                "workspace_slug": context.workspace,
                "type": context.type,
                "title": context.title,
                "content": context.content,
                "tags": list(context.tags),
                "external_id": context.external_id,
                "metadata": context.metadata,
                "created_at": context.created_at,
                "updated_at": context.updated_at,
            },
        )

    def context(self, tenant_id: int, context_id: int) -> Context | None:
        t = s.contexts
        row = self._one(sa.select(t).where(t.c.tenant_id == tenant_id, t.c.id == context_id))
        return None if row is None else _context(row)

    def context_by_external(self, tenant_id: int, external_id: str) -> Context | None:
        t = s.contexts
        row = self._one(
            sa.select(t).where(t.c.tenant_id == tenant_id, t.c.external_id == external_id)
        )
        return None if row is None else _context(row)

    def delete_context(self, context: Context) -> None:
        t = s.contexts
        self._c.execute(
            sa.delete(t).where(t.c.tenant_id == context.tenant_id, t.c.id == context.id)
        )

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        t = s.contexts
        stmt = sa.select(sa.func.count()).select_from(t).where(t.c.tenant_id == tenant_id)
        if workspace_id is not None:
            stmt = stmt.where(t.c.workspace_id == workspace_id)
        return int(self._c.execute(stmt).scalar_one())

    def list_contexts(
        self, tenant_id: int, query: ListQuery, workspace_id: int | None
    ) -> tuple[list[Context], int]:
        t = s.contexts
        stmt = sa.select(t).where(t.c.tenant_id == tenant_id)
        if query.workspace is not None:
            # as MemoryStore: a given workspace filters on workspace_id, even if it is None
            stmt = stmt.where(
                t.c.workspace_id.is_(None)
                if workspace_id is None
                else t.c.workspace_id == workspace_id
            )
        if query.type is not None:
            stmt = stmt.where(t.c.type == query.type)
        stmt = stmt.order_by(t.c.id)
        if query.tag is not None:
            # tags are a JSON list: filter in Python, exactly as the memory store does
            matches = [c for c in map(_context, self._all(stmt)) if query.tag in c.tags]
            return matches[query.offset : query.offset + query.limit], len(matches)
        total = int(
            self._c.execute(sa.select(sa.func.count()).select_from(stmt.subquery())).scalar_one()
        )
        if query.offset >= total:
            return [], total
        page = self._all(stmt.limit(query.limit).offset(query.offset))
        return [_context(row) for row in page], total

    def search(
        self,
        tenant_id: int,
        terms: list[str],
        limit: int,
        accept: Callable[[Context], bool] | None,
    ) -> list[tuple[Context, float]]:
        if not terms:
            return []
        t = s.contexts
        rows = self._all(sa.select(t).where(t.c.tenant_id == tenant_id).order_by(t.c.id))
        contexts = {c.id: c for c in map(_context, rows)}
        index = SearchIndex()
        for c in contexts.values():
            index.add(c.id, c.title, c.content, c.tags)
        doc_filter = None if accept is None else (lambda doc_id: accept(contexts[doc_id]))
        return [(contexts[d], score) for d, score in index.top(terms, limit, doc_filter)]

    # ----- audit -----

    def last_audit(self) -> AuditRow | None:
        t = s.activity_logs
        row = self._one(sa.select(t).order_by(t.c.id.desc()))
        return None if row is None else _audit(row)

    def append_audit(self, row: AuditRow) -> None:
        self._c.execute(
            sa.insert(s.activity_logs).values(
                id=row.id,
                tenant_id=row.tenant_id,
                actor_key_prefix=row.actor_key_prefix,
                action=row.action,
                entity=row.entity,
                entity_id=row.entity_id,
                at=row.at,
                prev_hash=row.prev_hash,
                hash=row.hash,
            )
        )

    def audit_rows(self) -> list[AuditRow]:
        t = s.activity_logs
        return [_audit(row) for row in self._all(sa.select(t).order_by(t.c.id))]

    # ----- agent layer -----

    def put_session(self, session: AgentSession) -> None:
        self._put(
            s.agent_sessions,
            {
                "id": session.id,
                "tenant_id": session.tenant_id,
                "workspace_id": session.workspace_id,
                "workspace_slug": session.workspace,
                "parent_session_id": session.parent_session_id,
                "metadata": session.metadata,
                "status": session.status,
                "summary": session.summary,
                "started_at": session.started_at,
                "ended_at": session.ended_at,
            },
        )

    def session(self, tenant_id: int, session_id: int) -> AgentSession | None:
        t = s.agent_sessions
        row = self._one(sa.select(t).where(t.c.tenant_id == tenant_id, t.c.id == session_id))
        return None if row is None else _session(row)

    def latest_session(self, tenant_id: int, workspace_id: int | None) -> AgentSession | None:
        t = s.agent_sessions
        stmt = sa.select(t).where(t.c.tenant_id == tenant_id)
        if workspace_id is not None:
            stmt = stmt.where(t.c.workspace_id == workspace_id)
        row = self._one(stmt.order_by(t.c.id.desc()))
        return None if row is None else _session(row)

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._c.execute(
            sa.insert(s.agent_checkpoints).values(
                id=checkpoint.id,
                tenant_id=checkpoint.tenant_id,
                session_id=checkpoint.session_id,
                seq=checkpoint.seq,
                state=checkpoint.state,
                summary=checkpoint.summary,
                created_at=checkpoint.created_at,
            )
        )

    def last_checkpoint(self, session_id: int) -> Checkpoint | None:
        t = s.agent_checkpoints
        row = self._one(
            sa.select(t).where(t.c.session_id == session_id).order_by(t.c.seq.desc(), t.c.id.desc())
        )
        return None if row is None else _checkpoint(row)

    def put_task(self, task: AgentTask) -> None:
        self._put(
            s.agent_tasks,
            {
                "id": task.id,
                "tenant_id": task.tenant_id,
                "session_id": task.session_id,
                "key": task.key,
                "title": task.title,
                "status": task.status,
                "parent_id": task.parent_id,
                "evidence": task.evidence,
                "created_at": task.created_at,
                "updated_at": task.updated_at,
            },
        )

    def task(self, tenant_id: int, task_id: int) -> AgentTask | None:
        t = s.agent_tasks
        row = self._one(sa.select(t).where(t.c.tenant_id == tenant_id, t.c.id == task_id))
        return None if row is None else _task(row)

    def task_by_key(self, session_id: int, key: str) -> AgentTask | None:
        t = s.agent_tasks
        row = self._one(sa.select(t).where(t.c.session_id == session_id, t.c.key == key))
        return None if row is None else _task(row)

    def tasks(self, session_id: int) -> list[AgentTask]:
        t = s.agent_tasks
        rows = self._all(sa.select(t).where(t.c.session_id == session_id).order_by(t.c.id))
        return [_task(row) for row in rows]

    def put_lesson(self, lesson: Lesson) -> None:
        self._put(
            s.agent_lessons,
            {
                "id": lesson.id,
                "tenant_id": lesson.tenant_id,
                "workspace_id": lesson.workspace_id,
                "workspace_slug": lesson.workspace,
                "session_id": lesson.session_id,
                "text": lesson.text,
                "tags": list(lesson.tags),
                "embedding": None if lesson.embedding is None else list(lesson.embedding),
                "created_at": lesson.created_at,
            },
        )

    def lessons(self, tenant_id: int) -> list[Lesson]:
        t = s.agent_lessons
        rows = self._all(sa.select(t).where(t.c.tenant_id == tenant_id).order_by(t.c.id))
        return [_lesson(row) for row in rows]

    def put_handoff(self, handoff: Handoff) -> None:
        self._c.execute(
            sa.insert(s.agent_handoffs).values(
                id=handoff.id,
                tenant_id=handoff.tenant_id,
                workspace_id=handoff.workspace_id,
                workspace_slug=handoff.workspace,
                session_id=handoff.session_id,
                content=handoff.content,
                created_at=handoff.created_at,
            )
        )

    def latest_handoff(self, tenant_id: int, workspace_id: int | None) -> Handoff | None:
        t = s.agent_handoffs
        stmt = sa.select(t).where(t.c.tenant_id == tenant_id)
        if workspace_id is not None:
            stmt = stmt.where(t.c.workspace_id == workspace_id)
        row = self._one(stmt.order_by(t.c.id.desc()))
        return None if row is None else _handoff(row)

    def __repr__(self) -> str:
        return f"SqlStore({self.url.render_as_string(hide_password=True)!r})"


def _sqlite_immediate(engine: Engine, *, in_memory: bool) -> None:
    """Take pysqlite's own transaction handling away and begin every transaction IMMEDIATE,
    so the write lock is held from the first statement (no upgrade deadlocks, no lost
    check-then-write races between processes)."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # autocommit: SQLAlchemy emits BEGIN
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys=ON")
            if not in_memory:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


# ----- rows to records -----


def _tenant(row: sa.Row[Any]) -> Tenant:
    m = row._mapping
    return Tenant(m["id"], m["name"], m["plan"], m["created_at"])


def _key(row: sa.Row[Any]) -> ApiKey:
    m = row._mapping
    return ApiKey(
        id=m["id"],
        tenant_id=m["tenant_id"],
        key_hash=m["key_hash"],
        prefix=m["prefix"],
        scopes=tuple(m["scopes"]),
        created_at=m["created_at"],
        revoked=bool(m["revoked"]),
    )


def _workspace(row: sa.Row[Any]) -> Workspace:
    m = row._mapping
    return Workspace(
        id=m["id"],
        tenant_id=m["tenant_id"],
        slug=m["slug"],
        name=m["name"],
        created_at=m["created_at"],
        archived=bool(m["archived"]),
    )


def _context(row: sa.Row[Any]) -> Context:
    m = row._mapping
    return Context(
        id=m["id"],
        tenant_id=m["tenant_id"],
        workspace_id=m["workspace_id"],
        workspace=m["workspace_slug"],
        type=m["type"],
        title=m["title"],
        content=m["content"],
        tags=tuple(m["tags"]),
        external_id=m["external_id"],
        metadata=m["metadata"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def _audit(row: sa.Row[Any]) -> AuditRow:
    m = row._mapping
    return AuditRow(
        id=m["id"],
        tenant_id=m["tenant_id"],
        actor_key_prefix=m["actor_key_prefix"],
        action=m["action"],
        entity=m["entity"],
        entity_id=m["entity_id"],
        at=m["at"],
        prev_hash=m["prev_hash"],
        hash=m["hash"],
    )


def _session(row: sa.Row[Any]) -> AgentSession:
    m = row._mapping
    return AgentSession(
        id=m["id"],
        tenant_id=m["tenant_id"],
        workspace_id=m["workspace_id"],
        workspace=m["workspace_slug"],
        parent_session_id=m["parent_session_id"],
        metadata=m["metadata"],
        status=m["status"],
        summary=m["summary"],
        started_at=m["started_at"],
        ended_at=m["ended_at"],
    )


def _checkpoint(row: sa.Row[Any]) -> Checkpoint:
    m = row._mapping
    return Checkpoint(
        id=m["id"],
        tenant_id=m["tenant_id"],
        session_id=m["session_id"],
        seq=m["seq"],
        state=m["state"],
        summary=m["summary"],
        created_at=m["created_at"],
    )


def _task(row: sa.Row[Any]) -> AgentTask:
    m = row._mapping
    return AgentTask(
        id=m["id"],
        tenant_id=m["tenant_id"],
        session_id=m["session_id"],
        key=m["key"],
        title=m["title"],
        status=m["status"],
        parent_id=m["parent_id"],
        evidence=m["evidence"],
        created_at=m["created_at"],
        updated_at=m["updated_at"],
    )


def _lesson(row: sa.Row[Any]) -> Lesson:
    m = row._mapping
    embedding = m["embedding"]
    return Lesson(
        id=m["id"],
        tenant_id=m["tenant_id"],
        workspace_id=m["workspace_id"],
        workspace=m["workspace_slug"],
        session_id=m["session_id"],
        text=m["text"],
        tags=tuple(m["tags"]),
        embedding=None if embedding is None else tuple(float(x) for x in embedding),
        created_at=m["created_at"],
    )


def _handoff(row: sa.Row[Any]) -> Handoff:
    m = row._mapping
    return Handoff(
        id=m["id"],
        tenant_id=m["tenant_id"],
        workspace_id=m["workspace_id"],
        workspace=m["workspace_slug"],
        session_id=m["session_id"],
        content=m["content"],
        created_at=m["created_at"],
    )
