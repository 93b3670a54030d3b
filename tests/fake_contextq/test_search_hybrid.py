"""Search is hybrid, as ContextQ's public docs say: the full-text ranking (BM25) fused with
the ranking by embedding similarity through Reciprocal Rank Fusion. The oracle here is
the formula itself, computed by the test from the full-text ranking of a fake without
embeddings and the embedder's own similarities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ
from fake_contextq.domain.embeddings import cosine, hashing_embedder

pytestmark = pytest.mark.all_stores

NOTES = [
    ("Key rotation", "rotate the api keys every ninety days", ["security"]),
    ("Rotating keys", "how we rotate keys: key by key, never all at once", []),
    ("Deploys", "deploys go out on tuesdays; keys are checked first", ["ops"]),
    ("Keyboard", "the office keyboard layout is US international", []),
    ("Keys and locks", "the keys of the office: ask reception for keys", []),
]


def _load(fake: FakeContextQ) -> httpx2.Client:
    tenant = fake.create_tenant("acme", plan="pro")
    client = fake.client(fake.mint_key(tenant, wire.SCOPES))
    for title, content, tags in NOTES:
        body = {"type": "reference", "title": title, "content": content, "tags": tags}
        assert client.post("/api/contexts", json=body).status_code == 201
    return client


def _search(client: httpx2.Client, query: str, **extra: Any) -> list[dict[str, Any]]:
    answer = client.post("/api/search", json={"query": query, **extra})
    assert answer.status_code == 200, answer.text
    results: list[dict[str, Any]] = answer.json()["results"]
    return results


@pytest.mark.parametrize("query", ["rotate keys", "keys", "office keys", "deploys tuesdays"])
def test_the_ranking_is_rrf_of_full_text_and_embedding_similarity(
    make_fake: Callable[..., FakeContextQ], query: str
) -> None:
    hybrid = _load(make_fake())
    text_only = _load(FakeContextQ(embeddings=False))  # the memory store: this leg's is taken
    full_text = [hit["context"] for hit in _search(text_only, query, limit=50)]
    texts = {c["title"]: (c["title"], c["tags"]) for c in full_text}
    contents = {n[0]: n[1] for n in NOTES}
    q = hashing_embedder(query)
    similarity = {
        cid: cosine(q, hashing_embedder("\n".join((t, " ".join(tags), contents[t]))))
        for cid, (t, tags) in texts.items()
    }
    text_rank = [c["title"] for c in full_text]
    vector_rank = sorted(text_rank, key=lambda cid: (-similarity[cid], text_rank.index(cid)))
    k = wire.SEARCH_RRF_K
    fused = {
        cid: 1 / (k + text_rank.index(cid) + 1) + 1 / (k + vector_rank.index(cid) + 1)
        for cid in text_rank
    }
    expected = sorted(text_rank, key=lambda cid: (-fused[cid], text_rank.index(cid)))
    got = _search(hybrid, query, limit=50)
    assert [hit["context"]["title"] for hit in got] == expected
    assert [hit["score"] for hit in got] == [round(fused[cid], 6) for cid in expected]


def test_every_keyword_match_is_found_and_nothing_else(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    client = _load(make_fake())
    titles = {hit["context"]["title"] for hit in _search(client, "keys")}
    assert titles == {"Key rotation", "Rotating keys", "Deploys", "Keys and locks"}
    assert _search(client, "zebra") == []


def test_the_limit_applies_after_the_fusion(make_fake: Callable[..., FakeContextQ]) -> None:
    client = _load(make_fake())
    every = _search(client, "keys", limit=50)
    assert _search(client, "keys", limit=2) == every[:2]


def test_an_exact_title_match_ranks_first(make_fake: Callable[..., FakeContextQ]) -> None:
    client = _load(make_fake())
    assert _search(client, "key rotation")[0]["context"]["title"] == "Key rotation"
    assert _search(client, "keys and locks")[0]["context"]["title"] == "Keys and locks"


def test_a_failing_embedder_leaves_full_text_answering(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    calls: list[str] = []

    def flaky(text: str) -> list[float]:
        calls.append(text)
        if len(calls) > 1:  # the fake's dimension probe passes; every search then fails
            raise RuntimeError("embedding service down")
        return [1.0] * wire.EMBEDDING_DIMENSIONS

    client = _load(make_fake(embed=flaky))
    text_only = _load(FakeContextQ(embeddings=False))

    def shown(hits: list[dict[str, Any]]) -> list[tuple[str, float]]:
        return [(hit["context"]["title"], hit["score"]) for hit in hits]

    assert shown(_search(client, "keys")) == shown(_search(text_only, "keys"))
