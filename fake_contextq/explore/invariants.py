"""The invariants an explored order is checked against, and how a user adds one.

An invariant is a name and a check over the ``Outcome`` of one order: the fake's state
afterwards and the steps that led there. A check returns the ways it was broken (an
empty list: it holds). ``invariant(fn)`` makes one of any callable that raises
``AssertionError``, returns False, or returns a message, when broken.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_contextq.domain.errors import AuditChainError
from fake_contextq.explore.records import Run, Step

if TYPE_CHECKING:
    from fake_contextq.fake import FakeContextQ

__all__ = [
    "AUDIT_CHAIN",
    "BUILT_IN",
    "LOST_UPDATE",
    "NO_DUPLICATE_EXTERNAL_ID",
    "NO_FILE_AND_DIRECTORY",
    "NO_FILE_AT_TWO_PATHS",
    "Invariant",
    "Outcome",
    "invariant",
    "lost_writes",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One order's end: the fake (its state as the order left it), the tenant the agents
    worked in, the order itself (``run.steps``, ``run.results``), the memory tool's tag."""

    fake: FakeContextQ
    tenant_id: int
    run: Run
    tag: str = "mem-tool"

    def memory_files(self) -> dict[str, str]:
        """Every memory file of the tenant, ``/memories/<workspace>/<path>``: content."""
        return self.fake.memory_files(self.tenant_id, tag=self.tag)


@dataclass(frozen=True, slots=True)
class Invariant:
    name: str
    check: Callable[[Outcome], list[str]] = field(repr=False)


def invariant(fn: Invariant | Callable[[Outcome], Any], name: str | None = None) -> Invariant:
    """An invariant of a callable over the ``Outcome``: broken when it raises
    ``AssertionError``, returns False, or returns a non-empty message."""
    if isinstance(fn, Invariant):
        return fn

    def check(outcome: Outcome) -> list[str]:
        try:
            said = fn(outcome)
        except AssertionError as exc:
            return [str(exc) or "assertion failed"]
        if said is False:
            return ["returned False"]
        if isinstance(said, str) and said:
            return [said]
        return []

    return Invariant(name or str(getattr(fn, "__name__", "invariant")), check)


# ----- lost update, from the requests -----

_CONTEXT_PATH = re.compile(r"^/api/contexts/(\d+)(?:\?.*)?$")
_CREATE_PATH = re.compile(r"^/api/contexts(?:\?.*)?$")
_READ_PATH = re.compile(r"^/api/contexts(?:/by-external/[^?]+|/\d+)?(?:\?.*)?$")


@dataclass(slots=True)
class _Write:
    step: int  # 1-based, as the timeline numbers steps
    agent: int


@dataclass(slots=True)
class _Ledger:
    """Per context: its acknowledged writes in order; per agent: how many of them the
    agent had seen when it last read the context's content (or wrote it itself), and when
    it last saw its row at all (a listing too)."""

    writes: dict[int, list[_Write]] = field(default_factory=dict)
    seen: dict[tuple[int, int], int] = field(default_factory=dict)
    listed: dict[tuple[int, int], int] = field(default_factory=dict)
    read_content: dict[tuple[int, int], str] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)  # copy id -> the context it copies


def _ok(step: Step) -> bool:
    return step.status is not None and 200 <= step.status < 300


