"""Records to table rows and back, derived from the records' own fields.

A record's fields are declared once, in ``domain/records.py``; a column holds the field of
the same name, but for the renames below. Tuples are stored as JSON arrays and read back as
tuples; booleans read back as ``bool`` (SQLite hands back 0 and 1).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

R = TypeVar("R")

# field -> column, where the schema's name differs from the record's
RENAMED: typing.Final[Mapping[str, str]] = {
    "workspace": "workspace_slug",
    "limit": "result_limit",  # a saved search's; LIMIT is a keyword of SQL
}


def _floats(value: Any) -> tuple[float, ...] | None:
    return None if value is None else tuple(float(x) for x in value)


def _reader(hint: Any) -> Callable[[Any], Any] | None:
    """How a column's value becomes the field's value (None: as it is)."""
    if hint is bool:
        return bool
    if hint == tuple[float, ...] | None:
        return _floats
    if typing.get_origin(hint) is tuple:
        return tuple
    return None


def _writer(hint: Any) -> Callable[[Any], Any] | None:
    """How a field's value becomes the column's value (None: as it is)."""
    if typing.get_origin(hint) is tuple:
        return list
    if hint == tuple[float, ...] | None:
        return lambda value: None if value is None else list(value)
    return None


class Row:
    """A result row as ``RowMap`` reads it: values by column name (what the Postgres and
    SQLite statement paths build; SQLAlchemy's own rows read the same way)."""

    __slots__ = ("_mapping",)

    def __init__(self, mapping: dict[str, Any]) -> None:
        self._mapping = mapping


def processed(
    names: tuple[str, ...],
    loads: tuple[Callable[[Any], Any] | None, ...],
    raw: list[tuple[Any, ...]],
) -> list[Row]:
    """Driver rows as ``Row``s, each column through its result processor (``loads``), as
    SQLAlchemy would have processed them; both statement paths read rows this way."""
    return [
        Row(
            {
                name: value if load is None or value is None else load(value)
                for name, load, value in zip(names, loads, values, strict=True)
            }
        )
        for values in raw
    ]


class RowMap(Generic[R]):
    """The columns of one record type, read and written in the record's field order."""

    __slots__ = ("_cls", "_read", "_write")

    def __init__(self, cls: type[R]) -> None:
        hints = typing.get_type_hints(cls)
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        self._cls = cls
        self._read = tuple((RENAMED.get(n, n), _reader(hints[n])) for n in names)
        self._write = tuple((n, RENAMED.get(n, n), _writer(hints[n])) for n in names)

    def record(self, row: Any) -> R:
        """The record of a result row (anything with a ``_mapping``)."""
        m = row._mapping
        return self._cls(
            *[m[column] if read is None else read(m[column]) for column, read in self._read]
        )

    def values(self, record: R) -> dict[str, Any]:
        """The column values of a record, for an insert or an upsert."""
        out: dict[str, Any] = {}
        for name, column, write in self._write:
            value = getattr(record, name)
            out[column] = value if write is None else write(value)
        return out
