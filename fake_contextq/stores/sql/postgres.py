"""``SqlStore`` on PostgreSQL (psycopg 3): what differs from SQLite.

A ``transaction()`` takes a transaction-scoped advisory lock whose key is derived from the
database and schema, so fakes on other schemas never wait for it; a lock not free within
``lock_timeout`` seconds answers 503 ``database_busy`` naming it, instead of a hang.

A request costs round trips, so statements go out through ``_pg``: prepared once per
connection, their arguments bound on the client, and ``BEGIN``, the lock and every write
held back and sent with the next statement whose result is needed, or with ``COMMIT``. A
lone read (``read()``) runs in autocommit: one round trip. Reads the model always follows
with another carry it along: an id drawn for a new context, session, checkpoint, task,
lesson or handoff comes with the audit chain's head and the audit row's id, which the
request asks for last (``next_id``). Writes commit with ``synchronous_commit`` off unless
``durable=True``: a crash of the Postgres server may lose the last moments of acknowledged
writes (whole transactions, never part of one), as SQLite's ``synchronous=NORMAL`` does on
power loss. An id drawn by a request that then failed is consumed, as in any service on
Postgres; everything else such a request wrote is rolled back.

The store's connections (``_pool``) are in autocommit mode (``PgBatch`` sends ``BEGIN`` and
``COMMIT`` itself); each keeps its ``PgBatch``, and so its prepared statements.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.records import ApiKey, AuditRow, Context, Tenant
from fake_contextq.stores import schema as s
from fake_contextq.stores.sql import _statements as q
from fake_contextq.stores.sql._pool import Lent
from fake_contextq.stores.sql.base import Local, NoTransaction, SqlStore

if TYPE_CHECKING:  # psycopg is imported only when a Postgres store is made
    from fake_contextq.stores.sql._pg import PgBatch, PgStatement


def advisory_lock_key(database: str, schema: str) -> int:
    """The PostgreSQL advisory lock every transaction of a fake on ``schema`` takes: one
    per schema, so fakes on two schemas (or databases) never wait for each other."""
    digest = hashlib.sha256(f"fake-contextq\0{database}\0{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PgLocal(Local):
    """The current thread's transaction, with what Postgres keeps for it."""

    def __init__(self) -> None:
        super().__init__()
        # the batch of the current transaction or read (its connection's own)
        self.batch: PgBatch | None = None
        # ids drawn ahead in this transaction, by kind, and the audit chain's head read
        # with them (see next_id)
        self.ahead: dict[str, int] = {}
        self.head: tuple[str | None] | None = None
        # tenants' plans, read with their keys in this write transaction
        self.plans: dict[int, str] = {}


