"""A strict, fast, observable fake of ContextQ, in-process or served over HTTP.

Names load on first use, so ``fake_contextq.contract`` (the wire contract, which the
``adapter`` client reads too) can be imported without importing FastAPI and uvicorn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fake_contextq.errors import ApiError, AuditChainError, ValidationFailed
    from fake_contextq.fake import FakeContextQ
    from fake_contextq.faults import Fault, Faults
    from fake_contextq.journal import Journal, JournalEntry
    from fake_contextq.models import ContextQBackend
    from fake_contextq.records import ApiKey, AuditRow, Context, Tenant, Workspace
    from fake_contextq.server import ServedFake
    from fake_contextq.sqlstore import SchemaVersionError, SqlStore
    from fake_contextq.store import MemoryStore, Store

__version__ = "0.1.0"

_HOMES = {
    "ApiError": "errors",
    "AuditChainError": "errors",
    "ValidationFailed": "errors",
    "FakeContextQ": "fake",
    "Fault": "faults",
    "Faults": "faults",
    "Journal": "journal",
    "JournalEntry": "journal",
    "ContextQBackend": "models",
    "ApiKey": "records",
    "AuditRow": "records",
    "Context": "records",
    "Tenant": "records",
    "Workspace": "records",
    "ServedFake": "server",
    "SchemaVersionError": "sqlstore",
    "SqlStore": "sqlstore",
    "MemoryStore": "store",
    "Store": "store",
}

__all__ = [
    "ApiError",
    "ApiKey",
    "AuditChainError",
    "AuditRow",
    "Context",
    "ContextQBackend",
    "FakeContextQ",
    "Fault",
    "Faults",
    "Journal",
    "JournalEntry",
    "MemoryStore",
    "SchemaVersionError",
    "ServedFake",
    "SqlStore",
    "Store",
    "Tenant",
    "ValidationFailed",
    "Workspace",
    "__version__",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fake_contextq' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fake_contextq.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