def _ledger(steps: Sequence[Step], names: Sequence[str] | None = None) -> tuple[_Ledger, list[str]]:
    ledger, lost = _Ledger(), []

    def who(agent: int) -> str:
        return f"agent {agent}" if names is None else names[agent]

    for number, step in enumerate(steps, 1):
        if not _ok(step):
            continue
        if step.method == "GET" and _READ_PATH.match(step.path):
            answer = step.answer_json()
            rows = answer.get("items") if isinstance(answer, dict) else None
            for row in rows if isinstance(rows, list) else [answer]:
                if not isinstance(row, dict) or not isinstance(row.get("id"), int):
                    continue
                cid = row["id"]
                known = len(ledger.writes.get(cid, []))
                ledger.listed[step.agent, cid] = known
                if isinstance(row.get("content"), str):
                    ledger.seen[step.agent, cid] = known
                    ledger.read_content[step.agent, cid] = row["content"]
        elif step.method == "POST" and _CREATE_PATH.match(step.path):
            answer = step.answer_json()
            if isinstance(answer, dict) and isinstance(answer.get("id"), int):
                cid = answer["id"]
                ledger.writes[cid] = [_Write(number, step.agent)]
                ledger.seen[step.agent, cid] = ledger.listed[step.agent, cid] = 1
                asked = step.request_json()
                text = asked.get("content") if isinstance(asked, dict) else None
                for (agent, source), content in ledger.read_content.items():
                    if agent == step.agent and source != cid and content == text:
                        ledger.copies[cid] = source
        elif step.method in ("PUT", "DELETE") and (found := _CONTEXT_PATH.match(step.path)):
            cid = int(found.group(1))
            history = ledger.writes.setdefault(cid, [])
            base = ledger.seen.get((step.agent, cid), 0)
            if step.method == "DELETE":  # removing a file needs no more than seeing it
                base = max(base, ledger.listed.get((step.agent, cid), 0))
            verb = "deleted" if step.method == "DELETE" else "overwrote"
            for write in history[base:]:
                if write.agent != step.agent:
                    lost.append(
                        f"step {number} ({step.method} by {who(step.agent)}) {verb} context "
                        f"{cid} as written at step {write.step} by {who(write.agent)}, a "
                        f"write it had not read: that acknowledged write is lost"
                    )
            history.append(_Write(number, step.agent))
            ledger.seen[step.agent, cid] = ledger.listed[step.agent, cid] = len(history)
    return ledger, lost


def lost_writes(steps: Sequence[Step], names: Sequence[str] | None = None) -> list[str]:
    """Every acknowledged write lost in these steps, in words (see ``LOST_UPDATE``)."""
    return _ledger(steps, names)[1]


def _lost_update(outcome: Outcome) -> list[str]:
    return lost_writes(outcome.run.steps, outcome.run.names)


LOST_UPDATE = Invariant("lost update", _lost_update)
"""No acknowledged write is lost. A write is a ``PUT`` or ``DELETE`` of a context answered
2xx (a create counts as its first write). It is *lost* when another agent's later
acknowledged ``PUT`` of the same context was sent by an agent whose last read of its
content (a ``GET`` answered with it, or its own write) came before it, or a ``DELETE`` by
an agent that had not seen it since (not even in a listing): that agent replaced or removed
content it never saw. A write replaced by an agent that had seen it is not lost: that agent
could know what it replaced."""


def _two_paths(outcome: Outcome) -> list[str]:
    ledger, _ = _ledger(outcome.run.steps)
    alive = {c.id: c for c in outcome.fake.contexts(outcome.tenant_id)}
    return [
        f"context {copy} ({alive[copy].external_id}) is a copy of context {source} "
        f"({alive[source].external_id}), and both remain: one file at two paths"
        for copy, source in ledger.copies.items()
        if copy in alive and source in alive
    ]


NO_FILE_AT_TWO_PATHS = Invariant("no file at two paths", _two_paths)
"""No context created as a copy of one its agent had read (a rename's copy: the same
content) outlives the order beside its source."""


def _file_and_directory(outcome: Outcome) -> list[str]:
    files = outcome.memory_files()
    return [
        f"{path} is a file and a directory (it holds {inner})"
        for path in files
        for inner in files
        if inner.startswith(path + "/")
    ]


NO_FILE_AND_DIRECTORY = Invariant("no file and directory at one path", _file_and_directory)


def _duplicate_ids(outcome: Outcome) -> list[str]:
    counts = Counter(c.external_id for c in outcome.fake.contexts(outcome.tenant_id))
    return [
        f"external id {ext!r} is held by {n} contexts" for ext, n in counts.items() if ext and n > 1
    ]


NO_DUPLICATE_EXTERNAL_ID = Invariant("no duplicate external id", _duplicate_ids)


def _audit(outcome: Outcome) -> list[str]:
    try:
        outcome.fake.verify_audit_chain()
    except AuditChainError as exc:
        return [str(exc)]
    return []


AUDIT_CHAIN = Invariant("audit chain verifies", _audit)

BUILT_IN: tuple[Invariant, ...] = (
    LOST_UPDATE,
    NO_FILE_AT_TWO_PATHS,
    NO_FILE_AND_DIRECTORY,
    NO_DUPLICATE_EXTERNAL_ID,
    AUDIT_CHAIN,
)
