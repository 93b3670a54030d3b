"""The served fake's dashboard (``/_fake/ui``): what the fake holds and serves, for a person
to look at. ``model`` reads the state, ``render`` turns it into pages; the routes live in
``fake_contextq.http.dashboard``."""

from fake_contextq.dashboard.model import (
    AuditStatus,
    JournalFilter,
    MemoryTree,
    Order,
    TenantRow,
    TreeEntry,
    audit_status,
    entry_json,
    find_contexts,
    memory_trees,
    recent,
    shown_body,
    tenant_row,
    tenant_rows,
)
from fake_contextq.dashboard.render import STATIC, page, static

__all__ = [
    "STATIC",
    "AuditStatus",
    "JournalFilter",
    "MemoryTree",
    "Order",
    "TenantRow",
    "TreeEntry",
    "audit_status",
    "entry_json",
    "find_contexts",
    "memory_trees",
    "page",
    "recent",
    "shown_body",
    "static",
    "tenant_row",
    "tenant_rows",
]
