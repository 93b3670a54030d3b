"""The global, tamper-evident audit hash chain (``activity_logs``)."""

from __future__ import annotations

from collections.abc import Iterable

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import AuditChainError
from fake_contextq.domain.records import AuditRow


def chain_row(
    prev_hash: str | None,
    *,
    row_id: int,
    tenant_id: int,
    actor_key_prefix: str | None,
    action: str,
    entity: str,
    entity_id: str | None,
    at: str,
) -> AuditRow:
    """The next row after the one hashed ``prev_hash``, hashed over its fields and it."""
    fields = {
        "id": row_id,
        "tenant_id": tenant_id,
        "actor_key_prefix": actor_key_prefix,
        "action": action,
        "entity": entity,
        "entity_id": entity_id,
        "at": at,
    }
    return AuditRow(
        id=row_id,
        tenant_id=tenant_id,
        actor_key_prefix=actor_key_prefix,
        action=action,
        entity=entity,
        entity_id=entity_id,
        at=at,
        prev_hash=prev_hash,
        hash=wire.audit_hash(prev_hash, fields),
    )


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
        expected = wire.audit_hash(row.prev_hash, row.hashed_fields())
        if row.hash != expected:
            raise AuditChainError(
                row.id, _msgs.CHAIN_HASH_MISMATCH.format(id=row.id, got=row.hash, expected=expected)
            )
        prev = row
        count += 1
    return count
