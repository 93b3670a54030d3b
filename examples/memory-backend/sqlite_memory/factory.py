"""The kit's factories: each call, one more instance on the same database file
(``$MEMORY_DB``, or one temporary file per process)."""

from __future__ import annotations

import os
import tempfile
from functools import cache

from sqlite_memory.async_tool import AsyncSQLiteMemoryTool
from sqlite_memory.tool import SQLiteMemoryTool


@cache
def _database() -> str:
    return os.environ.get("MEMORY_DB") or os.path.join(tempfile.mkdtemp(), "memory.db")


def memory_tool() -> SQLiteMemoryTool:
    return SQLiteMemoryTool(_database())


def async_memory_tool() -> AsyncSQLiteMemoryTool:
    return AsyncSQLiteMemoryTool(_database())
