"""``SQLiteMemoryTool``: Claude's memory tool with every file a row of one SQLite table.

Directories are not stored: one exists while a file is below it. Each command is one
``BEGIN IMMEDIATE`` transaction, so instances on one database file never interleave.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
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

from sqlite_memory.paths import ROOT, key

MAX_FILE_BYTES = 1_000_000


def _size(n: int) -> str:
    """Sizes as the SDK prints them: 0B, 512B, 1.5K, 2M."""
    if n == 0:
        return "0B"
    unit = min((n.bit_length() - 1) // 10, 3)
    value = n / 1024**unit
    return f"{value:.0f}{'BKMG'[unit]}" if value == int(value) else f"{value:.1f}{'BKMG'[unit]}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, first))


class SQLiteMemoryTool(BetaAbstractMemoryTool):
    def __init__(self, database: str) -> None:
        super().__init__()
        self.db = sqlite3.connect(
            database, timeout=30, isolation_level=None, check_same_thread=False
        )
        self.db.execute("CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, content TEXT)")
        self.lock = threading.Lock()

    # ----- storage -----

    def _run(self, work: Callable[..., str], *args: Any) -> str:
        """One command, one transaction."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                result = work(*args)
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
            return result

    def _file(self, k: str) -> str | None:
        row = self.db.execute("SELECT content FROM files WHERE path = ?", (k,)).fetchone()
        return None if row is None else str(row[0])

    def _below(self, k: str) -> list[tuple[str, str]]:
        """(path relative to k, content) of every file below the directory k."""
        prefix = f"{k}/" if k else ""
        rows = self.db.execute(
            "SELECT path, content FROM files WHERE substr(path, 1, ?) = ? ORDER BY path",
            (len(prefix), prefix),
        )
        return [(str(p)[len(prefix) :], str(c)) for p, c in rows if p != k]

    def _exists(self, k: str) -> bool:
        return k == "" or self._file(k) is not None or bool(self._below(k))

    def _write(self, k: str, content: str, path: str) -> None:
        if len(content.encode()) > MAX_FILE_BYTES:
            raise ToolError(f"File {path} would be larger than {MAX_FILE_BYTES} bytes")
        self.db.execute("INSERT OR REPLACE INTO files VALUES (?, ?)", (k, content))

    # ----- commands -----

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self._view, command.path, command.view_range)

    def _view(self, path: str, view_range: list[int] | None) -> str:
        k = key(path)
        content = self._file(k) if k else None
        if content is not None:
            lines, first = content.split("\n"), 1
            if view_range and len(view_range) == 2:
                start = max(1, view_range[0]) - 1
                end = len(lines) if view_range[1] == -1 else view_range[1]
                lines, first = lines[start:end], start + 1
            return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, first)
        below = self._below(k)
        if k and not below:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        sizes: dict[str, int] = {}
        for rel, text in below:
            names = rel.split("/")
            for depth in range(1, min(len(names), 2) + 1):
                entry = "/".join(names[:depth]) + ("/" if depth < len(names) else "")
                sizes[entry] = sizes.get(entry, 0) + len(text.encode())
        total = sum(len(text.encode()) for _, text in below)
        lines = [f"{_size(total)}\t{path}"]
        lines += [f"{_size(sizes[e])}\t{path}/{e}" for e in sorted(sizes, key=_tree_order)]
        return (
            f"Here're the files and directories up to 2 levels deep in {path}, excluding "
            "hidden items:\n" + "\n".join(lines)
        )

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self._create, command.path, command.file_text)

    def _create(self, path: str, text: str) -> str:
        k = key(path)
        if self._exists(k):
            raise ToolError(f"File {path} already exists")
        self._check_parents(k, path)
        self._write(k, text, path)
        return f"File created successfully at: {path}"

    def _check_parents(self, k: str, path: str) -> None:
        """A file cannot hold other files: no parent of ``k`` may be a file."""
        parts = k.split("/")
        if any(self._file("/".join(parts[:i])) is not None for i in range(1, len(parts))):
            raise ToolError(f"Cannot write {path}: a file is in the way")

    def _existing_file(self, path: str) -> tuple[str, str]:
        k = key(path)
        content = self._file(k) if k else None
        if content is None:
            if self._exists(k):
                raise ToolError(f"The path {path} is not a file.")
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return k, content

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(self._str_replace, command.path, command.old_str, command.new_str)

    def _str_replace(self, path: str, old: str, new: str) -> str:
        k, content = self._existing_file(path)
        count = content.count(old)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            )
        if count > 1:
            starts, at = [], content.find(old)
            while at != -1:
                starts.append(content[:at].count("\n") + 1)
                at = content.find(old, at + 1)
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                f"lines: {', '.join(map(str, starts))}. Please ensure it is unique"
            )
        changed = content[: content.find(old)].count("\n")
        updated = content.replace(old, new)
        self._write(k, updated, path)
        lines = updated.split("\n")
        first = max(0, changed - 2)
        snippet = _numbered(lines[first : min(len(lines), changed + 3)], first + 1)
        return (
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n" + snippet
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(self._insert, command.path, command.insert_line, command.insert_text)

    def _insert(self, path: str, line: int, text: str) -> str:
        k, content = self._existing_file(path)
        lines = content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if line < 0 or line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {line}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(line, text.rstrip("\n"))
        self._write(k, "\n".join(lines) + "\n", path)
        return f"The file {path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self._delete, command.path)

    def _delete(self, path: str) -> str:
        k = key(path)
        if not k:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        if not self._exists(k):
            raise ToolError(f"The path {path} does not exist")
        self.db.execute("DELETE FROM files WHERE path = ?", (k,))
        self.db.execute("DELETE FROM files WHERE substr(path, 1, ?) = ?", (len(k) + 1, f"{k}/"))
        return f"Successfully deleted {path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self._rename, command.old_path, command.new_path)

    def _rename(self, old_path: str, new_path: str) -> str:
        old, new = key(old_path), key(new_path)
        if not old:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        if not new or self._exists(new):
            raise ToolError(f"The destination {new_path} already exists")
        if not self._exists(old):
            raise ToolError(f"The path {old_path} does not exist")
        if new.startswith(f"{old}/"):
            raise ToolError(f"Cannot move {old_path} into itself")
        self._check_parents(new, new_path)
        moved = [(old, c) for c in [self._file(old)] if c is not None]
        moved += [(f"{old}/{rel}", c) for rel, c in self._below(old)]
        for k, content in moved:
            self.db.execute("DELETE FROM files WHERE path = ?", (k,))
            self.db.execute("INSERT INTO files VALUES (?, ?)", (new + k[len(old) :], content))
        return f"Successfully renamed {old_path} to {new_path}"

    def clear_all_memory(self) -> str:
        return self._run(self._clear)

    def _clear(self) -> str:
        self.db.execute("DELETE FROM files")
        return "All memory cleared"

    def close(self) -> None:
        self.db.close()


def _tree_order(entry: str) -> list[str]:
    """Depth first, siblings by name, each directory before what is in it (as the SDK)."""
    return entry.rstrip("/").split("/")
