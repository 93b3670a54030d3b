"""``LocalAgentMemory``: run records as JSON files in a directory (the default backend),
and ``NoAgentMemory`` for memory switched off."""

# ruff: noqa: ARG002  (the port's methods take arguments a backend without them ignores)
from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from adapter.agent_memory import preamble
from adapter.agent_memory.port import (
    DEFAULT_MAX_CHARS,
    BestEffort,
    best_effort,
    check_preamble_args,
)
from adapter.agent_memory.records import (
    Capabilities,
    IssueEvent,
    RunRecord,
    check_run_id,
    latest,
    open_issues,
)
from adapter.types import AgentTask, BootPack, Lesson, Resume

_WORD = re.compile(r"\w+")


def _summary(record: RunRecord) -> str:
    parts = [f"run {record.run_id} ({record.status}): {record.task}"]
    for label, items in (("done", record.accomplished), ("next", record.next),
                         ("issues", record.issues)):  # fmt: skip
        if items:
            parts.append(f"{label}: {'; '.join(items)}")
    return " | ".join(parts)


class _NoCapabilities:
    """The optional methods of a backend without them: they do nothing."""

    # the optional capabilities: none here
    def boot(self, goal: str, *, token_budget: int | None = None) -> BootPack | None:
        return None

    def begin_run(self, record: RunRecord) -> int | None:
        return None

    def checkpoint(
        self,
        run_id: str,
        state: Mapping[str, Any],
        *,
        summary: str | None = None,
    ) -> int | None:
        check_run_id(run_id)
        return None

    def resume(self, run_id: str) -> Resume | None:
        check_run_id(run_id)
        return None

    def open_tasks(self, run_id: str) -> list[AgentTask]:
        check_run_id(run_id)
        return []

    def add_lesson(
        self,
        text: str,
        *,
        run_id: str | None = None,
        tags: Iterable[str] = (),
    ) -> Lesson | None:
        return None

    def handoff(self, run_id: str) -> str | None:
        check_run_id(run_id)
        return None


class LocalAgentMemory(_NoCapabilities, BestEffort):
    """One JSON file a run under ``directory`` (``<run_id>.json``), each written whole to a
    temporary file and renamed over the old one, so a crash never leaves half a record.
    It has none of the optional capabilities."""

    capabilities = Capabilities()

    def __init__(self, directory: str | os.PathLike[str], *, strict: bool = False) -> None:
        super().__init__(strict=strict)
        self.directory = Path(directory)

    def _path(self, run_id: str) -> Path:
        return self.directory / f"{check_run_id(run_id)}.json"

    @best_effort(lambda: None)
    def write_record(self, record: RunRecord) -> RunRecord | None:
        if not isinstance(record, RunRecord):
            raise ValueError(f"write_record takes a RunRecord, not {type(record).__name__}")
        record = record.with_text(preamble.strip)
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self._path(record.run_id)
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record.to_json(), out, ensure_ascii=False, indent=1)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return record

    @best_effort(list)
    def list_records(self) -> list[RunRecord]:
        if not self.directory.is_dir():
            return []
        found = []
        for path in self.directory.glob("*.json"):
            record = self._read(path)
            if record is not None:
                found.append(record)
        return sorted(found, key=lambda r: (r.started_at, r.run_id))

    def _read(self, path: Path) -> RunRecord | None:
        try:
            return RunRecord.from_json(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError) as exc:
            self._failed("read", exc)  # a damaged file is skipped, and said so
            return None

    @best_effort(lambda: None)
    def get_record(self, run_id: str) -> RunRecord | None:
        path = self._path(run_id)
        return self._read(path) if path.exists() else None

    def latest_record(self) -> RunRecord | None:
        return latest(self.list_records())

    def list_open_issues(self) -> list[IssueEvent]:
        return open_issues(self.list_records())

    def build_preamble(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        parent_run_id: str | None = None,
        chat_session_id: str | None = None,
    ) -> str:
        """The runs most related to ``query`` (shared words; the parent run and runs of the
        same chat first), and the open issues."""
        check_preamble_args(top_k, max_chars)
        records = self.list_records()
        words = set(_WORD.findall(query.lower()))

        def rank(r: RunRecord) -> tuple[int, int, object]:
            related = int(r.run_id == parent_run_id) + int(
                chat_session_id is not None and r.chat_session_id == chat_session_id
            )
            overlap = len(words & set(_WORD.findall(_summary(r).lower())))
            return (related, overlap, r.started_at)

        best = sorted(records, key=rank, reverse=True)[:top_k]
        issues = [i.text for i in open_issues(records)][:top_k]
        sections = [("Recent runs", [_summary(r) for r in best]), ("Open issues", issues)]
        return preamble.render("local", sections, max_chars)


class NoAgentMemory(_NoCapabilities, BestEffort):
    """Memory switched off (``CONTEXTQ_MEMORY=0``): stores nothing, remembers nothing."""

    capabilities = Capabilities()

    def write_record(self, record: RunRecord) -> RunRecord | None:
        if not isinstance(record, RunRecord):
            raise ValueError(f"write_record takes a RunRecord, not {type(record).__name__}")
        return None

    def list_records(self) -> list[RunRecord]:
        return []

    def get_record(self, run_id: str) -> RunRecord | None:
        check_run_id(run_id)
        return None

    def latest_record(self) -> RunRecord | None:
        return None

    def list_open_issues(self) -> list[IssueEvent]:
        return []

    def build_preamble(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        parent_run_id: str | None = None,
        chat_session_id: str | None = None,
    ) -> str:
        check_preamble_args(top_k, max_chars)
        return ""
