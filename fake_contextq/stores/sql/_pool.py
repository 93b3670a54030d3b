"""The store's own pool of connections, lent for one transaction or one lone read.

Why not SQLAlchemy's pool (``QueuePool``)? Measured on this machine (issue 35, item 5),
``benchmarks/bench.py --only sqlite``, three interleaved runs of each, as the ratio to the
same run's memory store (hand-made pool -> QueuePool with ``pool_use_lifo``):

    sqlite   GET by external id  1.51 1.50 1.48 -> 1.76 1.74 1.70   (+16%)
    sqlite   POST create         2.00 1.98 1.98 -> 2.09 2.19 2.20   (+10%)
    sqlite   GET list 50         1.43 1.46 1.45 -> 1.57 1.60 1.58    (+9%)
    sqlite   POST checkpoint     1.95 2.04 2.02 -> 2.15 2.26 2.27   (+11%)
    postgres GET by external id  2.96 3.42 2.71 -> 3.42 3.25 3.23   (+10%)
    postgres GET list 50         2.21 2.19 2.21 -> 2.53 2.36 2.33    (+6%)

A checkout from ``QueuePool`` builds a new SQLAlchemy ``Connection`` (firing the engine's
connection events) and a check-in resets it; a request lends one or two. In one process,
interleaved, the same SQLite store on each pool (best of 7 x 3,000): a lone read of a
tenant 15 us on this pool, 63 us on ``QueuePool`` (lone reads through an
``execution_options`` view of the engine); a transaction reading it 55 us and 69 us.
So the store keeps its ``Connection`` objects open between lendings, and the engine opens
connections without a pool (``NullPool``; an in-memory SQLite database: ``StaticPool``,
its one connection).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection


class Lent:
    """One connection of a store and, on Postgres, its batch (made with it, prepared
    statements and all, and kept with it)."""

    __slots__ = ("batch", "conn", "read_only")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.batch: Any = None  # Postgres: its PgBatch
        self.read_only = False  # SQLite: whether it is marked for lone reads (no BEGIN)


class Connections:
    """A store's connections: at most ``size`` open, each lent for one transaction or one
    lone read and given back at its end. A thread keeps none between requests, so threads
    that come and go leave nothing behind and any number of threads share a few
    connections. When all are lent, a request waits up to ``timeout`` seconds for one,
    then fails with ``busy()`` (a 503), never with a pool error."""

    def __init__(
        self,
        open_: Callable[[], Connection],
        size: int,
        timeout: float,
        busy: Callable[[], Exception],
    ) -> None:
        self._open = open_
        self.size = size
        self._timeout = timeout
        self._busy = busy
        self._idle: list[Lent] = []  # last in, first out: the warmest connection first
        # One lock for the count and the idle list; the condition is waited on only when
        # every connection is lent (a semaphore beside the lock cost a lone read 2-3 us).
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._waiting = 0
        self._closed = False
        self.lent = 0

    def take(self) -> Lent:
        with self._lock:
            if self.lent >= self.size and not self._wait_for_one():
                raise self._busy()
            self.lent += 1
            lent = self._idle.pop() if self._idle else None
        try:
            if lent is not None and (lent.conn.closed or lent.conn.invalidated):
                lent.conn.close()
                lent = None
            if lent is None:
                lent = Lent(self._open())
            return lent
        except BaseException:
            self._release()
            raise

    def _wait_for_one(self) -> bool:
        """Wait (the lock held) until a connection is given back; False after ``timeout``."""
        self._waiting += 1
        try:
            return self._freed.wait_for(lambda: self.lent < self.size, self._timeout)
        finally:
            self._waiting -= 1

    def _release(self) -> None:
        with self._lock:
            self.lent -= 1
            if self._waiting:
                self._freed.notify()

    def give(self, lent: Lent) -> None:
        usable = not (lent.conn.closed or lent.conn.invalidated)
        with self._lock:
            keep = usable and not self._closed
            if keep:
                self.lent -= 1
                self._idle.append(lent)
                if self._waiting:
                    self._freed.notify()
        if not keep:
            try:
                lent.conn.close()
            finally:
                self._release()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for lent in idle:
            lent.conn.close()
