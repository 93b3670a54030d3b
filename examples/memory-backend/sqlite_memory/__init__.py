"""A memory-tool backend on SQLite, written to show a backend's owner how to adopt the
memory-tool conformance kit (see README.md)."""

from sqlite_memory.async_tool import AsyncSQLiteMemoryTool
from sqlite_memory.tool import SQLiteMemoryTool

__all__ = ["AsyncSQLiteMemoryTool", "SQLiteMemoryTool"]
