"""SqlStore's SQLite path: each statement shape compiled once, run on the driver's cursor.

A request's statements are tiny and SQLite answers them in microseconds, so what they
cost is SQLAlchemy's per-execution work (building the execution context, processing
parameters and results, events): about four fifths of a create. ``LiteStatement`` keeps
what SQLAlchemy would compute every time (the SQL string, the parameter order and the
type processing of each parameter and result column) and hands the SQL to pysqlite
directly, inside the transaction SQLAlchemy opened on the same connection. Statements
whose SQL depends on their parameters (expanding ``IN`` lists) stay with SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler

from fake_contextq.stores._rows import Row, processed

_REQUIRED: Final = object()  # a parameter the caller must give (no value of its own)


class Uncompilable(Exception):
    """The statement's SQL is not fixed by its shape: SQLAlchemy runs it."""


class LiteStatement:
    """One statement shape: its SQL with ``?`` placeholders, how each positional parameter
    is found and processed, and each result column's name and processor."""

    __slots__ = ("binds", "loads", "names", "sql")

    def __init__(
        self, stmt: sa.ClauseElement, dialect: Dialect, column_keys: Sequence[str] | None = None
    ) -> None:
        compiled = stmt.compile(
            dialect=dialect, column_keys=None if column_keys is None else list(column_keys)
        )
        assert isinstance(compiled, SQLCompiler)
        by_name = {name: bind for bind, name in compiled.bind_names.items()}
        if compiled.positiontup is None or any(b.expanding for b in by_name.values()):
            raise Uncompilable(str(stmt))
        self.sql: str = compiled.string
        self.binds: tuple[tuple[str, Callable[[Any], Any] | None, Any], ...] = tuple(
            (
                name,
                by_name[name].type.dialect_impl(dialect).bind_processor(dialect),
                _REQUIRED if by_name[name].required else by_name[name].effective_value,
            )
            for name in compiled.positiontup
        )
        columns = list(getattr(stmt, "selected_columns", ()))
        self.names: tuple[str, ...] = tuple(str(c.key) for c in columns)
        self.loads: tuple[Callable[[Any], Any] | None, ...] = tuple(
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        )

    def args(self, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """The positional arguments, processed as SQLAlchemy would; a required parameter
        not given is a KeyError naming it."""
        out = []
        for name, dump, default in self.binds:
            value = params[name] if name in params or default is _REQUIRED else default
            out.append(value if dump is None or value is None else dump(value))
        return tuple(out)

    def rows(self, raw: list[tuple[Any, ...]]) -> list[Row]:
        """Result rows with SQLAlchemy's result processing applied."""
        return processed(self.names, self.loads, raw)
