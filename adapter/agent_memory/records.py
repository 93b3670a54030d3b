"""What the agent memory stores of a run: ``RunRecord``, the optional ``Capabilities`` a
backend announces, and the open issues it reports."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

RUN_STATUSES: Final = ("running", "completed", "failed", "cancelled")
TERMINAL_STATUSES: Final = RUN_STATUSES[1:]
RUN_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")


@dataclass(frozen=True)
class RunRecord:
    """One agent run (one ContextQ ``agent_session``): what it was asked, how it ended, its
    four lineage links, and its outcome (``accomplished``, ``next``, ``issues``)."""

    run_id: str
    task: str
    status: str = "completed"
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    ended_at: datetime | None = None
    parent_run_id: str | None = None  # the run this one resumes (ContextQ's parent link)
    previous_run_id: str | None = None
    chat_session_id: str | None = None
    root_run_id: str | None = None
    accomplished: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    issues: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_run_id(self.run_id, "run_id")
        for name in ("parent_run_id", "previous_run_id", "chat_session_id", "root_run_id"):
            value = getattr(self, name)
            if value is not None:
                check_run_id(value, name)
        if self.status not in RUN_STATUSES:
            raise ValueError(
                f"status must be one of {', '.join(RUN_STATUSES)}, not {self.status!r}"
            )
        if not isinstance(self.task, str):
            raise ValueError("task must be a string")
        for name in ("accomplished", "next", "issues"):
            items = getattr(self, name)
            if isinstance(items, str) or not all(isinstance(i, str) for i in items):
                raise ValueError(f"{name} must be a sequence of strings")
            object.__setattr__(self, name, tuple(items))
        for name in ("started_at", "ended_at"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
                raise ValueError(f"{name} must be a timezone-aware datetime")

    @property
    def lineage(self) -> dict[str, str | None]:
        return {
            "parent_run_id": self.parent_run_id,
            "previous_run_id": self.previous_run_id,
            "chat_session_id": self.chat_session_id,
            "root_run_id": self.root_run_id,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "task": self.task,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "ended_at": None if self.ended_at is None else self.ended_at.isoformat(),
            **self.lineage,
            "accomplished": list(self.accomplished),
            "next": list(self.next),
            "issues": list(self.issues),
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        """The record ``to_json`` wrote; ``ValueError`` for anything else."""
        try:
            ended = data.get("ended_at")
            return cls(
                run_id=data["run_id"],
                task=data["task"],
                status=data["status"],
                started_at=datetime.fromisoformat(data["started_at"]),
                ended_at=None if ended is None else datetime.fromisoformat(ended),
                parent_run_id=data.get("parent_run_id"),
                previous_run_id=data.get("previous_run_id"),
                chat_session_id=data.get("chat_session_id"),
                root_run_id=data.get("root_run_id"),
                accomplished=tuple(data.get("accomplished", ())),
                next=tuple(data.get("next", ())),
                issues=tuple(data.get("issues", ())),
                metadata=dict(data.get("metadata") or {}),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a run record: {exc!r}") from None

    def with_text(self, clean: Any) -> RunRecord:
        """The record with ``clean`` applied to its task and outcome texts."""
        return replace(
            self,
            task=clean(self.task),
            accomplished=tuple(clean(t) for t in self.accomplished),
            next=tuple(clean(t) for t in self.next),
            issues=tuple(clean(t) for t in self.issues),
        )


def check_run_id(value: object, name: str = "run_id") -> str:
    if not isinstance(value, str) or not RUN_ID_RE.fullmatch(value):
        raise ValueError(
            f"{name} must be 1-200 letters, digits, '.', '_', ':' or '-' (starting with a "
            f"letter or digit), not {value!r}"
        )
    return value


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the required methods; callers feature-detect."""

    boot: bool = False
    checkpoint: bool = False
    tasks: bool = False
    lessons: bool = False
    handoff: bool = False


@dataclass(frozen=True)
class IssueEvent:
    """An issue a run reported that no later run reported done."""

    run_id: str
    text: str
    at: datetime


def open_issues(records: Sequence[RunRecord]) -> list[IssueEvent]:
    """Issues of the records (oldest first) not listed as accomplished by a later run."""
    ordered = sorted(records, key=lambda r: r.started_at)
    found: dict[str, IssueEvent] = {}
    for record in ordered:
        for done in record.accomplished:
            found.pop(done, None)
        for issue in record.issues:
            found[issue] = IssueEvent(record.run_id, issue, record.ended_at or record.started_at)
    return list(found.values())


def latest(records: Iterable[RunRecord]) -> RunRecord | None:
    return max(records, key=lambda r: (r.started_at, r.run_id), default=None)
