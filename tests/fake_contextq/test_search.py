"""POST /api/search: BM25 ranking, snippets, the 6-type enum, filters, tenant scoping."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import MakeContext, context_body

pytestmark = pytest.mark.all_stores


def search(client: httpx2.Client, **body: Any) -> list[dict[str, Any]]:
    response = client.post("/api/search", json=body)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def test_results_are_ranked_best_first(client: httpx2.Client, make_context: MakeContext) -> None:
    weak = make_context(title="Weekly notes", content="We talked about the database once.")
    strong = make_context(
        title="Database migrations", content="How to run database migrations safely."
    )
    make_context(title="CSS colours", content="Primary colour is teal.")
    results = search(client, query="database migrations")
    assert [r["context"]["id"] for r in results] == [strong["id"], weak["id"]]
    assert results[0]["score"] > results[-1]["score"] > 0
    assert all("content" not in r["context"] for r in results)


def test_rare_terms_outweigh_common_ones(client: httpx2.Client, make_context: MakeContext) -> None:
    for i in range(5):
        make_context(title=f"Note {i}", content="the project status")
    rare = make_context(title="Other", content="the zeppelin project")
    assert search(client, query="zeppelin project")[0]["context"]["id"] == rare["id"]


def test_title_and_tags_count(client: httpx2.Client, make_context: MakeContext) -> None:
    in_content = make_context(title="Misc", content="kubernetes mentioned in passing here")
    in_title = make_context(title="Kubernetes", content="cluster set-up")
    tagged = make_context(title="Ops", content="misc", tags=["kubernetes"])
    order = [r["context"]["id"] for r in search(client, query="kubernetes")]
    assert order[0] == in_title["id"]
    assert set(order) == {in_content["id"], in_title["id"], tagged["id"]}


def test_snippet_shows_the_match(client: httpx2.Client, make_context: MakeContext) -> None:
    text = (
        "Lorem ipsum dolor sit amet. " * 20
        + "The deploy key lives in the vault. "
        + "Consectetur adipiscing elit. " * 20
    )
    make_context(content=text)
    snippet = search(client, query="vault")[0]["snippet"]
    assert "vault" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= wire.SEARCH_SNIPPET_CHARS + 2


def test_no_match_is_an_empty_list(client: httpx2.Client, make_context: MakeContext) -> None:
    make_context()
    assert search(client, query="nothing-like-this") == []
    assert search(client, query="!!!") == []


@pytest.mark.parametrize("type_", wire.SEARCH_TYPES)
def test_the_six_search_types_are_accepted(client: httpx2.Client, type_: str) -> None:
    assert client.post("/api/search", json={"query": "x", "type": type_}).status_code == 200


@pytest.mark.parametrize("type_", ["synthesis", "map", "moc", "nonsense"])
def test_types_beyond_the_six_are_a_400(client: httpx2.Client, type_: str) -> None:
    response = client.post("/api/search", json={"query": "x", "type": type_})
    assert response.status_code == 400
    assert response.json()["issues"][0]["path"] == "type"


def test_synthesis_contexts_are_found_without_a_type_filter(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    made = make_context(type="synthesis", content="quarterly synthesis")
    assert search(client, query="quarterly")[0]["context"]["id"] == made["id"]


def test_filters(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, make_context: MakeContext
) -> None:
    fake.create_workspace(tenant, "ws")
    a = make_context(content="shared word", type="lesson", workspace="ws", tags=["t1", "t2"])
    b = make_context(content="shared word", type="reference", tags=["t1"])
    assert [r["context"]["id"] for r in search(client, query="shared", type="lesson")] == [a["id"]]
    assert [r["context"]["id"] for r in search(client, query="shared", workspace="ws")] == [a["id"]]
    assert {r["context"]["id"] for r in search(client, query="shared", tags=["t1"])} == {
        a["id"],
        b["id"],
    }
    assert [r["context"]["id"] for r in search(client, query="shared", tags=["t1", "t2"])] == [
        a["id"]
    ]
    assert search(client, query="shared", workspace="missing") == []


def test_limit(client: httpx2.Client, make_context: MakeContext) -> None:
    for _ in range(12):
        make_context(content="repeated")
    assert len(search(client, query="repeated")) == wire.SEARCH_DEFAULT_LIMIT
    assert len(search(client, query="repeated", limit=3)) == 3
    assert client.post("/api/search", json={"query": "x", "limit": 51}).status_code == 400
    assert client.post("/api/search", json={"query": "x", "limit": 0}).status_code == 400


@pytest.mark.parametrize("body", [{}, {"query": ""}, {"query": 3}, {"query": "x", "tags": "t"}])
def test_bad_search_bodies_are_a_400(client: httpx2.Client, body: dict[str, Any]) -> None:
    assert client.post("/api/search", json=body).status_code == 400


def test_search_sees_only_the_callers_tenant(
    client: httpx2.Client, make_context: MakeContext, other: tuple[Tenant, httpx2.Client]
) -> None:
    make_context(content="secret plans")
    assert search(other[1], query="secret plans") == []


def test_updates_and_deletes_reach_the_index(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    made = make_context(content="alpha")
    client.put(f"/api/contexts/{made['id']}", json={"content": "beta"})
    assert search(client, query="alpha") == []
    assert len(search(client, query="beta")) == 1
    client.delete(f"/api/contexts/{made['id']}")
    assert search(client, query="beta") == []


def test_bulk_upserted_rows_are_searchable(client: httpx2.Client) -> None:
    client.post(
        "/api/contexts/bulk-upsert",
        json={
            "contexts": [
                context_body(externalId="a", content="gamma ray"),
                context_body(externalId="b", content="delta wing"),
            ]
        },
    )
    assert search(client, query="delta")[0]["context"]["externalId"] == "b"
