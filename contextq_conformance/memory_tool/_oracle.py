"""The oracle: the installed SDK's own ``BetaLocalFilesystemMemoryTool`` on a temporary
directory. Every expected result the kit compares with comes from it, none from the kit."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import (
    BetaLocalFilesystemMemoryTool,
    _format_file_size,
)

from contextq_conformance.memory_tool._calls import Command, Outcome, _crash, _result_text
from contextq_conformance.memory_tool._views import ROOT, listing


class Oracle:
    """A fresh, empty SDK tool; ``close()`` removes its directory."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="memory-tool-oracle-")
        self.tool = BetaLocalFilesystemMemoryTool(base_path=self._dir.name)
        self.root = Path(self._dir.name) / "memories"

    def call(self, command: Command) -> Outcome:
        try:
            return Outcome("ok", _result_text(self.tool.call(command)))
        except ToolError as exc:
            return Outcome("error", str(exc))
        except Exception as exc:
            return _crash(exc)

    def byte_sums(self, text: str) -> str:
        """A listing of this oracle with each directory's size the byte sum of every file
        below it, as a backend declaring ``directory_sizes = "byte-sums"`` prints it."""
        entries = listing(text)
        if entries is None:
            return text
        lines = [text.partition("\n")[0]]
        for i, (size, path) in enumerate(entries):
            if i == 0 or path.endswith("/"):
                rel = path.rstrip("/")[len(ROOT) :].strip("/")
                size = _format_file_size(_bytes_below(self.root / rel if rel else self.root))
            lines.append(f"{size}\t{path}")
        return "\n".join(lines)

    def close(self) -> None:
        self._dir.cleanup()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _bytes_below(directory: Path) -> int:
    total = 0
    for dirpath, _dirs, names in os.walk(directory):
        total += sum((Path(dirpath) / name).stat().st_size for name in names)
    return total


__all__ = ["Oracle"]
