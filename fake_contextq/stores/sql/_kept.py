"""Records read lately, kept by the driver row they were made of (SQLite's reads by key).

A served GET by external id reads two rows (the caller's key and the context) and made a
new record of each every time: each column through its result processor, the record
built, and the context's answer rendered again, since the kept text of an answer
(``domain/_fragments``) is keyed by the record's identity. A row read again unchanged is
the same tuple of driver values, so its record is the one made last time: equal in every
field, and the same object, as the in-memory store hands out. A changed row is another
tuple, so a kept record is never stale; nothing needs to be forgotten when a row changes.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar

from fake_contextq.stores._rows import RowMap

R = TypeVar("R")

#: How much of the rows' text the kept records may hold, in characters (about 8 MB).
KEPT_CHARS = 8_000_000
#: How many records are kept at most (an entry costs about 1 KB besides its text).
KEPT_ROWS = 4_096


class KeptRecords:
    """Records by (row map, statement, driver row), the oldest dropped first once the
    text they hold passes ``max_chars`` or they number more than ``max_rows``."""

    def __init__(self, max_chars: int = KEPT_CHARS, max_rows: int = KEPT_ROWS) -> None:
        self._max_chars = max_chars
        self._max_rows = max_rows
        self._held: dict[tuple[Any, ...], tuple[Any, int]] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def get(self, rows: RowMap[R], statement: object, raw: tuple[Any, ...]) -> R | None:
        found = self._held.get((rows, statement, raw))
        return None if found is None else found[0]

    def keep(self, rows: RowMap[R], statement: object, raw: tuple[Any, ...], record: R) -> R:
        size = sum(len(v) for v in raw if isinstance(v, str | bytes))
        if size > self._max_chars:
            return record
        with self._lock:
            key = (rows, statement, raw)
            held = self._held.get(key)
            if held is not None:  # another thread made it meanwhile: one record for both
                return held[0]  # type: ignore[no-any-return]
            self._held[key] = (record, size)
            self._chars += size
            while self._chars > self._max_chars or len(self._held) > self._max_rows:
                oldest = next(iter(self._held))
                self._chars -= self._held.pop(oldest)[1]
        return record

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._chars = 0
