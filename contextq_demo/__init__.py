"""``contextq-demo``: Claude's memory tool on ContextQ, end to end, offline and keyless.

It drives all three parts together (the adapter, the fake ContextQ and the scripted
model), so it lives beside them rather than inside either fake. ``run_demo`` loads on
first use, so the command can say which extra is missing before it needs the fake.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextq_demo.demo import run_demo

__all__ = ["run_demo"]


def __getattr__(name: str) -> Any:
    if name == "run_demo":
        from contextq_demo.demo import run_demo

        return run_demo
    raise AttributeError(f"module 'contextq_demo' has no attribute {name!r}")
