"""The audit log, as far as a tenant's writes can be counted on the target."""

from __future__ import annotations

import pytest

from contextq_conformance.targets import Target, Tenant


@pytest.mark.contract("audit.one-row-per-write")
def test_each_write_appends_one_row_and_reads_none(target: Target, tenant: Tenant) -> None:
    api = tenant.client.api
    before = target.audit_rows(tenant)
    made = api.create_context("reference", "t", "c")
    api.update_context(made.id, content="d")
    api.get_context(made.id)
    api.list_contexts()
    api.search("t")
    api.list_workspaces()
    api.delete_context(made.id)
    assert target.audit_rows(tenant) - before == 3
