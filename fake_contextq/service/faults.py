"""Injected faults: make matching requests fail, stall, or lose their connection."""

from __future__ import annotations

import asyncio
import fnmatch
import math
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


class ConnectionDropped(Exception):
    """Raised inside the app when a fault drops the connection and no server socket exists.

    The in-process transports turn it into the transport error a client would see.
    """


@dataclass
class Fault:
    method: str
    path: str
    status: int | None = None
    delay: float | None = None
    drop: bool = False
    times: int | None = 1  # how many more requests it applies to; None = always
    hits: int = field(default=0)

    def matches(self, method: str, path: str) -> bool:
        return (self.method in ("*", method)) and fnmatch.fnmatchcase(path, self.path)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "delay": self.delay,
            "drop": self.drop,
            "times": self.times,
            "hits": self.hits,
        }


class Faults:
    """The active faults, first match wins; a fault with ``times`` used up goes away."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        # What a delay waits with; a test may put a recorder here, so no test need time it.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    def inject(
        self,
        method: str,
        path: str,
        *,
        status: int | None = None,
        delay: float | None = None,
        drop: bool = False,
        times: int | None = 1,
    ) -> Fault:
        """Answer matching requests with ``status``, after ``delay`` seconds, or ``drop`` them.

        ``method`` is an HTTP method or ``*``; ``path`` a glob over the request path
        (``/api/contexts/*``). ``times=None`` keeps the fault until ``clear()``.
        """
        if status is None and delay is None and not drop:
            raise ValueError("a fault needs at least one of status=, delay= or drop=True")
        if status is not None and drop:
            raise ValueError("a fault cannot both answer with a status and drop the connection")
        if status is not None and (isinstance(status, bool) or not 200 <= status <= 599):
            raise ValueError(
                f"status must be a final HTTP status code (200-599; a 1xx is no answer), "
                f"got {status!r}"
            )
        if delay is not None and not (delay >= 0 and math.isfinite(delay)):
            # infinity would stall for good, and no JSON answer (GET /_fake/faults) holds it
            raise ValueError(f"delay must be a finite number of seconds >= 0, got {delay!r}")
        if times is not None and (isinstance(times, bool) or times < 1):
            raise ValueError(f"times must be a positive count or None (always), got {times!r}")
        if not path.startswith("/"):
            raise ValueError(
                f"path must be a glob over request paths starting with '/', got {path!r}"
            )
        fault = Fault(method.upper(), path, status, delay, drop, times)
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def active(self) -> list[Fault]:
        with self._lock:
            return list(self._faults)

    def __len__(self) -> int:
        return len(self._faults)

    def take(self, method: str, path: str) -> Fault | None:
        """The first fault matching this request, counted as used once."""
        if not self._faults:
            return None
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.hits += 1
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times == 0:
                            self._faults.remove(fault)
                    return fault
        return None
