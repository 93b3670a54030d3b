"""Workspaces: list, create, archive, delete, and their conflicts."""

from __future__ import annotations

import pytest

from adapter.errors import ConflictError, WorkspaceNotEmptyError
from contextq_conformance.targets import Tenant


@pytest.mark.contract("workspaces.crud")
def test_a_workspace_is_created_listed_archived_and_deleted(tenant: Tenant) -> None:
    api = tenant.client.api
    made = api.create_workspace("alpha", "Alpha")
    assert tenant.client.status == 201
    assert (made.slug, made.name, made.archived) == ("alpha", "Alpha", False)
    assert [w.slug for w in api.list_workspaces()] == ["alpha"]
    assert api.archive_workspace("alpha").archived is True
    api.delete_workspace("alpha")
    assert tenant.client.status == 204
    assert api.list_workspaces() == []


@pytest.mark.contract("workspaces.slug-409")
def test_a_taken_slug_is_a_409(tenant: Tenant) -> None:
    tenant.client.api.create_workspace("taken")
    with pytest.raises(ConflictError) as caught:
        tenant.client.api.create_workspace("taken")
    assert caught.value.status == 409


@pytest.mark.contract("workspaces.not-empty-409")
def test_a_workspace_holding_contexts_cannot_be_deleted(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_workspace("full")
    made = api.create_context("reference", "t", "c", workspace="full")
    with pytest.raises(WorkspaceNotEmptyError) as caught:
        api.delete_workspace("full")
    assert (caught.value.status, caught.value.code) == (409, "workspace_not_empty")
    api.delete_context(made.id)
    api.delete_workspace("full")
