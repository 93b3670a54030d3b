"""``SqlStore``: the ``Store`` interface on SQLAlchemy Core, for SQLite or PostgreSQL.

Same meaning as ``MemoryStore``, method by method; the model keeps every rule. A
``transaction()`` is one database transaction: ``BEGIN IMMEDIATE`` on SQLite, so writers
(and readers) serialise across processes on one file as ``MemoryStore``'s lock
serialises threads, and a transaction-scoped advisory lock on PostgreSQL for the same
effect. The store methods use the connection of the current thread's transaction;
nested ``transaction()`` calls join it. An exception leaving the outermost block rolls
everything back (``MemoryStore`` has no rollback; the model validates before writing).

Lists and searches read a per-tenant cache of contexts that each store keeps in memory
and brings up to date from the rows written since (``contexts.revision`` against
``tenants.contexts_revision``): after no change that costs one indexed query, after a
write it reads only what changed, whichever process wrote it. Search ranks with the same
BM25 code as the memory store (``SearchIndex``), so scores and ties are identical.
Contexts written to the database by anything but a ``SqlStore`` do not bump the
revision, so such a row shows in lists and searches only after its tenant's next write.

Statements are built once per shape and run with parameters; building one costs more
than running it.

Ids come from the database (identity columns, SQLite ``AUTOINCREMENT``), so rows inserted
by plain SQL, as the live fixtures provision tenants, users and keys, never collide with
the fake's. On PostgreSQL an id drawn by a request that then failed is consumed, as in
any service on Postgres; everything else such a request wrote is rolled back.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from fake_contextq.domain.records import (
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
from fake_contextq.domain.search import SearchIndex
from fake_contextq.stores import schema as s
from fake_contextq.stores._rows import RowMap
from fake_contextq.stores.memory import list_page

#: An execution option marking a connection of ``read()``: no ``BEGIN IMMEDIATE``.
_READ_ONLY = "contextq_read_only"

#: The PostgreSQL advisory lock key every transaction takes (any constant will do).
PG_LOCK_KEY = 0x436F6E7465787451  # "ContextQ"
_PG_LOCK = sa.select(sa.func.pg_advisory_xact_lock(PG_LOCK_KEY))


def database_url(url: str | sa.URL) -> sa.URL:
    """The SQLAlchemy URL for ``url``; a bare ``postgresql://`` means psycopg 3, the driver
    the ``postgres`` extra installs. Anything but SQLite or PostgreSQL is refused."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError, TypeError):
        raise ValueError(
            "not a database URL; expected sqlite:///PATH or postgresql://USER@HOST:PORT/DB"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgres":
        backend = "postgresql"
    if backend not in ("sqlite", "postgresql"):
        raise ValueError(f"SqlStore speaks sqlite and postgresql, not {backend!r}")
    if backend == "postgresql" and "+" not in parsed.drivername:
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


class SchemaVersionError(RuntimeError):
    """The database was made by another schema version (or not by this store at all)."""


class NoTransaction(RuntimeError):
    """A store method was called outside ``transaction()``."""


class _Local(threading.local):
    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.depth = 0
        # This thread's own connections, kept between transactions (a checkout from the
        # pool per request costs more than most of the request's statements).
        self.writer: Connection | None = None
        self.reader: Connection | None = None


class SqlStore:
    """The model's rows in a SQL database, one ``transaction()`` per DB transaction."""

    def __init__(
        self, url: str | sa.URL, *, echo: bool = False, busy_timeout: float = 30.0
    ) -> None:
        self.url = database_url(url)
        self._local = _Local()
        # An in-memory SQLite database lives in one connection: share it between threads
        # and serialise transactions on it with a lock (a file database serialises itself).
        self._memory_lock: threading.RLock | None = None
        self._sequences: dict[str, str] = {}
        self._cache: dict[int, _TenantCache] = {}
        self._opened: list[Connection] = []
        self._opened_lock = threading.Lock()
        kwargs: dict[str, Any] = {"echo": echo}
        backend = self.url.get_backend_name()
        if backend == "sqlite":
            connect_args: dict[str, Any] = {"timeout": busy_timeout, "check_same_thread": False}
            if self.url.database in (None, "", ":memory:"):
                kwargs["poolclass"] = StaticPool
                self._memory_lock = threading.RLock()
            kwargs["connect_args"] = connect_args
        try:
            self.engine: Engine = sa.create_engine(self.url, **kwargs)
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] != "psycopg":
                raise
            raise ModuleNotFoundError(
                "a postgresql:// database needs psycopg, which is not installed: "
                "pip install 'contextq-memory-tool[postgres]'",
                name=exc.name,
            ) from None
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
            conn = self._own("writer")
            try:
                with conn.begin():  # BEGIN IMMEDIATE on SQLite (see below)
                    if self._dialect == "postgresql":
                        conn.execute(_PG_LOCK)
                    local.conn, local.depth = conn, 1
                    try:
                        yield conn
                    except BaseException:
                        # the tenant cache may hold rows this rollback takes back
                        self._cache.clear()
                        raise
                    finally:
                        local.conn, local.depth = None, 0
            finally:
                if lock is not None:  # a pooled checkout, not a kept connection
                    conn.close()
        finally:
            if lock is not None:
                lock.release()

    def read(self) -> AbstractContextManager[object]:
        return self._read()

    @contextmanager
    def _read(self) -> Iterator[object]:
        """A connection for one read statement, without the write lock a transaction takes
        (joins the current transaction if there is one)."""
        local = self._local
        if local.conn is not None or self._memory_lock is not None:
            with self._transaction() as conn:
                yield conn
            return
        conn = self._own("reader")
        with conn.begin():
            local.conn, local.depth = conn, 1
            try:
                yield conn
            finally:
                local.conn, local.depth = None, 0

    def _own(self, role: str) -> Connection:
        """This thread's connection for ``role`` (``writer`` or ``reader``), opened once.
        A shared in-memory database gets a pooled checkout each time instead: closing a
        kept connection there would reset the one connection every thread shares."""
        if self._memory_lock is not None:
            return self.engine.connect()
        conn: Connection | None = getattr(self._local, role)
        if conn is None or conn.closed or conn.invalidated:
            conn = self.engine.connect()
            if role == "reader":
                conn.execution_options(**{_READ_ONLY: True})
            setattr(self._local, role, conn)
            with self._opened_lock:
                self._opened.append(conn)
        return conn

    @property
    def _c(self) -> Connection:
        conn = self._local.conn
        if conn is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        return conn

    def close(self) -> None:
        """Close every connection this store opened (the database stays)."""
        with self._opened_lock:
            opened, self._opened = self._opened, []
        for conn in opened:
            conn.close()
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
                    if len(versions) == 1 and versions[0] < s.SCHEMA_VERSION:
                        advice = (
                            "it was made by an older fake-contextq, whose state this one "
                            "cannot read: remove it, or keep it and use another database "
                            "(--db PATH or --database-url)"
                        )
                    elif len(versions) == 1:
                        advice = "it was made by a newer fake-contextq: upgrade this one"
                    else:
                        advice = "it is damaged: use another database"
                    raise SchemaVersionError(
                        f"{self.url.render_as_string(hide_password=True)}: schema_version "
                        f"{versions or 'empty'} is not {s.SCHEMA_VERSION}, the only version "
                        f"this fake understands; {advice}"
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
        self._cache.clear()
        with self.transaction():
            conn = self._c
            if self._dialect == "postgresql":
                names = ", ".join(
                    conn.dialect.identifier_preparer.format_table(t) for t in s.DATA_TABLES
                )
                conn.exec_driver_sql(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
                return
            for table in s.DATA_TABLES:
                conn.execute(sa.delete(table))
            if self._dialect == "sqlite":
                conn.exec_driver_sql("DELETE FROM sqlite_sequence")

    def next_id(self, kind: str) -> int:
        """The database's next id for ``kind``, the same one a plain SQL INSERT would get."""
        table = s.ID_TABLES[kind]
        conn = self._c
        if self._dialect == "postgresql":
            sequence = self._sequences.get(table.name)
            if sequence is None:
                sequence = conn.execute(
                    sa.select(sa.func.pg_get_serial_sequence(table.name, "id"))
                ).scalar_one()
                self._sequences[table.name] = sequence
            return int(
                conn.exec_driver_sql("SELECT nextval(%s::regclass)", (sequence,)).scalar_one()
            )
        # SQLite AUTOINCREMENT keeps its high-water mark in sqlite_sequence; taking the id
        # there means an id handed out but never inserted is not handed out again.
        bumped = conn.exec_driver_sql(
            "UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = ? RETURNING seq", (table.name,)
        ).scalar()
        if bumped is not None:
            return int(bumped)
        first = int(
            conn.execute(sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0) + 1)).scalar_one()
        )
        conn.exec_driver_sql(
            "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table.name, first)
        )
        return first

    # ----- statements: built once, executed with parameters -----

    def _first(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        stmt = _select(table.name, tuple(where), order, 1)
        return self._c.execute(stmt, where).first()

    def _rows(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        return self._c.execute(_select(table.name, tuple(where), order, None), where).all()

    def _count(self, table: sa.Table, **where: Any) -> int:
        return int(self._c.execute(_count(table.name, tuple(where)), where).scalar_one())

    def _delete(self, table: sa.Table, **where: Any) -> None:
        self._c.execute(_delete(table.name, tuple(where)), where)

    def _insert(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        self._c.execute(_insert(table.name), values)

    def _int(self, sql: str, *params: Any) -> int:
        """One integer from plain SQL with ``?`` placeholders and integer parameters: the
        hottest statements skip SQLAlchemy's compilation and type processing."""
        if self._dialect == "postgresql":
            sql = sql.replace("?", "%s")
        return int(self._c.exec_driver_sql(sql, params).scalar_one())

    def _put(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        """Insert the row, or replace every given column of the row with the same id."""
        self._c.execute(_upsert(self._dialect, table.name, tuple(values)), values)

    # ----- tenants and keys -----

    def put_tenant(self, tenant: Tenant) -> None:
        self._put(s.tenants, _TENANT.values(tenant))

    def tenant(self, tenant_id: int) -> Tenant | None:
        row = self._first(s.tenants, id=tenant_id)
        return None if row is None else _TENANT.record(row)

    def tenant_plan(self, tenant_id: int) -> str | None:
        found = self._c.execute(_PLAN, {"id": tenant_id}).scalar()
        return None if found is None else str(found)

    def tenants(self) -> list[Tenant]:
        return [_TENANT.record(row) for row in self._rows(s.tenants)]

    def put_key(self, key: ApiKey) -> None:
        self._put(s.api_keys, _KEY.values(key))

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        row = self._first(s.api_keys, key_hash=key_hash)
        return None if row is None else _KEY.record(row)

    def keys(self, tenant_id: int) -> list[ApiKey]:
        return [_KEY.record(row) for row in self._rows(s.api_keys, tenant_id=tenant_id)]

    # ----- workspaces -----

    def put_workspace(self, workspace: Workspace) -> None:
        self._put(s.workspaces, _WORKSPACE.values(workspace))

    def workspace(self, tenant_id: int, slug: str) -> Workspace | None:
        row = self._first(s.workspaces, tenant_id=tenant_id, slug=slug)
        return None if row is None else _WORKSPACE.record(row)

    def workspaces(self, tenant_id: int) -> list[Workspace]:
        return [_WORKSPACE.record(row) for row in self._rows(s.workspaces, tenant_id=tenant_id)]

    def delete_workspace(self, workspace: Workspace) -> None:
        self._delete(s.workspaces, tenant_id=workspace.tenant_id, slug=workspace.slug)

    # ----- contexts -----

    def _bump_contexts_revision(self, tenant_id: int) -> int:
        return self._int(
            "UPDATE tenants SET contexts_revision = contexts_revision + 1 "
            "WHERE id = ? RETURNING contexts_revision",
            tenant_id,
        )

    def put_context(self, context: Context) -> None:
        revision = self._bump_contexts_revision(context.tenant_id)
        self._put(s.contexts, {**_CONTEXT.values(context), "revision": revision})

    def context(self, tenant_id: int, context_id: int) -> Context | None:
        row = self._first(s.contexts, tenant_id=tenant_id, id=context_id)
        return None if row is None else _CONTEXT.record(row)

    def context_by_external(self, tenant_id: int, external_id: str) -> Context | None:
        row = self._first(s.contexts, tenant_id=tenant_id, external_id=external_id)
        return None if row is None else _CONTEXT.record(row)

    def context_id_by_external(self, tenant_id: int, external_id: str) -> int | None:
        params = {"tenant_id": tenant_id, "external_id": external_id}
        found = self._c.execute(_CONTEXT_ID_BY_EXTERNAL, params).scalar()
        return None if found is None else int(found)

    def delete_context(self, context: Context) -> None:
        self._bump_contexts_revision(context.tenant_id)
        self._delete(s.contexts, tenant_id=context.tenant_id, id=context.id)

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        if workspace_id is None:
            return self._int("SELECT count(*) FROM contexts WHERE tenant_id = ?", tenant_id)
        return self._count(s.contexts, tenant_id=tenant_id, workspace_id=workspace_id)

    def list_contexts(
        self, tenant_id: int, query: ListQuery, workspace_id: int | None
    ) -> tuple[list[Context], int]:
        cached = self._tenant_cache(tenant_id)
        if cached is None:
            return [], 0
        return list_page(cached.contexts, query, workspace_id)

    def search(
        self,
        tenant_id: int,
        terms: list[str],
        limit: int,
        accept: Callable[[Context], bool] | None,
    ) -> list[tuple[Context, float]]:
        if not terms:
            return []
        cached = self._tenant_cache(tenant_id)
        if cached is None:
            return []
        contexts, index = cached.contexts, cached.search_index()
        doc_filter = None if accept is None else (lambda doc_id: accept(contexts[doc_id]))
        return [(contexts[d], score) for d, score in index.top(terms, limit, doc_filter)]

    def _tenant_cache(self, tenant_id: int) -> _TenantCache | None:
        """The tenant's contexts (and search index), brought up to date with the rows
        written since they were read, by this process or any other: one indexed query
        when nothing changed."""
        found = self._c.execute(_REVISION, {"id": tenant_id}).first()
        if found is None:
            return None
        revision, created_at = int(found[0]), found[1]
        cached = self._cache.get(tenant_id)
        if cached is None or cached.created_at != created_at:  # new, or a reset reused the id
            cached = _TenantCache(created_at)
            self._cache[tenant_id] = cached
        if cached.revision == revision:
            return cached
        changed = self._c.execute(
            _CHANGED_CONTEXTS, {"tenant_id": tenant_id, "since": cached.revision}
        ).all()
        cached.apply(map(_CONTEXT.record, changed))
        if self._count(s.contexts, tenant_id=tenant_id) != len(cached.contexts):
            cached.keep(set(self._c.execute(_CONTEXT_IDS, {"tenant_id": tenant_id}).scalars()))
        cached.revision = revision
        return cached

    # ----- audit -----

    def last_audit_hash(self) -> str | None:
        found = self._c.exec_driver_sql(
            "SELECT hash FROM activity_logs ORDER BY id DESC LIMIT 1"
        ).scalar()
        return None if found is None else str(found)

    def append_audit(self, row: AuditRow) -> None:
        self._insert(s.activity_logs, _AUDIT.values(row))

    def audit_rows(self) -> list[AuditRow]:
        return [_AUDIT.record(row) for row in self._rows(s.activity_logs)]

    # ----- agent layer -----

    def put_session(self, session: AgentSession) -> None:
        self._put(s.agent_sessions, _SESSION.values(session))

    def session(self, tenant_id: int, session_id: int) -> AgentSession | None:
        row = self._first(s.agent_sessions, tenant_id=tenant_id, id=session_id)
        return None if row is None else _SESSION.record(row)

    def latest_session(self, tenant_id: int, workspace_id: int | None) -> AgentSession | None:
        if workspace_id is None:
            row = self._first(s.agent_sessions, ("-id",), tenant_id=tenant_id)
        else:
            row = self._first(
                s.agent_sessions, ("-id",), tenant_id=tenant_id, workspace_id=workspace_id
            )
        return None if row is None else _SESSION.record(row)

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._insert(s.agent_checkpoints, _CHECKPOINT.values(checkpoint))

    def last_checkpoint_seq(self, session_id: int) -> int:
        return self._int(
            "SELECT coalesce(max(seq), 0) FROM agent_checkpoints WHERE session_id = ?", session_id
        )

    def last_checkpoint(self, session_id: int) -> Checkpoint | None:
        row = self._first(s.agent_checkpoints, ("-seq", "-id"), session_id=session_id)
        return None if row is None else _CHECKPOINT.record(row)

    def put_task(self, task: AgentTask) -> None:
        self._put(s.agent_tasks, _TASK.values(task))

    def task(self, tenant_id: int, task_id: int) -> AgentTask | None:
        row = self._first(s.agent_tasks, tenant_id=tenant_id, id=task_id)
        return None if row is None else _TASK.record(row)

    def task_by_key(self, session_id: int, key: str) -> AgentTask | None:
        row = self._first(s.agent_tasks, session_id=session_id, key=key)
        return None if row is None else _TASK.record(row)

    def tasks(self, session_id: int) -> list[AgentTask]:
        return [_TASK.record(row) for row in self._rows(s.agent_tasks, session_id=session_id)]

    def put_lesson(self, lesson: Lesson) -> None:
        self._put(s.agent_lessons, _LESSON.values(lesson))

    def lessons(self, tenant_id: int) -> list[Lesson]:
        return [_LESSON.record(row) for row in self._rows(s.agent_lessons, tenant_id=tenant_id)]

    def put_handoff(self, handoff: Handoff) -> None:
        self._insert(s.agent_handoffs, _HANDOFF.values(handoff))

    def latest_handoff(self, tenant_id: int, workspace_id: int | None) -> Handoff | None:
        if workspace_id is None:
            row = self._first(s.agent_handoffs, ("-id",), tenant_id=tenant_id)
        else:
            row = self._first(
                s.agent_handoffs, ("-id",), tenant_id=tenant_id, workspace_id=workspace_id
            )
        return None if row is None else _HANDOFF.record(row)

    def __repr__(self) -> str:
        return f"SqlStore({self.url.render_as_string(hide_password=True)!r})"


# ----- statements ------------------------------------------------------------------------------
# Built once per shape and reused: building a statement and its cache key costs more than
# running it, and a request makes several.


def _where(table: sa.Table, where: tuple[str, ...]) -> list[sa.ColumnElement[bool]]:
    return [table.c[name] == sa.bindparam(name) for name in where]


@functools.cache
def _select(
    table_name: str, where: tuple[str, ...], order: tuple[str, ...], limit: int | None
) -> sa.Select[Any]:
    t = s.metadata.tables[table_name]
    stmt = sa.select(t).where(*_where(t, where))
    for name in order:
        stmt = stmt.order_by(t.c[name[1:]].desc() if name.startswith("-") else t.c[name])
    return stmt if limit is None else stmt.limit(limit)


@functools.cache
def _count(table_name: str, where: tuple[str, ...]) -> sa.Select[Any]:
    t = s.metadata.tables[table_name]
    return sa.select(sa.func.count()).select_from(t).where(*_where(t, where))


@functools.cache
def _delete(table_name: str, where: tuple[str, ...]) -> sa.Delete:
    t = s.metadata.tables[table_name]
    return sa.delete(t).where(*_where(t, where))


@functools.cache
def _insert(table_name: str) -> sa.Insert:
    return sa.insert(s.metadata.tables[table_name])


@functools.cache
def _upsert(dialect: str, table_name: str, columns: tuple[str, ...]) -> sa.Insert:
    t = s.metadata.tables[table_name]
    stmt = (sqlite.insert if dialect == "sqlite" else postgresql.insert)(t)
    changes = {name: stmt.excluded[name] for name in columns if name != "id"}
    return stmt.on_conflict_do_update(index_elements=["id"], set_=changes)


_PLAN = sa.select(s.tenants.c.plan).where(s.tenants.c.id == sa.bindparam("id"))
_CONTEXT_ID_BY_EXTERNAL = sa.select(s.contexts.c.id).where(
    s.contexts.c.tenant_id == sa.bindparam("tenant_id"),
    s.contexts.c.external_id == sa.bindparam("external_id"),
)
_REVISION = sa.select(s.tenants.c.contexts_revision, s.tenants.c.created_at).where(
    s.tenants.c.id == sa.bindparam("id")
)
_CHANGED_CONTEXTS = (
    sa.select(s.contexts)
    .where(
        s.contexts.c.tenant_id == sa.bindparam("tenant_id"),
        s.contexts.c.revision > sa.bindparam("since"),
    )
    .order_by(s.contexts.c.id)
)
_CONTEXT_IDS = sa.select(s.contexts.c.id).where(s.contexts.c.tenant_id == sa.bindparam("tenant_id"))


@dataclass(eq=False)
class _TenantCache:
    """One tenant's contexts, in id order, as of ``revision``; the BM25 index is built on
    the first search and then kept up to date with them."""

    created_at: Any
    revision: int = -1
    contexts: dict[int, Context] = field(default_factory=dict)
    index: SearchIndex | None = None

    def apply(self, changed: Iterable[Context]) -> None:
        """Take in rows written since ``revision`` (new ones and new versions)."""
        contexts, index = self.contexts, self.index
        last = next(reversed(contexts), 0) if contexts else 0
        in_order = True
        for context in changed:
            if index is not None and context.id in contexts:
                index.remove(context.id)
            if context.id not in contexts:
                in_order = in_order and context.id > last
                last = max(last, context.id)
            contexts[context.id] = context
            if index is not None:
                index.add(context.id, context.title, context.content, context.tags)
        if not in_order:
            self.contexts = dict(sorted(contexts.items()))

    def keep(self, ids: set[int]) -> None:
        """Drop the contexts deleted since (every id not in ``ids``)."""
        for gone in [i for i in self.contexts if i not in ids]:
            if self.index is not None:
                self.index.remove(gone)
            del self.contexts[gone]

    def search_index(self) -> SearchIndex:
        if self.index is None:
            self.index = SearchIndex()
            for c in self.contexts.values():
                self.index.add(c.id, c.title, c.content, c.tags)
        return self.index


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
        if not conn.get_execution_options().get(_READ_ONLY):  # a lone read runs bare
            conn.exec_driver_sql("BEGIN IMMEDIATE")


# ----- rows to records and back, derived from the records' fields -----

_TENANT = RowMap(Tenant)
_KEY = RowMap(ApiKey)
_WORKSPACE = RowMap(Workspace)
_CONTEXT = RowMap(Context)
_AUDIT = RowMap(AuditRow)
_SESSION = RowMap(AgentSession)
_CHECKPOINT = RowMap(Checkpoint)
_TASK = RowMap(AgentTask)
_LESSON = RowMap(Lesson)
_HANDOFF = RowMap(Handoff)
