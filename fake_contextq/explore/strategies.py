"""How the next request is chosen: follow a schedule, enumerate every order by depth-first
search, or sample orders with PCT.

A strategy is asked at each step which of the parked agents goes next; the explorer
follows what the agents actually do (how many requests each makes may depend on what
they read), so no strategy needs to know the agents' requests in advance.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["Diverged", "Follow", "Pct", "default_choice", "next_prefix", "ordered", "orders_of"]


class Diverged(Exception):
    """Replaying a schedule met an agent that was not waiting to send: the agents do not
    do the same thing in the same order twice (they read the clock, a random number...)."""


def default_choice(enabled: Sequence[int], previous: int | None) -> int:
    """Without a reason to switch, the agent that sent last goes on (no preemption),
    else the lowest-numbered one."""
    return previous if previous is not None and previous in enabled else min(enabled)


def ordered(enabled: Sequence[int], previous: int | None) -> list[int]:
    """The choices at a step in the order depth-first search tries them: the default
    first, so the first order explored is the one with no preemption."""
    first = default_choice(enabled, previous)
    return [first, *sorted(a for a in enabled if a != first)]


class Follow:
    """Follow ``prefix``, then the default choice."""

    def __init__(self, prefix: Sequence[int] = ()) -> None:
        self.prefix = tuple(prefix)

    def __call__(self, step: int, enabled: Sequence[int], previous: int | None) -> int:
        if step < len(self.prefix):
            wanted = self.prefix[step]
            if wanted not in enabled:
                raise Diverged(
                    f"step {step + 1} of the schedule releases agent {wanted}, which is not "
                    f"waiting to send (waiting: {list(enabled)}): the agents are not "
                    "deterministic, or the schedule is of other agents"
                )
            return wanted
        return default_choice(enabled, previous)


def next_prefix(
    schedule: Sequence[int], enabled: Sequence[Sequence[int]]
) -> tuple[int, ...] | None:
    """The next order of a stateless depth-first search (Godefroid's VeriSoft, POPL 1997):
    the deepest step with an untried alternative, that alternative, then defaults. None:
    every order has been run."""
    for i in range(len(schedule) - 1, -1, -1):
        options = ordered(enabled[i], schedule[i - 1] if i else None)
        j = options.index(schedule[i])
        if j + 1 < len(options):
            return (*schedule[:i], options[j + 1])
    return None


def orders_of(requests: Sequence[int]) -> int:
    """How many orders keep each agent's own requests in order: the multinomial
    (n_1 + ... + n_k)! / (n_1! ... n_k!). Two agents of two requests each: 4!/(2!2!) = 6."""
    total = math.factorial(sum(requests))
    for n in requests:
        total //= math.factorial(n)
    return total


class Pct:
    """Probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi and Nagarakatte,
    ASPLOS 2010): random distinct priorities d..d+k-1 for the k agents, d-1 random change
    points among the n steps; the highest-priority waiting agent goes, and at the i-th
    change point the agent about to go drops to priority i. A bug of depth d is found
    by one run with probability at least 1/(k n^(d-1))."""

    def __init__(self, rng: random.Random, agents: int, steps: int, depth: int) -> None:
        ranks = rng.sample(range(agents), agents)
        self.priority = {a: depth + ranks[a] for a in range(agents)}
        points = rng.sample(range(1, max(steps, depth) + 1), depth - 1)
        self.changes = {point: i for i, point in enumerate(points, 1)}  # k_i: priority i

    def __call__(self, step: int, enabled: Sequence[int], previous: int | None) -> int:  # noqa: ARG002
        chosen = max(enabled, key=lambda a: self.priority.get(a, 0))
        lowered = self.changes.get(step + 1)
        if lowered is not None:
            self.priority[chosen] = lowered
            chosen = max(enabled, key=lambda a: self.priority.get(a, 0))
        return chosen
