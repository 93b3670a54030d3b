"""What a run prints and writes: the machine it ran on, the table of rows, the JSON."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import httpx2
from _registry import Bench, Row


def fmt_ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def table(rows: Sequence[Row]) -> str:
    header = (
        "benchmark",
        "n",
        "median ms",
        "p90 ms",
        "baseline",
        "x base",
        "target",
        "result",
        "note",
    )
    lines: list[tuple[str, ...] | str] = []
    current = None
    for r in rows:
        if r.section != current:
            current = r.section
            lines.append(f"== {current}")
        lines.append(
            (
                r.name,
                str(r.stats.n),
                fmt_ms(r.stats.median_ms),
                fmt_ms(r.stats.p90_ms),
                r.baseline or "-",
                "-" if r.ratio is None else f"{r.ratio:.2f}x",
                r.target.describe() if r.target else "",
                r.result or "",
                r.note,
            )
        )
    cells = [line for line in lines if isinstance(line, tuple)]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    right = {1, 2, 3, 5}

    def render(values: Sequence[str]) -> str:
        out = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    out = [render(header), render(["-" * w for w in widths])]
    out += [line if isinstance(line, str) else render(line) for line in lines]
    return "\n".join(out)


def environment(quick: bool) -> dict[str, Any]:
    import fastapi

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": _cpu_count(),
        "httpx2": getattr(httpx2, "__version__", "?"),
        "fastapi": getattr(fastapi, "__version__", "?"),
        "mode": "quick" if quick else "full",
    }


def _cpu_count() -> int | None:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def as_json(bench: Bench, env: dict[str, Any], elapsed: float) -> dict[str, Any]:
    """The run as ``--json`` writes it."""
    judged = [r for r in bench.rows if r.result is not None]
    missed = [r for r in judged if r.result == "MISS"]
    return {
        "environment": env,
        "elapsed_s": round(elapsed, 3),
        "rows": [
            {
                "section": r.section,
                "name": r.name,
                **{k: round(v, 4) for k, v in asdict(r.stats).items()},
                "baseline": r.baseline,
                "ratio": None if r.ratio is None else round(r.ratio, 3),
                "added_ms": None if r.added_ms is None else round(r.added_ms, 4),
                "target": None if r.target is None else asdict(r.target),
                "result": r.result,
                "note": r.note,
            }
            for r in bench.rows
        ],
        "notes": bench.notes,
        "passed": len(judged) - len(missed),
        "missed": [r.name for r in missed],
    }
