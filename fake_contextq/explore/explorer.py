"""``Explorer``: runs k agents against the in-process fake in chosen orders of their
requests, from the same starting state each time, and checks invariants after each.

Every order starts from a snapshot of the fake taken when the explorer is made (the
in-memory store only). Orders are enumerated exhaustively while their number, counted
from the first run's requests per agent, is within ``bound``; beyond it (or when the
enumeration outgrows the bound, as data-dependent agents may) ``runs`` orders are
sampled by PCT from ``seed``. After ``explore`` the fake is as it was when the explorer
was made; after ``replay`` it is as that order left it, to look at.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from fake_contextq.explore._scheduler import Scheduler, start_agent
from fake_contextq.explore.agents import AgentHandle
from fake_contextq.explore.invariants import BUILT_IN, Invariant, Outcome, invariant
from fake_contextq.explore.records import Exploration, Failure, Run, Violation
from fake_contextq.explore.strategies import Follow, Pct, next_prefix, orders_of

if TYPE_CHECKING:
    from fake_contextq.domain.records import Tenant
    from fake_contextq.fake import FakeContextQ

__all__ = ["DEFAULT_BOUND", "Agent", "Explorer", "explore"]

#: An agent: a callable given its ``AgentHandle``, sync or async.
Agent = Callable[[AgentHandle], Any] | Callable[[AgentHandle], Awaitable[Any]]

DEFAULT_BOUND = 1000  # orders run exhaustively; 2 agents x 4 requests each are 70
DEFAULT_RUNS = 200  # orders sampled beyond the bound
DEFAULT_DEPTH = 3  # PCT's bug depth: finds orderings that need 2 preemptions
DEFAULT_TIMEOUT = 5.0  # seconds an agent may run between two requests
MAX_STEPS = 10_000  # requests in one order before it is called a livelock
PROGRESS_EVERY = 5.0  # seconds between progress lines on a long exploration


def _call(agent: Agent, handle: AgentHandle) -> Any:
    if inspect.iscoroutinefunction(agent):
        return asyncio.run(agent(handle))
    result = agent(handle)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


def _said(exc: BaseException) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3)
    return "".join(frames).rstrip()


class Explorer:
    """The agents, the invariants and the bounds of one exploration, over one fake."""

    def __init__(
        self,
        fake: FakeContextQ,
        agents: Sequence[Agent],
        *,
        tenant: Tenant | int | None = None,
        api_key: str | None = None,
        workspace: str | None = None,
        invariants: Iterable[Invariant | Callable[[Outcome], Any]] = BUILT_IN,
        check: Callable[[Outcome], Any] | None = None,
        names: Sequence[str] | None = None,
        bound: int = DEFAULT_BOUND,
        runs: int = DEFAULT_RUNS,
        depth: int = DEFAULT_DEPTH,
        seed: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        tag: str = "mem-tool",
        progress: Callable[[str], None] | None = None,
    ) -> None:
        """``agents``: callables given an ``AgentHandle``, whose clients reach ``fake``
        through the explorer. ``tenant`` (default: the fake's only tenant) is where the
        invariants look; ``api_key`` is the agents' key (default: one minted now);
        ``invariants`` default to the built-in ones, ``check`` adds one. ``bound``: the
        most orders run exhaustively; ``runs``, ``depth`` and ``seed``: PCT's sample
        beyond it. ``timeout``: how long an agent may run between requests before the
        order is reported as stuck (a deadlock, or an agent waiting on another)."""
        store = fake.store
        snapshot = getattr(store, "snapshot", None)
        if snapshot is None:
            raise TypeError(
                f"the explorer restores the fake's state before every order, which its "
                f"{type(store).__name__} cannot do: use the in-memory store"
            )
        if not agents:
            raise ValueError("give the explorer at least one agent")
        if bound < 1 or runs < 1 or depth < 1:
            raise ValueError("bound, runs and depth must be at least 1")
        self.fake = fake
        self.agents = list(agents)
        if tenant is None:
            tenants = fake.tenants()
            if len(tenants) != 1:
                raise ValueError(f"the fake has {len(tenants)} tenants: give tenant=")
            tenant = tenants[0]
        self.tenant_id = tenant if isinstance(tenant, int) else tenant.id
        self.api_key = api_key if api_key is not None else fake.mint_key(self.tenant_id)
        self.workspace = workspace
        self.invariants = [invariant(i) for i in invariants]
        if check is not None:
            self.invariants.append(invariant(check))
        self.names = list(names) if names is not None else [f"a{i}" for i in range(len(agents))]
        if len(self.names) != len(self.agents):
            raise ValueError("give one name per agent")
        self.bound, self.runs, self.depth = bound, runs, depth
        self.seed = seed
        self.timeout = timeout
        self.tag = tag
        self.progress = progress if progress is not None else _stderr
        self._snapshot = snapshot()

    # ----- one order -----

    def replay(self, schedule: Sequence[int]) -> Run:
        """Run exactly this order again (then the default choice, if it is a prefix); the
        fake is left in the state it ends in."""
        return self._run(Follow(schedule))

    def _restore(self) -> None:
        restore = getattr(self.fake.store, "restore")  # noqa: B009  # checked in __init__
        restore(self._snapshot)
        self.fake.backend._vectors.clear()  # ids come back with other texts

    def _run(self, choose: Callable[[int, Sequence[int], int | None], int]) -> Run:
        self._restore()
        k = len(self.agents)
        scheduler = Scheduler(k)
        handles = [
            AgentHandle(
                scheduler,
                i,
                self.names[i],
                self.fake.service,
                self.fake.base_url,
                self.api_key,
                self.workspace,
            )
            for i in range(k)
        ]
        results: list[Any] = [None] * k
        errors: list[BaseException | None] = [None] * k
        threads = [
            start_agent(scheduler, i, partial(_call, self.agents[i], handles[i]), results, errors)
            for i in range(k)
        ]
        schedule: list[int] = []
        enabled_log: list[tuple[int, ...]] = []
        stuck: tuple[int, ...] = ()
        too_long = False
        try:
            while True:
                if not scheduler.quiet(self.timeout):
                    stuck = scheduler.running()
                    break
                enabled = scheduler.parked()
                if not enabled:
                    break
                if len(schedule) >= MAX_STEPS:
                    too_long = True
                    break
                chosen = choose(len(schedule), enabled, schedule[-1] if schedule else None)
                enabled_log.append(tuple(enabled))
                schedule.append(chosen)
                scheduler.release(chosen)
        finally:
            scheduler.stop()  # parked agents of an order cut short raise Stopped
            for i, thread in enumerate(threads):
                if i not in stuck:
                    thread.join(self.timeout)
            for handle in handles:
                if handle.id not in stuck:
                    handle.close()
        run = Run(tuple(schedule), list(scheduler.steps), results, errors, self.names)
        run.enabled = enabled_log
        run.stuck = stuck
        self._check(run, too_long)
        return run

    def _check(self, run: Run, too_long: bool) -> None:
        found = run.violations
        if run.stuck:
            who = ", ".join(self.names[a] for a in run.stuck)
            found.append(
                Violation(
                    "deadlock",
                    f"{who} neither sent a request nor ended within {self.timeout}s after "
                    f"step {len(run.steps)} (waiting on another agent, or on nothing)",
                )
            )
        if too_long:
            found.append(Violation("livelock", f"still sending after {MAX_STEPS} requests"))
        for i, error in enumerate(run.errors):
            if error is not None:
                found.append(Violation("agent raised", f"{self.names[i]}: {_said(error)}"))
        outcome = Outcome(self.fake, self.tenant_id, run, self.tag)
        for inv in self.invariants:
            try:
                broken = inv.check(outcome)
            except Exception as exc:  # a broken check is the test's failure, shown as such
                broken = [f"the check itself raised: {_said(exc)}"]
            found += [Violation(inv.name, message) for message in broken]
        if found:
            shown = self.fake.memory_files(self.tenant_id, self.workspace, tag=self.tag)
            run.state = shown or [
                {"id": c.id, "externalId": c.external_id, "content": c.content}
                for c in self.fake.contexts(self.tenant_id)
            ]

    # ----- many orders -----

    def explore(self) -> Exploration:
        """Run the orders (all of them within the bound, else a seeded PCT sample) and
        return what was found; ``.check()`` raises with the simplest failing order."""
        try:
            return self._explore()
        finally:
            self._restore()

    def _explore(self) -> Exploration:
        started = last_said = time.monotonic()
        first = self._run(Follow())
        per_agent = Counter(step.agent for step in first.steps)
        estimate = orders_of([per_agent[a] for a in range(len(self.agents))])
        if estimate <= self.bound:
            found = Exploration(
                "exhaustive",
                f"{estimate} order(s) counted from the first run, bound {self.bound}",
                None,
            )
        else:
            found = Exploration(
                "PCT",
                f"{estimate} orders counted from the first run exceed the bound {self.bound}",
                None,
            )
        self._keep(found, first)
        if found.strategy == "exhaustive":
            prefix = next_prefix(first.schedule, first.enabled)
            while prefix is not None and found.runs < self.bound:
                run = self._run(Follow(prefix))
                self._keep(found, run)
                prefix = next_prefix(run.schedule, run.enabled)
                last_said = self._say(found, started, last_said)
            if prefix is None:
                found.complete = True
                return found
            found.strategy = "exhaustive, then PCT"
            found.why += f"; the orders outgrew the bound after {found.runs} runs"
        seed = self.seed if self.seed is not None else random.SystemRandom().randrange(2**32)
        found.seed = seed
        steps = max(len(first.steps), 1)
        for r in range(self.runs):
            rng = random.Random(f"{seed}/{r}")
            run = self._run(Pct(rng, len(self.agents), steps, self.depth))
            steps = max(steps, len(run.steps))
            self._keep(found, run)
            last_said = self._say(found, started, last_said)
        return found

    @staticmethod
    def _keep(found: Exploration, run: Run) -> None:
        found.runs += 1
        if run.schedule in found.schedules:
            return
        found.schedules.add(run.schedule)
        if run.failed:
            found.failures.append(Failure(run))

    def _say(self, found: Exploration, started: float, last: float) -> float:
        now = time.monotonic()
        if now - last < PROGRESS_EVERY:
            return last
        self.progress(
            f"explorer: {found.runs} order(s) run in {now - started:.0f}s, {found.failing} failing"
        )
        return now


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def explore(fake: FakeContextQ, agents: Sequence[Agent], **options: Any) -> Exploration:
    """``Explorer(fake, agents, **options).explore()``."""
    return Explorer(fake, agents, **options).explore()
