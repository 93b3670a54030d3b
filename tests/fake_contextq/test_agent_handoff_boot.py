"""Boot Packs and handoffs: the token budget, facts found by search, the LLM that writes a
handoff and what happens when there is none or it fails."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.audit import AgentAction
from fake_contextq.domain.handoff import HandoffMaterial
from tests.support.helpers import (
    actions,
    boot,
    checkpoint,
    context_body,
    error,
    issue_paths,
    lesson,
    ok,
    start,
    tick,
    upsert,
)

pytestmark = pytest.mark.all_stores

A = AgentAction


def pack_cost(pack: dict[str, Any]) -> int:
    """The token estimate of everything a Boot Pack carries (what the budget bounds)."""
    parts: list[Any] = [pack["resume"], pack["handoff"], *pack["lessons"], *pack["facts"]]
    return sum(wire.estimate_tokens(p) for p in parts if p is not None)


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
    with llm_fake.client(llm_fake.mint_key(tenant, wire.SCOPES)) as c:
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
        client.post("/api/search", json={"query": "migrate the schema", "limit": wire.BOOT_FACTS})
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
    with llm_fake.client(llm_fake.mint_key(tenant, wire.SCOPES)) as c:
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
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
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
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
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
        llm_fake.client(llm_fake.mint_key(mine, wire.SCOPES)) as c,
        llm_fake.client(llm_fake.mint_key(theirs, wire.SCOPES)) as t,
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


def test_a_failing_llm_is_a_503_and_writes_nothing(make_fake: Callable[..., FakeContextQ]) -> None:
    def llm(material: object) -> str:
        raise RuntimeError("provider down")

    fake = make_fake(llm=llm)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        response = c.post("/api/agent/handoff", json={"workspace": "ws"})
    assert response.status_code == 503
    assert "RuntimeError" in response.json()["message"]
    assert fake.audit_log() == []
