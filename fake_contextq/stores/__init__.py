"""Where the fake keeps its rows: in memory, or in SQLite or Postgres through SQLAlchemy.

``SqlStore`` loads on first use, so the memory store needs no SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fake_contextq.stores.memory import MemoryStore

if TYPE_CHECKING:
    from fake_contextq.stores.sql import SchemaVersionError, SqlStore

__all__ = ["MemoryStore", "SchemaVersionError", "SqlStore"]


def __getattr__(name: str) -> Any:
    if name in ("SqlStore", "SchemaVersionError"):
        from fake_contextq.stores import sql

        return getattr(sql, name)
    raise AttributeError(f"module 'fake_contextq.stores' has no attribute {name!r}")
