"""Records handed out of the fake are copies: a test changing one, or an LLM hook changing
what it is given, never changes what the fake serves next."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.handoff import HandoffMaterial
from tests.support.helpers import checkpoint, ok, start

pytestmark = pytest.mark.all_stores

METADATA = {"source": "notes", "nested": {"tags": ["a", "b"]}}


def _served(client: httpx2.Client) -> list[Any]:
    """Every way REST shows the first context's metadata."""
    listed = ok(client.get("/api/contexts"), 200)["items"]
    return [
        ok(client.get("/api/contexts/1"), 200)["metadata"],
        [c["metadata"] for c in listed],
    ]


def test_a_context_changed_by_a_test_stays_as_stored(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    body = {"type": "reference", "title": "T", "content": "c", "metadata": METADATA}
    ok(client.post("/api/contexts", json=body), 201)
    before = _served(client)

    handed = fake.contexts(tenant)[0]
    handed.metadata["source"] = "changed"
    handed.metadata["nested"]["tags"].append("c")
    rendered = fake.context_json(tenant)[0]
    rendered["metadata"]["source"] = "changed too"
    rendered["metadata"]["nested"]["tags"].append("d")

    assert fake.contexts(tenant)[0].metadata == METADATA
    assert fake.context_json(tenant)[0]["metadata"] == METADATA
    assert _served(client) == before == [METADATA, [METADATA]]


def test_agent_state_changed_by_a_test_stays_as_stored(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    sid = start(client, metadata={"run": 1})["id"]
    ok(checkpoint(client, sid, 1, {"step": [1]}), 201)

    state = fake.agent_state(tenant)
    state.sessions[0].session.metadata["run"] = 2
    state.sessions[0].checkpoints[0].state["step"].append(2)

    again = fake.agent_state(tenant).sessions[0]
    assert again.session.metadata == {"run": 1}
    assert again.checkpoints[0].state == {"step": [1]}
    resumed = ok(client.get(f"/api/agent/sessions/{sid}/resume"), 200)
    assert resumed["checkpoint"]["state"] == {"step": [1]}


def test_an_llm_hook_changing_its_material_changes_nothing_stored(
    make_fake: Any,
) -> None:
    def summarise(material: HandoffMaterial) -> str:
        assert material.checkpoint is not None and material.session is not None
        material.checkpoint.state["step"].append("hook")
        material.session.metadata["by"] = "hook"
        return "handed off"

    fake: FakeContextQ = make_fake(llm=summarise)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        sid = start(c, workspace="ws", metadata={"by": "test"})["id"]
        ok(checkpoint(c, sid, 1, {"step": [1]}), 201)
        ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)
        resumed = ok(c.get(f"/api/agent/sessions/{sid}/resume"), 200)
    assert resumed["checkpoint"]["state"] == {"step": [1]}
    session = fake.agent_state(tenant).sessions[0]
    assert session.session.metadata == {"by": "test"}
    assert session.checkpoints[0].state == {"step": [1]}
