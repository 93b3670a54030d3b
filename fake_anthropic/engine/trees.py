"""Copies of JSON trees: what the engine hands out and what it keeps must not share a dict
or a list, or a test changing a record would change a thread the server holds.

``copy.deepcopy`` does that for any object, and pays for it (a memo of every node, a
dispatch per type): four times what a walk of dicts and lists costs, on every turn of a
conversation. ``copied`` walks dicts and lists itself, keeps the immutable leaves JSON
has, and leaves anything else to ``copy.deepcopy``.
"""

from __future__ import annotations

import copy
from typing import TypeVar

T = TypeVar("T")

_LEAVES = frozenset({str, int, float, bool, type(None)})


def copied(value: T) -> T:
    """A deep copy of ``value``: new dicts and lists all the way down (the exact types;
    a subclass, a tuple or any other object goes through ``copy.deepcopy``)."""
    kind = type(value)
    if kind is dict:
        return {k: copied(v) for k, v in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [copied(v) for v in value]  # type: ignore[attr-defined,return-value]
    if kind in _LEAVES:
        return value
    return copy.deepcopy(value)
