"""The Agent Memory Layer through its HTTP API: scopes, sessions, checkpoints, tasks,
lessons and embeddings, boot, handoff, audit, bad input, a real-HTTP seq race and a
stateful model of two tenants interleaving sessions, checkpoints and tasks."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
)

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.handoff import HandoffMaterial
from tests.conftest import ALL_SCOPES, context_body

A = wire.AgentAction
DIM = wire.EMBEDDING_DIMENSIONS


# ----- helpers ---------------------------------------------------------------------------------


def error(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """Assert a contract error body (``{"error", "message", ...}``) and return it."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    if code == "validation_error":
        assert isinstance(body["issues"], list) and body["issues"]
        for issue in body["issues"]:
            assert set(issue) == {"path", "message"}
    return body


def issue_paths(body: dict[str, Any]) -> set[str]:
    return {i["path"] for i in body["issues"]}


def ok(response: httpx2.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def start(client: httpx2.Client, **body: Any) -> dict[str, Any]:
    created: dict[str, Any] = ok(client.post("/api/agent/sessions", json=body), 201)
    return created


def checkpoint(
    client: httpx2.Client, sid: int, seq: Any, state: Any = None, **extra: Any
) -> httpx2.Response:
    body: dict[str, Any] = {"seq": seq, "state": {"seq": seq} if state is None else state}
    body.update(extra)
    return client.post(f"/api/agent/sessions/{sid}/checkpoint", json=body)


def upsert(client: httpx2.Client, sid: int, key: str, **extra: Any) -> httpx2.Response:
    body: dict[str, Any] = {"session_id": sid, "key": key, "title": extra.pop("title", key)}
    body.update(extra)
    return client.post("/api/agent/tasks", json=body)


def tick(client: httpx2.Client, tid: int, evidence: Any = None, **kwargs: Any) -> httpx2.Response:
    if kwargs:
        return client.post(f"/api/agent/tasks/{tid}/tick", **kwargs)
    return client.post(f"/api/agent/tasks/{tid}/tick", json={"evidence": evidence})


def resume(client: httpx2.Client, sid: int) -> dict[str, Any]:
    found: dict[str, Any] = ok(client.get(f"/api/agent/sessions/{sid}/resume"))
    return found


def lesson(client: httpx2.Client, text: str, **extra: Any) -> dict[str, Any]:
    added: dict[str, Any] = ok(client.post("/api/agent/lessons", json={"text": text, **extra}), 201)
    return added


def boot(client: httpx2.Client, goal: str, **extra: Any) -> dict[str, Any]:
    pack: dict[str, Any] = ok(client.post("/api/agent/boot", json={"goal": goal, **extra}))
    return pack


def actions(fake: FakeContextQ) -> list[str]:
    return [row.action for row in fake.audit_log()]


def norm(vector: tuple[float, ...]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def pack_cost(pack: dict[str, Any]) -> int:
    """The token estimate of everything a Boot Pack carries (what the budget bounds)."""
    parts: list[Any] = [pack["resume"], pack["handoff"], *pack["lessons"], *pack["facts"]]
    return sum(wire.estimate_tokens(p) for p in parts if p is not None)


@pytest.fixture
def llm_fake(make_fake: Callable[..., FakeContextQ]) -> FakeContextQ:
    return make_fake(llm=True)


# ----- scopes and authentication --------------------------------------------------------------


@dataclass
class Setup:
    fake: FakeContextQ
    tenant: Tenant
    sid: int
    tid: int
    counter: list[int] = field(default_factory=lambda: [0])

    def fresh(self) -> int:
        self.counter[0] += 1
        return self.counter[0]


def _next_seq(s: Setup) -> int:
    with s.fake.client(s.fake.mint_key(s.tenant, ALL_SCOPES)) as c:
        cp = resume(c, s.sid)["checkpoint"]
    return 1 if cp is None else cp["seq"] + 1


# route name -> (scope, success status, call)
ROUTES: dict[str, tuple[str, int, Callable[[httpx2.Client, Setup], httpx2.Response]]] = {
    "boot": ("read", 200, lambda c, _s: c.post("/api/agent/boot", json={"goal": "ship it"})),
    "get_session": ("read", 200, lambda c, s: c.get(f"/api/agent/sessions/{s.sid}")),
    "resume": ("read", 200, lambda c, s: c.get(f"/api/agent/sessions/{s.sid}/resume")),
    "list_tasks": ("read", 200, lambda c, s: c.get(f"/api/agent/sessions/{s.sid}/tasks")),
    "session_start": (
        "write",
        201,
        lambda c, _s: c.post("/api/agent/sessions", json={"workspace": "ws"}),
    ),
    "session_end": (
        "write",
        200,
        lambda c, s: c.post(f"/api/agent/sessions/{s.sid}/end", json={"status": "completed"}),
    ),
    "checkpoint": ("write", 201, lambda c, s: checkpoint(c, s.sid, _next_seq(s))),
    "task_upsert": ("write", 201, lambda c, s: upsert(c, s.sid, f"k{s.fresh()}")),
    "task_tick": ("write", 200, lambda c, s: tick(c, s.tid, "it passed")),
    "lesson_add": (
        "write",
        201,
        lambda c, _s: c.post("/api/agent/lessons", json={"text": "Always pin versions."}),
    ),
    "handoff": (
        "write",
        201,
        lambda c, s: c.post("/api/agent/handoff", json={"session_id": s.sid}),
    ),
}
KEY_KINDS: dict[str, tuple[str, ...]] = {
    "no-scopes": (),
    "read": ("read",),
    "write": ("write",),
    "read+write": ("read", "write"),
    "admin": ("admin",),
}


@pytest.fixture
def setup(llm_fake: FakeContextQ) -> Setup:
    tenant = llm_fake.create_tenant("acme")
    llm_fake.create_workspace(tenant, "ws")
    with llm_fake.client(llm_fake.mint_key(tenant, ALL_SCOPES)) as c:
        sid = start(c, workspace="ws")["id"]
        tid = ok(upsert(c, sid, "root"), 201)["id"]
    return Setup(llm_fake, tenant, sid, tid)


@pytest.mark.parametrize("kind", list(KEY_KINDS))
@pytest.mark.parametrize("route", list(ROUTES))
def test_every_agent_route_checks_its_scope(setup: Setup, route: str, kind: str) -> None:
    scope, success, call = ROUTES[route]
    held = KEY_KINDS[kind]
    allowed = scope in held or "admin" in held
    before = len(setup.fake.audit_log())
    with setup.fake.client(setup.fake.mint_key(setup.tenant, held)) as c:
        response = call(c, setup)
    if allowed:
        assert response.status_code == success, response.text
        grew = 1 if scope == "write" else 0
        assert len(setup.fake.audit_log()) == before + grew
    else:
        body = error(response, 403, "scope_denied")
        assert body["required"] == scope
        assert len(setup.fake.audit_log()) == before
    assert setup.fake.verify_audit_chain() == len(setup.fake.audit_log())


def test_a_denied_scope_is_reported_before_the_body_is_read(setup: Setup) -> None:
    with setup.fake.client(setup.fake.mint_key(setup.tenant, ("read",))) as c:
        body = error(
            c.post(
                f"/api/agent/sessions/{setup.sid}/checkpoint",
                content=b"{not json",
                headers={"content-type": "application/json"},
            ),
            403,
            "scope_denied",
        )
    assert body["required"] == "write"
    with setup.fake.client(setup.fake.mint_key(setup.tenant, ("write",))) as c:
        error(c.post("/api/agent/boot", json={}), 403, "scope_denied")


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize(
    "authorization",
    [None, "Basic abc", "Bearer sk_live_short", "Bearer sk_live_" + "0" * 40, "revoked"],
)
def test_every_agent_route_needs_a_valid_key(
    setup: Setup, route: str, authorization: str | None
) -> None:
    _, _, call = ROUTES[route]
    headers: dict[str, str] = {}
    if authorization == "revoked":
        dead = setup.fake.mint_key(setup.tenant, ALL_SCOPES)
        setup.fake.revoke_key(dead)
        headers["Authorization"] = f"Bearer {dead}"
    elif authorization is not None:
        headers["Authorization"] = authorization
    before = len(setup.fake.audit_log())
    with httpx2.Client(
        transport=setup.fake.transport(), base_url=setup.fake.base_url, headers=headers
    ) as c:
        error(call(c, setup), 401, "unauthorized")
    assert len(setup.fake.audit_log()) == before


# ----- sessions --------------------------------------------------------------------------------


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
    with llm_fake.client(llm_fake.mint_key(tenant, ALL_SCOPES)) as c:
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
    with llm_fake.client(llm_fake.mint_key(stranger, ALL_SCOPES)) as c:
        assert start(c, workspace="known")["workspace"] is None


# ----- the full life of a run -------------------------------------------------------------------


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
        wire.AuditAction.CONTEXT_CREATE,
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


# ----- checkpoints -----------------------------------------------------------------------------


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


# ----- tasks -----------------------------------------------------------------------------------


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
    kwargs: dict[str, Any] = {
        "no-body": {"content": b""},
        "empty-object": {"json": {}},
        "null": {"json": {"evidence": None}},
        "empty": {"json": {"evidence": ""}},
        "blank": {"json": {"evidence": "   "}},
        "tabs-newlines": {"json": {"evidence": "\t\n "}},
    }[how]
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


# ----- lessons and embeddings ------------------------------------------------------------------

DB_LESSON = "Database migrations: run schema changes inside a transaction and back up first."
CSS_LESSON = "CSS colours should come from the design tokens, never from hex literals."


def test_lessons_are_recalled_by_meaning(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    db = lesson(client, DB_LESSON, tags=["db"])
    css = lesson(client, CSS_LESSON)  # newer: recency alone would put it first
    assert db["embedded"] is True and css["embedded"] is True
    assert set(db) == {"id", "text", "workspace", "session_id", "tags", "embedded", "created_at"}
    pack = boot(client, "migrate the schema")
    assert [x["id"] for x in pack["lessons"]] == [db["id"], css["id"]]
    scores = [x["score"] for x in pack["lessons"]]
    assert scores[0] > scores[1]
    assert all(-1.0 <= s <= 1.0 for s in scores)
    # and the other way round
    pack = boot(client, "which colour tokens for the CSS?")
    assert [x["id"] for x in pack["lessons"]] == [css["id"], db["id"]]
    assert all(row.embedding is not None for row in fake.lessons(tenant))


def test_boot_recalls_at_most_the_contract_number_of_lessons(client: httpx2.Client) -> None:
    for i in range(wire.BOOT_LESSONS + 3):
        lesson(client, f"lesson number {i} about deploys")
    pack = boot(client, "deploys", token_budget=wire.MAX_TOKEN_BUDGET)
    assert len(pack["lessons"]) == wire.BOOT_LESSONS


def test_without_embeddings_lessons_have_no_vector_and_boot_is_newest_first(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    fake = make_fake(embeddings=False)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        db = lesson(c, DB_LESSON)
        css = lesson(c, CSS_LESSON)
        third = lesson(c, "Keep the changelog current.")
        assert not db["embedded"] and not css["embedded"] and not third["embedded"]
        pack = boot(c, "migrate the schema")
        assert [x["id"] for x in pack["lessons"]] == [third["id"], css["id"], db["id"]]
        assert all("score" not in x for x in pack["lessons"])
    rows = fake.lessons(tenant)
    assert len(rows) == 3 and all(row.embedding is None for row in rows)


def test_a_custom_embedder_is_used(make_fake: Callable[..., FakeContextQ]) -> None:
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        vector = [0.0] * DIM
        vector[0 if "alpha" in text.lower() else 1] = 3.0  # not unit length on purpose
        return vector

    fake = make_fake(embed=embed)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        beta1 = lesson(c, "beta one")
        alpha = lesson(c, "the alpha lesson")
        beta2 = lesson(c, "beta two")  # newest
        pack = boot(c, "ALPHA please")
    assert pack["lessons"][0]["id"] == alpha["id"]
    assert pack["lessons"][0]["score"] == pytest.approx(1.0)
    assert {x["id"] for x in pack["lessons"][1:]} == {beta1["id"], beta2["id"]}
    assert all(x["score"] == pytest.approx(0.0) for x in pack["lessons"][1:])
    assert {"beta one", "the alpha lesson", "beta two", "ALPHA please"} <= set(seen)
    by_text = {row.text: row.embedding for row in fake.lessons(tenant)}
    unit0 = tuple(1.0 if i == 0 else 0.0 for i in range(DIM))
    assert by_text["the alpha lesson"] == unit0  # stored normalised


@pytest.mark.parametrize("dimensions", [0, 384, DIM - 1, DIM + 1, 1536])
def test_an_embedder_of_the_wrong_dimension_is_refused_at_construction(dimensions: int) -> None:
    def embed(text: str) -> list[float]:
        return [1.0] * dimensions

    with pytest.raises(ValueError, match=str(DIM)):
        FakeContextQ(embed=embed)


def test_vectors_are_unit_length_768_floats_and_deterministic(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    texts = [DB_LESSON, CSS_LESSON, "Short.", "Ünïcödé lessons — with punctuation!"]
    vectors: list[dict[str, tuple[float, ...] | None]] = []
    for _ in range(2):
        fake = make_fake()
        tenant = fake.create_tenant()
        with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
            for text in texts:
                lesson(c, text)
        vectors.append({row.text: row.embedding for row in fake.lessons(tenant)})
    first, second = vectors
    assert first == second
    for text in texts:
        vector = first[text]
        assert vector is not None and len(vector) == DIM
        assert all(isinstance(x, float) for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-9)
    assert first[DB_LESSON] != first[CSS_LESSON]


def test_lesson_workspace_and_session(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Tenant,
    other: tuple[Tenant, httpx2.Client],
) -> None:
    fake.create_workspace(tenant, "a")
    fake.create_workspace(tenant, "b")
    sid = start(client, workspace="a")["id"]
    in_a = lesson(client, "alpha lesson", workspace="a", session_id=sid)
    in_b = lesson(client, "beta lesson", workspace="b")
    nowhere = lesson(client, "general lesson", workspace="no-such-workspace")
    assert (in_a["workspace"], in_a["session_id"]) == ("a", sid)
    assert nowhere["workspace"] is None
    ids_a = {x["id"] for x in boot(client, "lesson", workspace="a")["lessons"]}
    ids_b = {x["id"] for x in boot(client, "lesson", workspace="b")["lessons"]}
    assert ids_a == {in_a["id"], nowhere["id"]}
    assert ids_b == {in_b["id"], nowhere["id"]}
    _, theirs = other
    error(
        theirs.post("/api/agent/lessons", json={"text": "x", "session_id": sid}), 404, "not_found"
    )
    assert boot(theirs, "lesson")["lessons"] == []
    error(
        client.post("/api/agent/lessons", json={"text": "x", "session_id": 999_999}),
        404,
        "not_found",
    )


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, {"text"}),
        ({"text": ""}, {"text"}),
        ({"text": 5}, {"text"}),
        ({"text": "t" * (wire.MAX_TEXT_CHARS + 1)}, {"text"}),
        ({"text": "x", "tags": "ops"}, {"tags"}),
        ({"text": "x", "tags": [""]}, {"tags.0"}),
        ({"text": "x", "tags": [1]}, {"tags.0"}),
        ({"text": "x", "session_id": "1"}, {"session_id"}),
        ({"text": "x", "workspace": ""}, {"workspace"}),
    ],
)
def test_lesson_body_validation(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, body: dict[str, Any], paths: set[str]
) -> None:
    found = error(client.post("/api/agent/lessons", json=body), 400, "validation_error")
    assert issue_paths(found) == paths
    assert fake.lessons(tenant) == [] and fake.audit_log() == []


def test_an_embedder_failure_keeps_the_lesson_without_a_vector(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    """Stored first, embedded after: a failing embedder leaves an unembedded, audited lesson."""

    def embed(text: str) -> list[float]:
        if "boom" in text:
            raise RuntimeError("embedding provider down")
        return [1.0] * DIM

    fake = make_fake(embed=embed)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        response = c.post("/api/agent/lessons", json={"text": "boom: the model is down"})
        assert response.status_code == 201
        assert response.json()["embedded"] is False
    assert actions(fake).count(A.LESSON_ADD) == 1
    [stored] = fake.lessons(tenant)
    assert stored.embedding is None


# ----- boot ------------------------------------------------------------------------------------


def _fill(fake: FakeContextQ, tenant: Tenant, c: httpx2.Client) -> None:
    """A session with a checkpoint and open tasks, lessons, contexts and a handoff."""
    fake.create_workspace(tenant, "ws")
    sid = start(c, workspace="ws")["id"]
    ok(checkpoint(c, sid, 1, {"notes": "migration plan " * 40}), 201)
    for i in range(3):
        ok(upsert(c, sid, f"task-{i}", title=f"Migrate table {i}"), 201)
    for i in range(3):
        lesson(c, f"Schema migration lesson {i}: " + "details " * 20, workspace="ws")
    for i in range(4):
        ok(
            c.post(
                "/api/contexts",
                json=context_body(title=f"Migration guide {i}", content="migrate schema " * 30),
            ),
            201,
        )
    ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)


def test_boot_stays_within_its_token_budget(llm_fake: FakeContextQ) -> None:
    tenant = llm_fake.create_tenant()
    with llm_fake.client(llm_fake.mint_key(tenant, ALL_SCOPES)) as c:
        _fill(llm_fake, tenant, c)
        full = boot(c, "migrate the schema", workspace="ws", token_budget=wire.MAX_TOKEN_BUDGET)
        assert full["resume"] is not None and full["handoff"] is not None
        assert len(full["lessons"]) == 3 and len(full["facts"]) == 4
        assert full["truncated"] is False
        total = full["tokens_used"]
        assert total == pack_cost(full) > 0
        assert full["token_budget"] == wire.MAX_TOKEN_BUDGET
        lesson_ids = {x["id"] for x in full["lessons"]}
        fact_ids = {f["context"]["id"] for f in full["facts"]}

        for budget in (1, 10, total // 4, total // 2, total - 1, total, total + 1):
            pack = boot(c, "migrate the schema", workspace="ws", token_budget=budget)
            assert pack["token_budget"] == budget
            assert pack["tokens_used"] <= budget
            assert pack["tokens_used"] == pack_cost(pack)
            assert pack["truncated"] is (budget < total)
            assert {x["id"] for x in pack["lessons"]} <= lesson_ids
            assert {f["context"]["id"] for f in pack["facts"]} <= fact_ids
            if budget >= total:
                assert pack == {**full, "token_budget": budget}

        tiny = boot(c, "migrate the schema", workspace="ws", token_budget=1)
        assert tiny["resume"] is None and tiny["handoff"] is None
        assert tiny["lessons"] == [] and tiny["facts"] == []
        assert (tiny["tokens_used"], tiny["truncated"]) == (0, True)


def test_boot_defaults_its_budget(client: httpx2.Client) -> None:
    pack = boot(client, "anything")
    assert pack["token_budget"] == wire.DEFAULT_TOKEN_BUDGET
    assert pack == {
        "goal": "anything",
        "workspace": None,
        "resume": None,
        "handoff": None,
        "lessons": [],
        "facts": [],
        "token_budget": wire.DEFAULT_TOKEN_BUDGET,
        "tokens_used": 0,
        "truncated": False,
    }


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({"goal": "g", "token_budget": 0}, {"token_budget"}),
        ({"goal": "g", "token_budget": -5}, {"token_budget"}),
        ({"goal": "g", "token_budget": 1.5}, {"token_budget"}),
        ({"goal": "g", "token_budget": "100"}, {"token_budget"}),
        ({"goal": "g", "token_budget": True}, {"token_budget"}),
        ({"goal": "g", "token_budget": None}, {"token_budget"}),
        ({"goal": "g", "token_budget": wire.MAX_TOKEN_BUDGET + 1}, {"token_budget"}),
        ({}, {"goal"}),
        ({"token_budget": 100}, {"goal"}),
        ({"goal": ""}, {"goal"}),
        ({"goal": 7}, {"goal"}),
        ({"goal": "g" * (wire.MAX_GOAL_CHARS + 1)}, {"goal"}),
        ({"goal": "g", "workspace": 3}, {"workspace"}),
        ({"token_budget": 0}, {"goal", "token_budget"}),
    ],
)
def test_boot_validation(client: httpx2.Client, body: dict[str, Any], paths: set[str]) -> None:
    found = error(client.post("/api/agent/boot", json=body), 400, "validation_error")
    assert issue_paths(found) == paths


def test_boot_facts_are_search_hits_among_the_tenants_contexts(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    _, theirs = other
    ok(
        theirs.post(
            "/api/contexts",
            json=context_body(title="Their schema migration", content="migrate schema"),
        ),
        201,
    )
    mine = [
        ok(client.post("/api/contexts", json=context_body(title=t, content=body)), 201)
        for t, body in [
            ("Schema migration runbook", "How to migrate the schema: lock, migrate, verify."),
            ("Holiday rota", "Who is on call in December."),
            ("Schema notes", "The schema has 40 tables."),
        ]
    ]
    for i in range(wire.BOOT_FACTS + 2):
        ok(
            client.post("/api/contexts", json=context_body(title=f"schema extra {i}", content="x")),
            201,
        )
    pack = boot(client, "migrate the schema", token_budget=wire.MAX_TOKEN_BUDGET)
    facts = pack["facts"]
    assert len(facts) == wire.BOOT_FACTS
    assert facts[0]["context"]["id"] == mine[0]["id"]
    assert mine[1]["id"] not in {f["context"]["id"] for f in facts}
    scores = [f["score"] for f in facts]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    for f in facts:
        assert "content" not in f["context"]  # a summary, as search returns
        assert isinstance(f["snippet"], str)
    search = ok(
        client.post(
            "/api/search", json={"query": "migrate the schema", "limit": wire.BOOT_FACTS}
        )
    )
    assert [f["context"] for f in facts] == [h["context"] for h in search["results"]]
    # the other tenant sees only its own
    theirs_pack = boot(theirs, "migrate the schema")
    assert [f["context"]["title"] for f in theirs_pack["facts"]] == ["Their schema migration"]


def test_boot_without_workspace_or_with_an_unknown_one(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    ok(checkpoint(client, sid, 1), 201)
    for extra in ({}, {"workspace": "no-such-ws"}, {"workspace": None}):
        pack = boot(client, "go", **extra)
        assert pack["workspace"] is None
        assert pack["resume"]["session"]["id"] == sid


# ----- handoff ---------------------------------------------------------------------------------


def test_handoff_without_an_llm_is_503(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.create_workspace(tenant, "ws")
    sid = start(client, workspace="ws")["id"]
    before = len(fake.audit_log())
    error(client.post("/api/agent/handoff", json={"session_id": sid}), 503, "llm_unavailable")
    error(client.post("/api/agent/handoff", json={"workspace": "ws"}), 503, "llm_unavailable")
    assert len(fake.audit_log()) == before
    assert boot(client, "x", workspace="ws")["handoff"] is None


@pytest.mark.parametrize(
    "body",
    [None, {}, {"workspace": "no-such-ws"}, {"session_id": "SESSION"}],
    ids=["no-body", "empty", "unknown-workspace", "session-without-workspace"],
)
def test_no_workspace_is_checked_before_the_llm(
    client: httpx2.Client, fake: FakeContextQ, body: dict[str, Any] | None
) -> None:
    sid = start(client, workspace="never-created")["id"]
    if body is None:
        response = client.post("/api/agent/handoff")
    else:
        body = {k: sid if v == "SESSION" else v for k, v in body.items()}
        response = client.post("/api/agent/handoff", json=body)
    error(response, 400, "no_workspace")  # not 503, though this fake has no LLM
    assert actions(fake) == [A.SESSION_START]


def test_handoff_with_the_builtin_llm(llm_fake: FakeContextQ) -> None:
    tenant = llm_fake.create_tenant()
    llm_fake.create_workspace(tenant, "ws")
    with llm_fake.client(llm_fake.mint_key(tenant, ALL_SCOPES)) as c:
        sid = start(c, workspace="ws")["id"]
        done = ok(upsert(c, sid, "done", title="Ported the importer"), 201)
        ok(tick(c, done["id"], "importer tests pass"))
        ok(upsert(c, sid, "open", title="Port the exporter", status="blocked"), 201)
        ok(checkpoint(c, sid, 1, summary="halfway"), 201)
        text = "Exporter needs the v2 API token."
        lesson(c, text, workspace="ws")
        written = ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)
        assert set(written) == {"id", "workspace", "session_id", "content", "created_at"}
        content = written["content"]
        assert "Ported the importer" in content and "importer tests pass" in content
        assert "Port the exporter" in content and "blocked" in content
        assert text in content and "halfway" in content
        # with only the workspace, the latest session of that workspace is summarised
        by_ws = ok(c.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
        assert by_ws["session_id"] == sid and by_ws["content"] == content
        assert boot(c, "export", workspace="ws")["handoff"] == by_ws


def test_handoff_with_a_callable_llm_gets_the_material(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    received: list[HandoffMaterial] = []

    def llm(material: HandoffMaterial) -> str:
        received.append(material)
        return f"HANDOFF for {material.workspace}: {len(material.tasks)} task(s)"

    fake = make_fake(llm=llm)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    fake.create_workspace(tenant, "elsewhere")
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        sid = start(c, workspace="ws", metadata={"run": 1})["id"]
        ok(checkpoint(c, sid, 1), 201)
        ok(checkpoint(c, sid, 2, summary="latest"), 201)
        t1 = ok(upsert(c, sid, "a", title="A"), 201)
        ok(upsert(c, sid, "b", title="B", parent_key="a"), 201)
        ok(tick(c, t1["id"], "proof"))
        in_ws = lesson(c, "workspace lesson", workspace="ws")
        in_session = lesson(c, "session lesson", session_id=sid)
        lesson(c, "unrelated lesson", workspace="elsewhere")
        lesson(c, "floating lesson")
        ok(c.post(f"/api/agent/sessions/{sid}/end", json={"status": "failed", "summary": "x"}))
        written = ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)
        assert written["content"] == "HANDOFF for ws: 2 task(s)"
        assert boot(c, "go", workspace="ws")["handoff"] == written
    (material,) = received
    assert material.workspace == "ws"
    assert material.session is not None and material.session.id == sid
    assert (material.session.status, material.session.metadata) == ("failed", {"run": 1})
    assert [(t.key, t.status, t.evidence) for t in material.tasks] == [
        ("a", "verified", "proof"),
        ("b", "pending", None),
    ]
    assert {x.id for x in material.lessons} == {in_ws["id"], in_session["id"]}
    assert material.checkpoint is not None
    assert (material.checkpoint.seq, material.checkpoint.summary) == (2, "latest")


@pytest.mark.parametrize("reply", ["", "   ", None, 42])
def test_an_llm_with_no_text_is_503_and_stores_nothing(
    make_fake: Callable[..., FakeContextQ], reply: Any
) -> None:
    fake = make_fake(llm=lambda _: reply)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        error(c.post("/api/agent/handoff", json={"workspace": "ws"}), 503, "llm_unavailable")
        assert boot(c, "x", workspace="ws")["handoff"] is None
    assert fake.audit_log() == []


def test_handoff_for_another_tenants_session_is_404(
    llm_fake: FakeContextQ,
) -> None:
    mine, theirs = llm_fake.create_tenant(), llm_fake.create_tenant()
    llm_fake.create_workspace(mine, "ws")
    llm_fake.create_workspace(theirs, "ws")
    with (
        llm_fake.client(llm_fake.mint_key(mine, ALL_SCOPES)) as c,
        llm_fake.client(llm_fake.mint_key(theirs, ALL_SCOPES)) as t,
    ):
        sid = start(c, workspace="ws")["id"]
        error(t.post("/api/agent/handoff", json={"session_id": sid}), 404, "not_found")
        error(
            t.post("/api/agent/handoff", json={"session_id": sid, "workspace": "ws"}),
            404,
            "not_found",
        )
        # their own workspace of the same slug knows nothing of my session
        written = ok(t.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
        assert written["session_id"] is None
        assert boot(c, "x", workspace="ws")["handoff"] is None


def test_llm_option_must_be_true_none_or_callable() -> None:
    with pytest.raises(TypeError):
        FakeContextQ(llm="yes")  # type: ignore[arg-type]


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
    assert all(r.actor_key_prefix == wire.key_display_prefix(key) for r in rows)
    assert {r.action for r in rows} == {
        v for k, v in vars(A).items() if k.isupper() and isinstance(v, str)
    }
    assert rows[0].prev_hash is None
    assert all(b.prev_hash == a.hash for a, b in pairwise(rows))
    assert fake.verify_audit_chain() == len(rows)


# ----- bad input -------------------------------------------------------------------------------

J = {"content-type": "application/json"}
BAD_INPUT: list[tuple[str, str, dict[str, Any], int, str]] = [
    # malformed JSON on every route with a body
    ("POST", "/api/agent/sessions", {"content": b"{", "headers": J}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/{sid}/end",
        {"content": b"nope", "headers": J},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/sessions/{sid}/checkpoint",
        {"content": b'{"seq": 1,', "headers": J},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/tasks", {"content": b"[", "headers": J}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"content": b"{evidence}", "headers": J},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/lessons",
        {"content": b'{"text": "\xc3\x28"}', "headers": J},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/handoff", {"content": b"{,}", "headers": J}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"content": b"", "headers": J}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"content": b"null", "headers": J}, 400, "validation_error"),
    # bodies that are not objects
    ("POST", "/api/agent/sessions", {"json": []}, 400, "validation_error"),
    ("POST", "/api/agent/sessions/{sid}/end", {"json": "completed"}, 400, "validation_error"),
    ("POST", "/api/agent/sessions/{sid}/checkpoint", {"json": 1}, 400, "validation_error"),
    ("POST", "/api/agent/tasks/{tid}/tick", {"json": ["proof"]}, 400, "validation_error"),
    ("POST", "/api/agent/lessons", {"json": "a lesson"}, 400, "validation_error"),
    ("POST", "/api/agent/handoff", {"json": []}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"json": ["goal"]}, 400, "validation_error"),
    # wrong types
    ("POST", "/api/agent/sessions", {"json": {"workspace": 5}}, 400, "validation_error"),
    ("POST", "/api/agent/sessions", {"json": {"workspace": ""}}, 400, "validation_error"),
    ("POST", "/api/agent/tasks/{tid}/tick", {"json": {"evidence": 5}}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"json": {"evidence": "e" * (wire.MAX_TEXT_CHARS + 1)}},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/handoff", {"json": {"session_id": "1"}}, 400, "validation_error"),
    ("POST", "/api/agent/handoff", {"json": {"workspace": 1}}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/{sid}/checkpoint",
        {"json": {"seq": 1, "state": {}, "summary": 1}},
        400,
        "validation_error",
    ),
    # not JSON at all
    (
        "POST",
        "/api/agent/sessions",
        {
            "content": b"workspace=x",
            "headers": {"content-type": "application/x-www-form-urlencoded"},
        },
        415,
        "unsupported_media_type",
    ),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"content": b"proof", "headers": {"content-type": "text/plain"}},
        415,
        "unsupported_media_type",
    ),
    # bad ids in the path
    ("GET", "/api/agent/sessions/abc", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/0", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/-1", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/1.5", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/01", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/99999999999999999999", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/%20", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/abc/resume", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/abc/tasks", {}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/abc/end",
        {"json": {"status": "completed"}},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/sessions/x/checkpoint",
        {"json": {"seq": 1, "state": {}}},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/tasks/x/tick", {"json": {"evidence": "e"}}, 400, "validation_error"),
    # unknown ids
    ("GET", "/api/agent/sessions/9223372036854775807", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999/resume", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999/tasks", {}, 404, "not_found"),
    ("POST", "/api/agent/sessions/999999/end", {"json": {"status": "failed"}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/sessions/999999/checkpoint",
        {"json": {"seq": 1, "state": {}}},
        404,
        "not_found",
    ),
    ("POST", "/api/agent/tasks/999999/tick", {"json": {"evidence": "e"}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/tasks",
        {"json": {"session_id": 999999, "key": "k", "title": "t"}},
        404,
        "not_found",
    ),
    ("POST", "/api/agent/lessons", {"json": {"text": "t", "session_id": 999999}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/handoff",
        {"json": {"session_id": 999999, "workspace": "ws"}},
        404,
        "not_found",
    ),
    # unknown routes and methods
    ("GET", "/api/agent/nope", {}, 404, "not_found"),
    ("DELETE", "/api/agent/sessions/{sid}", {}, 404, "not_found"),
    ("PUT", "/api/agent/tasks/{tid}/tick", {"json": {"evidence": "e"}}, 404, "not_found"),
    ("GET", "/api/agent/boot", {}, 404, "not_found"),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    BAD_INPUT,
    ids=[f"{m} {p} #{i}" for i, (m, p, *_rest) in enumerate(BAD_INPUT)],
)
def test_bad_input_gets_a_contract_error_never_a_500(
    llm_fake: FakeContextQ,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    code: str,
) -> None:
    tenant = llm_fake.create_tenant()
    llm_fake.create_workspace(tenant, "ws")
    with llm_fake.client(llm_fake.mint_key(tenant, ALL_SCOPES)) as c:
        sid = start(c, workspace="ws")["id"]
        tid = ok(upsert(c, sid, "k"), 201)["id"]
        before = len(llm_fake.audit_log())
        response = c.request(method, path.format(sid=sid, tid=tid), **kwargs)
        error(response, status, code)
    assert len(llm_fake.audit_log()) == before


def test_another_tenants_ids_are_404_on_every_agent_route(
    llm_fake: FakeContextQ,
) -> None:
    mine, theirs = llm_fake.create_tenant(), llm_fake.create_tenant()
    llm_fake.create_workspace(mine, "ws")
    with (
        llm_fake.client(llm_fake.mint_key(mine, ALL_SCOPES)) as c,
        llm_fake.client(llm_fake.mint_key(theirs, ALL_SCOPES)) as t,
    ):
        sid = start(c, workspace="ws", metadata={"secret": True})["id"]
        ok(checkpoint(c, sid, 1, {"secret": "launch code"}), 201)
        tid = ok(upsert(c, sid, "k"), 201)["id"]
        before = len(llm_fake.audit_log())
        for response in (
            t.get(f"/api/agent/sessions/{sid}"),
            t.get(f"/api/agent/sessions/{sid}/resume"),
            t.get(f"/api/agent/sessions/{sid}/tasks"),
            t.post(f"/api/agent/sessions/{sid}/end", json={"status": "cancelled"}),
            checkpoint(t, sid, 2),
            checkpoint(t, sid, 1),
            upsert(t, sid, "k", title="pwned"),
            tick(t, tid, "pwned"),
            t.post("/api/agent/lessons", json={"text": "x", "session_id": sid}),
            t.post("/api/agent/handoff", json={"session_id": sid}),
            t.post("/api/agent/sessions", json={"parent_session_id": sid}),
        ):
            body = error(response, 404, "not_found")
            assert "launch code" not in response.text and "expected" not in body
        assert len(llm_fake.audit_log()) == before
        assert boot(t, "launch code")["resume"] is None
        found = resume(c, sid)
        assert found["session"]["status"] == "active"
        assert found["checkpoint"]["seq"] == 1
        assert found["open_tasks"][0]["title"] == "k"


# ----- a stateful model: two tenants interleaving sessions, checkpoints and tasks --------------

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
            self.clients.append(self.fake.client(self.fake.mint_key(tenant, ALL_SCOPES)))
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


def test_a_failing_llm_is_a_503_and_writes_nothing(make_fake: Callable[..., FakeContextQ]) -> None:
    def llm(material: object) -> str:
        raise RuntimeError("provider down")

    fake = make_fake(llm=llm)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, ALL_SCOPES)) as c:
        response = c.post("/api/agent/handoff", json={"workspace": "ws"})
    assert response.status_code == 503
    assert "RuntimeError" in response.json()["message"]
    assert fake.audit_log() == []
