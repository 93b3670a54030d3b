"""``ctx_import`` and its REST twin ``POST /api/contexts/import``: the bulk upsert's rules
(limits, all or nothing, the quota counting only what it creates) for items that need no
external id, on every store, through REST and MCP, and under 50 concurrent calls."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.audit import AuditAction
from fake_contextq.mcp import McpToolError, SyncMcpClient
from fake_contextq.service.tool_shapes import MCP_SAVE_DEFAULT_TYPE
from tests.support.helpers import context_body, error, fill, issue_paths, ok

pytestmark = pytest.mark.all_stores

IMPORT = wire.Routes.IMPORT_CONTEXTS.template
CONCURRENT = 50


def imported(client: httpx2.Client, *items: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = ok(client.post(IMPORT, json={"contexts": list(items)}))
    return answer


def test_items_without_an_external_id_are_created_and_known_ones_updated(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    kept = ok(client.post("/api/contexts", json=context_body(externalId="k", content="old")), 201)
    answer = imported(
        client,
        context_body(title="one"),
        context_body(title="two", externalId="k", content="new"),
        context_body(title="three", externalId="fresh"),
    )
    assert (answer["created"], answer["updated"]) == (2, 1)
    assert [item["title"] for item in answer["items"]] == ["one", "two", "three"]
    assert answer["items"][1]["id"] == kept["id"]
    assert client.get(f"/api/contexts/{kept['id']}").json()["content"] == "new"
    assert len(fake.contexts(tenant)) == 3
    # an item without an external id is created every time: importing twice makes two
    imported(client, context_body(title="one"))
    assert [c.title for c in fake.contexts(tenant)].count("one") == 2


def test_an_import_writes_one_audit_row(client: httpx2.Client, fake: FakeContextQ) -> None:
    imported(client, context_body(), context_body())
    rows = [row for row in fake.audit_log() if row.action == AuditAction.CONTEXT_IMPORT]
    assert len(rows) == 1 and rows[0].entity == "context"
    fake.verify_audit_chain()


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, {"contexts"}),
        ({"contexts": []}, {"contexts"}),
        ({"contexts": "x"}, {"contexts"}),
        ({"contexts": [context_body()] * (wire.IMPORT_MAX_ITEMS + 1)}, {"contexts"}),
        ({"contexts": [context_body(title="a\x00b")]}, {"contexts.0.title"}),
        (
            {"contexts": [context_body(title="x" * (wire.MAX_TITLE_CHARS + 1))]},
            {"contexts.0.title"},
        ),
        (
            {"contexts": [context_body(), {"title": 3}]},
            {"contexts.1.title", "contexts.1.type", "contexts.1.content"},
        ),
        ({"contexts": [context_body(type="nope")]}, {"contexts.0.type"}),
        (
            {"contexts": [context_body(externalId="d"), context_body(externalId="d")]},
            {"contexts.1.externalId"},
        ),
        ({"contexts": [7]}, {"contexts.0"}),
    ],
    ids=[
        "missing",
        "empty",
        "not-an-array",
        "too-many",
        "nul",
        "title-too-long",
        "wrong-types",
        "bad-type",
        "duplicate-external-id",
        "item-not-an-object",
    ],
)
def test_bad_imports_are_400s_that_change_nothing(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, body: Any, paths: set[str]
) -> None:
    answer = error(client.post(IMPORT, json=body), 400, _msgs.VALIDATION_ERROR)
    assert issue_paths(answer) >= paths
    assert fake.contexts(tenant) == []


def test_an_import_past_the_quota_is_refused_whole(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 98)
    refused = error(
        client.post(IMPORT, json={"contexts": [context_body()] * 3}), 402, _msgs.QUOTA_EXCEEDED
    )
    assert "would add 3" in refused["message"]
    assert len(fake.contexts(tenant)) == 98
    # updates create nothing, so they pass at the limit
    fill(client, 2, prefix="z")
    answer = imported(client, context_body(externalId="e0", content="changed"))
    assert (answer["created"], answer["updated"]) == (0, 1)


def test_a_read_only_key_cannot_import(fake: FakeContextQ, tenant: Tenant) -> None:
    with fake.client(fake.mint_key(tenant, [wire.READ])) as reader:
        error(reader.post(IMPORT, json={"contexts": [context_body()]}), 403, _msgs.SCOPE_DENIED)
    assert fake.contexts(tenant) == []


def test_an_import_lands_in_the_callers_tenant_only(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, other: tuple[Tenant, httpx2.Client]
) -> None:
    other_tenant, other_client = other
    ok(
        other_client.post("/api/contexts", json=context_body(externalId="shared", title="theirs")),
        201,
    )
    answer = imported(client, context_body(externalId="shared", title="mine"))
    assert answer["created"] == 1  # the other tenant's external id names nothing here
    assert [c.title for c in fake.contexts(other_tenant)] == ["theirs"]


# ----- 50 concurrent imports at the plan's limit ----------------------------------------------


def _at_limit(fake: FakeContextQ, tenant: Tenant, room: int) -> None:
    limit = 100  # the free plan's (quota.PLAN_CONTEXT_QUOTAS)
    fake.fill(tenant, limit - room)


def _concurrently(call: Callable[[int], bool]) -> int:
    """How many of ``CONCURRENT`` calls, all started at once, landed."""
    with ThreadPoolExecutor(CONCURRENT) as pool:
        return sum(pool.map(call, range(CONCURRENT)))


def test_50_concurrent_rest_imports_land_exactly_what_the_plan_allows(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    _at_limit(fake, tenant, room=20)

    def call(n: int) -> bool:
        with fake.client(key) as client:
            response = client.post(IMPORT, json={"contexts": [context_body(title=f"c{n}")]})
        assert response.status_code in (200, 402), response.text
        return response.status_code == 200

    assert _concurrently(call) == 20
    assert len(fake.contexts(tenant)) == 100
    fake.verify_audit_chain()


def test_50_concurrent_mcp_imports_land_exactly_what_the_plan_allows(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    _at_limit(fake, tenant, room=21)  # pairs: ten land, the eleventh would cross the limit
    server = fake.mcp_server(key)
    codes: list[str | None] = []

    def call(n: int) -> bool:
        with SyncMcpClient(server) as mcp:
            try:
                mcp.call("ctx_import", {"contexts": [{"content": f"a{n}"}, {"content": f"b{n}"}]})
            except McpToolError as refused:
                codes.append(wire.mcp_error_code(refused.text))
                return False
        return True

    assert _concurrently(call) == 10
    assert codes == [_msgs.QUOTA_EXCEEDED] * (CONCURRENT - 10)
    assert len(fake.contexts(tenant)) == 99
    fake.verify_audit_chain()


# ----- through MCP ------------------------------------------------------------------------------


def test_ctx_import_fills_items_as_ctx_save_and_answers_the_ids_in_order(
    fake: FakeContextQ, key: str, client: httpx2.Client
) -> None:
    """The tool answers the counts and the id each item landed as, in the order sent, not
    the contents the model has just sent; REST has the whole contexts."""
    old = {"content": "old", "type": "project", "title": "Old", "externalId": "k"}
    kept = ok(client.post(IMPORT, json={"contexts": [old]}))
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        answer = mcp.call(
            "ctx_import",
            {
                "contexts": [
                    {"content": "First line\nmore"},
                    {"content": "x", "type": "lesson", "externalId": "k"},
                ]
            },
        )
    assert set(answer) == {"created", "updated", "ids"}
    assert (answer["created"], answer["updated"]) == (1, 1)
    first_id, second_id = answer["ids"]
    assert second_id == kept["items"][0]["id"]
    first = client.get(f"/api/contexts/{first_id}").json()
    assert (first["content"], first["type"], first["title"]) == (
        "First line\nmore",
        MCP_SAVE_DEFAULT_TYPE,
        "First line",
    )
    assert client.get(f"/api/contexts/{second_id}").json()["type"] == "lesson"


def test_ctx_import_refusals_are_tool_errors(fake: FakeContextQ, tenant: Tenant) -> None:
    with (
        SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, [wire.READ]))) as reader,
        pytest.raises(McpToolError) as denied,
    ):
        reader.call("ctx_import", {"contexts": [{"content": "x"}]})
    assert wire.mcp_error_code(denied.value.text) == _msgs.SCOPE_DENIED
    with (
        SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, wire.SCOPES))) as mcp,
        pytest.raises(McpToolError) as bad,
    ):
        mcp.call("ctx_import", {"contexts": [{"content": "a\x00"}]})
    assert wire.mcp_error_code(bad.value.text) == _msgs.VALIDATION_ERROR
    assert "contexts.0.content" in bad.value.text
    assert fake.contexts(tenant) == []
