"""SqlStore's Postgres wire path: prepared statements, several to a round trip.

A request's statements are few and small, so on Postgres their cost is round trips and
planning, not work. ``PgStatement`` is one statement shape, compiled once from SQLAlchemy
with the type processing SQLAlchemy would apply, and prepared once per connection
(``PREPARE``); each use is an ``EXECUTE`` whose arguments are SQL literals written here
(``literal``; psycopg's quoting for anything unusual). ``PgBatch`` keeps what nobody
waits for (``BEGIN`` and the lock, every write) and sends it with the next statement
whose result is needed, or with ``COMMIT``: one simple-protocol query (libpq's
``PQexec``, which returns the last statement's result), one round trip.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import psycopg
import sqlalchemy as sa
from psycopg import errors, pq
from psycopg.adapt import Transformer
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from fake_contextq.stores._rows import Row, processed

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def literal(value: Any, cursor: psycopg.ClientCursor[Any]) -> str:
    """``value`` as an SQL literal for an ``EXECUTE`` argument (the ``PREPARE`` gave each
    parameter its type). The common types are written here, which costs a fraction of
    psycopg's general adaptation; anything else is left to it. Relies on the session's
    ``standard_conforming_strings`` (a quote is the only escape), which SqlStore sets."""
    kind = type(value)
    if kind is str:
        text: str = value
        return "'" + text.replace("'", "''") + "'"  # standard_conforming_strings
    if kind is int:
        return str(value)
    if value is None:
        return "NULL"
    if kind is bool:
        return "true" if value else "false"
    if kind is datetime:
        return "'" + str(value.isoformat()) + "'"
    quoted: str = cursor.mogrify("%s", (value,))
    return quoted


def _json_literal(value: Any) -> str:
    """A JSON parameter, serialised as SQLAlchemy's JSON type does (``json.dumps``)."""
    text = json.dumps(value)
    return "'" + text.replace("'", "''") + "'"


class PgStatement:
    """One statement shape: its ``PREPARE``, the ``EXECUTE`` its parameters are bound
    into, how each parameter is processed first, and each result column's name and
    processor."""

    __slots__ = ("binds", "defaults", "execute", "loads", "name", "names", "prepare")

    def __init__(
        self,
        name: str,
        stmt: sa.ClauseElement,
        dialect: Dialect,
        column_keys: Sequence[str] | None = None,
    ) -> None:
        compiled = stmt.compile(
            dialect=dialect, column_keys=None if column_keys is None else list(column_keys)
        )
        assert isinstance(compiled, SQLCompiler)
        by_name = {bind_name: bind for bind, bind_name in compiled.bind_names.items()}
        order: dict[str, int] = {}

        def number(match: re.Match[str]) -> str:
            if match.group(1) is None:
                return "%"  # a literal percent sign, escaped for pyformat
            return f"${order.setdefault(match.group(1), len(order) + 1)}"

        self.name = name
        self.prepare = f"PREPARE {name} AS {_PLACEHOLDER.sub(number, compiled.string)}"
        self.execute = f"EXECUTE {name}"  # followed by the arguments, if any
        self.binds: tuple[tuple[str, Callable[[Any], Any] | None, bool], ...] = tuple(
            (
                p,
                by_name[p].type.dialect_impl(dialect).bind_processor(dialect),
                isinstance(by_name[p].type, sa.JSON),
            )
            for p in order
        )
        self.defaults: dict[str, Any] = {
            p: by_name[p].effective_value for p in order if not by_name[p].required
        }
        columns = list(getattr(stmt, "selected_columns", ()))
        self.names: tuple[str, ...] = tuple(str(c.key) for c in columns)
        self.loads: tuple[Callable[[Any], Any] | None, ...] = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        )

    def bound(
        self, cursor: psycopg.ClientCursor[Any], params: Mapping[str, Any], execute: str
    ) -> str:
        """``EXECUTE name(arguments)``: ``execute`` names the statement as its connection
        prepared it; ``params`` become the arguments, processed as SQLAlchemy would."""
        if not self.binds:
            return execute
        defaults = self.defaults
        out: list[str] = []
        for name, dump, is_json in self.binds:
            value = params[name] if name in params else defaults[name]
            if value is None:
                out.append("NULL")
            elif is_json:
                out.append(_json_literal(value))
            else:
                out.append(literal(value if dump is None else dump(value), cursor))
        return f"{execute}({', '.join(out)})"

    def rows(self, raw: list[tuple[Any, ...]]) -> list[Row]:
        """Result rows with SQLAlchemy's result processing applied."""
        return processed(self.names, self.loads, raw)


