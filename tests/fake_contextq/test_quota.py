"""The free plan's 100-context quota and its 402."""

from __future__ import annotations

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant, ValidationFailed
from tests.support.helpers import context_body, fill

pytestmark = pytest.mark.all_stores


def test_the_101st_create_on_the_free_plan_is_a_402(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 99)
    assert client.post("/api/contexts", json=context_body()).status_code == 201  # the 100th
    response = client.post("/api/contexts", json=context_body())
    assert response.status_code == 402
    body = response.json()
    assert body["error"] == "quota_exceeded"
    assert (body["resource"], body["limit"], body["plan"]) == ("contexts", 100, "free")
    assert "free plan allows 100 contexts" in body["message"]
    assert len(fake.contexts(tenant)) == 100


def test_an_upsert_that_would_cross_the_quota_is_refused_whole(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 98)
    items = [context_body(externalId=f"new{i}") for i in range(3)]
    response = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert response.status_code == 402
    assert len(fake.contexts(tenant)) == 98
    assert "would add 3" in response.json()["message"]


def test_upserts_count_only_the_rows_they_create(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 100)
    # updating all 100 at the limit creates nothing, so it passes
    fill(client, 100)
    items = [context_body(externalId="e0", content="changed"), context_body(externalId="brand")]
    assert client.post("/api/contexts/bulk-upsert", json={"contexts": items}).status_code == 402
    assert fake.contexts(tenant)[0].content == "Some text."


def test_updates_and_deletes_work_at_the_limit(client: httpx2.Client) -> None:
    fill(client, 100)
    first = client.get("/api/contexts", params={"limit": 1}).json()["items"][0]["id"]
    assert client.put(f"/api/contexts/{first}", json={"content": "x"}).status_code == 200
    assert client.delete(f"/api/contexts/{first}").status_code == 204
    assert client.post("/api/contexts", json=context_body()).status_code == 201


def test_a_plan_change_lifts_the_quota(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 100)
    fake.set_plan(tenant, "pro")
    assert client.post("/api/contexts", json=context_body()).status_code == 201
    fake.set_plan(tenant, "free")
    assert client.post("/api/contexts", json=context_body()).status_code == 402


def test_quotas_are_per_tenant(client: httpx2.Client, other: tuple[Tenant, httpx2.Client]) -> None:
    fill(client, 100)
    assert other[1].post("/api/contexts", json=context_body()).status_code == 201


def test_an_unknown_plan_is_refused(fake: FakeContextQ) -> None:
    with pytest.raises(ValidationFailed, match="Unknown plan 'gold'"):
        fake.create_tenant(plan="gold")
