"""Agent sessions: start, get and end, metadata kept exactly, parent sessions and the
unknown-workspace trap."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.audit import AgentAction
from tests.support.helpers import actions, error, issue_paths, ok, resume, start

pytestmark = pytest.mark.all_stores

A = AgentAction


def test_session_start_get_and_shape(client: httpx2.Client, fake: FakeContextQ) -> None:
    created = ok(client.post("/api/agent/sessions", json={}), 201)
    assert set(created) == {
        "id",
        "workspace",
        "parent_session_id",
        "status",
        "summary",
        "metadata",
        "started_at",
        "ended_at",
    }
    assert created["workspace"] is None
    assert created["parent_session_id"] is None
    assert created["status"] == wire.SESSION_STATUS_ACTIVE
    assert created["summary"] is None and created["ended_at"] is None
    assert created["metadata"] == {}
    assert created["started_at"].endswith("Z")
    assert ok(client.get(f"/api/agent/sessions/{created['id']}")) == created
    assert actions(fake) == [A.SESSION_START]


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"cyberineRunId": "2b7e-uuid", "previousRunId": None, "workers": 3},
        {
            "lineage": {"rootRunId": "r0", "chain": ["r0", "r1", {"deep": [1, 2.5, True, None]}]},
            "unicode": "żółć ✓ 日本",
            "float": 0.1,
            "big": 2**53,
            "neg": -1e-7,
            "empty": {"a": [], "b": {}},
            "ordering": {"z": 1, "a": 2, "m": 3},
        },
    ],
    ids=["empty", "flat", "nested"],
)
def test_session_metadata_is_kept_exactly(client: httpx2.Client, metadata: dict[str, Any]) -> None:
    created = start(client, metadata=metadata)
    assert created["metadata"] == metadata
    fetched = ok(client.get(f"/api/agent/sessions/{created['id']}"))
    assert fetched["metadata"] == metadata
    assert list(fetched["metadata"]) == list(metadata)  # key order survives
    assert resume(client, created["id"])["session"]["metadata"] == metadata


def test_session_metadata_null_is_empty_and_bad_metadata_is_refused(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    assert start(client, metadata=None)["metadata"] == {}
    for bad in ([1, 2], "text", 5, True):
        body = error(
            client.post("/api/agent/sessions", json={"metadata": bad}), 400, "validation_error"
        )
        assert issue_paths(body) == {"metadata"}
    too_big = {"blob": "x" * wire.MAX_METADATA_BYTES}
    body = error(
        client.post("/api/agent/sessions", json={"metadata": too_big}), 400, "validation_error"
    )
    assert issue_paths(body) == {"metadata"}
    assert actions(fake) == [A.SESSION_START]


@pytest.mark.parametrize("status", wire.SESSION_END_STATUSES)
def test_session_end_with_each_status(
    client: httpx2.Client, fake: FakeContextQ, status: str
) -> None:
    sid = start(client, metadata={"k": "v"})["id"]
    ended = ok(
        client.post(f"/api/agent/sessions/{sid}/end", json={"status": status, "summary": "done"})
    )
    assert ended["status"] == status
    assert ended["summary"] == "done"
    assert ended["ended_at"] is not None and ended["ended_at"].endswith("Z")
    assert ended["metadata"] == {"k": "v"}
    assert ok(client.get(f"/api/agent/sessions/{sid}")) == ended
    assert actions(fake) == [A.SESSION_START, A.SESSION_END]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"status": "done"},
        {"status": "active"},
        {"status": "COMPLETED"},
        {"status": None},
        {"status": 1},
        {"status": "completed", "summary": 5},
        {"status": "completed", "summary": "x" * (wire.MAX_TEXT_CHARS + 1)},
    ],
)
def test_session_end_refuses_a_bad_status(
    client: httpx2.Client, fake: FakeContextQ, body: dict[str, Any]
) -> None:
    sid = start(client)["id"]
    error(client.post(f"/api/agent/sessions/{sid}/end", json=body), 400, "validation_error")
    assert ok(client.get(f"/api/agent/sessions/{sid}"))["status"] == "active"
    assert actions(fake) == [A.SESSION_START]


def test_parent_session_must_be_the_tenants_own(
    client: httpx2.Client, fake: FakeContextQ, other: tuple[Tenant, httpx2.Client]
) -> None:
    parent = start(client)["id"]
    child = start(client, parent_session_id=parent)
    assert child["parent_session_id"] == parent
    assert ok(client.get(f"/api/agent/sessions/{child['id']}"))["parent_session_id"] == parent

    _, theirs = other
    foreign = start(theirs)["id"]
    error(client.post("/api/agent/sessions", json={"parent_session_id": foreign}), 404, "not_found")
    error(client.post("/api/agent/sessions", json={"parent_session_id": 999_999}), 404, "not_found")
    error(theirs.post("/api/agent/sessions", json={"parent_session_id": parent}), 404, "not_found")
    for bad in (0, -1, "1", 1.5, True, [parent]):
        body = error(
            client.post("/api/agent/sessions", json={"parent_session_id": bad}),
            400,
            "validation_error",
        )
        assert issue_paths(body) == {"parent_session_id"}
    assert actions(fake) == [A.SESSION_START] * 3


def test_an_unknown_workspace_slug_silently_leaves_no_workspace(
    llm_fake: FakeContextQ,
) -> None:
    """The seed's trap: no error, the session just has no workspace, and handoff then 400s."""
    tenant = llm_fake.create_tenant()
    llm_fake.create_workspace(tenant, "known")
    with llm_fake.client(llm_fake.mint_key(tenant, wire.SCOPES)) as c:
        known = start(c, workspace="known")
        assert known["workspace"] == "known"
        lost = start(c, workspace="typo-in-slug")
        assert lost["workspace"] is None
        assert ok(c.get(f"/api/agent/sessions/{lost['id']}"))["workspace"] is None
        error(c.post("/api/agent/handoff", json={"session_id": lost["id"]}), 400, "no_workspace")
        # naming the workspace in the body rescues it
        written = ok(
            c.post("/api/agent/handoff", json={"session_id": lost["id"], "workspace": "known"}),
            201,
        )
        assert written["workspace"] == "known" and written["session_id"] == lost["id"]
    # a workspace of another tenant is unknown here too
    stranger = llm_fake.create_tenant()
    with llm_fake.client(llm_fake.mint_key(stranger, wire.SCOPES)) as c:
        assert start(c, workspace="known")["workspace"] is None
