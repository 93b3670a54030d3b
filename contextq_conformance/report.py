"""Per-rule results of a conformance run: held, did not hold, or not checked."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from contextq_conformance.rules import RULES, Rule

HELD = "held"
BROKEN = "did not hold"
UNCHECKED = "not checked"


@dataclass
class RuleResults:
    """Every test outcome, filed under the rules the test names."""

    target: str
    passed: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    #: Why the target could not be set up (then no rule was checked), else empty.
    unreachable: str = ""

    @property
    def seen(self) -> bool:
        return bool(self.passed or self.failed or self.skipped)

    def record(self, nodeid: str, rules: list[str], report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            bucket = (
                self.failed if report.failed else self.skipped if report.skipped else self.passed
            )
            for rule in rules:
                bucket.setdefault(rule, []).append(nodeid)

    def verdict(self, rule: str) -> str:
        if rule in self.failed:
            return BROKEN
        if rule in self.passed:
            return HELD
        return UNCHECKED

    def rows(self) -> list[tuple[Rule, str, int, list[str]]]:
        """(rule, verdict, tests that checked it, tests that failed), broken rules first."""
        order = {BROKEN: 0, HELD: 1, UNCHECKED: 2}
        rows = [
            (
                rule,
                self.verdict(rule.id),
                len(self.passed.get(rule.id, [])) + len(self.failed.get(rule.id, [])),
                self.failed.get(rule.id, []),
            )
            for rule in RULES.values()
        ]
        return sorted(rows, key=lambda row: order[row[1]])

    def counts(self) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for rule, verdict, _, _ in self.rows():
            by_source = counts.setdefault(rule.source, {HELD: 0, BROKEN: 0, UNCHECKED: 0})
            by_source[verdict] += 1
        return counts


def _tally(results: RuleResults) -> str:
    parts = []
    for source in ("assumed", "seed", "public"):
        c = results.counts().get(source, {})
        parts.append(
            f"{source}: {c.get(HELD, 0)} held, {c.get(BROKEN, 0)} did not hold, "
            f"{c.get(UNCHECKED, 0)} not checked"
        )
    return "; ".join(parts)


def terminal_lines(results: RuleResults) -> list[str]:
    lines = [_tally(results)]
    if results.unreachable:
        lines.append(f"nothing was checked: {results.unreachable}")
    for rule, verdict, _, failed in results.rows():
        if verdict == BROKEN:
            lines.append(f"DID NOT HOLD [{rule.source}] {rule.id}: {rule.text}")
            lines.extend(f"    failed: {nodeid}" for nodeid in failed)
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(results: RuleResults) -> str:
    """The fidelity report: one row per rule of the contract."""
    lines = [
        f"# ContextQ conformance: target `{results.target}`",
        "",
        _tally(results) + ".",
        "",
        *(
            [f"Nothing was checked: {_cell(results.unreachable)}", ""]
            if results.unreachable
            else []
        ),
        "| Rule | Source | Result | Tests | What the contract says |",
        "|---|---|---|---|---|",
    ]
    for rule, verdict, tests, _ in results.rows():
        shown = f"**{verdict}**" if verdict == BROKEN else verdict
        lines.append(f"| `{rule.id}` | {rule.source} | {shown} | {tests} | {_cell(rule.text)} |")
    broken = [(rule, failed) for rule, verdict, _, failed in results.rows() if verdict == BROKEN]
    if broken:
        lines += ["", "## Failed tests", ""]
        for rule, failed in broken:
            lines += [f"- `{rule.id}`: " + ", ".join(f"`{nodeid}`" for nodeid in failed)]
    return "\n".join(lines) + "\n"
