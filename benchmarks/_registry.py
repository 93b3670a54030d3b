"""The rows a section adds and their targets, and the registry of sections: what a section
sees of a run is a ``Bench``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from _measure import Stats


@dataclass(frozen=True, slots=True)
class Target:
    """A bound on a row's median: an absolute time, a multiple of its baseline, a time
    added to its baseline's median (``max_added_ms``: what a layer in front of the baseline
    costs), or several of these."""

    max_ms: float | None = None
    max_ratio: float | None = None
    max_added_ms: float | None = None

    def describe(self) -> str:
        parts = []
        if self.max_ms is not None:
            parts.append(f"< {self.max_ms:g} ms")
        if self.max_ratio is not None:
            parts.append(f"<= {self.max_ratio:g}x")
        if self.max_added_ms is not None:
            parts.append(f"<= base + {self.max_added_ms:g} ms")
        return ", ".join(parts)


@dataclass(slots=True)
class Row:
    section: str
    name: str
    stats: Stats
    baseline: str | None = None  # the name of the row this one is compared with
    target: Target | None = None
    note: str = ""
    ratio: float | None = None
    added_ms: float | None = None  # median minus the baseline's median
    result: str | None = None  # "PASS", "MISS", or None without a target


Section = Callable[["Bench"], None]
SECTIONS: list[tuple[str, Section]] = []


def section(title: str) -> Callable[[Section], Section]:
    """Register a benchmark section; it runs after those defined before it in its module."""

    def register(fn: Section) -> Section:
        SECTIONS.append((title, fn))
        return fn

    return register


def in_order(*modules: ModuleType) -> list[tuple[str, Section]]:
    """The registered sections module by module as listed (the order of the imports is the
    sorter's, not the report's), each module's in the order they are defined there."""
    names = [module.__name__ for module in modules]
    unlisted = [title for title, fn in SECTIONS if fn.__module__ not in names]
    if unlisted:
        raise ValueError(f"sections of a module not listed: {unlisted}")
    return sorted(SECTIONS, key=lambda entry: names.index(entry[1].__module__))


@dataclass(slots=True)
class Iterations:
    n: int
    warmup: int


@dataclass
class Bench:
    """What a section gets: the run's settings, and ``add`` to register its rows."""

    quick: bool
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    current_section: str = ""

    def iters(self, full: tuple[int, int], quick: tuple[int, int]) -> Iterations:
        """(n, warmup) for this run: ``full`` normally, ``quick`` under ``--quick``."""
        n, warmup = quick if self.quick else full
        return Iterations(n, warmup)

    def add(
        self,
        name: str,
        stats: Stats,
        *,
        baseline: str | None = None,
        target: Target | None = None,
        note: str = "",
    ) -> Row:
        if any(r.name == name for r in self.rows):
            raise ValueError(f"duplicate benchmark row {name!r}")
        row = Row(self.current_section, name, stats, baseline, target, note)
        if baseline is not None:
            base = self.row(baseline)
            row.ratio = stats.median_ms / base.stats.median_ms if base.stats.median_ms else None
            row.added_ms = stats.median_ms - base.stats.median_ms
        if target is not None:
            ok = True
            if target.max_ms is not None:
                ok = ok and stats.median_ms < target.max_ms
            if target.max_ratio is not None:
                ok = ok and row.ratio is not None and row.ratio <= target.max_ratio
            if target.max_added_ms is not None:
                ok = ok and row.added_ms is not None and row.added_ms <= target.max_added_ms
                added = "?" if row.added_ms is None else f"{row.added_ms:+.3f}"
                row.note = f"adds {added} ms" + (f"; {note}" if note else "")
            row.result = "PASS" if ok else "MISS"
        self.rows.append(row)
        return row

    def row(self, name: str) -> Row:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no benchmark row {name!r} (a baseline must be added before its rows)")

    def note(self, text: str) -> None:
        self.notes.append(f"[{self.current_section}] {text}")
