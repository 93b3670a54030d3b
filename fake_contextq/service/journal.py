"""Every request the fake served, in order, for assertions, failure reports and the
dashboard, which follows it live through ``subscribe``."""

from __future__ import annotations

import fnmatch
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, overload

#: How much of each request's and answer's body an entry keeps (bytes): enough to read a
#: memory file's JSON, bounded so a long-running server's journal stays small.
BODY_KEPT = 64 * 1024

Listener = Callable[["JournalEntry"], None]


@dataclass(frozen=True, slots=True)
class JournalEntry:
    method: str
    path: str
    query: str
    status: int | None  # None: the connection was dropped by an injected fault
    tenant_id: int | None  # None: the request never authenticated
    duration: float  # seconds, measured inside the app
    fault: bool = False  # answered (or dropped, or delayed) by an injected fault
    number: int = 0  # its place in the journal since the fake began, from 1
    at: float = 0.0  # when it began, seconds since the epoch
    request_body: bytes = b""  # the first BODY_KEPT bytes as received
    response_body: bytes = b""  # the first BODY_KEPT bytes as answered
    body_cut: bool = False  # a body was longer than BODY_KEPT

    @property
    def target(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the bodies as text (undecodable bytes replaced)."""
        out = asdict(self)
        out["request_body"] = self.request_body.decode("utf-8", "replace")
        out["response_body"] = self.response_body.decode("utf-8", "replace")
        return out

    def __str__(self) -> str:
        status = "dropped" if self.status is None else str(self.status)
        return f"{self.method} {self.target} -> {status}"


class Journal:
    """An append-only list of ``JournalEntry``, safe to read while requests run.

    ``keep`` bounds it to the newest entries and ``keep_bytes`` the bodies and targets they
    hold (a long-running served fake would otherwise grow without end: each entry may hold
    twice ``BODY_KEPT``, and a target as long as the server takes); None, the default for
    a test's fake, keeps every one. Entries keep their numbers, so a number names the same
    request whether or not older ones left."""

    def __init__(self, keep: int | None = None, keep_bytes: int | None = None) -> None:
        self.keep = _bound("keep", keep, "entries")
        self.keep_bytes = _bound("keep_bytes", keep_bytes, "bytes")
        self._entries: deque[JournalEntry] = deque()
        self._held = 0  # the size of the bodies and targets kept (``_size``)
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._served = 0
        self._listeners: tuple[Listener, ...] = ()

    def next_number(self) -> int:
        """The number of the next request to be recorded (atomic under the GIL)."""
        return next(self._numbers)

    @property
    def served(self) -> int:
        """How many requests were recorded since the fake began (kept or not, cleared or
        not)."""
        return self._served

    def record(self, entry: JournalEntry) -> None:
        size = _size(entry)
        with self._lock:
            self._entries.append(entry)
            self._held += size
            self._served += 1
            keep, keep_bytes = self.keep, self.keep_bytes
            while len(self._entries) > 1 and (
                (keep is not None and len(self._entries) > keep)
                or (keep_bytes is not None and self._held > keep_bytes)
            ):
                self._held -= _size(self._entries.popleft())
        for listener in self._listeners:  # none unless a dashboard page is open
            listener(entry)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(entry)`` for each entry recorded from now on, on the thread that
        records it, until the returned function is called. It must not block."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    def find(self, number: int) -> JournalEntry | None:
        """The entry of that number, if it is still in the journal. Every entry is looked
        at: numbers are given when requests begin and entries added when they end, so a
        slow request's entry follows quicker, later-numbered ones."""
        with self._lock:
            for entry in reversed(self._entries):
                if entry.number == number:
                    return entry
        return None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held = 0

    def __iter__(self) -> Iterator[JournalEntry]:
        with self._lock:
            return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> JournalEntry: ...
    @overload
    def __getitem__(self, index: slice) -> list[JournalEntry]: ...
    def __getitem__(self, index: int | slice) -> JournalEntry | list[JournalEntry]:
        with self._lock:
            return list(self._entries)[index] if isinstance(index, slice) else self._entries[index]

    @property
    def last(self) -> JournalEntry:
        with self._lock:
            if not self._entries:
                raise LookupError("the journal is empty: no request has been served")
            return self._entries[-1]

    def filter(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        status: int | None = None,
        tenant_id: int | None = None,
    ) -> list[JournalEntry]:
        """Entries matching every given criterion; ``path`` is a glob (``*`` spans ``/``)."""
        want_method = None if method is None else method.upper()
        return [
            e
            for e in self
            if (want_method is None or e.method == want_method)
            and (path is None or fnmatch.fnmatchcase(e.path, path))
            and (status is None or e.status == status)
            and (tenant_id is None or e.tenant_id == tenant_id)
        ]

    def count(self, method: str | None = None, path: str | None = None, **kw: Any) -> int:
        return len(self.filter(method, path, **kw))

    def table(self, entries: list[JournalEntry] | None = None) -> str:
        """A fixed-width table of the entries (all by default), one request a line."""
        rows = list(self) if entries is None else entries
        header = ("#", "method", "target", "status", "tenant", "ms")
        lines = [
            (
                str(i),
                e.method,
                e.target,
                ("dropped" if e.status is None else str(e.status))
                + (" (fault)" if e.fault else ""),
                "-" if e.tenant_id is None else str(e.tenant_id),
                f"{e.duration * 1000:.2f}",
            )
            for i, e in enumerate(rows, 1)
        ]
        widths = [
            max(len(h), *(len(line[c]) for line in lines)) if lines else len(h)
            for c, h in enumerate(header)
        ]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        out = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
        out += [fmt.format(*line) for line in lines]
        if not lines:
            out.append("(no requests)")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<Journal of {len(self)} request(s)>"


def _bound(name: str, value: int | None, unit: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive number of {unit} or None, not {value!r}")
    return value


def _size(entry: JournalEntry) -> int:
    """What an entry holds that grows with the request: its bodies, its path and query."""
    return len(entry.request_body) + len(entry.response_body) + len(entry.path) + len(entry.query)
