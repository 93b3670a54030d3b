"""``SqlStore``: the ``Store`` interface on SQLAlchemy Core, for SQLite or PostgreSQL.

Same meaning as ``MemoryStore``, method by method; the model keeps every rule. A
``transaction()`` is one database transaction: ``BEGIN IMMEDIATE`` on SQLite, so writers
(and readers) serialise across processes on one file as ``MemoryStore``'s lock
serialises threads, and on PostgreSQL a transaction-scoped advisory lock whose key is
derived from the database and schema, so fakes on other schemas never wait for it. A
lock not free within ``lock_timeout`` seconds (``busy_timeout`` on SQLite) answers 503
``database_busy`` naming it, instead of a hang. The store methods use the connection of
the current thread's transaction; nested ``transaction()`` calls join it. An exception
leaving the outermost block rolls everything back (``MemoryStore`` has no rollback; the
model validates before writing).

On PostgreSQL a request costs round trips, so statements go out through ``_pg``:
prepared once per connection, their arguments bound on the client, and ``BEGIN``, the
lock and every write held back and sent with the next statement whose result is needed,
or with ``COMMIT``. A lone read (``read()``) runs in autocommit: one round trip. Reads the
model always follows with another carry it along: an id drawn for a new context, session,
checkpoint, task, lesson or handoff comes with the audit chain's head and the audit row's
id, which the request asks for last (``next_id``). Writes commit with
``synchronous_commit`` off unless ``durable=True``: a crash of the Postgres server may
lose the last moments of acknowledged writes (whole transactions, never part of one), as
SQLite's ``synchronous=NORMAL`` does on power loss (``durable=True`` there: ``FULL``).

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
import hashlib
import itertools
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool, StaticPool

from adapter.errors import redact
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError
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
from fake_contextq.stores._lite import LiteStatement, Uncompilable
from fake_contextq.stores._rows import RowMap
from fake_contextq.stores.memory import list_page

if TYPE_CHECKING:  # psycopg is imported only when a Postgres store is made
    from fake_contextq.stores._pg import PgBatch, PgStatement

#: An execution option marking a connection of ``read()``: no ``BEGIN IMMEDIATE``.
_READ_ONLY = "contextq_read_only"


def advisory_lock_key(database: str, schema: str) -> int:
    """The PostgreSQL advisory lock every transaction of a fake on ``schema`` takes: one
    per schema, so fakes on two schemas (or databases) never wait for each other."""
    digest = hashlib.sha256(f"fake-contextq\0{database}\0{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


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


#: Query parameters of a database URL that hold a secret (libpq's ``password`` and
#: ``sslpassword``, and any other name with "password" in it) ...
_SECRET_PARAM = "password"


def _secret_param(name: str) -> bool:
    """... or any name ``adapter.errors.redact`` masks in a URL (``token``, ``api_key``,
    ``*_secret``...): one list of credential names for every URL the project prints."""
    probe = f"?{name}=v"
    return _SECRET_PARAM in name.lower() or redact(probe) != probe


def url_secrets(url: str | sa.URL) -> list[str]:
    """Every password ``url`` holds, as ``user:pw@`` or as a credential-named query
    parameter (``?password=``, ``&token=``), for scrubbing them from text that may quote it."""
    try:
        parsed = sa.make_url(url)
    except Exception:  # unparsable: nothing to find reliably; the caller shows no URL
        return []
    found = [parsed.password] if parsed.password else []
    for name, value in parsed.query.items():
        if _secret_param(name):
            found += [value] if isinstance(value, str) else list(value)
    return [str(secret) for secret in found if secret]


def redacted_url(url: str | sa.URL) -> str:
    """``url`` as it may be printed: every password replaced by ``***``, whether given as
    ``user:pw@`` or as a query parameter."""
    parsed = sa.make_url(url)
    hidden = {name: "***" if _secret_param(name) else value for name, value in parsed.query.items()}
    if hidden != dict(parsed.query):
        parsed = parsed.set(query=hidden)
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


class SchemaVersionError(RuntimeError):
    """The database was made by another schema version (or not by this store at all)."""


class NoTransaction(RuntimeError):
    """A store method was called outside ``transaction()``."""


class _Local(threading.local):
    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.depth = 0
        # whether ``conn`` is a write transaction's (not a lone read's)
        self.writing = False
        # Postgres: the batch of the current transaction or read (its connection's own)
        self.batch: PgBatch | None = None
        # Postgres: ids drawn ahead in this transaction, by kind, and the audit chain's
        # head read with them (see next_id)
        self.ahead: dict[str, int] = {}
        self.head: tuple[str | None] | None = None
        # Postgres: tenants' plans, read with their keys in this write transaction
        self.plans: dict[int, str] = {}


class _Lent:
    """One connection of a store and, on Postgres, its batch (made with it, prepared
    statements and all, and kept with it)."""

    __slots__ = ("batch", "conn", "read_only")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.batch: PgBatch | None = None
        self.read_only = False  # SQLite: whether it is marked for lone reads (no BEGIN)


class _Connections:
    """A store's connections: at most ``size`` open, each lent for one transaction or one
    lone read and given back at its end. A thread keeps none between requests, so threads
    that come and go leave nothing behind and any number of threads share a few
    connections. When all are lent, a request waits up to ``timeout`` seconds for one,
    then fails with ``busy()`` (a 503), never with a pool error."""

    def __init__(
        self,
        open_: Callable[[], Connection],
        size: int,
        timeout: float,
        busy: Callable[[], Exception],
    ) -> None:
        self._open = open_
        self.size = size
        self._timeout = timeout
        self._busy = busy
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[_Lent] = []  # last in, first out: the warmest connection first
        self._lock = threading.Lock()
        self._closed = False
        self.lent = 0

    def take(self) -> _Lent:
        if not self._slots.acquire(timeout=self._timeout):
            raise self._busy()
        try:
            with self._lock:
                lent = self._idle.pop() if self._idle else None
            if lent is not None and (lent.conn.closed or lent.conn.invalidated):
                lent.conn.close()
                lent = None
            if lent is None:
                lent = _Lent(self._open())
            with self._lock:
                self.lent += 1
            return lent
        except BaseException:
            self._slots.release()
            raise

    def give(self, lent: _Lent) -> None:
        try:
            with self._lock:
                self.lent -= 1
                keep = not (self._closed or lent.conn.closed or lent.conn.invalidated)
                if keep:
                    self._idle.append(lent)
            if not keep:
                lent.conn.close()
        finally:
            self._slots.release()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for lent in idle:
            lent.conn.close()


#: How many connections a store opens at most, by default (its request threads and a
#: few callers of its own).
DEFAULT_CONNECTIONS = 16


class SqlStore:
    """The model's rows in a SQL database, one ``transaction()`` per DB transaction."""

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
        self._local = _Local()
        # An in-memory SQLite database lives in one connection: share it between threads
        # and serialise transactions on it with a lock (a file database serialises itself).
        self._memory_lock: threading.RLock | None = None
        self._cache: dict[int, _TenantCache] = {}
        # The store pools its connections itself (``_Connections``): SQLAlchemy's pool
        # would only add a checkout and a reset to every request.
        kwargs: dict[str, Any] = {"echo": echo, "poolclass": NullPool}
        backend = self.url.get_backend_name()
        if backend == "sqlite":
            connect_args: dict[str, Any] = {"timeout": busy_timeout, "check_same_thread": False}
            if self.url.database in (None, "", ":memory:"):
                kwargs["poolclass"] = StaticPool
                self._memory_lock = threading.RLock()
            kwargs["connect_args"] = connect_args
        # A lone read waits on Postgres (a round trip to a server that may stall) and on an
        # in-memory SQLite database (its lock); on a SQLite file in WAL mode readers never
        # wait for writers, so a served fake runs them on its event loop.
        self.reads_wait = backend != "sqlite" or self._memory_lock is not None
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
        wait = lock_timeout if self._dialect == "postgresql" else busy_timeout
        self._connections = _Connections(
            self._connect,
            connections,
            wait,
            lambda: self._busy(_msgs.POOL_LOCK.format(size=connections), wait),
        )
        if self._dialect == "postgresql" and self.engine.dialect.driver != "psycopg":
            raise ValueError(
                "SqlStore speaks Postgres through psycopg 3 (postgresql:// or "
                f"postgresql+psycopg://), not {self.engine.dialect.driver!r}"
            )
        #: Postgres: the database and schema the tables live in, and their lock's key
        self.database: str | None = None
        self.schema: str | None = None
        self.lock_key: int | None = None
        self._pg_prologue = ""
        self._pg_statements: dict[tuple[int, tuple[str, ...] | None], tuple[Any, PgStatement]] = {}
        self._pg_names = itertools.count()
        self._lite_statements: dict[
            tuple[int, tuple[str, ...] | None], tuple[Any, LiteStatement | None]
        ] = {}
        self._nextval: dict[str, sa.Select[Any]] = {}
        self._with_audit: dict[str, sa.Select[Any]] = {}  # kind -> its id, head, audit id
        self._pg_reset = ""
        if self._dialect == "sqlite":
            _sqlite_immediate(self.engine, in_memory=self._memory_lock is not None, durable=durable)
        elif self._dialect == "postgresql":
            _postgres_session(self.engine, lock_timeout=lock_timeout, durable=durable)
            self._locate()
        self._create_schema()
        if self._dialect == "postgresql":
            self._find_sequences()

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
        if self._dialect == "postgresql":
            with self._pg_transaction() as conn:
                yield conn
            return
        lock = self._memory_lock
        if lock is not None:
            lock.acquire()
        try:
            lent = self._take(read_only=False)
            conn = lent.conn
            try:
                with conn.begin():  # BEGIN IMMEDIATE on SQLite (see below)
                    local.conn, local.depth, local.writing = conn, 1, True
                    try:
                        yield conn
                    except BaseException:
                        # the tenant cache may hold rows this rollback takes back
                        self._cache.clear()
                        raise
                    finally:
                        local.conn, local.depth, local.writing = None, 0, False
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

    @contextmanager
    def _pg_transaction(self) -> Iterator[object]:
        """``BEGIN`` and the schema's advisory lock, sent with the first statement; the
        writes, sent with the next read or with ``COMMIT``."""
        local = self._local
        lent = self._take(read_only=False)
        conn = lent.conn
        try:
            batch = self._batch(lent)
            batch.begin(self._pg_prologue)
            local.conn, local.batch, local.depth, local.writing = conn, batch, 1, True
            local.ahead, local.head, local.plans = {}, None, {}
            try:
                yield conn
                batch.commit()
            except BaseException:
                self._cache.clear()  # it may hold rows this rollback takes back
                try:
                    batch.rollback()
                except Exception:  # a broken connection: dropped when given back
                    conn.invalidate()
                raise
            finally:
                local.conn, local.batch, local.depth, local.writing = None, None, 0, False
                local.ahead, local.head, local.plans = {}, None, {}
                _end_sqlalchemy_transaction(conn)
        finally:
            self._give(lent)

    def _busy(self, lock_name: str, seconds: float) -> ApiError:
        return ApiError(
            _msgs.DATABASE_BUSY,
            _msgs.DATABASE_BUSY_MSG.format(lock=lock_name, seconds=seconds),
            lock=lock_name,
        )

    def _lock_timed_out(self, first: bool) -> ApiError:
        """The 503 for a Postgres lock wait past ``lock_timeout``: in the transaction's
        first batch that is the schema's write lock, later a row or table lock."""
        names = {"key": self.lock_key, "schema": self.schema, "database": self.database}
        lock_name = (_msgs.PG_WRITE_LOCK if first else _msgs.PG_TABLE_LOCK).format(**names)
        return self._busy(lock_name, self.lock_timeout)

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
        lent = self._take(read_only=True)
        conn = lent.conn
        try:
            if self._dialect == "postgresql":  # autocommit: each statement one round trip
                batch = self._batch(lent)
                local.conn, local.batch, local.depth = conn, batch, 1
                try:
                    yield conn
                    batch.flush()
                except BaseException:
                    if batch.broken:  # dropped when given back; the next read opens another
                        conn.invalidate()
                    raise
                finally:
                    local.conn, local.batch, local.depth = None, None, 0
                    _end_sqlalchemy_transaction(conn)
                return
            with conn.begin():
                local.conn, local.depth = conn, 1
                try:
                    yield conn
                finally:
                    local.conn, local.depth = None, 0
        finally:
            self._give(lent)

    def _connect(self) -> Connection:
        """A new connection for the store's pool."""
        conn = self.engine.connect()
        if self._dialect == "postgresql":  # PgBatch sends BEGIN and COMMIT itself
            conn.execution_options(isolation_level="AUTOCOMMIT")
        return conn

    def _take(self, *, read_only: bool) -> _Lent:
        """A connection for one transaction (or, ``read_only``, one lone read), lent until
        ``_give``. A shared in-memory database gets a checkout of its one connection
        instead (under ``_memory_lock``): closing that would reset every thread's data."""
        if self._memory_lock is not None:
            return _Lent(self.engine.connect())
        lent = self._connections.take()
        if self._dialect == "sqlite" and lent.read_only != read_only:
            lent.conn.execution_options(**{_READ_ONLY: read_only})
            lent.read_only = read_only
        return lent

    def _give(self, lent: _Lent) -> None:
        if self._memory_lock is not None:
            lent.conn.close()
            return
        self._connections.give(lent)

    def _batch(self, lent: _Lent) -> PgBatch:
        """The Postgres batch of a lent connection, made the first time it is lent."""
        batch = lent.batch
        if batch is None:
            from fake_contextq.stores._pg import PgBatch

            dbapi: Any = lent.conn.connection.driver_connection
            batch = lent.batch = PgBatch(dbapi, self._lock_timed_out)
        return batch

    @property
    def _c(self) -> Connection:
        """The transaction's connection, for SQLAlchemy; on Postgres whatever is pending
        is sent first, so SQLAlchemy's statements see it."""
        local = self._local
        conn = local.conn
        if conn is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        if local.batch is not None:
            local.batch.flush()
        return conn

    @property
    def _pg(self) -> PgBatch:
        batch = self._local.batch
        if batch is None:
            raise NoTransaction("SqlStore methods must be called inside store.transaction()")
        return batch

    def _compiled(self, stmt: Any, columns: tuple[str, ...] | None = None) -> PgStatement:
        """``stmt`` compiled for psycopg once (``columns``: an insert's given columns)."""
        key = (id(stmt), columns)
        found = self._pg_statements.get(key)
        if found is None:
            from fake_contextq.stores._pg import PgStatement

            name = f"fq{next(self._pg_names)}"  # unique even when threads race here
            found = (stmt, PgStatement(name, stmt, self.engine.dialect, columns))
            self._pg_statements[key] = found  # holds stmt, so its id stays its own
        return found[1]

    def _pg_fetch(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> list[tuple[Any, ...]]:
        return self._pg.fetch(self._compiled(stmt, columns), params)

    def _pg_defer(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> None:
        self._pg.defer(self._compiled(stmt, columns), params)

    def _pg_records(self, stmt: Any, params: Mapping[str, Any]) -> list[Any]:
        """Rows of ``stmt`` with SQLAlchemy's result processing, for ``RowMap.record``."""
        return self._compiled(stmt).rows(self._pg_fetch(stmt, params))

    def _lite(self, stmt: Any, columns: tuple[str, ...] | None) -> LiteStatement | None:
        """SQLite: ``stmt`` compiled once (None: SQLAlchemy runs it; ``columns``: an
        insert's given columns)."""
        key = (id(stmt), columns)
        found = self._lite_statements.get(key)
        if found is None:
            try:
                found = (stmt, LiteStatement(stmt, self.engine.dialect, columns))
            except Uncompilable:
                found = (stmt, None)
            self._lite_statements[key] = found  # holds stmt, so its id stays its own
        return found[1]

    def _lite_run(self, compiled: LiteStatement, params: Mapping[str, Any]) -> list[Any]:
        return self._sql(compiled.sql, *compiled.args(params))

    def _lite_fetch(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> list[Any]:
        """SQLite: run ``stmt`` in the transaction; its rows, unprocessed."""
        compiled = self._lite(stmt, columns)
        if compiled is None:
            result = self._c.execute(stmt, params)
            return [tuple(row) for row in result] if result.returns_rows else []
        return self._lite_run(compiled, params)

    def _lite_rows(self, stmt: Any, params: Mapping[str, Any]) -> list[Any]:
        """SQLite: rows of ``stmt`` with SQLAlchemy's result processing, for ``RowMap``."""
        compiled = self._lite(stmt, None)
        if compiled is None:
            return list(self._c.execute(stmt, params).all())
        return compiled.rows(self._lite_run(compiled, params))

    def _locate(self) -> None:
        """Find the database and schema the tables go to (the first schema of the URL's
        ``search_path``: ``?options=-csearch_path%3Dname``) and derive their lock."""
        with self.engine.connect() as conn:
            database, schema, path = conn.execute(
                sa.text(
                    "SELECT current_database(), current_schema(), current_setting('search_path')"
                )
            ).one()
        if schema is None:
            raise ValueError(
                f"no schema on the search_path ({path}) exists: create it first (CREATE SCHEMA)"
            )
        self.database, self.schema = str(database), str(schema)
        self.lock_key = advisory_lock_key(self.database, self.schema)
        self._pg_prologue = f"BEGIN;\nSELECT pg_advisory_xact_lock({self.lock_key})"

    def _find_sequences(self) -> None:
        """Each id table's sequence, looked up once: ``next_id`` is then one statement."""
        with self.read():
            batch = self._pg
            names = [table.name for table in s.ID_TABLES.values()]
            found = batch.fetch_sql(
                batch.cursor.mogrify(
                    "SELECT name, pg_get_serial_sequence(name, 'id') FROM unnest(%s::text[]) name",
                    (names,),
                )
            )
            nextval = {
                name: sa.func.nextval(sa.cast(sa.literal(sequence, sa.Text), postgresql.REGCLASS))
                for name, sequence in found
            }
            # DELETE and setval, not TRUNCATE ... RESTART IDENTITY: the same empty tables and
            # fresh ids, in 5 ms rather than 25-40 (TRUNCATE replaces each table's files).
            # Children go first; the transaction's advisory lock keeps other writers out.
            quote = self.engine.dialect.identifier_preparer.format_table
            self._pg_reset = "; ".join(
                [f"DELETE FROM {quote(table)}" for table in s.DATA_TABLES]
                + [
                    batch.cursor.mogrify("SELECT setval(%s::regclass, 1, false)", (sequence,))
                    for _, sequence in found
                ]
            )
        for name, drawn in nextval.items():
            self._nextval[name] = sa.select(drawn)
        head, audit_id = _PG_LAST_HASH.scalar_subquery(), nextval[s.activity_logs.name]
        self._with_audit["activity_log"] = sa.select(head, audit_id)
        for kind in _AUDITED_KINDS:
            drawn = nextval[s.ID_TABLES[kind].name]
            if kind == "agent_checkpoint":  # with the session's last seq, read just before
                self._with_audit["seq"] = sa.select(
                    _PG_LAST_SEQ.scalar_subquery(), drawn, head, audit_id
                )
            self._with_audit[kind] = sa.select(drawn, head, audit_id)

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
        check (SQLite's switch to WAL mode comes after it)."""
        with self.transaction():
            conn = self._c
            inspector = sa.inspect(conn)
            existing = set(inspector.get_table_names())
            foreign = existing - set(s.metadata.tables)
            if foreign:
                shown = ", ".join(sorted(foreign)[:5]) + (", ..." if len(foreign) > 5 else "")
                raise SchemaVersionError(
                    f"{redacted_url(self.url)} holds {len(foreign)} table(s) this fake did not "
                    f"create ({shown}); give an empty database or one fake-contextq made"
                )
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
                        f"{redacted_url(self.url)}: schema_version "
                        f"{versions or 'empty'} is not {s.SCHEMA_VERSION}, the only version "
                        f"this fake understands; {advice}"
                    )
            else:
                ours = {t.name for t in s.metadata.sorted_tables} & existing
                if ours:
                    raise SchemaVersionError(
                        f"{redacted_url(self.url)}: tables "
                        f"{sorted(ours)} exist but there is no schema_version table; "
                        "this database was not created by SqlStore"
                    )
            s.metadata.create_all(conn, checkfirst=True)
            s.api_keys_prefix.create(conn, checkfirst=True)
            if s.schema_version.name not in existing:
                conn.execute(sa.insert(s.schema_version).values(version=s.SCHEMA_VERSION))
        if self._dialect == "sqlite" and self._memory_lock is None:
            # WAL (readers never wait for the writer) is a setting of the file, kept in it:
            # set once, outside any transaction, and only on a database this fake owns.
            lent = self._take(read_only=True)
            try:
                with lent.conn.begin():  # no BEGIN sent: a lone read's connection
                    lent.conn.exec_driver_sql("PRAGMA journal_mode=WAL")
            finally:
                self._give(lent)

    def reset(self) -> None:
        self._cache.clear()
        with self.transaction():
            if self._dialect == "postgresql":
                self._pg.defer_sql(self._pg_reset)
                return
            conn = self._c
            for table in s.DATA_TABLES:
                conn.execute(sa.delete(table))
            if self._dialect == "sqlite":
                conn.exec_driver_sql("DELETE FROM sqlite_sequence")

    def next_id(self, kind: str) -> int:
        """The database's next id for ``kind``, the same one a plain SQL INSERT would get."""
        table = s.ID_TABLES[kind]
        if self._dialect == "postgresql":
            # A request that creates one of the _AUDITED_KINDS then appends an audit row:
            # the first such id of a transaction is drawn with the chain's head and the
            # audit row's id, in one statement (see _drew).
            local = self._local
            drawn = local.ahead.pop(kind, None)
            if drawn is not None:
                return drawn
            if kind in _AUDITED_KINDS and "activity_log" not in local.ahead:
                ((new_id, *audit),) = self._pg_fetch(self._with_audit[kind], {})
                self._drew(*audit)
                return int(new_id)
            return int(self._pg_fetch(self._nextval[table.name], {})[0][0])
        conn = self._c
        # SQLite AUTOINCREMENT keeps its high-water mark in sqlite_sequence; taking the id
        # there means an id handed out but never inserted is not handed out again.
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

    # ----- statements: built once, executed with parameters -----

    # On Postgres each goes through the transaction's batch: reads at once, with whatever
    # is pending; writes held back (``PgBatch``).

    def _first(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        stmt = _select(table.name, tuple(where), order, 1)
        if self._dialect == "postgresql":
            found = self._pg_records(stmt, where)
            return found[0] if found else None
        found = self._lite_rows(stmt, where)
        return found[0] if found else None

    def _rows(self, table: sa.Table, order: tuple[str, ...] = ("id",), **where: Any) -> Any:
        stmt = _select(table.name, tuple(where), order, None)
        if self._dialect == "postgresql":
            return self._pg_records(stmt, where)
        return self._lite_rows(stmt, where)

    def _count(self, table: sa.Table, **where: Any) -> int:
        stmt = _count(table.name, tuple(where))
        if self._dialect == "postgresql":
            return int(self._pg_fetch(stmt, where)[0][0])
        return int(self._lite_fetch(stmt, where)[0][0])

    def _drew(self, head: str | None, audit_id: int) -> None:
        """Keep the audit chain's head and the audit row's id, read ahead, for
        ``last_audit_hash`` and ``next_id("activity_log")``. The model asks for them when it
        appends the request's audit row, last; under the transaction's lock no one else
        appends in between. An id drawn for a request that then fails is consumed, as any
        failed request's ids are on Postgres."""
        self._local.head = (None if head is None else str(head),)
        self._local.ahead["activity_log"] = int(audit_id)

    def _all(self, stmt: Any, params: Mapping[str, Any]) -> Any:
        """Every row of ``stmt``, processed as SQLAlchemy does (values by ``_mapping``)."""
        if self._dialect == "postgresql":
            return self._pg_records(stmt, params)
        return self._lite_rows(stmt, params)

    def _scalar(self, stmt: Any, params: Mapping[str, Any]) -> Any:
        """The first column of the first row (None without one), unprocessed."""
        if self._dialect == "postgresql":
            found = self._pg_fetch(stmt, params)
            return found[0][0] if found else None
        found = self._lite_fetch(stmt, params)
        return found[0][0] if found else None

    def _delete(self, table: sa.Table, **where: Any) -> None:
        stmt = _delete(table.name, tuple(where))
        if self._dialect == "postgresql":
            self._pg_defer(stmt, where)
            return
        self._lite_fetch(stmt, where)

    def _insert(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        stmt = _insert(table.name)
        if self._dialect == "postgresql":
            self._pg_defer(stmt, values, tuple(values))
            return
        self._lite_fetch(stmt, values, tuple(values))

    def _int(self, sql: str, *params: Any) -> int:
        """SQLite: one integer from plain SQL with ``?`` placeholders and integer
        parameters: the hottest statements skip SQLAlchemy's compilation and type
        processing (on Postgres every statement is prepared once instead)."""
        ((value,),) = self._sql(sql, *params)
        return int(value)

    def _sql(self, sql: str, *params: Any) -> list[Any]:
        """SQLite: the rows of plain SQL with ``?`` placeholders, on the driver."""
        driver = self._c.connection.dbapi_connection
        assert driver is not None
        try:
            rows: list[Any] = driver.execute(sql, params).fetchall()
        except sqlite3.Error as exc:  # as SQLAlchemy would have raised it
            raise sa.exc.DBAPIError.instance(
                sql, params, exc, sqlite3.Error, dialect=self.engine.dialect
            ) from exc
        return rows

    def _put(self, table: sa.Table, values: Mapping[str, Any]) -> None:
        """Insert the row, or replace every given column of the row with the same id."""
        columns = tuple(values)
        stmt = _upsert(self._dialect, table.name, columns)
        if self._dialect == "postgresql":
            self._pg_defer(stmt, values, columns)
            return
        self._lite_fetch(stmt, values, columns)

    # ----- tenants and keys -----

    def put_tenant(self, tenant: Tenant) -> None:
        self._local.plans.pop(tenant.id, None)
        self._put(s.tenants, _TENANT.values(tenant))

    def tenant(self, tenant_id: int) -> Tenant | None:
        row = self._first(s.tenants, id=tenant_id)
        return None if row is None else _TENANT.record(row)

    def tenant_plan(self, tenant_id: int) -> str | None:
        plan = self._local.plans.get(tenant_id)
        if plan is not None:  # read with the key, in this transaction (see _keys_where)
            return plan
        found = self._scalar(_PLAN, {"id": tenant_id})
        return None if found is None else str(found)

    def tenants(self) -> list[Tenant]:
        return [_TENANT.record(row) for row in self._rows(s.tenants)]

    def put_key(self, key: ApiKey) -> None:
        self._put(s.api_keys, _KEY.values(key))

    def keys_by_prefix(self, prefix: str) -> list[ApiKey]:
        return self._keys_where(_KEYS_BY_PREFIX, {"prefix": prefix}, s.api_keys, prefix=prefix)

    def key_by_id(self, key_id: int) -> ApiKey | None:
        found = self._keys_where(_KEY_BY_ID, {"id": key_id}, s.api_keys, id=key_id)
        return found[0] if found else None

    def _keys_where(
        self, joined: Any, params: Mapping[str, Any], table: sa.Table, **where: Any
    ) -> list[ApiKey]:
        if self._dialect == "postgresql":
            # The tenant's plan comes along: when a request authenticates in its write
            # transaction, a create's tenant_plan is then no round trip of its own.
            rows = self._pg_records(joined, params)
            keys = [_KEY.record(row) for row in rows]
            local = self._local
            if local.writing:  # this transaction's: valid until it ends
                for key, row in zip(keys, rows, strict=True):
                    local.plans[key.tenant_id] = str(row._mapping["tenant_plan"])
            return keys
        return [_KEY.record(row) for row in self._rows(table, **where)]

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
        if self._dialect == "postgresql":  # two writes, held back: no round trip of their own
            self._pg_defer(_BUMP, {"tenant_id": context.tenant_id})
            values = _CONTEXT.values(context)
            columns = tuple(values)
            params = {**values, "revision_of": context.tenant_id}
            self._pg_defer(_pg_put_context(columns), params, columns)
            return
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
        found = self._scalar(_CONTEXT_ID_BY_EXTERNAL, params)
        return None if found is None else int(found)

    def delete_context(self, context: Context) -> None:
        if self._dialect == "postgresql":
            self._pg_defer(_BUMP, {"tenant_id": context.tenant_id})
        else:
            self._bump_contexts_revision(context.tenant_id)
        self._delete(s.contexts, tenant_id=context.tenant_id, id=context.id)

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        if workspace_id is None and self._dialect != "postgresql":
            return self._int("SELECT count(*) FROM contexts WHERE tenant_id = ?", tenant_id)
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

    def _tenant_cache(self, tenant_id: int) -> _TenantCache | None:
        """The tenant's contexts (and search index), brought up to date with the rows
        written since they were read, by this process or any other: one indexed query
        when nothing changed."""
        found = self._all(_REVISION, {"id": tenant_id})
        if not found:
            return None
        revision = int(found[0]._mapping["contexts_revision"])
        created_at = found[0]._mapping["created_at"]
        cached = self._cache.get(tenant_id)
        if cached is None or cached.created_at != created_at:  # new, or a reset reused the id
            cached = _TenantCache(created_at)
            self._cache[tenant_id] = cached
        if cached.revision == revision:
            return cached
        changed = self._all(_CHANGED_CONTEXTS, {"tenant_id": tenant_id, "since": cached.revision})
        cached.apply(map(_CONTEXT.record, changed))
        if self._count(s.contexts, tenant_id=tenant_id) != len(cached.contexts):
            ids = self._all(_CONTEXT_IDS, {"tenant_id": tenant_id})
            cached.keep({int(row._mapping["id"]) for row in ids})
        cached.revision = revision
        return cached

    # ----- audit -----

    def last_audit_hash(self) -> str | None:
        if self._dialect == "postgresql":
            local = self._local
            if local.head is None:  # not read with an id (next_id): read it, and the row's id
                self._drew(*self._pg_fetch(self._with_audit["activity_log"], {})[0])
            assert local.head is not None
            (head,), local.head = local.head, None
            return head
        found = self._sql(_LAST_HASH)
        return str(found[0][0]) if found and found[0][0] is not None else None

    def append_audit(self, row: AuditRow) -> None:
        self._local.head = None  # the chain has a new head
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

    def sessions(self, tenant_id: int) -> list[AgentSession]:
        return [_SESSION.record(row) for row in self._rows(s.agent_sessions, tenant_id=tenant_id)]

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._insert(s.agent_checkpoints, _CHECKPOINT.values(checkpoint))

    def last_checkpoint_seq(self, session_id: int) -> int:
        if self._dialect == "postgresql":  # the next checkpoint's id and the audit's with it
            ((seq, drawn, *audit),) = self._pg_fetch(
                self._with_audit["seq"], {"session_id": session_id}
            )
            self._local.ahead["agent_checkpoint"] = int(drawn)
            self._drew(*audit)
            return int(seq)
        return self._int(
            "SELECT coalesce(max(seq), 0) FROM agent_checkpoints WHERE session_id = ?", session_id
        )

    def last_checkpoint(self, session_id: int) -> Checkpoint | None:
        row = self._first(s.agent_checkpoints, ("-seq", "-id"), session_id=session_id)
        return None if row is None else _CHECKPOINT.record(row)

    def checkpoints(self, session_id: int) -> list[Checkpoint]:
        rows = self._rows(s.agent_checkpoints, ("seq", "id"), session_id=session_id)
        return [_CHECKPOINT.record(row) for row in rows]

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

    def handoffs(self, tenant_id: int) -> list[Handoff]:
        return [_HANDOFF.record(row) for row in self._rows(s.agent_handoffs, tenant_id=tenant_id)]

    def latest_handoff(self, tenant_id: int, workspace_id: int | None) -> Handoff | None:
        if workspace_id is None:
            row = self._first(s.agent_handoffs, ("-id",), tenant_id=tenant_id)
        else:
            row = self._first(
                s.agent_handoffs, ("-id",), tenant_id=tenant_id, workspace_id=workspace_id
            )
        return None if row is None else _HANDOFF.record(row)

    def __repr__(self) -> str:
        return f"SqlStore({redacted_url(self.url)!r})"


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
_LAST_HASH = "SELECT hash FROM activity_logs ORDER BY id DESC LIMIT 1"
_KEY_AND_PLAN = sa.select(s.api_keys, s.tenants.c.plan.label("tenant_plan")).join(
    s.tenants, s.tenants.c.id == s.api_keys.c.tenant_id
)
_KEYS_BY_PREFIX = _KEY_AND_PLAN.where(s.api_keys.c.prefix == sa.bindparam("prefix")).order_by(
    s.api_keys.c.id
)
_KEY_BY_ID = _KEY_AND_PLAN.where(s.api_keys.c.id == sa.bindparam("id"))
_PG_LAST_HASH = sa.select(s.activity_logs.c.hash).order_by(s.activity_logs.c.id.desc()).limit(1)
#: What only audited requests create (see ``SqlStore.next_id``).
_AUDITED_KINDS = frozenset(
    {"context", "agent_session", "agent_checkpoint", "agent_task", "agent_lesson", "agent_handoff"}
)
_PG_LAST_SEQ = sa.select(sa.func.coalesce(sa.func.max(s.agent_checkpoints.c.seq), 0)).where(
    s.agent_checkpoints.c.session_id == sa.bindparam("session_id")
)
_BUMP = (
    sa.update(s.tenants)
    .where(s.tenants.c.id == sa.bindparam("tenant_id"))
    .values(contexts_revision=s.tenants.c.contexts_revision + 1)
)


@functools.cache
def _pg_put_context(columns: tuple[str, ...]) -> sa.Insert:
    """Postgres: upsert a context whose ``revision`` is its tenant's, as ``_BUMP`` (sent
    before it in the same batch) left it; the statement needs no value read back."""
    t = s.contexts
    revision = (
        sa.select(s.tenants.c.contexts_revision)
        .where(s.tenants.c.id == sa.bindparam("revision_of", type_=sa.BigInteger))
        .scalar_subquery()
    )
    stmt = postgresql.insert(t).values(revision=revision)
    changes = {name: stmt.excluded[name] for name in (*columns, "revision") if name != "id"}
    return stmt.on_conflict_do_update(index_elements=["id"], set_=changes)


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
            if not in_memory:  # journal_mode=WAL, which does, is set by _create_schema
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


def _postgres_session(engine: Engine, *, lock_timeout: float, durable: bool) -> None:
    """Bound every lock wait of the store's connections, and (unless ``durable``) let a
    commit return before its WAL reaches the disk; fix what ``_pg.literal`` relies on.
    Set once per connection."""
    settings = (
        "SET standard_conforming_strings = on;\nSET client_encoding = 'UTF8';\n"
        f"SET lock_timeout = {max(1, round(lock_timeout * 1000))}"
    )
    if not durable:
        settings += ";\nSET synchronous_commit = off"

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            dbapi_connection.execute(settings)
        finally:
            dbapi_connection.autocommit = autocommit


def _end_sqlalchemy_transaction(conn: Connection) -> None:
    """Close the transaction SQLAlchemy began on an autocommit connection (bookkeeping
    only: the server's transaction, if any, was ended by ``PgBatch``)."""
    if not conn.invalidated and conn.in_transaction():
        conn.rollback()


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
