"""Tenant isolation: another tenant's rows are 404, never 403, on every route."""

from __future__ import annotations

from urllib.parse import quote

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import context_body

pytestmark = pytest.mark.all_stores


def test_another_tenants_context_is_invisible_everywhere(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Tenant,
    other: tuple[Tenant, httpx2.Client],
) -> None:
    fake.create_workspace(tenant, "private")
    mine = client.post(
        "/api/contexts",
        json=context_body(externalId="mine", content="the launch code", workspace="private"),
    ).json()
    _, theirs = other
    cid = mine["id"]

    for response in (
        theirs.get(f"/api/contexts/{cid}"),
        theirs.get("/api/contexts/by-external/" + quote("mine", safe="")),
        theirs.put(f"/api/contexts/{cid}", json={"content": "pwned"}),
        theirs.delete(f"/api/contexts/{cid}"),
        theirs.post("/api/workspaces/private/archive"),
        theirs.delete("/api/workspaces/private"),
    ):
        assert response.status_code == 404, response.request.url
        assert response.json()["error"] == "not_found"

    assert theirs.get("/api/contexts").json()["total"] == 0
    assert theirs.get("/api/contexts", params={"workspace": "private"}).json()["items"] == []
    assert theirs.get("/api/workspaces").json() == {"items": []}
    assert theirs.post("/api/search", json={"query": "launch code"}).json() == {"results": []}
    # the other tenant's writes never touched the row
    assert client.get(f"/api/contexts/{cid}").json() == mine
    assert not fake.workspaces(tenant)[0].archived


def test_workspace_slugs_and_external_ids_are_per_tenant(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    _, theirs = other
    assert client.post("/api/workspaces", json={"slug": "acme"}).status_code == 201
    assert theirs.post("/api/workspaces", json={"slug": "acme"}).status_code == 201
    mine = client.post("/api/contexts", json=context_body(workspace="acme")).json()
    assert theirs.delete("/api/workspaces/acme").status_code == 204  # theirs was empty
    assert client.get(f"/api/contexts/{mine['id']}").json()["workspace"] == "acme"


def test_a_tenant_cannot_upsert_over_another_tenants_external_id(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Tenant,
    other: tuple[Tenant, httpx2.Client],
) -> None:
    client.post("/api/contexts", json=context_body(externalId="x", content="mine"))
    other_tenant, theirs = other
    result = theirs.post(
        "/api/contexts/bulk-upsert",
        json={"contexts": [context_body(externalId="x", content="theirs")]},
    ).json()
    assert result["created"] == 1
    assert fake.contexts(tenant)[0].content == "mine"
    assert fake.contexts(other_tenant)[0].content == "theirs"
