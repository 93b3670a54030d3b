"""A strict, fast, observable fake of ContextQ, in-process or served over HTTP.

Names load on first use, so ``adapter.wire`` (the wire contract, which the
``adapter`` client reads too) can be imported without importing FastAPI and uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapter._lazy import lazy_names

if TYPE_CHECKING:
    from fake_contextq.domain.backend import ContextQBackend
    from fake_contextq.domain.errors import ApiError, AuditChainError, ValidationFailed
    from fake_contextq.domain.records import (
        AgentState,
        ApiKey,
        AuditRow,
        Context,
        IngestJob,
        SessionState,
        Tenant,
        Workspace,
    )
    from fake_contextq.domain.store import Store
    from fake_contextq.fake import FakeContextQ, ServedFake
    from fake_contextq.service.faults import Fault, Faults
    from fake_contextq.service.journal import Journal, JournalEntry
    from fake_contextq.stores.memory import MemoryStore
    from fake_contextq.stores.sql import SchemaVersionError, SqlStore

from fake_contextq._version import __version__

_HOMES = {
    "ApiError": "domain.errors",
    "AuditChainError": "domain.errors",
    "ValidationFailed": "domain.errors",
    "FakeContextQ": "fake",
    "Fault": "service.faults",
    "Faults": "service.faults",
    "Journal": "service.journal",
    "JournalEntry": "service.journal",
    "ContextQBackend": "domain.backend",
    "AgentState": "domain.records",
    "SessionState": "domain.records",
    "ApiKey": "domain.records",
    "AuditRow": "domain.records",
    "Context": "domain.records",
    "IngestJob": "domain.records",
    "Tenant": "domain.records",
    "Workspace": "domain.records",
    "ServedFake": "fake",
    "SchemaVersionError": "stores.sql",
    "SqlStore": "stores.sql",
    "MemoryStore": "stores.memory",
    "Store": "domain.store",
}

__all__ = [
    "AgentState",
    "ApiError",
    "ApiKey",
    "AuditChainError",
    "AuditRow",
    "Context",
    "ContextQBackend",
    "FakeContextQ",
    "Fault",
    "Faults",
    "IngestJob",
    "Journal",
    "JournalEntry",
    "MemoryStore",
    "SchemaVersionError",
    "ServedFake",
    "SessionState",
    "SqlStore",
    "Store",
    "Tenant",
    "ValidationFailed",
    "Workspace",
    "__version__",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _HOMES)