class PostgresStore(SqlStore, backend="postgresql"):
    """``SqlStore`` on a PostgreSQL schema (the first of the URL's ``search_path``)."""

    _local_type = PgLocal
    _local: PgLocal

    def _create_engine(self, *, echo: bool) -> Engine:
        self._prologue = ""
        self._statements: dict[tuple[int, tuple[str, ...] | None], tuple[Any, PgStatement]] = {}
        self._names = itertools.count()
        self._nextval: dict[str, sa.Select[Any]] = {}
        self._with_audit: dict[str, sa.Select[Any]] = {}  # kind -> its id, head, audit id
        self._reset_sql = ""
        self.reads_wait = True  # a round trip to a server that may stall
        try:
            engine = sa.create_engine(self.url, echo=echo, poolclass=NullPool)  # see _pool
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] != "psycopg":
                raise
            raise ModuleNotFoundError(
                "a postgresql:// database needs psycopg, which is not installed: "
                "pip install 'contextq-memory-tool[postgres]'",
                name=exc.name,
            ) from None
        if engine.dialect.driver != "psycopg":
            raise ValueError(
                "SqlStore speaks Postgres through psycopg 3 (postgresql:// or "
                f"postgresql+psycopg://), not {engine.dialect.driver!r}"
            )
        return engine

    def _lock_wait(self) -> float:
        return self.lock_timeout

    def _open(self) -> Connection:
        conn = self.engine.connect()
        conn.execution_options(isolation_level="AUTOCOMMIT")  # PgBatch sends BEGIN, COMMIT
        return conn

    def _set_up(self) -> None:
        _postgres_session(self.engine, lock_timeout=self.lock_timeout, durable=self.durable)
        self._locate()

    def _schema_made(self) -> None:
        self._find_sequences()

    # ----- transactions -----

    @contextmanager
    def _outermost(self) -> Iterator[object]:
        """``BEGIN`` and the schema's advisory lock, sent with the first statement; the
        writes, sent with the next read or with ``COMMIT``."""
        local = self._local
        lent = self._take(read_only=False)
        conn = lent.conn
        try:
            batch = self._batch(lent)
            batch.begin(self._prologue)
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

    @contextmanager
    def _lone_read(self) -> Iterator[object]:
        """Autocommit: each statement one round trip."""
        local = self._local
        lent = self._take(read_only=True)
        conn = lent.conn
        try:
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
        finally:
            self._give(lent)

    def _batch(self, lent: Lent) -> PgBatch:
        """The batch of a lent connection, made the first time it is lent."""
        batch: PgBatch | None = lent.batch
        if batch is None:
            from fake_contextq.stores.sql._pg import PgBatch

            dbapi: Any = lent.conn.connection.driver_connection
            batch = lent.batch = PgBatch(dbapi, self._lock_timed_out)
        return batch

    def _lock_timed_out(self, first: bool) -> ApiError:
        """The 503 for a lock wait past ``lock_timeout``: in the transaction's first batch
        that is the schema's write lock, later a row or table lock."""
        names = {"key": self.lock_key, "schema": self.schema, "database": self.database}
        lock_name = (_msgs.PG_WRITE_LOCK if first else _msgs.PG_TABLE_LOCK).format(**names)
        return self._busy(lock_name, self.lock_timeout)

    @property
    def _c(self) -> Connection:
        """The transaction's connection, for SQLAlchemy; whatever is pending is sent
        first, so SQLAlchemy's statements see it."""
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

    # ----- statements: prepared once per connection, sent in batches -----

    def _compiled(self, stmt: Any, columns: tuple[str, ...] | None = None) -> PgStatement:
        """``stmt`` compiled for psycopg once (``columns``: an insert's given columns)."""
        key = (id(stmt), columns)
        found = self._statements.get(key)
        if found is None:
            from fake_contextq.stores.sql._pg import PgStatement

            name = f"fq{next(self._names)}"  # unique even when threads race here
            found = (stmt, PgStatement(name, stmt, self.engine.dialect, columns))
            self._statements[key] = found  # holds stmt, so its id stays its own
        return found[1]

    def _fetch(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> list[tuple[Any, ...]]:
        """Send what is pending and ``stmt``; its rows, unprocessed."""
        return self._pg.fetch(self._compiled(stmt, columns), params)

    def _write(
        self, stmt: Any, params: Mapping[str, Any], columns: tuple[str, ...] | None = None
    ) -> None:
        """Hold ``stmt`` back, to send with the next batch."""
        self._pg.defer(self._compiled(stmt, columns), params)

    def _all(self, stmt: Any, params: Mapping[str, Any]) -> list[Any]:
        return self._compiled(stmt).rows(self._fetch(stmt, params))

    # ----- the schema and its lock -----

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
        self._prologue = f"BEGIN;\nSELECT pg_advisory_xact_lock({self.lock_key})"

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
            self._reset_sql = "; ".join(
                [f"DELETE FROM {quote(table)}" for table in s.DATA_TABLES]
                + [
                    batch.cursor.mogrify("SELECT setval(%s::regclass, 1, false)", (sequence,))
                    for _, sequence in found
                ]
            )
        for name, drawn in nextval.items():
            self._nextval[name] = sa.select(drawn)
        head, audit_id = _LAST_HASH.scalar_subquery(), nextval[s.activity_logs.name]
        self._with_audit["activity_log"] = sa.select(head, audit_id)
        for kind in _AUDITED_KINDS:
            drawn = nextval[s.ID_TABLES[kind].name]
            if kind == "agent_checkpoint":  # with the session's last seq, read just before
                self._with_audit["seq"] = sa.select(
                    _LAST_SEQ.scalar_subquery(), drawn, head, audit_id
                )
            self._with_audit[kind] = sa.select(drawn, head, audit_id)

    # ----- what Postgres does its own way -----

    def reset(self) -> None:
        self._cache.clear()
        with self.transaction():
            self._pg.defer_sql(self._reset_sql)

    def next_id(self, kind: str) -> int:
        # A request that creates one of the _AUDITED_KINDS then appends an audit row: the
        # first such id of a transaction is drawn with the chain's head and the audit
        # row's id, in one statement (see _drew).
        local = self._local
        drawn = local.ahead.pop(kind, None)
        if drawn is not None:
            return drawn
        if kind in _AUDITED_KINDS and "activity_log" not in local.ahead:
            ((new_id, *audit),) = self._fetch(self._with_audit[kind], {})
            self._drew(*audit)
            return int(new_id)
        return int(self._fetch(self._nextval[s.ID_TABLES[kind].name], {})[0][0])

    def _drew(self, head: str | None, audit_id: int) -> None:
        """Keep the audit chain's head and the audit row's id, read ahead, for
        ``last_audit_hash`` and ``next_id("activity_log")``. The model asks for them when it
        appends the request's audit row, last; under the transaction's lock no one else
        appends in between. An id drawn for a request that then fails is consumed, as any
        failed request's ids are on Postgres."""
        self._local.head = (None if head is None else str(head),)
        self._local.ahead["activity_log"] = int(audit_id)

    def put_tenant(self, tenant: Tenant) -> None:
        self._local.plans.pop(tenant.id, None)
        super().put_tenant(tenant)

    def tenant_plan(self, tenant_id: int) -> str | None:
        plan = self._local.plans.get(tenant_id)
        if plan is not None:  # read with the key, in this transaction (see _keys_with_plans)
            return plan
        return super().tenant_plan(tenant_id)

    def keys_by_prefix(self, prefix: str) -> list[ApiKey]:
        return self._keys_with_plans(_KEYS_BY_PREFIX, {"prefix": prefix})

    def key_by_id(self, key_id: int) -> ApiKey | None:
        found = self._keys_with_plans(_KEY_BY_ID, {"id": key_id})
        return found[0] if found else None

    def _keys_with_plans(self, joined: Any, params: Mapping[str, Any]) -> list[ApiKey]:
        # The tenant's plan comes along: when a request authenticates in its write
        # transaction, a create's tenant_plan is then no round trip of its own.
        rows = self._all(joined, params)
        keys = [q.KEY.record(row) for row in rows]
        local = self._local
        if local.writing:  # this transaction's: valid until it ends
            for key, row in zip(keys, rows, strict=True):
                local.plans[key.tenant_id] = str(row._mapping["tenant_plan"])
        return keys

    def put_context(self, context: Context) -> None:
        # two writes, held back: no round trip of their own
        self._write(_BUMP, {"tenant_id": context.tenant_id})
        values = q.CONTEXT.values(context)
        columns = tuple(values)
        params = {**values, "revision_of": context.tenant_id}
        self._write(_put_context(columns), params, columns)

    def delete_context(self, context: Context) -> None:
        self._write(_BUMP, {"tenant_id": context.tenant_id})
        self._delete(s.contexts, tenant_id=context.tenant_id, id=context.id)

    def last_audit_hash(self) -> str | None:
        local = self._local
        if local.head is None:  # not read with an id (next_id): read it, and the row's id
            self._drew(*self._fetch(self._with_audit["activity_log"], {})[0])
        assert local.head is not None
        (head,), local.head = local.head, None
        return head

    def append_audit(self, row: AuditRow) -> None:
        self._local.head = None  # the chain has a new head
        super().append_audit(row)

    def last_checkpoint_seq(self, session_id: int) -> int:
        # the next checkpoint's id and the audit's come with it
        ((seq, drawn, *audit),) = self._fetch(self._with_audit["seq"], {"session_id": session_id})
        self._local.ahead["agent_checkpoint"] = int(drawn)
        self._drew(*audit)
        return int(seq)


# ----- statements only Postgres runs -----

_LAST_HASH = sa.select(s.activity_logs.c.hash).order_by(s.activity_logs.c.id.desc()).limit(1)
#: What only audited requests create (see ``PostgresStore.next_id``).
_AUDITED_KINDS = frozenset(
    {
        "context",
        "agent_session",
        "agent_checkpoint",
        "agent_task",
        "agent_lesson",
        "agent_handoff",
        "saved_search",
    }
)
_LAST_SEQ = sa.select(sa.func.coalesce(sa.func.max(s.agent_checkpoints.c.seq), 0)).where(
    s.agent_checkpoints.c.session_id == sa.bindparam("session_id")
)
_KEY_AND_PLAN = sa.select(s.api_keys, s.tenants.c.plan.label("tenant_plan")).join(
    s.tenants, s.tenants.c.id == s.api_keys.c.tenant_id
)
_KEYS_BY_PREFIX = _KEY_AND_PLAN.where(s.api_keys.c.prefix == sa.bindparam("prefix")).order_by(
    s.api_keys.c.id
)
_KEY_BY_ID = _KEY_AND_PLAN.where(s.api_keys.c.id == sa.bindparam("id"))
_BUMP = (
    sa.update(s.tenants)
    .where(s.tenants.c.id == sa.bindparam("tenant_id"))
    .values(contexts_revision=s.tenants.c.contexts_revision + 1)
)


@functools.cache
def _put_context(columns: tuple[str, ...]) -> sa.Insert:
    """Upsert a context whose ``revision`` is its tenant's, as ``_BUMP`` (sent before it
    in the same batch) left it; the statement needs no value read back."""
    t = s.contexts
    revision = (
        sa.select(s.tenants.c.contexts_revision)
        .where(s.tenants.c.id == sa.bindparam("revision_of", type_=sa.BigInteger))
        .scalar_subquery()
    )
    stmt = postgresql.insert(t).values(revision=revision)
    changes = {name: stmt.excluded[name] for name in (*columns, "revision") if name != "id"}
    return stmt.on_conflict_do_update(index_elements=["id"], set_=changes)


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
