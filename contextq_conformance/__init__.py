"""A conformance suite for ContextQ's wire contract, runnable against the fake in-process,
the fake served, or a live dev stack: ``python -m contextq_conformance --help``.

Names are imported lazily, so the command starts pytest before the client stack loads.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextq_conformance._names import TARGETS
    from contextq_conformance.rules import RULES, Rule
    from contextq_conformance.targets import Client, Target, Tenant

_HOMES = {
    "TARGETS": "contextq_conformance._names",
    "RULES": "contextq_conformance.rules",
    "Rule": "contextq_conformance.rules",
    "Client": "contextq_conformance.targets",
    "Target": "contextq_conformance.targets",
    "Tenant": "contextq_conformance.targets",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'contextq_conformance' has no attribute {name!r}")


__all__ = ["RULES", "TARGETS", "Client", "Rule", "Target", "Tenant"]
