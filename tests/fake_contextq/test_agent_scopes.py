"""Who may call the agent routes: each route checks its scope, before it reads the body,
and refuses a missing, malformed, unknown or revoked key without writing anything."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import checkpoint, error, ok, resume, start, tick, upsert

pytestmark = pytest.mark.all_stores


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
    with s.fake.client(s.fake.mint_key(s.tenant, wire.SCOPES)) as c:
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
    with llm_fake.client(llm_fake.mint_key(tenant, wire.SCOPES)) as c:
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
        dead = setup.fake.mint_key(setup.tenant, wire.SCOPES)
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
