"""``SqlStore`` on SQLite: what differs from Postgres.

A ``transaction()`` is ``BEGIN IMMEDIATE``, so writers (and readers) serialise across
processes on one file as ``MemoryStore``'s lock serialises threads; a lock not free within
``busy_timeout`` seconds answers 503 ``database_busy`` naming it. A lone read on a file
runs without ``BEGIN``: in WAL mode it never waits for a writer. Statements run through
``_lite`` (compiled once, handed to pysqlite), the hottest as plain SQL. Ids come from
``AUTOINCREMENT``'s ``sqlite_sequence``.

An in-memory database lives in one connection (SQLAlchemy's ``StaticPool``): every thread
shares it, its transactions serialised by a lock of the store's, instead of the store's
pool.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.pool import NullPool, StaticPool

from fake_contextq import _msgs
from fake_contextq.domain.records import Context
from fake_contextq.stores import schema as s
from fake_contextq.stores._rows import RowMap
from fake_contextq.stores.sql import _statements as q
from fake_contextq.stores.sql._kept import KeptRecords
from fake_contextq.stores.sql._lite import LiteStatement, Uncompilable
from fake_contextq.stores.sql._pool import Lent
from fake_contextq.stores.sql.base import Local, NoTransaction, SqlStore

#: An execution option marking a connection of ``read()``: no ``BEGIN IMMEDIATE``.
_READ_ONLY = "contextq_read_only"

R = TypeVar("R")

_LAST_HASH = "SELECT hash FROM activity_logs ORDER BY id DESC LIMIT 1"


class LiteLocal(Local):
    """The current thread's transaction, with its connection's driver (pysqlite's own),
    which the statements run on."""

    def __init__(self) -> None:
        super().__init__()
        self.driver: DBAPIConnection | None = None


class SqliteStore(SqlStore, backend="sqlite"):
    """``SqlStore`` on a SQLite file, or on an in-memory SQLite database."""

    _local_type = LiteLocal
    _local: LiteLocal

    def _create_engine(self, *, echo: bool) -> Engine:
        # An in-memory database lives in one connection: share it between threads and
        # serialise transactions on it with a lock (a file database serialises itself).
        in_memory = self.url.database in (None, "", ":memory:")
        self._memory_lock: threading.RLock | None = threading.RLock() if in_memory else None
        self._statements: dict[
            tuple[int, tuple[str, ...] | None], tuple[Any, LiteStatement | None]
        ] = {}
        self._kept = KeptRecords()
        # On a file in WAL mode readers never wait for writers, so a served fake runs
        # lone reads on its event loop; in memory they wait for the lock.
        self.reads_wait = in_memory
        return sa.create_engine(
            self.url,
            echo=echo,
            poolclass=StaticPool if in_memory else NullPool,  # see _pool
            connect_args={"timeout": self.busy_timeout, "check_same_thread": False},
        )

    def _lock_wait(self) -> float:
        return self.busy_timeout

    def _set_up(self) -> None:
        in_memory = self._memory_lock is not None
        _sqlite_immediate(self.engine, in_memory=in_memory, durable=self.durable)

    def _schema_made(self) -> None:
        if self._memory_lock is not None:
            return
        # WAL (readers never wait for the writer) is a setting of the file, kept in it:
        # set once, after the schema check, outside any transaction, and only on a
        # database this fake owns.
        lent = self._take(read_only=True)
        try:
            with lent.conn.begin():  # no BEGIN sent: a lone read's connection
                lent.conn.exec_driver_sql("PRAGMA journal_mode=WAL")
        finally:
            self._give(lent)

    def _take(self, *, read_only: bool) -> Lent:
        """A shared in-memory database lends a checkout of its one connection instead (under
        ``_memory_lock``): closing that would reset every thread's data."""
        if self._memory_lock is not None:
            return Lent(self.engine.connect())
        lent = self._connections.take()
        if lent.read_only != read_only:
            lent.conn.execution_options(**{_READ_ONLY: read_only})
            lent.read_only = read_only
        return lent

    def _give(self, lent: Lent) -> None:
        if self._memory_lock is not None:
            lent.conn.close()
            return
        self._connections.give(lent)

    # ----- transactions -----

    @contextmanager
    def _outermost(self) -> Iterator[object]:
        local = self._local
        lock = self._memory_lock
        if lock is not None:
            lock.acquire()
        try:
            lent = self._take(read_only=False)
            conn = lent.conn
            try:
                with conn.begin():  # BEGIN IMMEDIATE (see _sqlite_immediate)
                    local.conn, local.depth, local.writing = conn, 1, True
                    local.driver = conn.connection.dbapi_connection
                    try:
                        yield conn
                    except BaseException:
                        # the tenant cache may hold rows this rollback takes back
                        self._cache.clear()
                        raise
                    finally:
                        local.conn, local.depth, local.writing = None, 0, False
                        local.driver = None
            except sa.exc.OperationalError as exc:
                if not _sqlite_busy(exc):
                    raise
                lock_name = _msgs.SQLITE_LOCK.format(path=self.url.database or ":memory:")
                raise self._busy(lock_name, self.busy_timeout) from exc
            finally:
                self._give(lent)
        finally:
            if lock is not None:
                lock.release()

    def _lone_read(self) -> AbstractContextManager[object]:
        if self._memory_lock is not None:  # the one connection: under its lock
            return self._outermost()
        return _BareRead(self)

    # ----- statements: compiled once, run on the driver's cursor -----

    def _lite(self, stmt: Any, columns: tuple[str, ...] | None) -> LiteStatement | None:
        """``stmt`` compiled once (None: SQLAlchemy runs it; ``columns``: an insert's given
        columns)."""
        key = (id(stmt), columns)
        found = self._statements.get(key)
        if found is None:
            try:
                found = (stmt, LiteStatement(stmt, self.engine.dialect, columns))
            except Uncompilable:
                found = (stmt, None)
            self._statements[key] = found  # holds stmt, so its id stays its own
        return found[1]

    def _fetch(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> list[Any]:
        compiled = self._lite(stmt, columns)
        if compiled is None:
            result = self._c.execute(stmt, params)
            return [tuple(row) for row in result] if result.returns_rows else []
        return self._sql(compiled.sql, *compiled.args(params))

    def _write(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> None:
        self._fetch(stmt, params, columns)  # at once; its (empty) result is not read

    def _all(self, stmt: Any, params: Mapping[str, Any]) -> list[Any]:
        compiled = self._lite(stmt, None)
        if compiled is None:
            return list(self._c.execute(stmt, params).all())
        return compiled.rows(self._sql(compiled.sql, *compiled.args(params)))

    def _record(self, rows: RowMap[R], table: sa.Table, **where: Any) -> R | None:
        """The record of an unchanged row is the one made of it last time (``_kept``)."""
        compiled = self._lite(q.select_rows(table.name, tuple(where), ("id",), 1), None)
        if compiled is None:
            return super()._record(rows, table, **where)
        found = self._sql(compiled.sql, *compiled.args(where))
        if not found:
            return None
        raw = found[0]
        kept = self._kept.get(rows, compiled, raw)
        if kept is not None:
            return kept
        return self._kept.keep(rows, compiled, raw, rows.record(compiled.rows([raw])[0]))

    def _int(self, sql: str, *params: Any) -> int:
        """One integer from plain SQL with ``?`` placeholders and integer parameters: the
        hottest statements skip SQLAlchemy's compilation and type processing."""
        ((value,),) = self._sql(sql, *params)
        return int(value)

    def _sql(self, sql: str, *params: Any) -> list[Any]:
        """The rows of plain SQL with ``?`` placeholders, on the driver."""
        driver = self._local.driver
        if driver is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        try:
            rows: list[Any] = driver.execute(sql, params).fetchall()
        except sqlite3.Error as exc:  # as SQLAlchemy would have raised it
            raise sa.exc.DBAPIError.instance(
                sql, params, exc, sqlite3.Error, dialect=self.engine.dialect
            ) from exc
        return rows

    # ----- what SQLite does its own way -----

    def reset(self) -> None:
        self._cache.clear()
        self._kept.clear()  # nothing in it is stale, but what it holds is gone
        with self.transaction():
            conn = self._c
            for table in s.DATA_TABLES:
                conn.execute(sa.delete(table))
            conn.exec_driver_sql("DELETE FROM sqlite_sequence")

    def next_id(self, kind: str) -> int:
        table = s.ID_TABLES[kind]
        conn = self._c
        # AUTOINCREMENT keeps its high-water mark in sqlite_sequence; taking the id there
        # means an id handed out but never inserted is not handed out again.
        bumped = self._sql(
            "UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = ? RETURNING seq", table.name
        )
        if bumped:
            return int(bumped[0][0])
        first = int(
            conn.execute(sa.select(sa.func.coalesce(sa.func.max(table.c.id), 0) + 1)).scalar_one()
        )
        conn.exec_driver_sql(
            "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table.name, first)
        )
        return first

    def _bump_contexts_revision(self, tenant_id: int) -> int:
        return self._int(
            "UPDATE tenants SET contexts_revision = contexts_revision + 1 "
            "WHERE id = ? RETURNING contexts_revision",
            tenant_id,
        )

    def put_context(self, context: Context) -> None:
        revision = self._bump_contexts_revision(context.tenant_id)
        self._put(s.contexts, {**q.CONTEXT.values(context), "revision": revision})

    def delete_context(self, context: Context) -> None:
        self._bump_contexts_revision(context.tenant_id)
        self._delete(s.contexts, tenant_id=context.tenant_id, id=context.id)

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        if workspace_id is None:
            return self._int("SELECT count(*) FROM contexts WHERE tenant_id = ?", tenant_id)
        return self._count(s.contexts, tenant_id=tenant_id, workspace_id=workspace_id)

    def last_audit_hash(self) -> str | None:
        found = self._sql(_LAST_HASH)
        return str(found[0][0]) if found and found[0][0] is not None else None

    def last_checkpoint_seq(self, session_id: int) -> int:
        return self._int(
            "SELECT coalesce(max(seq), 0) FROM agent_checkpoints WHERE session_id = ?", session_id
        )


class _BareRead:
    """A lone read on a SQLite file: a lent connection set as the thread's, without
    ``BEGIN`` and without a SQLAlchemy transaction either: its begin and commit, which send
    nothing on that connection, cost more than the read's statement (and a generator, for a
    context manager, more than this class). A statement SQLAlchemy runs itself begins one
    (bookkeeping only); it is ended."""

    __slots__ = ("lent", "store")

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def __enter__(self) -> Connection:
        store = self.store
        lent = self.lent = store._take(read_only=True)
        try:
            driver = lent.conn.connection.dbapi_connection
        except BaseException:
            store._give(lent)
            raise
        local = store._local
        local.conn, local.depth, local.driver = lent.conn, 1, driver
        return lent.conn

    def __exit__(self, *_exc: object) -> None:
        store, lent = self.store, self.lent
        local = store._local
        local.conn, local.depth, local.driver = None, 0, None
        try:
            if lent.conn.in_transaction():
                lent.conn.rollback()  # nothing to roll back: pysqlite is in autocommit
        finally:
            store._give(lent)


def _sqlite_immediate(engine: Engine, *, in_memory: bool, durable: bool) -> None:
    """Take pysqlite's own transaction handling away and begin every transaction IMMEDIATE,
    so the write lock is held from the first statement (no upgrade deadlocks, no lost
    check-then-write races between processes); ``durable``: sync the WAL on each commit."""

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # autocommit: SQLAlchemy emits BEGIN
        cursor = dbapi_connection.cursor()
        try:  # settings of this connection only: neither writes to the file
            cursor.execute("PRAGMA foreign_keys=ON")
            if not in_memory:  # journal_mode=WAL, which does, is set by _schema_made
                cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        finally:
            cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        if not conn.get_execution_options().get(_READ_ONLY):  # a lone read runs bare
            conn.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_busy(exc: sa.exc.OperationalError) -> bool:
    """Whether SQLite gave up waiting for another connection's lock (``busy_timeout``)."""
    return isinstance(exc.orig, sqlite3.OperationalError) and "locked" in str(exc.orig)
