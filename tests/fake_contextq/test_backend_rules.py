"""The backend's rules that mutation testing showed no other test asserting: the scope each
route needs, the audit row each write appends, partial updates, and the exact refusals."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import ApiError, FakeContextQ, Tenant
from fake_contextq import _msgs as m
from fake_contextq.domain.audit import AgentAction, AuditAction
from fake_contextq.stores.sql import SqlStore
from tests.support.helpers import context_body, error, ok

pytestmark = pytest.mark.all_stores

Make = Callable[..., dict[str, Any]]


def scope_message(required: str, held: str) -> str:
    return m.SCOPE_DENIED_MSG.format(required=required, held=held)


# ----- administration (the object API) -----


def test_the_default_clock_is_utc(fake: FakeContextQ) -> None:
    made = fake.create_tenant("utc")
    assert made.created_at.utcoffset() == timedelta(0)


def test_a_tenant_without_a_name_is_named_after_its_id(fake: FakeContextQ) -> None:
    named = fake.create_tenant("acme")
    unnamed = fake.create_tenant()
    assert named.name == "acme"
    assert unnamed.name == f"tenant-{unnamed.id}"
    assert unnamed.created_at is not None
    assert fake.tenant(unnamed.id) == unnamed


@pytest.mark.parametrize("tenant_id", [999, wire.MAX_ID + 1])
def test_an_unknown_tenant_is_named_in_the_refusal(fake: FakeContextQ, tenant_id: int) -> None:
    with pytest.raises(ApiError) as refused:
        fake.tenant(tenant_id)
    assert refused.value.code == m.NOT_FOUND
    assert refused.value.message == f"Tenant {tenant_id} not found."


def test_minted_keys_are_listed_with_their_prefix_and_scopes(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    first = fake.mint_key(tenant, [wire.READ])
    second = fake.mint_key(tenant, wire.SCOPES)
    listed = fake.keys(tenant)
    assert [k.prefix for k in listed] == [first[:12], second[:12]]
    assert [k.scopes for k in listed] == [(wire.READ,), wire.SCOPES]
    assert listed[0].id != listed[1].id
    assert all(k.tenant_id == tenant.id and k.created_at is not None for k in listed)
    assert not any(k.revoked for k in listed)


def test_a_revoked_key_is_refused_with_its_own_message(fake: FakeContextQ, key: str) -> None:
    with fake.client(key) as c:
        ok(c.get("/api/contexts"))
        fake.revoke_key(key)
        body = error(c.get("/api/contexts"), 401, m.UNAUTHORIZED)
    assert body["message"] == m.REVOKED_KEY
    assert [k.revoked for k in fake.keys(fake.tenants()[0])] == [True]


def test_revoking_an_unknown_key_is_a_not_found(fake: FakeContextQ) -> None:
    with pytest.raises(ApiError) as refused:
        fake.revoke_key("sk_live_" + "0" * 40)
    assert (refused.value.code, refused.value.message) == (m.NOT_FOUND, m.KEY_NOT_FOUND)


def test_an_unknown_key_is_refused_with_its_own_message(fake: FakeContextQ) -> None:
    with fake.client("sk_live_" + "a" * 40) as c:
        body = error(c.get("/api/contexts"), 401, m.UNAUTHORIZED)
    assert body["message"] == m.UNKNOWN_KEY


def test_a_workspace_added_through_the_object_api_keeps_its_name(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    named = fake.create_workspace(tenant, "acme", "Acme Corp")
    unnamed = fake.create_workspace(tenant, "globex")
    assert (named.slug, named.name) == ("acme", "Acme Corp")
    assert (unnamed.slug, unnamed.name) == ("globex", "globex")
    assert named.id != unnamed.id
    assert fake.workspaces(tenant) == [named, unnamed]


def test_an_audit_row_names_the_key_that_wrote(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant, wire.SCOPES)
    with fake.client(key) as c:
        ok(c.post("/api/contexts", json=context_body()), 201)
    (row,) = fake.audit_log()
    assert row.actor_key_prefix == key[:12]


def test_the_agent_layer_shares_the_backends_store_audit_embedder_and_llm(
    llm_fake: FakeContextQ,
) -> None:
    t = llm_fake.create_tenant()
    llm_fake.create_workspace(t, "ws")
    with llm_fake.client(llm_fake.mint_key(t, wire.SCOPES)) as c:
        ok(c.post("/api/agent/lessons", json={"text": "pin the versions", "workspace": "ws"}), 201)
        ok(c.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
    (stored,) = llm_fake.lessons(t)
    assert stored.embedding is not None
    A = AgentAction
    assert [r.action for r in llm_fake.audit_log()] == [A.LESSON_ADD, A.HANDOFF]


def test_a_bad_key_is_a_401_even_while_the_database_is_busy(tmp_path: Path) -> None:
    """ContextQ checks the key before it takes any lock: only a good key gets the 503."""
    path = tmp_path / "fake.db"
    with FakeContextQ(store=SqlStore(f"sqlite:///{path}", busy_timeout=0.1)) as fake:
        key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
        revoked = fake.mint_key(fake.tenants()[0], wire.SCOPES)
        fake.revoke_key(revoked)
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            answers = {}
            for name, api_key in [("good", key), ("unknown", "sk_live_" + "0" * 40)]:
                with fake.client(api_key) as c:
                    answers[name] = c.post("/api/contexts", json=context_body())
            with fake.client(revoked) as c:
                answers["revoked"] = c.post("/api/contexts", json=context_body())
            holder.execute("ROLLBACK")
        finally:
            holder.close()
    assert error(answers["good"], 503, m.DATABASE_BUSY)
    assert error(answers["unknown"], 401, m.UNAUTHORIZED)["message"] == m.UNKNOWN_KEY
    assert error(answers["revoked"], 401, m.UNAUTHORIZED)["message"] == m.REVOKED_KEY


def test_ids_and_lookups_on_a_database(tmp_path: Path) -> None:
    """A database store draws each kind's ids from its own table, and an id beyond the
    64-bit range is a 404 without a query (the memory store, where the mutation run's
    tests run, would accept any kind and any id)."""
    with FakeContextQ(store=SqlStore(f"sqlite:///{tmp_path / 'fake.db'}")) as fake:
        tenant = fake.create_tenant()
        with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
            ws = ok(c.post("/api/workspaces", json={"slug": "acme"}), 201)
            created = ok(c.post("/api/contexts", json=context_body(workspace="acme")), 201)
            missing = wire.MAX_ID + 1
            body = error(c.get(f"/api/contexts/{missing}"), 404, m.NOT_FOUND)
            assert body["message"] == f"Context {missing} not found."
        assert (ws["id"], created["id"]) == (1, 1)
        assert fake.verify_audit_chain() == 2


# ----- scopes: the one each route needs, and the refusal naming it -----


def test_a_read_only_key_reads(fake: FakeContextQ, tenant: Tenant, make_context: Make) -> None:
    created = make_context(externalId="e1", workspace=None)
    fake.create_workspace(tenant, "acme")
    with fake.client(fake.mint_key(tenant, [wire.READ])) as c:
        assert ok(c.get("/api/contexts"))["total"] == 1
        assert ok(c.get(f"/api/contexts/{created['id']}"))["id"] == created["id"]
        assert ok(c.get("/api/contexts/by-external/e1"))["id"] == created["id"]
        assert len(ok(c.post("/api/search", json={"query": "note"}))["results"]) == 1
        assert [w["slug"] for w in ok(c.get("/api/workspaces"))["items"]] == ["acme"]
        body = error(c.post("/api/contexts", json=context_body()), 403, m.SCOPE_DENIED)
        assert body["message"] == scope_message("write", "read")


def test_a_write_only_key_writes(fake: FakeContextQ, tenant: Tenant) -> None:
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as c:
        created = ok(c.post("/api/contexts", json=context_body()), 201)
        ok(c.put(f"/api/contexts/{created['id']}", json={"title": "T2"}))
        items = [context_body(externalId="b1")]
        assert ok(c.post("/api/contexts/bulk-upsert", json={"contexts": items}))["created"] == 1
        assert c.delete(f"/api/contexts/{created['id']}").status_code == 204
        body = error(c.get("/api/contexts"), 403, m.SCOPE_DENIED)
        assert body["message"] == scope_message("read", "write")


def test_workspace_writes_need_admin(fake: FakeContextQ, tenant: Tenant) -> None:
    fake.create_workspace(tenant, "acme")
    requests = [
        ("POST", "/api/workspaces", {"slug": "new"}),
        ("POST", "/api/workspaces/acme/archive", None),
        ("DELETE", "/api/workspaces/acme", None),
    ]
    with fake.client(fake.mint_key(tenant, [wire.READ, wire.WRITE])) as c:
        for method, url, body in requests:
            refused = error(c.request(method, url, json=body), 403, m.SCOPE_DENIED)
            assert refused["message"] == scope_message("admin", "read, write"), url
            assert refused["required"] == "admin"
    assert [w.slug for w in fake.workspaces(tenant)] == ["acme"]


# ----- the audit row of every write -----


def test_each_write_appends_its_action_entity_and_id(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    created = ok(client.post("/api/contexts", json=context_body()), 201)
    cid = str(created["id"])
    ok(client.put(f"/api/contexts/{cid}", json={"title": "T2"}))
    ok(client.post("/api/contexts/bulk-upsert", json={"contexts": [context_body(externalId="x")]}))
    ok(client.post("/api/workspaces", json={"slug": "ws"}), 201)
    ok(client.post("/api/workspaces/ws/archive"))
    assert client.delete("/api/workspaces/ws").status_code == 204
    assert client.delete(f"/api/contexts/{cid}").status_code == 204
    A = AuditAction
    rows = fake.audit_log()
    assert [(r.action, r.entity, r.entity_id) for r in rows] == [
        (A.CONTEXT_CREATE, "context", cid),
        (A.CONTEXT_UPDATE, "context", cid),
        (A.CONTEXT_BULK_UPSERT, "context", None),
        (A.WORKSPACE_CREATE, "workspace", "ws"),
        (A.WORKSPACE_ARCHIVE, "workspace", "ws"),
        (A.WORKSPACE_DELETE, "workspace", "ws"),
        (A.CONTEXT_DELETE, "context", cid),
    ]
    assert {r.tenant_id for r in rows} == {tenant.id}
    assert all(isinstance(r.at, str) and r.at.endswith("Z") for r in rows)
    assert [r.id for r in rows] == sorted({r.id for r in rows})
    assert rows[0].prev_hash is None
    assert [r.prev_hash for r in rows[1:]] == [r.hash for r in rows[:-1]]
    assert fake.verify_audit_chain() == len(rows)


# ----- updates: each field given is replaced, the rest kept -----


@pytest.mark.parametrize(
    ("field", "value", "wire_name"),
    [
        ("type", "incident", "type"),
        ("title", "New title", "title"),
        ("content", "New content.", "content"),
        ("tags", ["x", "y"], "tags"),
        ("metadata", {"k": "v"}, "metadata"),
        ("externalId", "fresh", "externalId"),
    ],
)
def test_an_update_replaces_only_the_field_given(
    client: httpx2.Client, make_context: Make, field: str, value: Any, wire_name: str
) -> None:
    created = make_context(tags=["a"], metadata={"m": 1}, externalId="old")
    updated = ok(client.put(f"/api/contexts/{created['id']}", json={field: value}))
    assert updated[wire_name] == value
    for name in ("type", "title", "content", "tags", "metadata", "externalId", "workspace"):
        if name != wire_name:
            assert updated[name] == created[name], name
    assert ok(client.get(f"/api/contexts/{created['id']}")) == updated


def test_an_update_can_clear_tags_and_metadata(client: httpx2.Client, make_context: Make) -> None:
    created = make_context(tags=["a"], metadata={"m": 1})
    updated = ok(client.put(f"/api/contexts/{created['id']}", json={"tags": [], "metadata": {}}))
    assert (updated["tags"], updated["metadata"]) == ([], {})


def test_an_update_moves_a_context_between_workspaces(
    client: httpx2.Client, make_context: Make
) -> None:
    ok(client.post("/api/workspaces", json={"slug": "one"}), 201)
    ok(client.post("/api/workspaces", json={"slug": "two"}), 201)
    created = make_context(workspace="one")
    cid = created["id"]
    assert ok(client.put(f"/api/contexts/{cid}", json={"workspace": "two"}))["workspace"] == "two"
    listed = ok(client.get("/api/contexts", params={"workspace": "two"}))
    assert [c["id"] for c in listed["items"]] == [cid]
    assert ok(client.get("/api/contexts", params={"workspace": "one"}))["total"] == 0
    # wire.UNKNOWN_WORKSPACE_IS_NULL: an unknown slug leaves the context without one
    assert ok(client.put(f"/api/contexts/{cid}", json={"workspace": "none"}))["workspace"] is None


def test_a_context_keeps_its_own_external_id_on_update(
    client: httpx2.Client, make_context: Make
) -> None:
    created = make_context(externalId="mine")
    updated = ok(client.put(f"/api/contexts/{created['id']}", json={"externalId": "mine"}))
    assert updated["externalId"] == "mine"


def test_an_external_id_held_by_another_context_is_a_409(
    client: httpx2.Client, make_context: Make
) -> None:
    holder = make_context(externalId="taken")
    other = make_context()
    for response in (
        client.post("/api/contexts", json=context_body(externalId="taken")),
        client.put(f"/api/contexts/{other['id']}", json={"externalId": "taken"}),
    ):
        body = error(response, 409, m.EXTERNAL_ID_TAKEN)
        assert body["message"] == (
            f"externalId 'taken' is already used by context {holder['id']} in this tenant."
        )
        assert body["externalId"] == "taken"


# ----- reads -----


def test_an_unknown_external_id_is_named_in_the_404(client: httpx2.Client) -> None:
    body = error(client.get("/api/contexts/by-external/nope"), 404, m.NOT_FOUND)
    assert body["message"] == "No context with externalId 'nope'."


def test_an_over_long_external_id_parameter_names_the_parameter(client: httpx2.Client) -> None:
    too_long = "e" * (wire.MAX_EXTERNAL_ID_CHARS + 1)
    body = error(client.get(f"/api/contexts/by-external/{too_long}"), 400, m.VALIDATION_ERROR)
    assert body["issues"] == [
        {"path": "externalId", "message": m.TOO_LONG.format(max=wire.MAX_EXTERNAL_ID_CHARS)}
    ]


def test_listing_an_unknown_workspace_is_an_empty_page(
    client: httpx2.Client, make_context: Make
) -> None:
    make_context()
    page = ok(client.get("/api/contexts", params={"workspace": "none", "limit": 5, "offset": 2}))
    assert page == {"items": [], "total": 0, "limit": 5, "offset": 2}


def test_a_search_hit_without_content_shows_its_title(
    client: httpx2.Client, make_context: Make
) -> None:
    make_context(title="Rocket plans", content="")
    (hit,) = ok(client.post("/api/search", json={"query": "rocket"}))["results"]
    assert hit["snippet"] == "Rocket plans"


# ----- workspaces -----


def test_a_taken_slug_is_named_in_the_409(client: httpx2.Client) -> None:
    ok(client.post("/api/workspaces", json={"slug": "acme"}), 201)
    body = error(client.post("/api/workspaces", json={"slug": "acme"}), 409, m.WORKSPACE_TAKEN)
    assert body["message"] == "Workspace 'acme' already exists."


def test_an_unknown_workspace_is_named_in_the_404(client: httpx2.Client) -> None:
    for response in (
        client.post("/api/workspaces/none/archive"),
        client.delete("/api/workspaces/none"),
    ):
        body = error(response, 404, m.NOT_FOUND)
        assert body["message"] == "Workspace 'none' not found."


def test_an_over_long_slug_parameter_names_the_parameter(client: httpx2.Client) -> None:
    too_long = "s" * (wire.MAX_WORKSPACE_SLUG_CHARS + 1)
    body = error(client.delete(f"/api/workspaces/{too_long}"), 400, m.VALIDATION_ERROR)
    assert body["issues"] == [
        {"path": "slug", "message": m.TOO_LONG.format(max=wire.MAX_WORKSPACE_SLUG_CHARS)}
    ]


def test_a_workspace_not_empty_counts_only_its_own_contexts(
    client: httpx2.Client, make_context: Make
) -> None:
    ok(client.post("/api/workspaces", json={"slug": "acme"}), 201)
    make_context(workspace="acme")
    make_context(workspace="acme")
    make_context()  # outside the workspace
    body = error(client.delete("/api/workspaces/acme"), 409, m.WORKSPACE_NOT_EMPTY)
    assert body["message"] == "Workspace 'acme' still holds 2 context(s); delete them first."
    assert body["contexts"] == 2
