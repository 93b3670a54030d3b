"""The quota's edges: a tenant already over its plan after a downgrade, the exact 402 and
400 sentences, and the plan with no quota."""

from __future__ import annotations

from dataclasses import replace

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant, ValidationFailed
from fake_contextq.domain.quota import PLAN_CONTEXT_QUOTAS
from tests.support.helpers import context_body, fill

pytestmark = pytest.mark.all_stores

OVER_BY_ONE = (
    "Quota exceeded: the free plan allows 100 contexts; this tenant has {current} "
    "and the request would add {adding}."
)


@pytest.fixture
def downgraded(client: httpx2.Client, fake: FakeContextQ, tenant: Tenant) -> Tenant:
    """A tenant that filled 102 contexts on the pro plan, then moved to free (limit 100)."""
    fake.set_plan(tenant, "pro")
    fill(client, 102)
    return fake.set_plan(tenant, "free")


def test_an_update_only_upsert_passes_for_a_tenant_over_its_limit(
    client: httpx2.Client, fake: FakeContextQ, downgraded: Tenant
) -> None:
    items = [context_body(externalId=f"e{i}", content=f"v2 of {i}") for i in range(102)]
    response = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert response.status_code == 200, response.text
    contents = {c.external_id: c.content for c in fake.contexts(downgraded)}
    assert len(contents) == 102
    assert contents["e0"] == "v2 of 0" and contents["e101"] == "v2 of 101"


def test_a_tenant_over_its_limit_can_create_nothing(
    client: httpx2.Client, fake: FakeContextQ, downgraded: Tenant
) -> None:
    response = client.post("/api/contexts", json=context_body())
    assert response.status_code == 402
    assert response.json() == {
        "error": "quota_exceeded",
        "message": OVER_BY_ONE.format(current=102, adding=1),
        "resource": "contexts",
        "limit": 100,
        "plan": "free",
    }
    items = [context_body(externalId="e0", content="changed"), context_body(externalId="new")]
    response = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert response.status_code == 402
    assert response.json()["message"] == OVER_BY_ONE.format(current=102, adding=1)
    assert len(fake.contexts(downgraded)) == 102
    assert {c.external_id: c.content for c in fake.contexts(downgraded)}["e0"] == "Some text."


def test_the_402_names_the_count_and_the_rows_it_would_add(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 98)
    items = [context_body(externalId=f"e{i}") for i in range(96, 101)]  # 2 updates, 3 new
    response = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert response.status_code == 402
    assert response.json()["message"] == OVER_BY_ONE.format(current=98, adding=3)
    assert len(fake.contexts(tenant)) == 98


def test_an_upsert_that_lands_exactly_on_the_limit_passes(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 97)
    items = [context_body(externalId=f"e{i}") for i in range(95, 100)]  # 2 updates, 3 new
    assert client.post("/api/contexts/bulk-upsert", json={"contexts": items}).status_code == 200
    assert len(fake.contexts(tenant)) == 100


def test_the_enterprise_plan_has_no_quota(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    assert PLAN_CONTEXT_QUOTAS["enterprise"] is None
    fake.set_plan(tenant, "enterprise")
    fill(client, 101)
    assert client.post("/api/contexts", json=context_body()).status_code == 201
    assert len(fake.contexts(tenant)) == 102


def test_unlimited_is_enterprises_deprecated_name(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    with pytest.warns(DeprecationWarning, match="'unlimited' is now called 'enterprise'"):
        made = fake.create_tenant("old", plan="unlimited")
    assert made.plan == "enterprise"
    with pytest.warns(DeprecationWarning, match="accepted until fake-contextq 0.2"):
        assert fake.set_plan(tenant, "unlimited").plan == "enterprise"
    fill(client, 101)
    assert len(fake.contexts(tenant)) == 101


def test_a_tenant_stored_as_unlimited_by_an_older_fake_has_no_quota(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    store = fake.store
    with store.transaction():
        store.put_tenant(replace(fake.tenant(tenant), plan="unlimited"))
    fill(client, 101)
    assert len(fake.contexts(tenant)) == 101


def test_the_pro_plan_allows_more_than_the_free_one(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.set_plan(tenant, "pro")
    fill(client, 100)
    response = client.post("/api/contexts", json=context_body())
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("plan", ["gold", "Free", ""])
def test_an_unknown_plan_is_refused_naming_the_plans(
    fake: FakeContextQ, tenant: Tenant, plan: str
) -> None:
    expected = [
        {"path": "plan", "message": f"Unknown plan {plan!r}; plans are free, pro, enterprise."}
    ]
    with pytest.raises(ValidationFailed) as created:
        fake.create_tenant("globex", plan=plan)
    assert created.value.issues == expected
    with pytest.raises(ValidationFailed) as changed:
        fake.set_plan(tenant, plan)
    assert changed.value.issues == expected
    assert fake.tenant(tenant).plan == "free"
    assert [t.name for t in fake.tenants()] == [tenant.name]
