"""A kit run's results: one per rule (pass, fail, declared, not run), as text lines and as
the JSON document ``--json`` writes (its layout: docs/reference/memory-tool-kit-report.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from contextq_conformance.memory_tool.rules import RULES

PASS: Final = "pass"
FAIL: Final = "fail"
DECLARED: Final = "declared"
NOT_RUN: Final = "not run"
STATUSES: Final = (PASS, FAIL, DECLARED, NOT_RUN)
#: The version of the JSON layout; it grows by adding keys, and changes only with it.
LAYOUT_VERSION: Final = 1


@dataclass
class RuleResult:
    rule_id: str
    status: str
    #: why it failed, step by step (with the SDK-vs-backend diff where there is one)
    problems: list[str] = field(default_factory=list)
    #: the commands the rule sent, numbered, for a failure
    commands: list[str] = field(default_factory=list)
    #: the declared difference's reason, or why the rule did not run
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        rule = RULES[self.rule_id]
        head = f"{self.status.upper():<9}{self.rule_id}: {rule.text}"
        return head + (f" [{self.reason}]" if self.reason else "")

    def details(self) -> list[str]:
        """What a reader needs under the line: for a failure, what differed and the
        commands that led there; for any rule, its notes."""
        out = [f"    note: {note}" for note in self.notes]
        if self.status in (FAIL, DECLARED) and self.problems:
            out += ["    " + p for p in self.problems]
            if self.commands:
                out += ["    commands, from empty storage:", *("    " + c for c in self.commands)]
        return out

    def text(self) -> str:
        return "\n".join([self.line(), *self.details()])

    def as_json(self) -> dict[str, Any]:
        rule = RULES[self.rule_id]
        return {
            "id": self.rule_id,
            "group": rule.group,
            "statement": rule.text,
            "status": self.status,
            "reason": self.reason,
            "problems": self.problems,
            "commands": self.commands,
            "notes": self.notes,
            "figures": self.figures,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class Report:
    results: list[RuleResult]
    backend: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_status(self) -> int:
        """0 when every rule passed, was declared or could not run; 1 on a failure."""
        return 1 if any(r.status == FAIL for r in self.results) else 0

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}

    def summary(self) -> str:
        return ", ".join(f"{n} {s}" for s, n in self.counts().items()) + (
            f" (seed {self.backend.get('seed')})" if "seed" in self.backend else ""
        )

    def text(self) -> str:
        return "\n".join([*(r.text() for r in self.results), self.summary()]) + "\n"

    def as_json(self) -> dict[str, Any]:
        return {
            "layout": LAYOUT_VERSION,
            "backend": self.backend,
            "summary": self.counts(),
            "exit_status": self.exit_status,
            "rules": [r.as_json() for r in self.results],
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )


__all__ = [
    "DECLARED",
    "FAIL",
    "LAYOUT_VERSION",
    "NOT_RUN",
    "PASS",
    "STATUSES",
    "Report",
    "RuleResult",
]