class PgBatch:
    """One connection's statements not sent yet, and the statements it has prepared.

    The connection is in autocommit mode: this class sends ``BEGIN`` and ``COMMIT`` itself,
    inside the batches, so psycopg adds no round trips of its own; it talks to libpq
    directly, at half the cost of a psycopg cursor per query. A connection outside a
    transaction (the store's reader) sends each statement at once. A lock wait past the
    server's ``lock_timeout`` raises what ``lock_timed_out`` makes of it, told whether the
    query that waited opened the transaction (and took its lock).
    """

    def __init__(
        self, connection: psycopg.Connection[Any], lock_timed_out: Callable[[bool], Exception]
    ) -> None:
        self.connection = connection
        self.cursor: psycopg.ClientCursor[Any] = psycopg.ClientCursor(connection)  # quoting
        self._pgconn = connection.pgconn
        self._loader = Transformer(connection)
        self._lock_timed_out = lock_timed_out
        self._pending: list[str] = []
        self._first = False  # the pending statements open the transaction
        self._prepared: dict[str, str] = {}  # statement name -> its EXECUTE here
        self._generation = 0  # bumped when a failed batch leaves unknown what is prepared

    @property
    def broken(self) -> bool:
        """Whether the connection to the server is lost."""
        return bool(self._pgconn.status == pq.ConnStatus.BAD)

    def begin(self, prologue: str) -> None:
        """Open a transaction with ``prologue`` (``BEGIN`` and the lock), sent with the
        transaction's first statement."""
        self._pending = [prologue]
        self._first = True

    def defer(self, stmt: PgStatement, params: Mapping[str, Any]) -> None:
        """Send ``stmt`` with the next batch; its result (a write's) is not needed."""
        self._pending.append(stmt.bound(self.cursor, params, self._prepare(stmt)))

    def fetch(self, stmt: PgStatement, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Send what is pending and ``stmt``; ``stmt``'s rows, unprocessed."""
        return self._send(stmt.bound(self.cursor, params, self._prepare(stmt)))

    def defer_sql(self, sql: str) -> None:
        """Send plain ``sql`` with the next batch."""
        self._pending.append(sql)

    def fetch_sql(self, sql: str) -> list[tuple[Any, ...]]:
        """Send what is pending and plain ``sql``; its rows."""
        return self._send(sql)

    def flush(self) -> None:
        """Send what is pending, if anything."""
        if self._pending:
            self._send(None)

    def commit(self) -> None:
        """Send what is pending and ``COMMIT``: one round trip; none for a transaction that
        ran no statement at all."""
        if self._first and len(self._pending) == 1:  # only BEGIN and the lock: skip them
            self._pending = []
            self._first = False
            return
        self._send("COMMIT")

    def rollback(self) -> None:
        """Forget what is pending and end the server's transaction, if one is open."""
        self._pending = []
        self._first = False
        if self._pgconn.transaction_status != pq.TransactionStatus.IDLE:
            self._pgconn.exec_(b"ROLLBACK")

    def _prepare(self, stmt: PgStatement) -> str:
        """``stmt``'s ``EXECUTE`` on this connection, its ``PREPARE`` queued first if this
        connection has not prepared it yet."""
        execute = self._prepared.get(stmt.name)
        if execute is None:
            prepare, execute = stmt.prepare, stmt.execute
            if self._generation:  # a fresh name: the old one may or may not exist
                renamed = f"{stmt.name}_{self._generation}"
                prepare = prepare.replace(stmt.name, renamed, 1)
                execute = execute.replace(stmt.name, renamed, 1)
            self._pending.append(prepare)
            self._prepared[stmt.name] = execute
        return execute

    def _send(self, last: str | None) -> list[tuple[Any, ...]]:
        """One query of what is pending (and ``last``); the last statement's rows."""
        pending, first = self._pending, self._first
        if last is not None:
            pending.append(last)
        self._pending, self._first = [], False
        text = pending[0] if len(pending) == 1 else ";\n".join(pending)
        try:
            result = self._pgconn.exec_(text.encode())  # waits with the GIL released
        except BaseException:
            self._unsure()
            raise
        status = result.status
        if status == pq.ExecStatus.TUPLES_OK:
            loader = self._loader
            loader.set_pgresult(result)
            return loader.load_rows(0, result.ntuples, tuple)
        if status == pq.ExecStatus.COMMAND_OK:
            return []
        self._unsure()
        error = errors.error_from_result(result, encoding=self.connection.info.encoding)
        if isinstance(error, errors.LockNotAvailable):
            raise self._lock_timed_out(first) from error
        raise error

    def _unsure(self) -> None:
        """After a failed batch: its ``PREPARE``s may or may not have run, so every
        statement is prepared again, under new names (the old ones stay unused)."""
        self._prepared.clear()
        self._generation += 1
