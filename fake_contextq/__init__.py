"""A strict, fast, observable fake of ContextQ, in-process or served over HTTP."""

from fake_contextq.errors import ApiError, AuditChainError, ValidationFailed
from fake_contextq.fake import FakeContextQ
from fake_contextq.faults import Fault, Faults
from fake_contextq.journal import Journal, JournalEntry
from fake_contextq.models import ContextQBackend
from fake_contextq.records import ApiKey, AuditRow, Context, Tenant, Workspace
from fake_contextq.server import ServedFake
from fake_contextq.store import MemoryStore, Store

__version__ = "0.1.0"

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
    "ServedFake",
    "Store",
    "Tenant",
    "ValidationFailed",
    "Workspace",
    "__version__",
]
