"""The agent layer end to end: the full life of a run and the boot of the next, and the
one chained audit row each agent write appends (and each read does not)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from fake_contextq import FakeContextQ
from fake_contextq.domain import keys
from fake_contextq.domain.audit import AgentAction, AuditAction
from tests.support.helpers import (
    actions,
    boot,
    checkpoint,
    context_body,
    error,
    lesson,
    ok,
    resume,
    start,
    tick,
    upsert,
)

pytestmark = pytest.mark.all_stores

A = AgentAction


def test_the_full_life_of_a_run_and_the_boot_of_the_next(llm_fake: FakeContextQ) -> None:
    fake = llm_fake
    tenant = fake.create_tenant("cyberine")
    fake.create_workspace(tenant, "cyberine")
    key = fake.mint_key(tenant, ("read", "write"))
    with fake.client(key) as c:
        c.post(
            "/api/contexts",
            json=context_body(title="Schema guide", content="How to migrate the schema safely."),
        )
        run = start(
            c, workspace="cyberine", metadata={"cyberineRunId": "run-1", "workflow": "ship"}
        )
        sid = run["id"]

        states = [{"step": i, "files": [f"f{j}.py" for j in range(i)]} for i in (1, 2, 3)]
        cps = []
        for i, state in enumerate(states, start=1):
            cp = ok(checkpoint(c, sid, i, state, summary=f"step {i}"), 201)
            assert (cp["seq"], cp["session_id"], cp["state"], cp["summary"]) == (
                i,
                sid,
                state,
                f"step {i}",
            )
            cps.append(cp)

        root = ok(upsert(c, sid, "ship", title="Ship the release"), 201)
        tests = ok(upsert(c, sid, "ship/tests", title="Write the tests", parent_key="ship"), 201)
        unit = ok(
            upsert(c, sid, "ship/tests/unit", title="Unit tests", parent_key="ship/tests"), 201
        )
        docs = ok(upsert(c, sid, "ship/docs", title="Update the docs", parent_key="ship"), 201)
        assert root["parent_id"] is None
        assert tests["parent_id"] == root["id"]
        assert unit["parent_id"] == tests["id"]
        assert docs["parent_id"] == root["id"]
        ok(upsert(c, sid, "ship/tests", title="Write the tests", status="in_progress"))

        ticked = ok(tick(c, unit["id"], "pytest: 42 passed"))
        assert (ticked["status"], ticked["evidence"]) == ("verified", "pytest: 42 passed")
        ok(tick(c, docs["id"], "README section added"))

        l1 = lesson(
            c,
            "Run database migrations before deploying.",
            workspace="cyberine",
            session_id=sid,
            tags=["ops"],
        )
        l2 = lesson(
            c,
            "Pin the CI image; floating tags broke the build.",
            workspace="cyberine",
            session_id=sid,
        )
        assert l1["embedded"] and l2["embedded"]
        assert l1["tags"] == ["ops"] and l1["session_id"] == sid

        ended = ok(
            c.post(
                f"/api/agent/sessions/{sid}/end",
                json={"status": "completed", "summary": "released"},
            )
        )
        assert ended["status"] == "completed"

        listed = ok(c.get(f"/api/agent/sessions/{sid}/tasks"))["items"]
        assert [t["key"] for t in listed] == ["ship", "ship/tests", "ship/tests/unit", "ship/docs"]

        handoff = ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)
        assert handoff["workspace"] == "cyberine" and handoff["session_id"] == sid
        content = handoff["content"]
        for done in ("Unit tests", "pytest: 42 passed", "Update the docs", "README section added"):
            assert done in content
        for text in (l1["text"], l2["text"]):
            assert text in content
        assert "released" in content

        # the next run boots before it starts its session
        pack = boot(c, "migrate the schema", workspace="cyberine")
        assert pack["workspace"] == "cyberine"
        assert pack["handoff"] == handoff
        assert {x["id"] for x in pack["lessons"]} == {l1["id"], l2["id"]}
        assert pack["resume"]["session"] == ended
        assert pack["resume"]["checkpoint"] == cps[-1]
        open_keys = [t["key"] for t in pack["resume"]["open_tasks"]]
        assert open_keys == ["ship", "ship/tests"]
        assert pack["resume"] == resume(c, sid)
        assert [f["context"]["title"] for f in pack["facts"]] == ["Schema guide"]
        assert not pack["truncated"]

        nxt = start(
            c, workspace="cyberine", parent_session_id=sid, metadata={"cyberineRunId": "run-2"}
        )
        assert nxt["parent_session_id"] == sid and nxt["status"] == "active"
        # the old run's resume is untouched by the new one
        assert resume(c, sid)["checkpoint"] == cps[-1]
        assert resume(c, nxt["id"]) == {"session": nxt, "checkpoint": None, "open_tasks": []}

    assert actions(fake) == [
        AuditAction.CONTEXT_CREATE,
        A.SESSION_START,
        A.CHECKPOINT,
        A.CHECKPOINT,
        A.CHECKPOINT,
        A.TASK_UPSERT,
        A.TASK_UPSERT,
        A.TASK_UPSERT,
        A.TASK_UPSERT,
        A.TASK_UPSERT,
        A.TASK_TICK,
        A.TASK_TICK,
        A.LESSON_ADD,
        A.LESSON_ADD,
        A.SESSION_END,
        A.HANDOFF,
        A.SESSION_START,
    ]
    assert fake.verify_audit_chain() == len(fake.audit_log())


# ----- audit -----------------------------------------------------------------------------------


def test_every_agent_write_appends_one_chained_row_and_reads_none(llm_fake: FakeContextQ) -> None:
    fake = llm_fake
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    key = fake.mint_key(tenant, ("read", "write"))
    expected: list[tuple[str, str, str]] = []
    with fake.client(key) as c:

        def reads(sid: int) -> None:
            n = len(fake.audit_log())
            ok(c.get(f"/api/agent/sessions/{sid}"))
            ok(c.get(f"/api/agent/sessions/{sid}/resume"))
            ok(c.get(f"/api/agent/sessions/{sid}/tasks"))
            boot(c, "anything", workspace="ws")
            assert len(fake.audit_log()) == n

        s = start(c, workspace="ws")
        expected.append((A.SESSION_START, "agent_session", str(s["id"])))
        reads(s["id"])
        cp = ok(checkpoint(c, s["id"], 1), 201)
        expected.append((A.CHECKPOINT, "agent_checkpoint", str(cp["id"])))
        t = ok(upsert(c, s["id"], "k"), 201)
        expected.append((A.TASK_UPSERT, "agent_task", str(t["id"])))
        ok(upsert(c, s["id"], "k", title="again"))
        expected.append((A.TASK_UPSERT, "agent_task", str(t["id"])))
        ok(tick(c, t["id"], "ok"))
        expected.append((A.TASK_TICK, "agent_task", str(t["id"])))
        le = lesson(c, "a lesson", workspace="ws")
        expected.append((A.LESSON_ADD, "agent_lesson", str(le["id"])))
        h = ok(c.post("/api/agent/handoff", json={"session_id": s["id"]}), 201)
        expected.append((A.HANDOFF, "agent_handoff", str(h["id"])))
        ok(c.post(f"/api/agent/sessions/{s['id']}/end", json={"status": "completed"}))
        expected.append((A.SESSION_END, "agent_session", str(s["id"])))
        reads(s["id"])

        # failed writes append nothing
        n = len(fake.audit_log())
        error(checkpoint(c, s["id"], 1), 409, "seq_conflict")
        error(checkpoint(c, s["id"], 0), 400, "validation_error")
        error(tick(c, t["id"], " "), 422, "evidence_required")
        error(upsert(c, s["id"], "z", parent_key="missing"), 404, "not_found")
        error(c.post("/api/agent/handoff", json={}), 400, "no_workspace")
        error(c.post("/api/agent/sessions/999/end", json={"status": "failed"}), 404, "not_found")
        assert len(fake.audit_log()) == n

    rows = fake.audit_log()
    assert [(r.action, r.entity, r.entity_id) for r in rows] == expected
    assert all(r.tenant_id == tenant.id for r in rows)
    assert all(r.actor_key_prefix == keys.key_display_prefix(key) for r in rows)
    assert {r.action for r in rows} == {
        v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)
    }
    assert rows[0].prev_hash is None
    assert all(b.prev_hash == a.hash for a, b in pairwise(rows))
    assert fake.verify_audit_chain() == len(rows)
