"""Plan quotas: the free plan's 100 contexts, and what a 402 says."""

from __future__ import annotations

import pytest

from adapter.errors import QuotaExceededError
from contextq_conformance.targets import Target, Tenant


def _fill(tenant: Tenant, count: int, prefix: str = "q") -> None:
    items = [
        {"type": "reference", "title": "t", "content": "c", "external_id": f"{prefix}{i}"}
        for i in range(count)
    ]
    tenant.client.api.bulk_upsert(items)


@pytest.mark.contract("quota.free-100", "quota.402-details")
def test_the_101st_context_of_a_free_tenant_is_a_402(tenant: Tenant) -> None:
    _fill(tenant, 100)
    with pytest.raises(QuotaExceededError) as caught:
        tenant.client.api.create_context("reference", "one too many", "c")
    error = caught.value
    assert (error.status, error.code) == (402, "quota_exceeded")
    assert error.details.get("limit") == 100 and error.details.get("plan") == "free"
    assert error.details.get("resource") == "contexts"
    assert tenant.client.api.list_contexts().total == 100


@pytest.mark.contract("quota.bulk-whole")
def test_a_bulk_upsert_crossing_the_quota_is_rejected_whole_updates_free(tenant: Tenant) -> None:
    _fill(tenant, 99)
    with pytest.raises(QuotaExceededError):
        _fill(tenant, 2, prefix="new")
    assert tenant.client.api.list_contexts().total == 99
    _fill(tenant, 99)  # all updates: no new rows, no quota
    _fill(tenant, 1, prefix="last")
    assert tenant.client.api.list_contexts().total == 100


@pytest.mark.contract("quota.free-100")
def test_another_plan_has_room_past_100(target: Target) -> None:
    roomy = target.tenant(plan="pro")
    _fill(roomy, 100)
    roomy.client.api.create_context("reference", "the 101st", "c")
    assert roomy.client.api.list_contexts().total == 101
