"""Workspaces: list, create, archive, delete (admin scope for writes)."""

from __future__ import annotations

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import context_body

pytestmark = pytest.mark.all_stores


def test_create_list_archive_delete(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    created = client.post("/api/workspaces", json={"slug": "acme", "name": "Acme Corp"})
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"id", "slug", "name", "archived", "createdAt"}
    assert (body["slug"], body["name"], body["archived"]) == ("acme", "Acme Corp", False)

    listed = client.get("/api/workspaces").json()
    assert listed == {"items": [body]}

    archived = client.post("/api/workspaces/acme/archive")
    assert archived.status_code == 200
    assert archived.json()["archived"] is True
    assert fake.workspaces(tenant)[0].archived

    assert client.delete("/api/workspaces/acme").status_code == 204
    assert client.get("/api/workspaces").json() == {"items": []}


def test_name_defaults_to_the_slug(client: httpx2.Client) -> None:
    assert client.post("/api/workspaces", json={"slug": "notes"}).json()["name"] == "notes"


def test_a_taken_slug_is_a_409(client: httpx2.Client) -> None:
    client.post("/api/workspaces", json={"slug": "acme"})
    response = client.post("/api/workspaces", json={"slug": "acme"})
    assert response.status_code == 409
    assert response.json()["error"] == "workspace_taken"


@pytest.mark.parametrize("slug", ["", "Acme", "a b", "-a", "a-", "a--b", "a_b", "x" * 65, 5])
def test_bad_slugs_are_a_400(client: httpx2.Client, slug: object) -> None:
    response = client.post("/api/workspaces", json={"slug": slug})
    assert response.status_code == 400
    assert response.json()["issues"][0]["path"] == "slug"


def test_a_workspace_holding_contexts_cannot_be_deleted(client: httpx2.Client) -> None:
    client.post("/api/workspaces", json={"slug": "acme"})
    created = client.post("/api/contexts", json=context_body(workspace="acme")).json()
    response = client.delete("/api/workspaces/acme")
    assert response.status_code == 409
    assert response.json()["error"] == "workspace_not_empty"
    assert response.json()["contexts"] == 1
    client.delete(f"/api/contexts/{created['id']}")
    assert client.delete("/api/workspaces/acme").status_code == 204


def test_unknown_workspaces_are_404(client: httpx2.Client) -> None:
    assert client.post("/api/workspaces/none/archive").status_code == 404
    assert client.delete("/api/workspaces/none").status_code == 404


def test_contexts_can_still_be_written_to_an_archived_workspace(client: httpx2.Client) -> None:
    client.post("/api/workspaces", json={"slug": "old"})
    client.post("/api/workspaces/old/archive")
    response = client.post("/api/contexts", json=context_body(workspace="old"))
    assert response.json()["workspace"] == "old"
