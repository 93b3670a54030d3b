"""The served fake's dashboard (``/_fake/ui``): what the fake holds and serves, for a person
to look at. ``model`` reads the state, ``render`` turns it into pages; the routes live in
``fake_contextq.http.dashboard``."""

from fake_contextq.dashboard.model import (
    AuditStatus,
    JournalFilter,
    MemoryTree,
    Order,
    ShownJson,
    TenantRow,
    TreeEntry,
    audit_status,
    entry_json,
    find_contexts,
    memory_trees,
    recent,
    shown_body,
    shown_json,
    tenant_row,
    tenant_rows,
    text_bytes,
)
from fake_contextq.dashboard.render import STATIC, page, printable, static

__all__ = [
    "STATIC",
    "AuditStatus",
    "JournalFilter",
    "MemoryTree",
    "Order",
    "ShownJson",
    "TenantRow",
    "TreeEntry",
    "audit_status",
    "entry_json",
    "find_contexts",
    "memory_trees",
    "page",
    "printable",
    "recent",
    "shown_body",
    "shown_json",
    "static",
    "tenant_row",
    "tenant_rows",
    "text_bytes",
]
