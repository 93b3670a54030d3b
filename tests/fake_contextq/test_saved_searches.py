"""Saved searches (``/api/saved-searches`` and the ``ctx_saved_searches_*`` tools): stored
per tenant under a unique name, audited, and run as exactly what ``POST /api/search``
answers for the same fields; on every store, through REST and MCP."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.audit import AuditAction
from fake_contextq.mcp import McpToolError, SyncMcpClient
from tests.support.helpers import context_body, error, issue_paths, ok

pytestmark = pytest.mark.all_stores

BASE = wire.Routes.LIST_SAVED_SEARCHES.template
FIELDS = {"query": "deploy keys", "type": "reference", "tags": ["ops"], "limit": 2}


def create(client: httpx2.Client, **body: Any) -> dict[str, Any]:
    made: dict[str, Any] = ok(client.post(BASE, json={"name": "ops", **FIELDS, **body}), 201)
    return made


def seed(client: httpx2.Client, fake: FakeContextQ, tenant: Tenant) -> None:
    fake.create_workspace(tenant, "infra")
    for i, (type_, tags, ws) in enumerate(
        [
            ("reference", ["ops"], None),
            ("reference", ["ops"], "infra"),
            ("lesson", ["ops"], None),
            ("reference", [], None),
            ("reference", ["ops", "x"], "infra"),
        ]
    ):
        body = context_body(type=type_, title=f"deploy {i}", content="rotate deploy keys")
        ok(client.post("/api/contexts", json={**body, "tags": tags, "workspace": ws}), 201)


def test_create_get_list_update_delete(client: httpx2.Client, fake: FakeContextQ) -> None:
    made = create(client)
    assert {k: made[k] for k in FIELDS} == FIELDS
    assert made["name"] == "ops" and made["workspace"] is None
    assert made["createdAt"] == made["updatedAt"]
    assert ok(client.get(f"{BASE}/{made['id']}")) == made
    second = create(client, name="other", query="x", type=None, tags=[], limit=None)
    page = ok(client.get(BASE))
    assert ([s["id"] for s in page["items"]], page["total"]) == ([made["id"], second["id"]], 2)
    assert ok(client.get(BASE, params={"limit": 1, "offset": 1}))["items"] == [second]
    changed = ok(client.put(f"{BASE}/{made['id']}", json={"limit": None, "workspace": "infra"}))
    assert (changed["limit"], changed["workspace"], changed["query"]) == (
        None,
        "infra",
        "deploy keys",
    )
    assert ok(client.get(f"{BASE}/{made['id']}")) == changed
    assert client.delete(f"{BASE}/{made['id']}").status_code == 204
    error(client.get(f"{BASE}/{made['id']}"), 404, _msgs.NOT_FOUND)
    actions = [row.action for row in fake.audit_log() if row.entity == "saved_search"]
    assert actions == [
        AuditAction.SAVED_SEARCH_CREATE,
        AuditAction.SAVED_SEARCH_CREATE,
        AuditAction.SAVED_SEARCH_UPDATE,
        AuditAction.SAVED_SEARCH_DELETE,
    ]
    fake.verify_audit_chain()


@pytest.mark.parametrize(
    "fields",
    [
        FIELDS,
        {"query": "deploy"},
        {"query": "deploy", "workspace": "infra"},
        {"query": "deploy", "workspace": "nowhere"},
        {"query": "rotate keys", "tags": ["ops", "x"], "limit": 1},
        {"query": "deploy", "type": "lesson"},
    ],
    ids=["all", "query-only", "workspace", "unknown-workspace", "tags-limit", "type"],
)
def test_a_run_answers_what_the_search_answers(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, key: str, fields: dict[str, Any]
) -> None:
    seed(client, fake, tenant)
    made = ok(client.post(BASE, json={"name": "s", **fields}), 201)
    searched = ok(client.post("/api/search", json=fields))
    assert ok(client.post(f"{BASE}/{made['id']}/run")) == searched
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        assert mcp.call("ctx_saved_searches_run", {"id": made["id"]}) == searched
        assert mcp.call("ctx_run_saved_search", {"id": made["id"]}) == searched


def test_a_run_sees_the_contexts_of_now(client: httpx2.Client) -> None:
    made = create(client, query="tacos", type=None, tags=[], limit=None)
    assert ok(client.post(f"{BASE}/{made['id']}/run")) == {"results": []}
    ok(client.post("/api/contexts", json=context_body(content="tacos on friday")), 201)
    assert len(ok(client.post(f"{BASE}/{made['id']}/run"))["results"]) == 1


def test_a_name_is_unique_per_tenant(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    made = create(client)
    taken = error(
        client.post(BASE, json={"name": "ops", "query": "q"}), 409, _msgs.SAVED_SEARCH_NAME_TAKEN
    )
    assert taken["name"] == "ops"
    second = create(client, name="two")
    error(
        client.put(f"{BASE}/{second['id']}", json={"name": "ops"}),
        409,
        _msgs.SAVED_SEARCH_NAME_TAKEN,
    )
    ok(client.put(f"{BASE}/{made['id']}", json={"name": "ops"}))  # its own name: no clash
    create(other[1])  # another tenant may use the name


def test_another_tenants_saved_search_is_a_404_everywhere(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    made = create(client)
    _, theirs = other
    path = f"{BASE}/{made['id']}"
    for response in (
        theirs.get(path),
        theirs.put(path, json={"query": "stolen"}),
        theirs.post(f"{path}/run"),
        theirs.delete(path),
    ):
        body = error(response, 404, _msgs.NOT_FOUND)
        assert "deploy" not in str(body)
    assert ok(theirs.get(BASE))["total"] == 0
    assert ok(client.get(path)) == made


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({"query": "q"}, {"name"}),
        ({"name": "n"}, {"query"}),
        ({"name": "a\x00", "query": "q"}, {"name"}),
        ({"name": "n", "query": "q\x00"}, {"query"}),
        ({"name": "n" * (wire.MAX_SAVED_SEARCH_NAME_CHARS + 1), "query": "q"}, {"name"}),
        ({"name": "n", "query": "q" * (wire.MAX_QUERY_CHARS + 1)}, {"query"}),
        ({"name": "", "query": "q"}, {"name"}),
        ({"name": 5, "query": ["q"]}, {"name", "query"}),
        ({"name": "n", "query": "q", "type": "moc"}, {"type"}),
        ({"name": "n", "query": "q", "limit": wire.SEARCH_MAX_LIMIT + 1}, {"limit"}),
        ({"name": "n", "query": "q", "limit": "3"}, {"limit"}),
        ({"name": "n", "query": "q", "tags": "ops"}, {"tags"}),
        ({"name": "n", "query": "q", "workspace": "x" * 65}, {"workspace"}),
        ({"name": None, "query": "q"}, {"name"}),
    ],
    ids=[
        "no-name",
        "no-query",
        "nul-name",
        "nul-query",
        "long-name",
        "long-query",
        "empty-name",
        "wrong-types",
        "type-not-searchable",
        "limit-too-big",
        "limit-string",
        "tags-not-array",
        "long-workspace",
        "null-name",
    ],
)
def test_bad_bodies_are_400s_that_store_nothing(
    client: httpx2.Client, body: dict[str, Any], paths: set[str]
) -> None:
    answer = error(client.post(BASE, json=body), 400, _msgs.VALIDATION_ERROR)
    assert issue_paths(answer) == paths
    assert ok(client.get(BASE))["total"] == 0


def test_bad_updates_and_ids(client: httpx2.Client) -> None:
    made = create(client)
    path = f"{BASE}/{made['id']}"
    error(client.put(path, json={"query": None}), 400, _msgs.VALIDATION_ERROR)
    error(client.put(path, json={"name": "x\x00"}), 400, _msgs.VALIDATION_ERROR)
    error(
        client.put(path, content=b"[1]", headers={"content-type": "application/json"}),
        400,
        _msgs.VALIDATION_ERROR,
    )
    assert ok(client.get(path)) == made
    for bad in ("abc", "0", "-1"):
        error(client.get(f"{BASE}/{bad}"), 400, _msgs.VALIDATION_ERROR)
    for unknown in ("999999", str(2**63), "9" * 19):
        error(client.get(f"{BASE}/{unknown}"), 404, _msgs.NOT_FOUND)
        error(client.post(f"{BASE}/{unknown}/run"), 404, _msgs.NOT_FOUND)
    error(client.get(BASE, params={"limit": 0}), 400, _msgs.VALIDATION_ERROR)


def test_scopes_reads_read_and_writes_write(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client
) -> None:
    made = create(client)
    path = f"{BASE}/{made['id']}"
    with fake.client(fake.mint_key(tenant, [wire.READ])) as reader:
        ok(reader.get(BASE))
        ok(reader.get(path))
        ok(reader.post(f"{path}/run"))
        error(reader.post(BASE, json={"name": "n", "query": "q"}), 403, _msgs.SCOPE_DENIED)
        error(reader.put(path, json={"query": "q"}), 403, _msgs.SCOPE_DENIED)
        error(reader.delete(path), 403, _msgs.SCOPE_DENIED)
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as writer:
        error(writer.post(f"{path}/run"), 403, _msgs.SCOPE_DENIED)
    assert ok(client.get(path)) == made


# ----- through MCP ------------------------------------------------------------------------------


def test_every_saved_search_tool_round_trips_as_rest(
    fake: FakeContextQ, key: str, client: httpx2.Client
) -> None:
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        made = mcp.call("ctx_saved_searches_create", {"name": "ops", **FIELDS})
        assert ok(client.get(f"{BASE}/{made['id']}")) == made
        assert mcp.call("ctx_saved_searches_get", {"id": made["id"]}) == made
        assert mcp.call("ctx_saved_searches_list", {}) == ok(client.get(BASE))
        changed = mcp.call(
            "ctx_saved_searches_update", {"id": made["id"], "type": None, "limit": 5}
        )
        assert (changed["type"], changed["limit"], changed["name"]) == (None, 5, "ops")
        assert mcp.call("ctx_saved_searches_delete", {"id": made["id"]}) == {
            "deleted": True,
            "id": made["id"],
        }
        with pytest.raises(McpToolError) as gone:
            mcp.call("ctx_saved_searches_get", {"id": made["id"]})
    assert wire.mcp_error_code(gone.value.text) == _msgs.NOT_FOUND


def test_saved_search_tools_refuse_as_tool_errors(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        made = mcp.call("ctx_saved_searches_create", {"name": "ops", "query": "q"})
        with pytest.raises(McpToolError) as taken:
            mcp.call("ctx_saved_searches_create", {"name": "ops", "query": "q"})
        with pytest.raises(McpToolError) as nul:
            mcp.call("ctx_saved_searches_create", {"name": "n\x00", "query": "q"})
    assert wire.mcp_error_code(taken.value.text) == _msgs.SAVED_SEARCH_NAME_TAKEN
    assert wire.mcp_error_code(nul.value.text) == _msgs.VALIDATION_ERROR
    with SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, [wire.READ]))) as reader:
        assert reader.call("ctx_run_saved_search", {"id": made["id"]}) == {"results": []}
        for tool, args in (
            ("ctx_saved_searches_create", {"name": "n", "query": "q"}),
            ("ctx_saved_searches_update", {"id": made["id"], "query": "z"}),
            ("ctx_saved_searches_delete", {"id": made["id"]}),
        ):
            with pytest.raises(McpToolError) as denied:
                reader.call(tool, args)
            assert wire.mcp_error_code(denied.value.text) == _msgs.SCOPE_DENIED
    other = fake.create_tenant("other")
    with (
        SyncMcpClient(fake.mcp_server(fake.mint_key(other, wire.SCOPES))) as stranger,
        pytest.raises(McpToolError) as hidden,
    ):
        stranger.call("ctx_saved_searches_run", {"id": made["id"]})
    assert wire.mcp_error_code(hidden.value.text) == _msgs.NOT_FOUND
