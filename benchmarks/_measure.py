"""Timing: each call timed on its own with the garbage collector off, and rows compared with
each other interleaved in blocks, so a noisy machine weighs on all of them alike."""

from __future__ import annotations

import contextlib
import gc
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass

NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of one timed run, in milliseconds."""

    n: int
    median_ms: float
    p90_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def from_ns(cls, samples: Sequence[int]) -> Stats:
        if not samples:
            raise ValueError("no samples")
        ms = [s / NS_PER_MS for s in samples]
        p90 = statistics.quantiles(ms, n=10, method="inclusive")[8] if len(ms) > 1 else ms[0]
        return cls(
            n=len(ms),
            median_ms=statistics.median(ms),
            p90_ms=p90,
            mean_ms=statistics.fmean(ms),
            min_ms=min(ms),
            max_ms=max(ms),
        )


@contextlib.contextmanager
def _gc_off() -> Iterator[None]:
    """A collection mid-run would land on one sample: collect first, then hold it off."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _blocks(n: int, rounds: int) -> Iterator[int]:
    """``n`` calls split into ``rounds`` blocks as even as they go (at most one per call)."""
    rounds = max(1, min(rounds, n))
    for r in range(rounds):
        yield n // rounds + (1 if r < n % rounds else 0)


def _time_calls(fn: Callable[[], object], n: int) -> list[int]:
    """Time ``n`` calls of ``fn`` one by one (ns), with the garbage collector off."""
    samples = [0] * n
    clock = time.perf_counter_ns
    with _gc_off():
        for i in range(n):
            started = clock()
            fn()
            samples[i] = clock() - started
    return samples


def measure(fn: Callable[[], object], n: int, warmup: int) -> Stats:
    """Call ``fn`` ``warmup`` times untimed, then ``n`` times timed one by one, gc off."""
    for _ in range(warmup):
        fn()
    return Stats.from_ns(_time_calls(fn, n))


def measure_interleaved(
    fns: Sequence[Callable[[], object]], n: int, warmup: int, rounds: int = 10
) -> list[Stats]:
    """``measure`` for several functions compared with each other: their ``n`` timed calls
    are split into ``rounds`` blocks taken in turn (a, b, a, b, ...), so a change in the
    machine's speed during the run (other load, clock scaling) weighs on all of them alike
    and their ratios stay meaningful on a shared, noisy machine."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples: list[list[int]] = [[] for _ in fns]
    for block in _blocks(n, rounds):
        for fn, out in zip(fns, samples, strict=True):
            out.extend(_time_calls(fn, block))
    return [Stats.from_ns(s) for s in samples]


async def _atime_calls(fn: Callable[[], Awaitable[object]], n: int) -> list[int]:
    samples = [0] * n
    clock = time.perf_counter_ns
    with _gc_off():
        for i in range(n):
            started = clock()
            await fn()
            samples[i] = clock() - started
    return samples


async def ameasure_interleaved(
    fns: Sequence[Callable[[], Awaitable[object]]], n: int, warmup: int, rounds: int = 10
) -> list[Stats]:
    """``measure_interleaved`` for coroutine functions, awaited on the running loop."""
    for fn in fns:
        for _ in range(warmup):
            await fn()
    samples: list[list[int]] = [[] for _ in fns]
    for block in _blocks(n, rounds):
        for fn, out in zip(fns, samples, strict=True):
            out.extend(await _atime_calls(fn, block))
    return [Stats.from_ns(s) for s in samples]
