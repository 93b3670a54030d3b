"""What the dashboard shows, in plain Python: read from the fake's state, shaped for a page.

Nothing here knows HTTP or HTML: the routes (``fake_contextq.http.dashboard``) call these
functions and hand the results to the templates, which escape everything they print.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from adapter import wire
from adapter.listing import format_size, tree
from fake_contextq import _msgs
from fake_contextq.domain import quota
from fake_contextq.domain import records as r
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import AuditChainError

MEMORY_TAG = "mem-tool"
SORTABLE = ("id", "title", "type", "workspace", "external_id", "updated")
Order = Literal["asc", "desc"]


@dataclass(frozen=True, slots=True)
class TenantRow:
    tenant: r.Tenant
    contexts: int
    limit: int | None  # the plan's context quota; None: no limit
    workspaces: int
    keys: int

    @property
    def use(self) -> str:
        """``37 / 100 (37%)``, or ``37 (no limit)``."""
        if self.limit is None:
            return f"{self.contexts} (no limit)"
        return f"{self.contexts} / {self.limit} ({100 * self.contexts // self.limit}%)"

    @property
    def full(self) -> bool:
        return self.limit is not None and self.contexts >= self.limit


def tenant_rows(backend: ContextQBackend) -> list[TenantRow]:
    rows = []
    for tenant in backend.tenants():
        rows.append(
            TenantRow(
                tenant,
                len(backend.contexts(tenant.id)),
                quota.context_limit(tenant.plan),
                len(backend.workspaces(tenant.id)),
                len(backend.keys(tenant.id)),
            )
        )
    return rows


def tenant_row(backend: ContextQBackend, tenant_id: int) -> TenantRow:
    tenant = backend.tenant(tenant_id)
    return TenantRow(
        tenant,
        len(backend.contexts(tenant_id)),
        quota.context_limit(tenant.plan),
        len(backend.workspaces(tenant_id)),
        len(backend.keys(tenant_id)),
    )


def _sort_key(field: str) -> Any:
    keys: dict[str, Any] = {
        "id": lambda c: c.id,
        "title": lambda c: (c.title.casefold(), c.id),
        "type": lambda c: (c.type, c.id),
        "workspace": lambda c: (c.workspace or "", c.id),
        "external_id": lambda c: (c.external_id or "", c.id),
        "updated": lambda c: (c.updated_at, c.id),
    }
    return keys[field]


def find_contexts(
    contexts: Iterable[r.Context],
    query: str = "",
    sort: str = "id",
    order: Order = "asc",
    workspace: str | None = None,
) -> list[r.Context]:
    """Contexts whose title, content, tags or external id hold every word of ``query``
    (case-insensitive), in ``workspace`` if given, sorted by ``sort``."""
    words = query.casefold().split()

    def matches(c: r.Context) -> bool:
        if workspace is not None and c.workspace != workspace:
            return False
        text = " ".join((c.title, c.content, " ".join(c.tags), c.external_id or "")).casefold()
        return all(w in text for w in words)

    field = sort if sort in SORTABLE else "id"
    return sorted(filter(matches, contexts), key=_sort_key(field), reverse=order == "desc")


def text_bytes(text: str) -> int:
    """Bytes of ``text`` in UTF-8, a lone surrogate (which a store may hold) counted as the
    three bytes the fake's size checks count it as, instead of failing."""
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One line of a memory directory as the memory tool lists it."""

    path: str  # as a tool pinned to the workspace shows it: /memories/a/b.md, dirs end in /
    name: str
    depth: int  # 1: directly under /memories
    size: int
    context_id: int | None  # None for a directory

    @property
    def size_text(self) -> str:
        return format_size(self.size)

    @property
    def is_dir(self) -> bool:
        return self.context_id is None


@dataclass(frozen=True, slots=True)
class MemoryTree:
    workspace: str
    entries: tuple[TreeEntry, ...]

    @property
    def size_text(self) -> str:
        return format_size(sum(e.size for e in self.entries if e.depth == 1))

    @property
    def files(self) -> int:
        return sum(1 for e in self.entries if not e.is_dir)


def memory_trees(contexts: Iterable[r.Context], tag: str = MEMORY_TAG) -> list[MemoryTree]:
    """Each workspace's memory files (rows the memory tool wrote with ``tag``), drawn as
    the directory tree a tool pinned to that workspace shows, every level deep."""
    # the adapter's own mapping of paths to rows; imported here, as it loads the SDK
    from adapter.paths import ROOT, decode_external_id

    by_workspace: dict[str, dict[str, r.Context]] = {}
    for c in contexts:
        owner = decode_external_id(tag, c.external_id)
        if owner is not None:
            by_workspace.setdefault(owner[0], {})[owner[1]] = c
    trees = []
    for slug in sorted(by_workspace):
        files = by_workspace[slug]
        listed = tree(((rest, text_bytes(c.content)) for rest, c in files.items()), None)
        entries = []
        for size, rel in listed:
            is_dir = rel.endswith("/")
            name = rel.rstrip("/").rsplit("/", 1)[-1] + ("/" if is_dir else "")
            found = None if is_dir else files.get(rel)
            entries.append(
                TreeEntry(
                    path=f"{ROOT}/{rel}",
                    name=name,
                    depth=rel.rstrip("/").count("/") + 1,
                    size=size,
                    context_id=None if found is None else found.id,
                )
            )
        trees.append(MemoryTree(slug, tuple(entries)))
    return trees


@dataclass(frozen=True, slots=True)
class AuditStatus:
    rows: int
    ok: bool
    broken_row: int | None = None
    reason: str | None = None


def audit_status(backend: ContextQBackend) -> AuditStatus:
    rows = backend.audit_rows()
    try:
        backend.verify_audit_chain()
    except AuditChainError as exc:
        return AuditStatus(len(rows), False, exc.row_id, exc.reason)
    return AuditStatus(len(rows), True)


class Entry(Protocol):
    """A journal entry, as the dashboard reads it (``fake_contextq.service.journal``)."""

    @property
    def number(self) -> int: ...
    @property
    def method(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def status(self) -> int | None: ...
    @property
    def tenant_id(self) -> int | None: ...
    @property
    def duration(self) -> float: ...
    @property
    def fault(self) -> bool: ...
    @property
    def at(self) -> float: ...
    @property
    def request_body(self) -> bytes: ...
    @property
    def response_body(self) -> bytes: ...
    @property
    def body_cut(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class JournalFilter:
    """``status``: a code (404) or a class (4xx); ``route``: a piece of the target;
    ``tenant``: a tenant id, or ``-`` for requests that never authenticated."""

    status: str = ""
    route: str = ""
    tenant: str = ""

    def matches(self, entry: Entry) -> bool:
        shown = "dropped" if entry.status is None else str(entry.status)
        if self.status:
            want = self.status.strip().lower()
            if want.endswith("xx"):
                if not shown.startswith(want[0]):
                    return False
            elif shown != want:
                return False
        if self.route and self.route.strip() not in f"{entry.method} {entry.target}":
            return False
        if self.tenant:
            holder = "-" if entry.tenant_id is None else str(entry.tenant_id)
            if holder != self.tenant.strip():
                return False
        return True


def entry_json(entry: Entry) -> dict[str, Any]:
    """What the live journal sends the page for a new row (the page escapes it)."""
    return {
        "number": entry.number,
        "method": entry.method,
        "target": entry.target,
        "status": "dropped" if entry.status is None else str(entry.status),
        "tenant": "-" if entry.tenant_id is None else str(entry.tenant_id),
        "ms": f"{entry.duration * 1000:.2f}",
        "fault": entry.fault,
    }


#: The deepest JSON the pages indent (ContextQ's own limit on a request's nesting); deeper
#: JSON is shown as received. Python's json recurses once a level, so unbounded nesting
#: (a journaled body, or a value stored through the Python API) could end the page in a
#: RecursionError.
SHOWN_DEPTH = wire.MAX_JSON_DEPTH
#: The most text indented JSON may grow to (characters): indenting repeats each level's
#: spaces on every line below it, so a small deep body could grow without bound.
SHOWN_CHARS = 256 * 1024


@dataclass(frozen=True, slots=True)
class ShownJson:
    """JSON for reading, and why it is not indented when it is not."""

    text: str
    note: str | None = None


def shown_body(raw: bytes) -> ShownJson:
    """A journaled body for reading: JSON indented, anything else (or JSON too deep, or
    too long once indented) as the text received, with a note saying why."""
    if not raw:
        return ShownJson("")
    text = raw.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except RecursionError:
        return ShownJson(text, _msgs.JSON_SHOWN_TOO_DEEP.format(depth=SHOWN_DEPTH))
    except ValueError:
        return ShownJson(text)
    if _deeper_than(value, SHOWN_DEPTH):
        return ShownJson(text, _msgs.JSON_SHOWN_TOO_DEEP.format(depth=SHOWN_DEPTH))
    indented = _indented(value)
    if indented is None:
        return ShownJson(text, _msgs.JSON_SHOWN_TOO_LONG.format(chars=SHOWN_CHARS))
    return ShownJson(indented)


def shown_json(value: Any) -> ShownJson:
    """A stored JSON value (metadata, a checkpoint's state) for reading: indented, or on
    one line with a note when too deep or too long to indent."""
    if not _deeper_than(value, SHOWN_DEPTH):
        indented = _indented(value)
        if indented is not None:
            return ShownJson(indented)
        note = _msgs.JSON_SHOWN_TOO_LONG.format(chars=SHOWN_CHARS)
    else:
        note = _msgs.JSON_SHOWN_TOO_DEEP.format(depth=SHOWN_DEPTH)
    try:
        return ShownJson(json.dumps(value, ensure_ascii=False), note)
    except RecursionError:  # deeper than even one line can be written
        return ShownJson("", note)


def _indented(value: Any) -> str | None:
    """``value`` as indented JSON, or None once it would pass ``SHOWN_CHARS``."""
    parts: list[str] = []
    size = 0
    for part in json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(value):
        size += len(part)
        if size > SHOWN_CHARS:
            return None
        parts.append(part)
    return "".join(parts)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels (walked without
    recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth == limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children)
    return False


def recent(entries: Sequence[Entry], wanted: JournalFilter, limit: int) -> list[Entry]:
    """The newest ``limit`` entries that match, newest first."""
    out: list[Entry] = []
    for entry in reversed(entries):
        if wanted.matches(entry):
            out.append(entry)
            if len(out) == limit:
                break
    return out


__all__ = [
    "AuditStatus",
    "JournalFilter",
    "MemoryTree",
    "ShownJson",
    "TenantRow",
    "TreeEntry",
    "audit_status",
    "entry_json",
    "find_contexts",
    "memory_trees",
    "recent",
    "shown_body",
    "shown_json",
    "tenant_row",
    "tenant_rows",
    "text_bytes",
]
