"""What an explored order leaves: its steps, the invariants it broke, and its timeline."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Exploration", "Failure", "Run", "Step", "Violation", "preemptions"]


@dataclass(frozen=True, slots=True)
class Step:
    """One released request: who sent it, for which command, and what the fake answered
    (``status`` None: no answer, the connection dropped or the agent was stopped)."""

    agent: int
    command: str
    method: str
    path: str
    status: int | None
    request_body: bytes = b""
    response_body: bytes = b""

    def answer_json(self) -> Any:
        """The answer's JSON, or None."""
        try:
            return json.loads(self.response_body) if self.response_body else None
        except ValueError:
            return None

    def request_json(self) -> Any:
        try:
            return json.loads(self.request_body) if self.request_body else None
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant an order broke, and how."""

    invariant: str
    message: str


@dataclass(slots=True)
class Run:
    """One explored order: the schedule (the agent released at each step), its steps,
    what each agent returned or raised, and the state the invariants saw."""

    schedule: tuple[int, ...]
    steps: list[Step]
    results: list[Any]
    errors: list[BaseException | None]
    names: Sequence[str]
    violations: list[Violation] = field(default_factory=list)
    state: Any = None
    stuck: tuple[int, ...] = ()  # agents that neither sent a request nor ended in time
    enabled: list[tuple[int, ...]] = field(default_factory=list)  # who waited, each step

    @property
    def failed(self) -> bool:
        return bool(self.violations)

    @property
    def preemptions(self) -> int:
        return preemptions(self.schedule, self.steps_left())

    def steps_left(self) -> list[set[int]]:
        """After each step, which agents still had a request to send (for counting
        preemptions: a switch away from an agent that could have gone on)."""
        last = {}
        for i, step in enumerate(self.steps):
            last[step.agent] = i
        return [{a for a, end in last.items() if end > i} for i in range(len(self.steps))]

    def timeline(self) -> str:
        """The order as a table: step, agent, command, request, answer."""
        rows = [("#", "agent", "command", "request", "answer")]
        for i, s in enumerate(self.steps, 1):
            status = "-" if s.status is None else str(s.status)
            rows.append((str(i), self.names[s.agent], s.command, f"{s.method} {s.path}", status))
        widths = [max(len(r[c]) for r in rows) for c in range(4)]
        return "\n".join(
            "  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r[:4])) + "  " + r[4]
            for r in rows
        )

    def describe(self) -> str:
        """The failure in words: the schedule and its replay, the timeline, each broken
        invariant, and the state that broke it."""
        lines = [
            f"schedule {list(self.schedule)} ({self.preemptions} preemption(s)); "
            f"replay: explorer.replay({list(self.schedule)})",
            self.timeline(),
        ]
        lines += [f"broken: {v.invariant}: {v.message}" for v in self.violations]
        if self.state is not None:
            lines.append("state: " + json.dumps(self.state, indent=1, ensure_ascii=False))
        return "\n".join(lines)


def preemptions(schedule: Sequence[int], still_running: Sequence[set[int]]) -> int:
    """Context switches away from an agent that had more to send (Musuvathi and Qadeer's
    measure, PLDI 2007): the fewer, the easier an order is to follow."""
    count = 0
    for i in range(1, len(schedule)):
        before = schedule[i - 1]
        if schedule[i] != before and before in still_running[i - 1]:
            count += 1
    return count


@dataclass(frozen=True, slots=True)
class Failure:
    """A failing order, kept with the invariants it broke."""

    run: Run

    @property
    def schedule(self) -> tuple[int, ...]:
        return self.run.schedule

    def __str__(self) -> str:
        return self.run.describe()


@dataclass(slots=True)
class Exploration:
    """The outcome of an exploration: how orders were chosen, how many were run (distinct
    schedules), which failed and by which invariant, and the simplest failure."""

    strategy: str
    why: str
    seed: int | None
    runs: int = 0
    schedules: set[tuple[int, ...]] = field(default_factory=set)
    failures: list[Failure] = field(default_factory=list)
    complete: bool = False  # every order was run (exhaustive search not cut by the bound)

    @property
    def orders(self) -> int:
        """Distinct orders run."""
        return len(self.schedules)

    @property
    def failing(self) -> int:
        """Distinct orders that broke an invariant."""
        return len({f.schedule for f in self.failures})

    def broken(self, invariant: str) -> int:
        """Distinct orders that broke ``invariant``."""
        return len(
            {
                f.schedule
                for f in self.failures
                if any(v.invariant == invariant for v in f.run.violations)
            }
        )

    @property
    def minimal(self) -> Failure | None:
        """The failure with the fewest preemptions, then the fewest steps."""
        if not self.failures:
            return None
        return min(self.failures, key=lambda f: (f.run.preemptions, len(f.schedule), f.schedule))

    def summary(self) -> str:
        seed = f", seed {self.seed}" if self.seed is not None else ""
        done = "all orders" if self.complete else "a bounded sample of orders"
        return (
            f"{self.strategy} ({self.why}{seed}): {self.orders} distinct order(s) of "
            f"{self.runs} run(s), {done}; {self.failing} failing"
        )

    def check(self) -> None:
        """Raise ``AssertionError`` showing the minimal failing order, if any failed."""
        simplest = self.minimal
        if simplest is not None:
            raise AssertionError(self.summary() + "\n" + str(simplest))

    def __str__(self) -> str:
        simplest = self.minimal
        return self.summary() + ("" if simplest is None else "\n" + str(simplest))
