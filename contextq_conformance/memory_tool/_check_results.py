"""``results.*`` and ``path-safety.ordinary-names``: the backend and the SDK run one script
side by side from empty storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from contextq_conformance.memory_tool._context import Context, Verdict
from contextq_conformance.memory_tool._oracle import Oracle
from contextq_conformance.memory_tool._scenarios import (
    SCRIPTS,
    Step,
    create,
    run_side_by_side,
    view,
)

#: Names a model may well write that only look unusual: stored as they are, not hostile.
ORDINARY_NAMES: Final = (
    "/memories/\uff52\uff45\uff50\uff4f\uff52\uff54.md",  # fullwidth letters
    "/memories/caf\u00e9/men\u00fc.md",
    "/memories/a\uff0eb.md",  # a fullwidth full stop inside a name
    "/memories/\u212aelvin.md",  # the Kelvin sign, not a 'K'
    "/memories/na\u00efve notes/\u00f1.md",
    "/memories/v1.2..3.md",  # dots inside a name are not a dot segment
)


def _ordinary_steps() -> list[Step]:
    steps: list[Step] = []
    for i, path in enumerate(ORDINARY_NAMES):
        steps += [create(path, f"ordinary {i}\n"), view(path)]
    return [*steps, view("/memories")]


def script_check(steps: list[Step]) -> Callable[[Context], Verdict]:
    def check(ctx: Context) -> Verdict:
        backend = ctx.fresh()
        with Oracle() as oracle:
            return Verdict(run_side_by_side(steps, backend, oracle, ctx.declarations))

    return check


CHECKS: Final = {
    **{rule_id: script_check(steps) for rule_id, steps in SCRIPTS.items()},
    "path-safety.ordinary-names": script_check(_ordinary_steps()),
}

__all__ = ["CHECKS", "ORDINARY_NAMES"]
