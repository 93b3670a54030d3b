"""Checkpoints: seq is exactly last plus one (also when writers race over real HTTP), the
state's shape and size limit, and resume."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.audit import AgentAction
from tests.support.helpers import (
    actions,
    checkpoint,
    error,
    issue_paths,
    ok,
    resume,
    start,
    tick,
    upsert,
)

pytestmark = pytest.mark.all_stores

A = AgentAction


def test_checkpoint_seq_is_exactly_last_plus_one(client: httpx2.Client, fake: FakeContextQ) -> None:
    sid = start(client)["id"]
    body = error(checkpoint(client, sid, 2), 409, "seq_conflict")
    assert body["expected"] == 1
    assert ok(checkpoint(client, sid, 1), 201)["seq"] == 1
    for wrong in (1, 3, 7):  # a repeat, a skip, a leap
        body = error(checkpoint(client, sid, wrong), 409, "seq_conflict")
        assert body["expected"] == 2
    assert ok(checkpoint(client, sid, 2), 201)["seq"] == 2
    body = error(checkpoint(client, sid, 2), 409, "seq_conflict")
    assert body["expected"] == 3
    assert ok(checkpoint(client, sid, 3.0), 201)["seq"] == 3  # JSON has one number type
    assert resume(client, sid)["checkpoint"]["seq"] == 3
    assert actions(fake) == [A.SESSION_START, A.CHECKPOINT, A.CHECKPOINT, A.CHECKPOINT]


def test_checkpoint_seqs_are_per_session(client: httpx2.Client) -> None:
    a, b = start(client)["id"], start(client)["id"]
    ok(checkpoint(client, a, 1), 201)
    ok(checkpoint(client, a, 2), 201)
    ok(checkpoint(client, b, 1), 201)
    assert error(checkpoint(client, b, 3), 409, "seq_conflict")["expected"] == 2


@pytest.mark.parametrize(
    "seq",
    ["missing", 0, -1, -(2**40), 1.5, "1", None, True, [1], {"n": 1}, 2**31],
)
def test_checkpoint_refuses_a_bad_seq(client: httpx2.Client, fake: FakeContextQ, seq: Any) -> None:
    sid = start(client)["id"]
    body: dict[str, Any] = {"state": {"a": 1}}
    if seq != "missing":
        body["seq"] = seq
    found = error(
        client.post(f"/api/agent/sessions/{sid}/checkpoint", json=body), 400, "validation_error"
    )
    assert issue_paths(found) == {"seq"}
    assert resume(client, sid)["checkpoint"] is None
    assert actions(fake) == [A.SESSION_START]
    assert ok(checkpoint(client, sid, 1), 201)["seq"] == 1  # nothing was consumed


@pytest.mark.parametrize("state", ["missing", None, [1], "s", 3])
def test_checkpoint_state_must_be_an_object(client: httpx2.Client, state: Any) -> None:
    sid = start(client)["id"]
    body: dict[str, Any] = {"seq": 1}
    if state != "missing":
        body["state"] = state
    found = error(
        client.post(f"/api/agent/sessions/{sid}/checkpoint", json=body), 400, "validation_error"
    )
    assert issue_paths(found) == {"state"}


def test_oversized_state_is_refused_and_nothing_is_stored(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    sid = start(client)["id"]
    overhead = len(wire.canonical_json({"b": ""}).encode())
    at_limit = {"b": "x" * (wire.MAX_STATE_BYTES - overhead)}
    over = {"b": "x" * (wire.MAX_STATE_BYTES - overhead + 1)}
    assert len(wire.canonical_json(at_limit).encode()) == wire.MAX_STATE_BYTES
    # multi-byte characters count as bytes, not characters
    wide = {"b": "é" * ((wire.MAX_STATE_BYTES - overhead) // 2 + 1)}
    assert len(wire.canonical_json(wide)) <= wire.MAX_STATE_BYTES
    for state in (over, wide):
        body = error(checkpoint(client, sid, 1, state), 400, "validation_error")
        assert issue_paths(body) == {"state"}
    assert resume(client, sid)["checkpoint"] is None
    assert actions(fake) == [A.SESSION_START]
    stored = ok(checkpoint(client, sid, 1, at_limit), 201)
    assert stored["seq"] == 1 and stored["state"] == at_limit
    assert resume(client, sid)["checkpoint"] == stored


def test_resume_is_the_latest_checkpoint_and_only_open_tasks(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    assert resume(client, sid)["checkpoint"] is None
    cps = [ok(checkpoint(client, sid, i, {"i": i}, summary=f"s{i}"), 201) for i in (1, 2, 3, 4)]
    created = {}
    for status in wire.TASK_STATUSES:
        extra = {"evidence": "proof"} if status == wire.TASK_VERIFIED else {}
        created[status] = ok(upsert(client, sid, status, status=status, **extra), 201)
    ticked = ok(upsert(client, sid, "ticked"), 201)
    ok(tick(client, ticked["id"], "done"))
    found = resume(client, sid)
    assert found["checkpoint"] == cps[-1]
    assert found["session"] == ok(client.get(f"/api/agent/sessions/{sid}"))
    assert [t["key"] for t in found["open_tasks"]] == list(wire.TASK_OPEN_STATUSES)
    assert all(t["status"] in wire.TASK_OPEN_STATUSES for t in found["open_tasks"])
    assert found["open_tasks"] == [created[s] for s in wire.TASK_OPEN_STATUSES]


def test_checkpoint_seq_race_over_real_http(
    fake: FakeContextQ, tenant: Tenant, key: str, client: httpx2.Client
) -> None:
    """Several writers post the same seq at once: exactly one wins each round."""
    sid = start(client)["id"]
    writers, rounds = 8, 6
    with fake.serve() as served:
        clients = [
            httpx2.Client(
                base_url=served.url, headers={"Authorization": f"Bearer {key}"}, timeout=20
            )
            for _ in range(writers)
        ]
        try:
            for c in clients:  # open every connection before the race
                ok(c.get(f"/api/agent/sessions/{sid}"))
            with ThreadPoolExecutor(writers) as pool:
                for seq in range(1, rounds + 1):
                    barrier = threading.Barrier(writers, timeout=15)

                    def post(
                        pair: tuple[int, httpx2.Client],
                        seq: int = seq,
                        barrier: threading.Barrier = barrier,
                    ) -> httpx2.Response:
                        n, c = pair
                        barrier.wait()
                        return checkpoint(c, sid, seq, {"writer": n, "seq": seq})

                    responses = list(pool.map(post, enumerate(clients)))
                    won = [r for r in responses if r.status_code == 201]
                    lost = [r for r in responses if r.status_code != 201]
                    assert len(won) == 1, [r.status_code for r in responses]
                    assert won[0].json()["seq"] == seq
                    for r in lost:
                        assert error(r, 409, "seq_conflict")["expected"] == seq + 1
                    latest = resume(clients[0], sid)["checkpoint"]
                    assert latest == won[0].json()
        finally:
            for c in clients:
                c.close()
    assert actions(fake).count(A.CHECKPOINT) == rounds
    assert fake.verify_audit_chain() == len(fake.audit_log()) == 1 + rounds
