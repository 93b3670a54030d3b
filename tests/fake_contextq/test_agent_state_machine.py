"""A stateful model of two tenants interleaving sessions, checkpoints and tasks, checked
against the fake after every step (on the memory store)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, multiple, rule

from adapter import wire
from fake_contextq import FakeContextQ
from tests.support.helpers import checkpoint, error, ok, resume, start, tick, upsert

STRANGER = st.sampled_from([False, False, False, True])


@dataclass
class TaskModel:
    id: int
    session: int
    key: str
    status: str
    evidence: str | None
    parent: int | None


class AgentLayerMachine(RuleBasedStateMachine):
    sessions = Bundle("sessions")
    tasks = Bundle("tasks")

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeContextQ()
        self.clients: list[httpx2.Client] = []
        for name in ("acme", "globex"):
            tenant = self.fake.create_tenant(name)
            self.clients.append(self.fake.client(self.fake.mint_key(tenant, wire.SCOPES)))
        self.writes = 0
        self.owner: dict[int, int] = {}
        self.accepted: dict[int, int] = {}
        self.task_rows: dict[int, TaskModel] = {}
        self.by_key: dict[tuple[int, str], int] = {}

    def client_for(self, sid: int, stranger: bool) -> httpx2.Client:
        who = self.owner[sid]
        return self.clients[1 - who if stranger else who]

    @rule(target=sessions, who=st.integers(0, 1))
    def start_session(self, who: int) -> int:
        created = start(self.clients[who], metadata={"who": who})
        sid: int = created["id"]
        assert sid not in self.owner
        self.owner[sid] = who
        self.accepted[sid] = 0
        self.writes += 1
        return sid

    @rule(sid=sessions, delta=st.sampled_from([0, 0, 0, -1, 1, 2, -50]), stranger=STRANGER)
    def post_checkpoint(self, sid: int, delta: int, stranger: bool) -> None:
        expected = self.accepted[sid] + 1
        seq = expected + delta
        response = checkpoint(self.client_for(sid, stranger), sid, seq)
        if seq < 1:
            error(response, 400, "validation_error")
        elif stranger:
            error(response, 404, "not_found")
        elif delta != 0:
            assert error(response, 409, "seq_conflict")["expected"] == expected
        else:
            assert ok(response, 201)["seq"] == expected
            self.accepted[sid] = expected
            self.writes += 1

    @rule(
        target=tasks,
        sid=sessions,
        key=st.sampled_from(["a", "b", "c"]),
        status=st.sampled_from([None, *wire.TASK_STATUSES]),
        evidence=st.sampled_from([None, "", "  ", "proof"]),
        parent_key=st.sampled_from([None, None, "a"]),
        stranger=STRANGER,
    )
    def upsert_task(
        self,
        sid: int,
        key: str,
        status: str | None,
        evidence: str | None,
        parent_key: str | None,
        stranger: bool,
    ) -> Any:
        extra: dict[str, Any] = {}
        if status is not None:
            extra["status"] = status
        if evidence is not None:
            extra["evidence"] = evidence
        if parent_key is not None:
            extra["parent_key"] = parent_key
        response = upsert(self.client_for(sid, stranger), sid, key, **extra)
        if stranger:
            error(response, 404, "not_found")
            return multiple()
        old_id = self.by_key.get((sid, key))
        old = None if old_id is None else self.task_rows[old_id]
        parent_id = None if parent_key is None else self.by_key.get((sid, parent_key))
        if parent_key is not None and parent_id is None:
            error(response, 404, "not_found")
            return multiple()
        given = (evidence or "").strip() or None
        effective = status or ("pending" if old is None else old.status)
        if effective == "verified" and given is None and (old is None or old.evidence is None):
            error(response, 422, "evidence_required")
            return multiple()
        if old is not None and self.loops(old.id, parent_id):
            error(response, 400, "validation_error")
            return multiple()
        body = ok(response, 201 if old is None else 200)
        self.writes += 1
        if old is None:
            row = TaskModel(body["id"], sid, key, effective, given, parent_id)
            self.task_rows[row.id] = row
            self.by_key[(sid, key)] = row.id
        else:
            row = old
            row.status = effective
            row.evidence = given or old.evidence
            row.parent = parent_id if parent_id is not None else old.parent
        assert (body["status"], body["evidence"], body["parent_id"]) == (
            row.status,
            row.evidence,
            row.parent,
        )
        return row.id if old is None else multiple()

    def loops(self, task_id: int, parent_id: int | None) -> bool:
        """Whether making ``parent_id`` the parent of ``task_id`` closes a loop."""
        while parent_id is not None:
            if parent_id == task_id:
                return True
            parent_id = self.task_rows[parent_id].parent
        return False

    @rule(
        tid=tasks, evidence=st.sampled_from([None, "", " \t", "ok", "  done  "]), stranger=STRANGER
    )
    def tick_task(self, tid: int, evidence: str | None, stranger: bool) -> None:
        row = self.task_rows[tid]
        response = tick(self.client_for(row.session, stranger), tid, evidence)
        if stranger:
            error(response, 404, "not_found")
        elif evidence is None or not evidence.strip():
            error(response, 422, "evidence_required")
        else:
            body = ok(response)
            row.status, row.evidence = "verified", evidence.strip()
            assert (body["status"], body["evidence"]) == (row.status, row.evidence)
            self.writes += 1

    @rule(sid=sessions)
    def strangers_see_nothing(self, sid: int) -> None:
        theirs = self.client_for(sid, stranger=True)
        for path in ("", "/resume", "/tasks"):
            error(theirs.get(f"/api/agent/sessions/{sid}{path}"), 404, "not_found")
        mine = self.client_for(sid, stranger=False)
        listed = ok(mine.get(f"/api/agent/sessions/{sid}/tasks"))["items"]
        model = [r for r in self.task_rows.values() if r.session == sid]
        assert [(t["id"], t["status"], t["evidence"], t["parent_id"]) for t in listed] == [
            (r.id, r.status, r.evidence, r.parent) for r in model
        ]

    @invariant()
    def resume_matches_the_model(self) -> None:
        for sid, who in self.owner.items():
            found = resume(self.clients[who], sid)
            count = self.accepted[sid]
            cp = found["checkpoint"]
            if count == 0:
                assert cp is None
            else:
                assert cp["seq"] == count and cp["state"] == {"seq": count}
            open_ids = [t["id"] for t in found["open_tasks"]]
            assert open_ids == [
                r.id for r in self.task_rows.values() if r.session == sid and r.status != "verified"
            ]

    @invariant()
    def audit_chain_counts_the_successful_writes(self) -> None:
        assert self.fake.verify_audit_chain() == self.writes

    def teardown(self) -> None:
        for c in self.clients:
            c.close()
        self.fake.close()


TestAgentLayerMachine = AgentLayerMachine.TestCase
TestAgentLayerMachine.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
