"""The global audit hash chain: one row per successful write, none for reads."""

from __future__ import annotations

from dataclasses import fields
from itertools import pairwise
from types import MappingProxyType

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_contextq import AuditChainError, FakeContextQ, Tenant
from fake_contextq.domain.audit import AUDIT_HASHED_FIELDS, AuditAction, audit_hash
from fake_contextq.domain.records import AuditDraft, AuditRow
from tests.support.helpers import context_body
from tests.support.stores import delete_audit, tamper_audit

pytestmark = pytest.mark.all_stores


def test_writes_append_chained_rows_and_reads_do_not(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    created = client.post("/api/contexts", json=context_body(externalId="e")).json()
    client.get(f"/api/contexts/{created['id']}")
    client.get("/api/contexts")
    client.post("/api/search", json={"query": "note"})
    client.get("/api/workspaces")
    client.put(f"/api/contexts/{created['id']}", json={"content": "v2"})
    client.post("/api/contexts/bulk-upsert", json={"contexts": [context_body(externalId="f")]})
    client.post("/api/workspaces", json={"slug": "ws"})
    client.post("/api/workspaces/ws/archive")
    client.delete("/api/workspaces/ws")
    client.delete(f"/api/contexts/{created['id']}")

    rows = fake.audit_log()
    A = AuditAction
    assert [r.action for r in rows] == [
        A.CONTEXT_CREATE,
        A.CONTEXT_UPDATE,
        A.CONTEXT_BULK_UPSERT,
        A.WORKSPACE_CREATE,
        A.WORKSPACE_ARCHIVE,
        A.WORKSPACE_DELETE,
        A.CONTEXT_DELETE,
    ]
    assert rows[0].prev_hash is None
    assert all(b.prev_hash == a.hash for a, b in pairwise(rows))
    assert {r.tenant_id for r in rows} == {tenant.id}
    assert {r.actor_key_prefix for r in rows} == {key[:12]}
    assert rows[0].entity_id == str(created["id"])
    assert fake.verify_audit_chain() == 7


def test_failed_writes_leave_no_row(client: httpx2.Client, fake: FakeContextQ) -> None:
    client.post("/api/contexts", json={"type": "bad"})
    client.put("/api/contexts/999", json={"content": "x"})
    client.delete("/api/workspaces/none")
    assert fake.audit_log() == []


def test_the_chain_is_global_across_tenants(
    client: httpx2.Client, fake: FakeContextQ, other: tuple[Tenant, httpx2.Client]
) -> None:
    client.post("/api/contexts", json=context_body())
    other[1].post("/api/contexts", json=context_body())
    client.post("/api/contexts", json=context_body())
    rows = fake.audit_log()
    assert [r.tenant_id for r in rows] == [1, other[0].id, 1]
    assert rows[1].prev_hash == rows[0].hash and rows[2].prev_hash == rows[1].hash


def test_the_hash_follows_the_contract_formula(client: httpx2.Client, fake: FakeContextQ) -> None:
    client.post("/api/contexts", json=context_body())
    client.post("/api/contexts", json=context_body())
    first, second = fake.audit_log()
    assert second.hash == audit_hash(first.hash, second.hashed_fields())


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("action", "context.delete", "does not match its contents"),
        ("tenant_id", "other tenant", "does not match its contents"),
        ("prev_hash", "0" * 64, "does not match the hash of row"),
    ],
)
def test_verify_catches_a_tampered_row(
    client: httpx2.Client, fake: FakeContextQ, field: str, value: object, reason: str
) -> None:
    if value == "other tenant":  # a real tenant, so a SQL store's foreign key holds
        value = fake.create_tenant("globex").id
    for _ in range(4):
        client.post("/api/contexts", json=context_body())
    victim = fake.audit_log()[2]
    tamper_audit(fake.store, victim.id, **{field: value})
    with pytest.raises(AuditChainError, match=reason) as caught:
        fake.verify_audit_chain()
    assert caught.value.row_id == victim.id


def test_verify_catches_a_removed_row(client: httpx2.Client, fake: FakeContextQ) -> None:
    for _ in range(3):
        client.post("/api/contexts", json=context_body())
    removed, after = fake.audit_log()[1:3]
    delete_audit(fake.store, removed.id)
    with pytest.raises(AuditChainError, match=f"audit row {after.id}: prev_hash"):
        fake.verify_audit_chain()


def test_an_empty_log_verifies(fake: FakeContextQ) -> None:
    assert fake.verify_audit_chain() == 0


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(st.sampled_from(["write", "read", "verify"]), min_size=1, max_size=12))
def test_every_read_of_the_chain_sees_every_write_before_it_chained_in_order(
    fake: FakeContextQ, key: str, steps: list[str]
) -> None:
    """However writes and reads of the chain interleave (the memory store chains a write's
    row when the chain is next read), every read holds every write so far, in order, with
    consecutive ids, each row hashed over the one before."""
    fake.reset()
    tenant = fake.create_tenant()
    written = 0
    with fake.client(fake.mint_key(tenant)) as client:
        for step in steps:
            if step == "write":
                response = client.post("/api/contexts", json=context_body(content=f"n{written}"))
                assert response.status_code == 201
                written += 1
                continue
            rows = fake.audit_log()
            assert len(rows) == written
            ids = [r.id for r in rows]
            assert ids == list(range(ids[0], ids[0] + written)) if rows else ids == []
            assert all(b.prev_hash == a.hash for a, b in pairwise(rows))
            if step == "verify":
                assert fake.verify_audit_chain() == written
    assert fake.verify_audit_chain() == written


def test_a_row_hashes_the_same_from_any_mapping_of_its_fields() -> None:
    fields = {
        "id": 1,
        "tenant_id": 1,
        "actor_key_prefix": "sk_live_abcd",
        "action": "context.create",
        "entity": "context",
        "entity_id": None,
        "at": "2026-01-01T00:00:00.000Z",
    }
    expected = audit_hash(None, fields)
    assert audit_hash(None, MappingProxyType(fields)) == expected
    assert audit_hash(None, {**fields, "prev_hash": "ignored"}) == expected
    with pytest.raises(KeyError):
        audit_hash(None, {k: v for k, v in fields.items() if k != "at"})


def test_a_draft_holds_a_row_s_hashed_fields_after_its_id_in_order() -> None:
    """``chain_row`` pairs a draft's values with ``AUDIT_HASHED_FIELDS`` by position."""
    assert (*AuditDraft._fields,) == AUDIT_HASHED_FIELDS[1:]
    assert tuple(f.name for f in fields(AuditRow))[: len(AUDIT_HASHED_FIELDS)] == (
        AUDIT_HASHED_FIELDS
    )
