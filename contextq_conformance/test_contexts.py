"""Contexts: create, read, list, update, delete, bulk upsert, and their shapes."""

from __future__ import annotations

from typing import Any

import pytest

from adapter.errors import ExternalIdTakenError, NotFoundError, ValidationError
from contextq_conformance.targets import Target, Tenant

# Spelled here, not taken from adapter.wire (see test_search.py).
TYPES = (
    "reference", "feedback", "project", "incident", "lesson", "user", "synthesis", "map", "moc"
)  # fmt: skip


def note(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "reference", "title": "A note", "content": "Some text."}
    body.update(overrides)
    return body


@pytest.mark.contract("contexts.types")
@pytest.mark.parametrize("type_", TYPES)
def test_each_of_the_nine_types_is_accepted(tenant: Tenant, type_: str) -> None:
    assert tenant.client.api.create_context(**note(type=type_)).type == type_


@pytest.mark.contract("contexts.types", "errors.validation-400")
@pytest.mark.parametrize("type_", ["note", "Reference", "", "memo"])
def test_any_other_type_is_a_400_naming_the_field(tenant: Tenant, type_: str) -> None:
    with pytest.raises(ValidationError) as caught:
        tenant.client.api.create_context(**note(type=type_))
    assert (caught.value.status, caught.value.code) == (400, "validation_error")
    issues = caught.value.details["issues"]
    assert isinstance(issues, list) and issues
    assert {"path", "message"} <= set(issues[0]) and issues[0]["path"] == "type"


@pytest.mark.contract("contexts.create-201", "contexts.json-shape")
def test_create_answers_201_with_the_whole_context(tenant: Tenant) -> None:
    made = tenant.client.api.create_context(
        **note(tags=["a", "b"], metadata={"k": 1}, external_id="e-1")
    )
    assert tenant.client.status == 201
    assert (made.type, made.title, made.content) == ("reference", "A note", "Some text.")
    assert (made.tags, made.metadata, made.external_id, made.workspace) == (
        ("a", "b"),
        {"k": 1},
        "e-1",
        None,
    )
    assert made.created_at.tzinfo is not None and made.updated_at >= made.created_at
    assert tenant.client.api.get_context(made.id) == made


@pytest.mark.contract("contexts.external-id-unique", "contexts.external-id-409")
def test_external_id_is_unique_per_tenant_across_workspaces(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_workspace("one")
    api.create_workspace("two")
    api.create_context(**note(workspace="one", external_id="same"))
    with pytest.raises(ExternalIdTakenError) as caught:
        api.create_context(**note(workspace="two", external_id="same"))
    assert (caught.value.status, caught.value.code) == (409, "external_id_taken")


@pytest.mark.contract("contexts.external-id-unique")
def test_two_tenants_may_use_the_same_external_id(target: Target, tenant: Tenant) -> None:
    other = target.tenant()
    tenant.client.api.create_context(**note(external_id="shared"))
    other.client.api.create_context(**note(external_id="shared"))


@pytest.mark.contract("contexts.by-external")
@pytest.mark.parametrize("external_id", ["plain", "a/b/c.md", "with space?&#", "ünï", "%2F"])
def test_a_context_is_found_by_its_external_id(tenant: Tenant, external_id: str) -> None:
    made = tenant.client.api.create_context(**note(external_id=external_id))
    assert tenant.client.api.get_context_by_external_id(external_id) == made
    with pytest.raises(NotFoundError):
        tenant.client.api.get_context_by_external_id(external_id + "-missing")


@pytest.mark.contract("contexts.summary-no-content", "contexts.list-shape")
def test_lists_carry_summaries_in_id_order_50_by_default(tenant: Tenant) -> None:
    api = tenant.client.api
    made = api.bulk_upsert([note(external_id=f"n{i}") for i in range(60)]).items
    page = api.list_contexts()
    assert (page.total, page.limit, page.offset, len(page.items)) == (60, 50, 0, 50)
    assert [c.id for c in page.items] == sorted(c.id for c in made)[:50]
    assert not hasattr(page.items[0], "content")
    rest = api.list_contexts(offset=50)
    assert [c.id for c in rest.items] == sorted(c.id for c in made)[50:]


@pytest.mark.contract("contexts.list-max-500")
def test_a_page_holds_at_most_500_rows(tenant: Tenant) -> None:
    with pytest.raises(ValidationError):
        tenant.client.api.list_contexts(limit=501)
    assert tenant.client.api.list_contexts(limit=500).limit == 500


@pytest.mark.contract("contexts.list-filters")
def test_lists_filter_by_workspace_and_tag(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_workspace("ws")
    inside = api.create_context(**note(workspace="ws", tags=["x"]))
    api.create_context(**note(tags=["y"]))
    assert [c.id for c in api.list_contexts(workspace="ws").items] == [inside.id]
    assert [c.id for c in api.list_contexts(tag="x").items] == [inside.id]


@pytest.mark.contract("contexts.unknown-workspace-null")
def test_an_unknown_workspace_on_create_is_stored_as_none(tenant: Tenant) -> None:
    made = tenant.client.api.create_context(**note(workspace="no-such-ws"))
    assert made.workspace is None


@pytest.mark.contract("contexts.put-partial", "contexts.last-writer-wins")
def test_put_replaces_the_given_fields_and_the_last_writer_wins(tenant: Tenant) -> None:
    api = tenant.client.api
    made = api.create_context(**note(tags=["keep"]))
    api.update_context(made.id, content="first writer")
    updated = api.update_context(made.id, content="second writer")
    assert tenant.client.status == 200
    assert (updated.content, updated.title, updated.tags) == ("second writer", "A note", ("keep",))


@pytest.mark.contract("contexts.delete-204")
def test_delete_answers_204_and_the_context_is_gone(tenant: Tenant) -> None:
    api = tenant.client.api
    made = api.create_context(**note())
    api.delete_context(made.id)
    assert tenant.client.status == 204
    with pytest.raises(NotFoundError):
        api.get_context(made.id)


@pytest.mark.contract("contexts.bulk-upsert", "contexts.bulk-shape")
def test_bulk_upsert_is_idempotent_on_external_id(tenant: Tenant) -> None:
    api = tenant.client.api
    first = api.bulk_upsert([note(external_id="a"), note(external_id="b")])
    assert (first.created, first.updated, len(first.items)) == (2, 0, 2)
    again = api.bulk_upsert([note(external_id="a", content="new"), note(external_id="c")])
    assert (again.created, again.updated) == (1, 1)
    assert api.get_context_by_external_id("a").content == "new"
    assert api.list_contexts().total == 3


@pytest.mark.contract("contexts.bulk-shape")
def test_a_bulk_upsert_with_one_bad_item_changes_nothing(tenant: Tenant) -> None:
    api = tenant.client.api
    with pytest.raises(ValidationError):
        api.bulk_upsert([note(external_id="fine"), note(external_id="bad", type="nope")])
    assert api.list_contexts().total == 0
