"""``FakeContextQ.agent_state``: a tenant's whole Agent Memory Layer in one read, as the
dashboard shows it and a test asserts on it, the same on every store."""

from __future__ import annotations

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import checkpoint, lesson, ok, start, tick, upsert

pytestmark = pytest.mark.all_stores


def test_every_session_comes_with_its_checkpoints_tasks_and_lineage(
    llm_fake: FakeContextQ,
) -> None:
    fake = llm_fake
    tenant = fake.create_tenant("acme")
    other = fake.create_tenant("globex")
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, ("read", "write"))) as c:
        first = start(c, workspace="ws")["id"]
        for seq in (1, 2, 3):
            ok(checkpoint(c, first, seq, {"step": seq}, summary=f"step {seq}"), 201)
        task = ok(upsert(c, first, "migrate", title="Migrate the schema"), 201)["id"]
        ok(tick(c, task, "tests pass"))
        ok(upsert(c, first, "docs", title="Write the docs"), 201)
        second = start(c, workspace="ws", parent_session_id=first)["id"]
        lesson(c, "Run migrations in a transaction.", workspace="ws")
        ok(c.post("/api/agent/handoff", json={"session_id": second}), 201)
    with fake.client(fake.mint_key(other, ("read", "write"))) as c:
        start(c)

    state = fake.agent_state(tenant)

    assert [s.session.id for s in state.sessions] == [first, second]
    one, two = state.sessions
    assert [c.seq for c in one.checkpoints] == [1, 2, 3]
    assert one.checkpoints[-1].state == {"step": 3}
    assert [(t.key, t.status, t.evidence) for t in one.tasks] == [
        ("migrate", "verified", "tests pass"),
        ("docs", "pending", None),
    ]
    assert two.session.parent_session_id == first and two.checkpoints == ()
    assert [lesson.text for lesson in state.lessons] == ["Run migrations in a transaction."]
    [handoff] = state.handoffs
    assert handoff.session_id == second and handoff.workspace == "ws"
    assert len(fake.agent_state(other).sessions) == 1


def test_a_tenant_without_agent_rows_has_an_empty_state(fake: FakeContextQ, tenant: Tenant) -> None:
    state = fake.agent_state(tenant)
    assert (state.sessions, state.lessons, state.handoffs) == ((), (), ())


def test_reading_the_state_writes_no_audit_row(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client
) -> None:
    start(client)
    rows = len(fake.audit_log())
    fake.agent_state(tenant)
    assert len(fake.audit_log()) == rows
