"""Keys, tenants and the errors of authentication."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapter.errors import AuthenticationError, NotFoundError
from contextq_conformance.targets import Target, Tenant

NOTE: dict[str, Any] = {"type": "reference", "title": "Mine", "content": "Only mine."}


@pytest.mark.contract("auth.bearer-key")
def test_a_key_binds_requests_to_its_tenant(target: Target, tenant: Tenant) -> None:
    other = target.tenant()
    made = tenant.client.api.create_context(**NOTE)
    assert [c.id for c in tenant.client.api.list_contexts().items] == [made.id]
    assert other.client.api.list_contexts().total == 0


@pytest.mark.contract("auth.unknown-key-401")
def test_an_unknown_key_is_401(target: Target) -> None:
    stranger = target.client_for_key("sk_live_" + "0" * 40)
    with pytest.raises(AuthenticationError) as caught:
        stranger.api.list_contexts()
    assert (caught.value.status, caught.value.code) == (401, "unauthorized")


@pytest.mark.contract("auth.unknown-key-401")
def test_a_revoked_key_is_401(target: Target, tenant: Tenant) -> None:
    reader = target.client(tenant, ("read",))
    reader.api.list_contexts()
    target.revoke(reader.key)
    with pytest.raises(AuthenticationError) as caught:
        reader.api.list_contexts()
    assert caught.value.status == 401


@pytest.mark.contract("auth.cross-tenant-404")
def test_another_tenants_rows_are_404_not_403(target: Target, tenant: Tenant) -> None:
    other = target.tenant()
    theirs = other.client.api.create_context(**NOTE, external_id="theirs")
    session = other.client.api.start_session()
    mine = tenant.client.api
    attempts: list[Callable[[], object]] = [
        lambda: mine.get_context(theirs.id),
        lambda: mine.update_context(theirs.id, title="mine now"),
        lambda: mine.delete_context(theirs.id),
        lambda: mine.get_context_by_external_id("theirs"),
        lambda: mine.get_session(session.id),
    ]
    for attempt in attempts:
        with pytest.raises(NotFoundError) as caught:
            attempt()
        assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert other.client.api.get_context(theirs.id).title == "Mine"
