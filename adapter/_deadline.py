"""A whole-call deadline: ``run_within`` runs a call for at most so many seconds whatever the
server does (a hang, a byte a second), and the clients below it read what is left
(``remaining``) so that their requests stop at the deadline too.

Per-read timeouts cannot bound a call: a server that drips a byte a second answers every
read in time. So the call runs on a daemon thread (kept for the next calls) and the caller
waits for it at most ``seconds``; a call still running then is left behind (its requests
stop at the deadline where the client can tell, and a daemon thread never keeps the
process alive).
"""

from __future__ import annotations

import contextvars
import math
import os
import queue
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from adapter import errors

T = TypeVar("T")
#: How long past its deadline the caller waits for a call whose requests stopped at it
#: (a session dropped, a timeout raised): so that such a call ends cleanly, not left.
GRACE = 0.25

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "adapter_deadline", default=None
)


def check(timeout: object, name: str = "timeout") -> float | None:
    """``timeout`` as seconds (None: no deadline), or a ``ValueError`` naming ``name``."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < math.inf
    ):
        raise ValueError(f"{name} must be a finite number of seconds > 0 or None, not {timeout!r}")
    return float(timeout)


def remaining() -> float | None:
    """Seconds left before the deadline of the call this thread runs (None: it has none)."""
    at = _DEADLINE.get()
    return None if at is None else at - time.monotonic()


def bounded(seconds: float | None) -> float | None:
    """``seconds`` (a client's own limit, None for none) cut to what the deadline leaves."""
    left = remaining()
    if left is None:
        return seconds
    return max(0.0, left if seconds is None else min(seconds, left))


def run_within(seconds: float | None, call: Callable[[], T], what: str) -> T:
    """``call()``, its result or its exception, within ``seconds`` (and ``GRACE``); past
    them a ``ContextQTimeoutError`` (the call is left to finish alone). ``seconds`` None,
    or a call made inside another one's deadline, runs here, under the deadline it has."""
    if seconds is None or _DEADLINE.get() is not None:
        return call()
    at = time.monotonic() + seconds
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def work() -> None:
        _DEADLINE.set(at)
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller, or dropped if it left
            outcome.append((False, exc))
        finally:
            done.set()

    context = contextvars.copy_context()  # the caller's context vars, plus the deadline
    _WORKERS.run(partial(context.run, work))
    if not done.wait(seconds + GRACE):
        raise errors.ContextQTimeoutError(
            f"{what} did not finish within its deadline of {seconds:g} s"
        )
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[return-value]
    assert isinstance(value, BaseException)
    raise value


def start(call: Callable[[], object]) -> None:
    """Run ``call`` on one of the deadline's daemon threads, now, and return: for the async
    port, whose calls must neither queue behind others nor hold the interpreter's exit."""
    _WORKERS.run(call)


class _Workers:
    """Daemon threads that run the calls: an idle one takes the next, another starts when
    none is idle (one left behind by a call past its deadline is busy until it ends), and
    one idle for ``IDLE`` seconds ends."""

    IDLE = 30.0

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a child has none of the threads

    def _reset(self) -> None:
        self._calls: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def run(self, call: Callable[[], object]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._work, name="adapter-deadline", daemon=True).start()
            self._calls.put(call)

    def _work(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=self.IDLE)
            except queue.Empty:
                with self._lock:
                    if self._calls.empty() and self._idle:
                        self._idle -= 1
                        return
                continue
            call()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()
