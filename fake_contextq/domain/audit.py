"""The global, tamper-evident audit hash chain (``activity_logs``): the action names it
records, how a row is hashed, and the check of every link.

A service's record of its own writes, never sent to a client: it lives with the fake, not
in ``adapter.wire``. Each fact is marked ``[public]``, ``[seed]`` or ``[assumed]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from adapter.wire import canonical_json
from fake_contextq import _msgs
from fake_contextq.domain.errors import AuditChainError
from fake_contextq.domain.records import AuditDraft, AuditRow

AUDIT_HASHED_FIELDS: Final = (  # [assumed] the fields covered by a row's hash
    "id",
    "tenant_id",
    "actor_key_prefix",
    "action",
    "entity",
    "entity_id",
    "at",
)


def audit_hash(prev_hash: str | None, fields: Mapping[str, Any]) -> str:
    """[assumed] ``sha256(prev_hash + canonical JSON of the other fields)``; null counts as ''."""
    payload = (prev_hash or "") + canonical_json({k: fields[k] for k in AUDIT_HASHED_FIELDS})
    # surrogatepass: a lone surrogate (legal in JSON text) must not make a write fail late
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class AuditAction:
    """[assumed] The ``action`` names written to the audit log, one per write endpoint."""

    CONTEXT_CREATE: Final = "context.create"
    CONTEXT_UPDATE: Final = "context.update"
    CONTEXT_DELETE: Final = "context.delete"
    CONTEXT_BULK_UPSERT: Final = "context.bulk_upsert"
    CONTEXT_IMPORT: Final = "context.import"
    SAVED_SEARCH_CREATE: Final = "saved_search.create"
    SAVED_SEARCH_UPDATE: Final = "saved_search.update"
    SAVED_SEARCH_DELETE: Final = "saved_search.delete"
    WORKSPACE_CREATE: Final = "workspace.create"
    WORKSPACE_ARCHIVE: Final = "workspace.archive"
    WORKSPACE_DELETE: Final = "workspace.delete"
    CONTEXT_DREAM: Final = "context.dream"
    CONTEXT_EVOLVE: Final = "context.evolve"
    MOC_REGENERATE: Final = "moc.regenerate"


class AgentAction:
    """[assumed] audit ``action`` names of the agent layer's writes."""

    SESSION_START: Final = "agent.session.start"
    SESSION_END: Final = "agent.session.end"
    CHECKPOINT: Final = "agent.checkpoint"
    TASK_UPSERT: Final = "agent.task.upsert"
    TASK_TICK: Final = "agent.task.tick"
    LESSON_ADD: Final = "agent.lesson.add"
    HANDOFF: Final = "agent.handoff"


class PkmAction:
    """[assumed] audit ``action`` names of links and ingest jobs."""

    LINK_CREATE: Final = "context.link"
    INGEST_SUBMIT: Final = "ingest.submit"
    INGEST_DONE: Final = "ingest.done"  # the job made its contexts (actor: its submitter)
    INGEST_FAILED: Final = "ingest.failed"


def chain_row(prev_hash: str | None, row_id: int, draft: AuditDraft) -> AuditRow:
    """The row of ``draft`` with the id ``row_id``, next after the one hashed
    ``prev_hash``: hashed over its fields and that hash. A row's fields, a draft's after its
    id, are in ``AUDIT_HASHED_FIELDS``' order."""
    values = (row_id, *draft)
    hashed = audit_hash(prev_hash, dict(zip(AUDIT_HASHED_FIELDS, values, strict=True)))
    return AuditRow(*values, prev_hash, hashed)


def verify_chain(rows: Iterable[AuditRow]) -> int:
    """Check every link; return the number of rows, or raise at the first bad one."""
    prev: AuditRow | None = None
    count = 0
    for row in rows:
        if prev is None:
            if row.prev_hash is not None:
                raise AuditChainError(row.id, _msgs.CHAIN_FIRST_HAS_PREV.format(id=row.id))
        else:
            if row.id <= prev.id:
                raise AuditChainError(
                    row.id, _msgs.CHAIN_ID_ORDER.format(id=row.id, prev_id=prev.id)
                )
            if row.prev_hash != prev.hash:
                raise AuditChainError(
                    row.id,
                    _msgs.CHAIN_PREV_MISMATCH.format(
                        id=row.id, got=row.prev_hash, prev_id=prev.id, expected=prev.hash
                    ),
                )
        expected = audit_hash(row.prev_hash, row.hashed_fields())
        if row.hash != expected:
            raise AuditChainError(
                row.id, _msgs.CHAIN_HASH_MISMATCH.format(id=row.id, got=row.hash, expected=expected)
            )
        prev = row
        count += 1
    return count
