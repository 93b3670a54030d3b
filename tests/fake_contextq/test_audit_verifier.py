"""The audit-chain verifier: each kind of tampering is caught at its row, with its own
sentence, including forgeries whose own hashes are consistent."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest

from fake_contextq import AuditChainError, FakeContextQ
from fake_contextq.domain.audit import audit_hash, chain_row, verify_chain
from fake_contextq.domain.records import AuditDraft, AuditRow
from tests.support.helpers import context_body
from tests.support.stores import tamper_audit

pytestmark = pytest.mark.all_stores

AT = "2025-01-01T00:00:00Z"


def row(prev_hash: str | None, row_id: int, action: str = "context.create") -> AuditRow:
    return chain_row(
        prev_hash, row_id, AuditDraft(1, "sk_live_abcd", action, "context", str(row_id), AT)
    )


def chain(*ids: int) -> list[AuditRow]:
    """Rows with these ids, each linked to the one before and hashed consistently."""
    rows: list[AuditRow] = []
    for row_id in ids:
        rows.append(row(rows[-1].hash if rows else None, row_id))
    return rows


def refusal(rows: list[AuditRow]) -> AuditChainError:
    with pytest.raises(AuditChainError) as caught:
        verify_chain(rows)
    return caught.value


def test_a_row_is_hashed_over_every_field_and_the_previous_hash() -> None:
    made = row("ab" * 32, 7, action="context.delete")
    assert (made.id, made.tenant_id, made.actor_key_prefix, made.action) == (
        7,
        1,
        "sk_live_abcd",
        "context.delete",
    )
    assert (made.entity, made.entity_id, made.at, made.prev_hash) == ("context", "7", AT, "ab" * 32)
    assert made.hash == audit_hash("ab" * 32, made.hashed_fields())
    assert made.hash != row(None, 7, action="context.delete").hash


def test_an_honest_chain_verifies_and_is_counted() -> None:
    assert verify_chain(chain(1, 2, 5, 9)) == 4
    assert verify_chain(chain(3)) == 1
    assert verify_chain([]) == 0


def test_a_first_row_with_a_prev_hash_is_caught_even_if_its_hash_is_consistent() -> None:
    forged = chain(1, 2)[1:]  # the log cut before row 2, whose hash still checks out
    caught = refusal(forged)
    assert caught.row_id == 2
    assert str(caught) == "audit row 2: the first row of the log must have prev_hash null"


@pytest.mark.parametrize("ids", [(1, 2, 2), (1, 5, 3)])
def test_ids_that_do_not_increase_are_caught_even_if_the_hashes_link(
    ids: tuple[int, int, int],
) -> None:
    caught = refusal(chain(*ids))
    assert caught.row_id == ids[2]
    assert str(caught) == (
        f"audit row {ids[2]}: ids must increase along the chain (previous row is {ids[1]})"
    )


def test_a_row_relinked_to_the_wrong_predecessor_is_caught() -> None:
    first, second, third = chain(1, 2, 3)
    relinked = row(first.hash, 3)  # its own hash is consistent, its link skips row 2
    caught = refusal([first, second, relinked])
    assert caught.row_id == 3
    assert str(caught) == (
        f"audit row 3: prev_hash {first.hash} does not match the hash of row 2 ({second.hash})"
    )
    assert verify_chain([first, second, third]) == 3


@pytest.mark.parametrize("position", [0, 2])
def test_a_row_whose_contents_changed_is_caught(position: int) -> None:
    rows = chain(1, 2, 3)
    victim = rows[position]
    rows[position] = replace(victim, action="context.delete")
    caught = refusal(rows)
    assert caught.row_id == victim.id
    expected = audit_hash(victim.prev_hash, rows[position].hashed_fields())
    assert str(caught) == (
        f"audit row {victim.id}: stored hash {victim.hash} does not match its contents ({expected})"
    )


def test_a_row_whose_hash_was_rewritten_is_caught() -> None:
    rows = chain(1, 2)
    rows[1] = replace(rows[1], hash="0" * 64)
    caught = refusal(rows)
    assert (caught.row_id, caught.reason) == (
        2,
        f"audit row 2: stored hash {'0' * 64} does not match its contents ({chain(1, 2)[1].hash})",
    )


def test_the_fake_catches_a_forged_first_row(client: httpx2.Client, fake: FakeContextQ) -> None:
    for _ in range(2):
        assert client.post("/api/contexts", json=context_body()).status_code == 201
    first = fake.audit_log()[0]
    prev = "f" * 64
    tamper_audit(fake.store, first.id, prev_hash=prev, hash=audit_hash(prev, first.hashed_fields()))
    with pytest.raises(AuditChainError) as caught:
        fake.verify_audit_chain()
    assert caught.value.row_id == first.id
    assert str(caught.value) == (
        f"audit row {first.id}: the first row of the log must have prev_hash null"
    )
