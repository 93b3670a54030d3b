"""How a memory directory is listed, exactly as the Anthropic SDK's reference tool lists
one: the tree of entries and the human sizes. The memory tool prints it, and anything that
must draw the same tree (the fake ContextQ's dashboard) draws it from here."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any


@functools.lru_cache(maxsize=4096)  # a pure function; a listing repeats the same sizes
def format_size(size: int) -> str:
    """Human sizes exactly as the SDK's reference tool prints them (5.5K, 0B)."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**i)
    return f"{int(value)}{units[i]}" if value == int(value) else f"{value:.1f}{units[i]}"


def tree(rows: Iterable[tuple[str, int]], depth: int | None = 2) -> list[tuple[int, str]]:
    """(size, relative path) entries up to ``depth`` levels (None: all), directories ending in '/',
    each directory's size the sum of its files, siblings sorted by name (as the SDK)."""
    root: dict[str, Any] = {}
    for rel, size in rows:
        node = root
        names = rel.split("/")
        for name in names[:-1]:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):  # a file and a directory of one name: keep both
                child = node.setdefault(name + "/", {})
            node = child
        node[names[-1]] = size

    def total(node: dict[str, Any]) -> int:
        return sum(total(v) if isinstance(v, dict) else v for v in node.values())

    out: list[tuple[int, str]] = []

    def walk(node: dict[str, Any], prefix: str, level: int) -> None:
        for name in sorted(node):
            value = node[name]
            rel = f"{prefix}{name.rstrip('/')}"
            if isinstance(value, dict):
                out.append((total(value), rel + "/"))
                if depth is None or level < depth:
                    walk(value, rel + "/", level + 1)
            else:
                out.append((value, rel))

    walk(root, "", 1)
    return out


__all__ = ["format_size", "tree"]
