"""Public names a package loads on first use: the package's ``__getattr__`` and ``__dir__``.

A package re-exports names whose modules are costly to import (the SDK, httpx2,
SQLAlchemy, the MCP SDK); listing them here keeps ``import package`` cheap for the code
that needs only one light part of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_names(
    package: str, namespace: MutableMapping[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``homes`` maps each lazy name to the submodule of ``package`` that defines it. A
    name is imported at its first use and kept in ``namespace`` (the package's globals),
    so later uses are plain attribute reads."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted([*namespace, *homes])

    return load, names
