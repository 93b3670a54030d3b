"""Tasks: upserts keyed by session and key, statuses, the task tree, the evidence a
verified task needs, and another tenant's tasks."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.audit import AgentAction
from tests.support.helpers import actions, error, issue_paths, ok, resume, start, tick, upsert

pytestmark = pytest.mark.all_stores

A = AgentAction


def test_task_upsert_is_keyed_by_session_and_key(client: httpx2.Client, fake: FakeContextQ) -> None:
    a, b = start(client)["id"], start(client)["id"]
    first = ok(upsert(client, a, "build", title="Build it"), 201)
    assert first["status"] == "pending" and first["evidence"] is None
    assert first["session_id"] == a and first["key"] == "build"
    again = ok(upsert(client, a, "build", title="Build it well", status="in_progress"), 200)
    assert again["id"] == first["id"]
    assert (again["title"], again["status"]) == ("Build it well", "in_progress")
    assert again["created_at"] == first["created_at"]
    same_key_elsewhere = ok(upsert(client, b, "build"), 201)
    assert same_key_elsewhere["id"] != first["id"]
    assert [t["id"] for t in ok(client.get(f"/api/agent/sessions/{a}/tasks"))["items"]] == [
        first["id"]
    ]
    assert actions(fake).count(A.TASK_UPSERT) == 3


@pytest.mark.parametrize("status", wire.TASK_OPEN_STATUSES)
def test_task_open_statuses(client: httpx2.Client, status: str) -> None:
    sid = start(client)["id"]
    task = ok(upsert(client, sid, "t", status=status), 201)
    assert task["status"] == status
    assert resume(client, sid)["open_tasks"] == [task]


@pytest.mark.parametrize("status", ["done", "VERIFIED", "", None, 1])
def test_task_refuses_an_unknown_status(client: httpx2.Client, status: Any) -> None:
    sid = start(client)["id"]
    body = error(upsert(client, sid, "t", status=status), 400, "validation_error")
    assert issue_paths(body) == {"status"}


def test_task_tree_parent_keys(client: httpx2.Client, fake: FakeContextQ) -> None:
    sid = start(client)["id"]
    other_sid = start(client)["id"]
    root = ok(upsert(client, sid, "root"), 201)
    child = ok(upsert(client, sid, "child", parent_key="root"), 201)
    assert child["parent_id"] == root["id"]
    error(upsert(client, sid, "orphan", parent_key="nope"), 404, "not_found")
    error(upsert(client, other_sid, "x", parent_key="root"), 404, "not_found")  # other session
    # updating without parent_key keeps the parent
    assert ok(upsert(client, sid, "child", title="renamed"))["parent_id"] == root["id"]
    # a task cannot be its own parent
    body = error(upsert(client, sid, "root", parent_key="root"), 400, "validation_error")
    assert issue_paths(body) == {"parent_key"}
    keys = [t["key"] for t in ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"]]
    assert keys == ["root", "child"]
    assert actions(fake).count(A.TASK_UPSERT) == 3


@pytest.mark.parametrize(
    "how",
    ["no-body", "empty-object", "null", "empty", "blank", "tabs-newlines"],
)
def test_a_tick_needs_evidence(client: httpx2.Client, fake: FakeContextQ, how: str) -> None:
    sid = start(client)["id"]
    task = ok(upsert(client, sid, "t"), 201)
    bodies: dict[str, dict[str, Any]] = {
        "no-body": {"content": b""},
        "empty-object": {"json": {}},
        "null": {"json": {"evidence": None}},
        "empty": {"json": {"evidence": ""}},
        "blank": {"json": {"evidence": "   "}},
        "tabs-newlines": {"json": {"evidence": "\t\n "}},
    }
    kwargs = bodies[how]
    error(client.post(f"/api/agent/tasks/{task['id']}/tick", **kwargs), 422, "evidence_required")
    assert ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"] == [task]
    assert actions(fake) == [A.SESSION_START, A.TASK_UPSERT]


@pytest.mark.parametrize("evidence", [None, "", "  "])
def test_upserting_verified_needs_evidence(
    client: httpx2.Client, fake: FakeContextQ, evidence: str | None
) -> None:
    sid = start(client)["id"]
    extra = {} if evidence is None else {"evidence": evidence}
    error(upsert(client, sid, "t", status="verified", **extra), 422, "evidence_required")
    assert ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"] == []
    pending = ok(upsert(client, sid, "t"), 201)
    error(upsert(client, sid, "t", status="verified", **extra), 422, "evidence_required")
    assert ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"] == [pending]
    done = ok(upsert(client, sid, "t", status="verified", evidence="  CI green  "), 200)
    assert (done["status"], done["evidence"]) == ("verified", "CI green")
    assert actions(fake) == [A.SESSION_START, A.TASK_UPSERT, A.TASK_UPSERT]


def test_a_verified_task_keeps_its_evidence(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    task = ok(upsert(client, sid, "t", title="Migrate"), 201)
    ticked = ok(tick(client, task["id"], "  migration 0043 applied  "))
    assert (ticked["status"], ticked["evidence"]) == ("verified", "migration 0043 applied")
    assert ticked["id"] == task["id"] and ticked["updated_at"] >= task["updated_at"]
    # re-upserting as verified without evidence keeps the evidence already given
    again = ok(upsert(client, sid, "t", title="Migrate the DB", status="verified"))
    assert (again["status"], again["evidence"]) == ("verified", "migration 0043 applied")
    listed = ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"]
    assert listed == [again]
    assert resume(client, sid)["open_tasks"] == []
    # a second tick replaces the evidence
    assert ok(tick(client, task["id"], "re-run: ok"))["evidence"] == "re-run: ok"


def test_tasks_of_another_tenant_are_invisible(
    client: httpx2.Client, fake: FakeContextQ, other: tuple[Tenant, httpx2.Client]
) -> None:
    sid = start(client)["id"]
    task = ok(upsert(client, sid, "mine"), 201)
    before = len(fake.audit_log())
    _, theirs = other
    error(tick(theirs, task["id"], "pwned"), 404, "not_found")
    error(tick(theirs, task["id"], None), 404, "not_found")  # 404 wins over 422
    error(upsert(theirs, sid, "mine", title="pwned"), 404, "not_found")
    error(theirs.get(f"/api/agent/sessions/{sid}/tasks"), 404, "not_found")
    assert len(fake.audit_log()) == before
    assert ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"] == [task]


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, {"session_id", "key", "title"}),
        ({"session_id": "1", "key": "k", "title": "t"}, {"session_id"}),
        ({"session_id": 0, "key": "k", "title": "t"}, {"session_id"}),
        ({"key": "", "title": "t"}, {"key"}),
        ({"key": "k" * (wire.MAX_TASK_KEY_CHARS + 1), "title": "t"}, {"key"}),
        ({"key": "k", "title": ""}, {"title"}),
        ({"key": 5, "title": ["t"]}, {"key", "title"}),
        ({"key": "k", "title": "t", "parent_key": ""}, {"parent_key"}),
        ({"key": "k", "title": "t", "evidence": 5}, {"evidence"}),
        ({"key": "k", "title": "t", "evidence": "e" * (wire.MAX_TEXT_CHARS + 1)}, {"evidence"}),
    ],
)
def test_task_body_validation(
    client: httpx2.Client, fake: FakeContextQ, body: dict[str, Any], paths: set[str]
) -> None:
    sid = start(client)["id"]
    if body and "session_id" not in body:
        body = {"session_id": sid, **body}
    found = error(client.post("/api/agent/tasks", json=body), 400, "validation_error")
    assert issue_paths(found) == paths
    assert actions(fake) == [A.SESSION_START]


def test_a_task_tree_cannot_loop(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    ok(upsert(client, sid, "a", title="A"), 201)
    ok(upsert(client, sid, "b", title="B", parent_key="a"), 201)
    looped = client.post(
        "/api/agent/tasks", json={"session_id": sid, "key": "a", "title": "A", "parent_key": "b"}
    )
    assert looped.status_code == 400
    assert "loop" in looped.json()["issues"][0]["message"]


def test_an_upsert_without_a_status_keeps_the_status(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    ok(upsert(client, sid, "a", title="A", status="verified", evidence="done"), 201)
    again = ok(upsert(client, sid, "a", title="A renamed"), 200)
    assert (again["status"], again["evidence"], again["title"]) == ("verified", "done", "A renamed")
