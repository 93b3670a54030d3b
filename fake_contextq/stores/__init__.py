"""Where the fake keeps its rows: in memory, or in SQLite or Postgres through SQLAlchemy.

``SqlStore`` loads on first use, so the memory store needs no SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapter._lazy import lazy_names
from fake_contextq.stores.memory import MemoryStore

if TYPE_CHECKING:
    from fake_contextq.stores.sql import SchemaVersionError, SqlStore

__all__ = ["MemoryStore", "SchemaVersionError", "SqlStore"]


__getattr__, __dir__ = lazy_names(
    __name__, globals(), {"SqlStore": "sql", "SchemaVersionError": "sql"}
)
