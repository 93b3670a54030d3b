"""Memory-tool backends for the kit's own tests: the example SQLite backend, importable from
``examples/memory-backend``, and misbehaving ones, each with one defect planted."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory-backend"
if str(EXAMPLE) not in sys.path:
    sys.path.insert(0, str(EXAMPLE))

from sqlite_memory import AsyncSQLiteMemoryTool, SQLiteMemoryTool  # noqa: E402
from sqlite_memory import tool as sqlite_tool  # noqa: E402
from sqlite_memory.paths import key  # noqa: E402

DECLARATIONS = EXAMPLE / "memory-tool.toml"


class TraversalLetThrough(SQLiteMemoryTool):
    """Decodes percent-encoding before its checks: '/memories/%2e%2e/x.md' is stored."""

    def _create(self, path: str, text: str) -> str:
        if "%2e%2e/" in path:
            self._write(path.rsplit("/", 1)[1], text, path)
            return f"File created successfully at: {path}"
        return super()._create(path, text)


class ChangedString(SQLiteMemoryTool):
    """Words one error its own way: an existing file on create."""

    def _create(self, path: str, text: str) -> str:
        try:
            return super()._create(path, text)
        except ToolError as exc:
            if "already exists" in str(exc):
                raise ToolError(f"{path} exists already") from None
            raise


class LostCreate(SQLiteMemoryTool):
    """Checks that a path is free in one transaction and writes in another: two concurrent
    creates of one path both succeed, the later overwriting the earlier."""

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path, text = command.path, command.file_text
        self._run(lambda: self._create_check(path))
        time.sleep(0.02)
        return self._run(lambda: self._overwrite(path, text))

    def _create_check(self, path: str) -> str:
        if self._exists(key(path)):
            raise ToolError(f"File {path} already exists")
        return ""

    def _overwrite(self, path: str, text: str) -> str:
        k = key(path)
        if self._below(k):  # a directory now: refused as before; a file is overwritten
            raise ToolError(f"File {path} already exists")
        self._check_parents(k, path)
        self._write(k, text, path)
        return f"File created successfully at: {path}"


class OffByOne(SQLiteMemoryTool):
    """Refuses a file of exactly the declared largest size."""

    def _write(self, k: str, content: str, path: str) -> None:
        if len(content.encode()) >= sqlite_tool.MAX_FILE_BYTES:
            raise ToolError(f"File {path} is too large")
        super()._write(k, content, path)


class AsyncTwinDiffers(AsyncSQLiteMemoryTool):
    """An async twin whose insert answers differently from the sync tool's."""

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        await super().insert(command)
        return f"Inserted into {command.path}."


class Hanging(SQLiteMemoryTool):
    """Never answers a view of ``/memories/notes.md`` (which only ``results.view-file``
    views); every other answer is the example's."""

    release = threading.Event()

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        if command.path == "/memories/notes.md":
            self.release.wait(30)
        return super().view(command)


class Raising(BetaAbstractMemoryTool):
    """Raises a KeyError for every command: never a ToolError."""

    def _boom(self, command: Any) -> str:
        raise KeyError(command.command)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._boom(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._boom(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._boom(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._boom(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._boom(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._boom(command)

    def clear_all_memory(self) -> str:
        return "All memory cleared"


def _database() -> str:
    import tempfile

    return str(Path(tempfile.mkdtemp(prefix="kit-test-")) / "memory.db")


_HANGING_DB = _database()


def hanging_tool() -> Hanging:
    return Hanging(_HANGING_DB)


def not_a_tool() -> object:
    return object()


def raising_factory() -> SQLiteMemoryTool:
    raise RuntimeError("no database configured")


def raising_tool() -> Raising:
    return Raising()


__all__ = [
    "DECLARATIONS",
    "EXAMPLE",
    "AsyncSQLiteMemoryTool",
    "AsyncTwinDiffers",
    "ChangedString",
    "Hanging",
    "LostCreate",
    "OffByOne",
    "SQLiteMemoryTool",
    "TraversalLetThrough",
    "hanging_tool",
    "not_a_tool",
    "raising_factory",
    "raising_tool",
]
