"""What ``SqlStore`` does alike on SQLite and Postgres: transactions joined per thread,
connections lent from the store's pool (``_pool``, which says why not SQLAlchemy's), the
schema check, and every store method that is the same statement on both; each dialect's
module (``sqlite``, ``postgres``) holds what differs.

``SqlStore(url)`` makes the dialect's store the URL names: each dialect's class registers
itself under its backend name (``__init_subclass__``), so this module imports neither.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.audit import chain_row
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.records import (
    AgentSession,
    AgentTask,
    ApiKey,
    AuditDraft,
    AuditRow,
    Checkpoint,
    Context,
    ContextLink,
    Handoff,
    IngestJob,
    Lesson,
    ListQuery,
    SavedSearch,
    Tenant,
    Workspace,
)
from fake_contextq.stores import schema as s
from fake_contextq.stores._rows import RowMap
from fake_contextq.stores.memory import list_page
from fake_contextq.stores.sql import _statements as q
from fake_contextq.stores.sql._cache import TenantCache
from fake_contextq.stores.sql._pool import Connections, Lent
from fake_contextq.stores.sql._urls import database_url, redacted_url

R = TypeVar("R")

#: How many connections a store opens at most, by default (its request threads and a
#: few callers of its own).
DEFAULT_CONNECTIONS = 16


class SchemaVersionError(RuntimeError):
    """The database was made by another schema version (or not by this store at all)."""


class NoTransaction(RuntimeError):
    """A store method was called outside ``transaction()``."""


class Local(threading.local):
    """The current thread's transaction (or lone read): its connection, how deeply
    ``transaction()`` calls are nested in it, and whether it writes."""

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.depth = 0
        self.writing = False  # a write transaction's (not a lone read's)


class SqlStore:
    """The model's rows in a SQL database, one ``transaction()`` per DB transaction."""

    _dialects: ClassVar[dict[str, type[SqlStore]]] = {}
    #: The backend name of the dialect (``sqlite``, ``postgresql``)
    backend: ClassVar[str]
    _local_type: ClassVar[type[Local]] = Local

    def __init_subclass__(cls, *, backend: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.backend = backend
        SqlStore._dialects[backend] = cls

    def __new__(cls, url: str | sa.URL, **_options: Any) -> SqlStore:
        """The store of the dialect ``url`` names (``SqlStore(url)`` picks it)."""
        backend = database_url(url).get_backend_name()
        dialect = SqlStore._dialects[backend]
        if cls is not SqlStore and cls is not dialect:
            raise ValueError(f"{cls.__name__} does not speak {backend!r}")
        return object.__new__(dialect)

    def __init__(
        self,
        url: str | sa.URL,
        *,
        echo: bool = False,
        busy_timeout: float = 30.0,
        lock_timeout: float = 5.0,
        durable: bool = False,
        connections: int = DEFAULT_CONNECTIONS,
    ) -> None:
        """``busy_timeout`` (SQLite) and ``lock_timeout`` (Postgres) bound, in seconds, the
        wait for a lock another transaction holds, and for one of the store's at most
        ``connections`` connections when all are in use; ``durable=True`` makes each
        commit wait until it is on disk (Postgres: the WAL flush, the server's default;
        SQLite: ``synchronous=FULL``); slower."""
        if connections < 1:
            raise ValueError(f"connections must be at least 1, not {connections}")
        self.url = database_url(url)
        self.busy_timeout = busy_timeout
        self.lock_timeout = lock_timeout
        self.durable = durable
        self._cache: dict[int, TenantCache] = {}
        self._local = self._local_type()
        #: Postgres: the database and schema the tables live in, and their lock's key
        self.database: str | None = None
        self.schema: str | None = None
        self.lock_key: int | None = None
        #: Whether a lone read can wait (see ``Store.reads_wait``); set by the dialect
        self.reads_wait = True
        self.engine: Engine = self._create_engine(echo=echo)
        wait = self._lock_wait()
        busy = _msgs.POOL_LOCK.format(size=connections)
        self._connections = Connections(
            self._open, connections, wait, lambda: self._busy(busy, wait)
        )
        try:
            self._set_up()
            self._create_schema()
            self._schema_made()
        except BaseException:
            self.close()  # a store refused here keeps no connection open
            raise

    # ----- what each dialect defines -----

    def _create_engine(self, *, echo: bool) -> Engine:
        """The engine: it opens connections for the store's pool (``_open``)."""
        raise NotImplementedError

    def _lock_wait(self) -> float:
        """How long a transaction waits for a lock, and for a connection when all are lent."""
        raise NotImplementedError

    def _set_up(self) -> None:
        """Ready the engine's connections (settings, events) before the first one opens."""
        raise NotImplementedError

    def _schema_made(self) -> None:
        """What follows the schema's creation (or check)."""
        raise NotImplementedError

    def _outermost(self) -> AbstractContextManager[object]:
        """A new transaction on a lent connection, set as this thread's."""
        raise NotImplementedError

    def _lone_read(self) -> AbstractContextManager[object]:
        """A lent connection for one read, outside any transaction."""
        raise NotImplementedError

    def _all(self, stmt: Any, params: Mapping[str, Any]) -> list[Any]:
        """Every row of ``stmt``, processed as SQLAlchemy does (values by ``_mapping``)."""
        raise NotImplementedError

    def _fetch(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> list[tuple[Any, ...]]:
        """Every row of ``stmt``, unprocessed (``columns``: an insert's given columns)."""
        raise NotImplementedError

    def _write(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> None:
        """Run ``stmt``, whose result nobody reads (or hold it back, to send later)."""
        raise NotImplementedError

    def reset(self) -> None:
        raise NotImplementedError

    def next_id(self, kind: str) -> int:
        """The database's next id for ``kind``, the same one a plain SQL INSERT would get."""
        raise NotImplementedError

    def put_context(self, context: Context) -> None:
        raise NotImplementedError

    def delete_context(self, context: Context) -> None:
        raise NotImplementedError

    def last_audit_hash(self) -> str | None:
        raise NotImplementedError

    def last_checkpoint_seq(self, session_id: int) -> int:
        raise NotImplementedError

    # ----- transactions -----

    def transaction(self) -> AbstractContextManager[object]:
        if self._local.conn is not None:
            return self._joined()
        return self._outermost()

    def read(self) -> AbstractContextManager[object]:
        """A connection for one read statement, without the write lock a transaction takes
        (joins the current transaction if there is one)."""
        if self._local.conn is not None:
            return self._joined()
        return self._lone_read()

    @contextmanager
    def _joined(self) -> Iterator[object]:
        """The current thread's transaction, joined by a nested ``transaction()``."""
        local = self._local
        local.depth += 1
        try:
            yield local.conn
        finally:
            local.depth -= 1

    def _open(self) -> Connection:
        """A new connection for the store's pool."""
        return self.engine.connect()

    def _take(self, *, read_only: bool) -> Lent:  # noqa: ARG002 (SQLite marks lone reads)
        """A connection for one transaction (or, ``read_only``, one lone read), lent until
        ``_give``; a 503 naming the pool when every one stays lent too long."""
        return self._connections.take()

    def _give(self, lent: Lent) -> None:
        self._connections.give(lent)

    def _busy(self, lock_name: str, seconds: float) -> ApiError:
        return ApiError(
            _msgs.DATABASE_BUSY,
            _msgs.DATABASE_BUSY_MSG.format(lock=lock_name, seconds=seconds),
            lock=lock_name,
        )

    @property
    def _c(self) -> Connection:
        """The transaction's connection, for SQLAlchemy."""
        conn = self._local.conn
        if conn is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        return conn

    @property
    def max_connections(self) -> int:
        """How many connections the store opens at most."""
        return self._connections.size

    def connections_open(self) -> int:
        """How many connections the store holds open now (lent out or idle)."""
        return self._connections.lent + self._connections.idle()

    def connections_lent(self) -> int:
        """How many connections serve a transaction or a read right now."""
        return self._connections.lent

    def close(self) -> None:
        """Close every connection this store opened (the database stays); one lent out
        now is closed when given back."""
        self._connections.close()
        self.engine.dispose()

    # ----- schema -----

    def _create_schema(self) -> None:
        """Check the database is this fake's (or empty), then create what is missing; a
        database refused here is left exactly as it was: nothing is written before the
        check."""
        with self.transaction():
            conn = self._c
            existing = set(sa.inspect(conn).get_table_names())
            upgrade = self._check_schema(conn, existing)
            s.metadata.create_all(conn, checkfirst=True)
            s.api_keys_prefix.create(conn, checkfirst=True)
            if s.schema_version.name not in existing:
                conn.execute(sa.insert(s.schema_version).values(version=s.SCHEMA_VERSION))
            elif upgrade:
                conn.execute(sa.update(s.schema_version).values(version=s.SCHEMA_VERSION))

    def _check_schema(self, conn: Connection, existing: set[str]) -> bool:
        """Refuse a database holding tables this fake did not create, or another version's
        than this one or one it upgrades in place (then True)."""
        foreign = existing - set(s.metadata.tables)
        if foreign:
            shown = ", ".join(sorted(foreign)[:5]) + (", ..." if len(foreign) > 5 else "")
            raise SchemaVersionError(
                f"{redacted_url(self.url)} holds {len(foreign)} table(s) this fake did not "
                f"create ({shown}); give an empty database or one fake-contextq made"
            )
        if s.schema_version.name in existing:
            versions = list(conn.execute(sa.select(s.schema_version.c.version)).scalars())
            if not all(type(v) is int for v in versions):  # another tool's table: "1.2", null
                raise SchemaVersionError(
                    f"{redacted_url(self.url)}: schema_version {versions} holds no version "
                    "number: this database was not made by fake-contextq; use another database"
                )
            known = len(versions) == 1 and (
                versions[0] == s.SCHEMA_VERSION or versions[0] in s.UPGRADES_FROM
            )
            if known:
                added = s.UPGRADES_FROM.get(versions[0], frozenset())
                lacking = set(s.metadata.tables) - added - existing
                if not lacking:
                    return bool(versions[0] != s.SCHEMA_VERSION)
                raise SchemaVersionError(
                    f"{redacted_url(self.url)}: schema_version [{versions[0]}] but no "
                    f"{', '.join(sorted(lacking)[:5])}{', ...' if len(lacking) > 5 else ''} "
                    "table: this database was not made by fake-contextq, or is damaged; "
                    "use another database"
                )
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
                    f"{redacted_url(self.url)}: schema_version "
                    f"{versions or 'empty'} is not {s.SCHEMA_VERSION}, nor one it "
                    f"upgrades in place ({', '.join(map(str, sorted(s.UPGRADES_FROM)))}); "
                    f"{advice}"
                )
        else:
            ours = {t.name for t in s.metadata.sorted_tables} & existing
            if ours:
                raise SchemaVersionError(
                    f"{redacted_url(self.url)}: tables "
                    f"{sorted(ours)} exist but there is no schema_version table; "
                    "this database was not created by SqlStore"
                )
        return False

    # ----- statements: built once, executed with parameters -----

    def _first(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        found = self._all(q.select_rows(table.name, tuple(where), order, 1), where)
        return found[0] if found else None

    def _record(self, rows: RowMap[R], table: sa.Table, **where: Any) -> R | None:
        """The record of the row of ``table`` matching ``where`` (the first by id), or None."""
        row = self._first(table, **where)
        return None if row is None else rows.record(row)

    def _rows(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        return self._all(q.select_rows(table.name, tuple(where), order, None), where)

    def _count(self, table: sa.Table, **where: Any) -> int:
        return int(self._fetch(q.count_rows(table.name, tuple(where)), where)[0][0])

    def _scalar(self, stmt: Any, params: Mapping[str, Any]) -> Any:
        """The first column of the first row (None without one), unprocessed."""
        found = self._fetch(stmt, params)
        return found[0][0] if found else None

    def _delete(self, table: sa.Table, **where: Any) -> None:
        self._write(q.delete_rows(table.name, tuple(where)), where)

    def _insert(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        self._write(q.insert_row(table.name), values, tuple(values))

    def _put(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        """Insert the row, or replace every given column of the row with the same id."""
        columns = tuple(values)
        self._write(q.upsert_row(self.backend, table.name, columns), values, columns)

    # ----- tenants and keys -----

    def put_tenant(self, tenant: Tenant) -> None:
        self._put(s.tenants, q.TENANT.values(tenant))

    def tenant(self, tenant_id: int) -> Tenant | None:
        return self._record(q.TENANT, s.tenants, id=tenant_id)

    def tenant_plan(self, tenant_id: int) -> str | None:
        found = self._scalar(q.PLAN, {"id": tenant_id})
        return None if found is None else str(found)

    def tenants(self) -> list[Tenant]:
        return [q.TENANT.record(row) for row in self._rows(s.tenants)]

    def put_key(self, key: ApiKey) -> None:
        self._put(s.api_keys, q.KEY.values(key))

    def keys_by_prefix(self, prefix: str) -> list[ApiKey]:
        return [q.KEY.record(row) for row in self._rows(s.api_keys, prefix=prefix)]

    def key_by_id(self, key_id: int) -> ApiKey | None:
        return self._record(q.KEY, s.api_keys, id=key_id)

    def keys(self, tenant_id: int) -> list[ApiKey]:
        return [q.KEY.record(row) for row in self._rows(s.api_keys, tenant_id=tenant_id)]

    # ----- workspaces -----

    def put_workspace(self, workspace: Workspace) -> None:
        self._put(s.workspaces, q.WORKSPACE.values(workspace))

    def workspace(self, tenant_id: int, slug: str) -> Workspace | None:
        return self._record(q.WORKSPACE, s.workspaces, tenant_id=tenant_id, slug=slug)

    def workspaces(self, tenant_id: int) -> list[Workspace]:
        return [q.WORKSPACE.record(row) for row in self._rows(s.workspaces, tenant_id=tenant_id)]

    def delete_workspace(self, workspace: Workspace) -> None:
        self._delete(s.workspaces, tenant_id=workspace.tenant_id, slug=workspace.slug)

    # ----- contexts -----

    def context(self, tenant_id: int, context_id: int) -> Context | None:
        return self._record(q.CONTEXT, s.contexts, tenant_id=tenant_id, id=context_id)

    def context_by_external(self, tenant_id: int, external_id: str) -> Context | None:
        return self._record(q.CONTEXT, s.contexts, tenant_id=tenant_id, external_id=external_id)

    def context_id_by_external(self, tenant_id: int, external_id: str) -> int | None:
        params = {"tenant_id": tenant_id, "external_id": external_id}
        found = self._scalar(q.CONTEXT_ID_BY_EXTERNAL, params)
        return None if found is None else int(found)

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        if workspace_id is None:
            return self._count(s.contexts, tenant_id=tenant_id)
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

    def _tenant_cache(self, tenant_id: int) -> TenantCache | None:
        """The tenant's contexts (and search index), brought up to date with the rows
        written since they were read, by this process or any other: one indexed query
        when nothing changed."""
        found = self._all(q.REVISION, {"id": tenant_id})
        if not found:
            return None
        revision = int(found[0]._mapping["contexts_revision"])
        created_at = found[0]._mapping["created_at"]
        cached = self._cache.get(tenant_id)
        if cached is None or cached.created_at != created_at:  # new, or a reset reused the id
            cached = TenantCache(created_at)
            self._cache[tenant_id] = cached
        if cached.revision == revision:
            return cached
        changed = self._all(q.CHANGED_CONTEXTS, {"tenant_id": tenant_id, "since": cached.revision})
        cached.apply(map(q.CONTEXT.record, changed))
        if self._count(s.contexts, tenant_id=tenant_id) != len(cached.contexts):
            ids = self._all(q.CONTEXT_IDS, {"tenant_id": tenant_id})
            cached.keep({int(row._mapping["id"]) for row in ids})
        cached.revision = revision
        return cached

    # ----- audit -----

    def append_audit(self, row: AuditRow) -> None:
        self._insert(s.activity_logs, q.AUDIT.values(row))

    def chain_audit(self, draft: AuditDraft) -> None:
        # the head first, then the id: the order Postgres reads both ahead in (_drew)
        head = self.last_audit_hash()
        self.append_audit(chain_row(head, self.next_id("activity_log"), draft))

    def audit_rows(self) -> list[AuditRow]:
        return [q.AUDIT.record(row) for row in self._rows(s.activity_logs)]

    # ----- agent layer -----

    def put_session(self, session: AgentSession) -> None:
        self._put(s.agent_sessions, q.SESSION.values(session))

    def session(self, tenant_id: int, session_id: int) -> AgentSession | None:
        return self._record(q.SESSION, s.agent_sessions, tenant_id=tenant_id, id=session_id)

    def latest_session(self, tenant_id: int, workspace_id: int | None) -> AgentSession | None:
        if workspace_id is None:
            row = self._first(s.agent_sessions, ("-id",), tenant_id=tenant_id)
        else:
            row = self._first(
                s.agent_sessions, ("-id",), tenant_id=tenant_id, workspace_id=workspace_id
            )
        return None if row is None else q.SESSION.record(row)

    def sessions(self, tenant_id: int) -> list[AgentSession]:
        rows = self._rows(s.agent_sessions, tenant_id=tenant_id)
        return [q.SESSION.record(row) for row in rows]

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._insert(s.agent_checkpoints, q.CHECKPOINT.values(checkpoint))

    def last_checkpoint(self, session_id: int) -> Checkpoint | None:
        row = self._first(s.agent_checkpoints, ("-seq", "-id"), session_id=session_id)
        return None if row is None else q.CHECKPOINT.record(row)

    def checkpoints(self, session_id: int) -> list[Checkpoint]:
        rows = self._rows(s.agent_checkpoints, ("seq", "id"), session_id=session_id)
        return [q.CHECKPOINT.record(row) for row in rows]

    def put_task(self, task: AgentTask) -> None:
        self._put(s.agent_tasks, q.TASK.values(task))

    def task(self, tenant_id: int, task_id: int) -> AgentTask | None:
        return self._record(q.TASK, s.agent_tasks, tenant_id=tenant_id, id=task_id)

    def task_by_key(self, session_id: int, key: str) -> AgentTask | None:
        return self._record(q.TASK, s.agent_tasks, session_id=session_id, key=key)

    def tasks(self, session_id: int) -> list[AgentTask]:
        return [q.TASK.record(row) for row in self._rows(s.agent_tasks, session_id=session_id)]

    def put_lesson(self, lesson: Lesson) -> None:
        self._put(s.agent_lessons, q.LESSON.values(lesson))

    def lessons(self, tenant_id: int) -> list[Lesson]:
        return [q.LESSON.record(row) for row in self._rows(s.agent_lessons, tenant_id=tenant_id)]

    def put_handoff(self, handoff: Handoff) -> None:
        self._insert(s.agent_handoffs, q.HANDOFF.values(handoff))

    def handoffs(self, tenant_id: int) -> list[Handoff]:
        rows = self._rows(s.agent_handoffs, tenant_id=tenant_id)
        return [q.HANDOFF.record(row) for row in rows]

    def latest_handoff(self, tenant_id: int, workspace_id: int | None) -> Handoff | None:
        if workspace_id is None:
            row = self._first(s.agent_handoffs, ("-id",), tenant_id=tenant_id)
        else:
            row = self._first(
                s.agent_handoffs, ("-id",), tenant_id=tenant_id, workspace_id=workspace_id
            )
        return None if row is None else q.HANDOFF.record(row)

    # ----- saved searches -----

    def put_saved_search(self, saved: SavedSearch) -> None:
        self._put(s.saved_searches, q.SAVED_SEARCH.values(saved))

    def saved_search(self, tenant_id: int, search_id: int) -> SavedSearch | None:
        return self._record(q.SAVED_SEARCH, s.saved_searches, tenant_id=tenant_id, id=search_id)

    def saved_search_by_name(self, tenant_id: int, name: str) -> SavedSearch | None:
        return self._record(q.SAVED_SEARCH, s.saved_searches, tenant_id=tenant_id, name=name)

    def saved_searches(
        self, tenant_id: int, limit: int, offset: int
    ) -> tuple[list[SavedSearch], int]:
        total = self._count(s.saved_searches, tenant_id=tenant_id)
        if offset >= total:
            return [], total
        params = {"tenant_id": tenant_id, "limit": limit, "offset": offset}
        rows = self._all(q.SAVED_SEARCH_PAGE, params)
        return [q.SAVED_SEARCH.record(row) for row in rows], total

    def delete_saved_search(self, saved: SavedSearch) -> None:
        self._delete(s.saved_searches, tenant_id=saved.tenant_id, id=saved.id)

    # ----- links and ingest jobs -----

    def put_link(self, link: ContextLink) -> None:
        self._insert(s.context_links, q.LINK.values(link))

    def link_between(
        self, tenant_id: int, source_id: int, target_id: int, relation: str
    ) -> ContextLink | None:
        row = self._first(
            s.context_links,
            tenant_id=tenant_id,
            source_id=source_id,
            target_id=target_id,
            relation=relation,
        )
        return None if row is None else q.LINK.record(row)

    def links(self, tenant_id: int, context_id: int) -> list[ContextLink]:
        rows = self._all(q.LINKS_OF, {"tenant_id": tenant_id, "context_id": context_id})
        return [q.LINK.record(row) for row in rows]

    def put_ingest_job(self, job: IngestJob) -> None:
        self._put(s.ingest_jobs, q.INGEST_JOB.values(job))

    def ingest_job(self, tenant_id: int, job_id: int) -> IngestJob | None:
        return self._record(q.INGEST_JOB, s.ingest_jobs, tenant_id=tenant_id, id=job_id)

    def unfinished_ingest_jobs(self) -> list[IngestJob]:
        ended = {"done": wire.INGEST_DONE, "failed": wire.INGEST_FAILED}
        rows = self._all(q.UNFINISHED_INGEST_JOBS, ended)
        return [q.INGEST_JOB.record(row) for row in rows]

    def __repr__(self) -> str:
        return f"SqlStore({redacted_url(self.url)!r})"
