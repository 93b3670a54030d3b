"""What a rule's check is given (fresh backend instances, the declarations, the oracle's
class, the seed) and what it gives back (problems found, notes, figures)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contextq_conformance.memory_tool._calls import Handle, Log
from contextq_conformance.memory_tool.declarations import Declarations


class NotRun(Exception):
    """The rule cannot run against this backend (the parity rule without both factories)."""


class Broken(Exception):
    """A check cannot go on: the backend failed in a way that stops the rule (one line)."""


@dataclass
class Verdict:
    """What a check found: ``problems`` empty means the rule held."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sizes:
    """How much the concurrency rules do: instances, commands each, rounds."""

    instances: int = 4
    commands: int = 30
    rounds: int = 3


@dataclass
class Context:
    """One rule's run: every instance it makes logs its commands into ``log``."""

    factory: Callable[[], Any] | None
    async_factory: Callable[[], Any] | None
    declarations: Declarations
    timeout: float
    seed: int
    sizes: Sizes
    log: Log = field(default_factory=Log)
    opened: list[Handle] = field(default_factory=list)

    def instance(self, *, asynchronous: bool | None = None, name: str = "") -> Handle:
        """A new instance over the backend's storage (sync where there is a sync factory,
        unless ``asynchronous`` asks otherwise)."""
        use_async = self.factory is None if asynchronous is None else asynchronous
        factory = self.async_factory if use_async else self.factory
        if factory is None:
            raise NotRun("needs the " + ("async" if use_async else "sync") + " factory")
        tool = factory()
        label = name or f"{'async ' if use_async else ''}instance {len(self.opened) + 1}"
        handle = Handle(tool, is_async=use_async, timeout=self.timeout, name=label, log=self.log)
        self.opened.append(handle)
        return handle

    def fresh(self, **kw: Any) -> Handle:
        """An instance over storage emptied with ``clear_all_memory()``."""
        handle = self.instance(**kw)
        cleared = handle.clear()
        if cleared.kind != "ok":
            raise Broken(f"clear_all_memory() of {handle.name} gave {cleared.show()}")
        return handle

    def close_all(self) -> None:
        for handle in self.opened:
            with contextlib.suppress(Exception):  # best effort: the verdict is made
                handle.close()
        self.opened.clear()


__all__ = ["Broken", "Context", "NotRun", "Sizes", "Verdict"]
