"""The memory-tool kit's rules: a stable id each, its group, and the one line it holds a
backend to. The ids are what a declarations file names and what a report is keyed by."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class MemoryRule:
    """One rule: ``id`` never changes once published; ``text`` is the docs' one line."""

    id: str
    group: str
    text: str


_RULES = (
    MemoryRule(
        "results.view-file",
        "results",
        "viewing a file, whole and by view_range (from the top, to -1, past the end, "
        "reversed), gives the SDK's text",
    ),
    MemoryRule(
        "results.view-directory",
        "results",
        "a directory view (nested, two levels deep, hidden names left out) lists what the "
        "SDK lists; directory sizes are compared only where declared true byte sums",
    ),
    MemoryRule(
        "results.missing",
        "results",
        "view, str_replace, insert, delete and rename of a path that does not exist give "
        "the SDK's errors",
    ),
    MemoryRule(
        "results.create",
        "results",
        "create makes a file (and its directories) with the SDK's answer, and refuses an "
        "existing file with the SDK's error",
    ),
    MemoryRule(
        "results.str-replace",
        "results",
        "str_replace with one match edits with the SDK's snippet; zero or several matches "
        "are the SDK's errors and change nothing",
    ),
    MemoryRule(
        "results.insert",
        "results",
        "insert at the top, inside and at the end gives the SDK's answer and text; a line "
        "out of range is the SDK's error",
    ),
    MemoryRule(
        "results.delete",
        "results",
        "delete of a file and of a directory gives the SDK's answer; deleting /memories "
        "itself is the SDK's error",
    ),
    MemoryRule(
        "results.rename",
        "results",
        "rename of a file and of a directory gives the SDK's answer; onto an existing path, "
        "from a missing one, or of /memories itself, the SDK's error",
    ),
    MemoryRule(
        "path-safety.hostile",
        "path-safety",
        "every hostile path form (dot segments and their look-alikes, percent-encoding, "
        "backslashes and slash look-alikes, control and format characters, /memoriesX, "
        "overlong names and paths, hidden names) is refused as a ToolError by every "
        "command, and storage is unchanged, seen by the instance and by a second one",
    ),
    MemoryRule(
        "path-safety.ordinary-names",
        "path-safety",
        "names with look-alike letters inside them (fullwidth letters, a fullwidth dot "
        "mid-name, accents) are ordinary names: stored and read back",
    ),
    MemoryRule(
        "limits.file-size",
        "limits",
        "a file of the declared largest size is stored and one byte more is refused; with "
        "no declaration, a 1 MiB file is stored and read back whole",
    ),
    MemoryRule(
        "limits.long-view",
        "limits",
        "a long view is the SDK's whole, or cut with a view_range hint: following the hints "
        "from the top shows every line exactly once, cut at the declared length",
    ),
    MemoryRule(
        "parity.sync-async",
        "parity",
        "the sync and the async tool give the same result for every command of a script",
    ),
    MemoryRule(
        "persistence.shared",
        "persistence",
        "what one instance writes a second instance on the same storage reads, and the "
        "other way round",
    ),
    MemoryRule(
        "persistence.reopen",
        "persistence",
        "a new instance, made after the first is closed, reads what the first wrote",
    ),
    MemoryRule(
        "concurrency.consistent",
        "concurrency",
        "instances running random commands in threads never leave a file at two paths "
        "or a file and a directory at one path",
    ),
    MemoryRule(
        "concurrency.one-create-wins",
        "concurrency",
        "of concurrent creates of one path by several instances, exactly one succeeds "
        "(at most one, where declared that all may back off)",
    ),
    MemoryRule(
        "concurrency.lost-updates",
        "concurrency",
        "concurrent str_replace edits of one file by several instances lose no update "
        "(the lost ones are counted)",
    ),
)

#: Every rule by id, in the order the report lists them.
RULES: Final[dict[str, MemoryRule]] = {rule.id: rule for rule in _RULES}
GROUPS: Final = tuple(dict.fromkeys(rule.group for rule in _RULES))

__all__ = ["GROUPS", "RULES", "MemoryRule"]
