"""ContextQ's rules in plain Python: records, validation, auth, quotas, audit, search, the
Agent Memory Layer, and the ``Store`` interface the rules read and write through.

Nothing here knows HTTP or a database; ``stores`` implements ``Store``, ``http`` serves it.
"""

from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError, AuditChainError, ValidationFailed
from fake_contextq.domain.records import ApiKey, AuditRow, Context, Tenant, Workspace
from fake_contextq.domain.store import Store

__all__ = [
    "ApiError",
    "ApiKey",
    "AuditChainError",
    "AuditRow",
    "Context",
    "ContextQBackend",
    "Store",
    "Tenant",
    "ValidationFailed",
    "Workspace",
]
