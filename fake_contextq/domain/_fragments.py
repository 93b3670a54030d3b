"""The JSON bytes of immutable records, kept while the record lives, so a list answer
splices the bytes of rows it already rendered instead of building, encoding and
UTF-8-encoding their dicts again (a page of 50 contexts: most of a list request's own
time)."""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: The answers' encoding: compact, UTF-8 kept as is, no NaN or Infinity.
ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _made_once(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode``, with the stdlib's C encoder built once rather than on every
    call (a fifth of encoding one record). It skips the check for circular containers:
    what is encoded here are records and the JSON read from requests, never cyclic."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the stubs
    if make is None:  # a Python without the json module's C part
        return encoder.encode
    encode = make(
        None,
        encoder.default,
        json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def text(value: Any) -> str:
        if isinstance(value, str):
            return encoder.encode(value)
        return "".join(encode(value, 0))

    return text


to_text: Callable[[Any], str] = _made_once(ENCODER)


class Fragments(Generic[T]):
    """``render(record)`` (a record's JSON bytes), kept for at most ``size`` living records.

    Keyed by identity: a store hands out the same record until its row changes, and a
    changed row is a new record (records are frozen), so a kept body is never stale. An
    entry holds its record weakly and leaves when the record dies, so the cache keeps no
    row alive and a new record never meets a dead one's body under a reused ``id``.
    """

    def __init__(self, render: Callable[[T], bytes], size: int) -> None:
        self._render = render
        self._size = size
        self._held: dict[int, tuple[weakref.ref[T], bytes]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def body(self, record: T) -> bytes:
        key = id(record)
        found = self._held.get(key)
        if found is not None and found[0]() is record:
            return found[1]
        return self._kept(key, record)

    def bodies(self, records: Iterable[T]) -> list[bytes]:
        """``body`` of each record: the lookup written out once for a page of them (a call
        per row was a good part of a page's rendering)."""
        held = self._held
        out: list[bytes] = []
        for record in records:
            found = held.get(id(record))
            if found is not None and found[0]() is record:
                out.append(found[1])
            else:
                out.append(self._kept(id(record), record))
        return out

    def _kept(self, key: int, record: T) -> bytes:
        body = self._render(record)
        held = self._held

        def forget(ref: weakref.ref[T]) -> None:
            # no lock: this runs wherever the record dies, maybe inside ``_kept`` itself
            entry = held.get(key)
            if entry is not None and entry[0] is ref:
                held.pop(key, None)

        with self._lock:
            held[key] = (weakref.ref(record, forget), body)
            if len(held) > self._size:
                # an entry that left meanwhile (its record died) made room enough
                with contextlib.suppress(RuntimeError, KeyError):
                    del held[next(iter(held))]
        return body
