"""Lessons and embeddings: recall by meaning, no embeddings, custom, wrong-sized and
failing embedders, and a lesson's workspace and session."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.audit import AgentAction
from tests.support.helpers import actions, boot, error, issue_paths, lesson, start

pytestmark = pytest.mark.all_stores

A = AgentAction
DIM = wire.EMBEDDING_DIMENSIONS


def norm(vector: tuple[float, ...]) -> float:
    return math.sqrt(sum(x * x for x in vector))


DB_LESSON = "Database migrations: run schema changes inside a transaction and back up first."
CSS_LESSON = "CSS colours should come from the design tokens, never from hex literals."


def test_lessons_are_recalled_by_meaning(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    db = lesson(client, DB_LESSON, tags=["db"])
    css = lesson(client, CSS_LESSON)  # newer: recency alone would put it first
    assert db["embedded"] is True and css["embedded"] is True
    assert set(db) == {"id", "text", "workspace", "session_id", "tags", "embedded", "created_at"}
    pack = boot(client, "migrate the schema")
    assert [x["id"] for x in pack["lessons"]] == [db["id"], css["id"]]
    scores = [x["score"] for x in pack["lessons"]]
    assert scores[0] > scores[1]
    assert all(-1.0 <= s <= 1.0 for s in scores)
    # and the other way round
    pack = boot(client, "which colour tokens for the CSS?")
    assert [x["id"] for x in pack["lessons"]] == [css["id"], db["id"]]
    assert all(row.embedding is not None for row in fake.lessons(tenant))


def test_boot_recalls_at_most_the_contract_number_of_lessons(client: httpx2.Client) -> None:
    for i in range(wire.BOOT_LESSONS + 3):
        lesson(client, f"lesson number {i} about deploys")
    pack = boot(client, "deploys", token_budget=wire.MAX_TOKEN_BUDGET)
    assert len(pack["lessons"]) == wire.BOOT_LESSONS


def test_without_embeddings_lessons_have_no_vector_and_boot_is_newest_first(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    fake = make_fake(embeddings=False)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        db = lesson(c, DB_LESSON)
        css = lesson(c, CSS_LESSON)
        third = lesson(c, "Keep the changelog current.")
        assert not db["embedded"] and not css["embedded"] and not third["embedded"]
        pack = boot(c, "migrate the schema")
        assert [x["id"] for x in pack["lessons"]] == [third["id"], css["id"], db["id"]]
        assert all("score" not in x for x in pack["lessons"])
    rows = fake.lessons(tenant)
    assert len(rows) == 3 and all(row.embedding is None for row in rows)


def test_a_custom_embedder_is_used(make_fake: Callable[..., FakeContextQ]) -> None:
    seen: list[str] = []

    def embed(text: str) -> list[float]:
        seen.append(text)
        vector = [0.0] * DIM
        vector[0 if "alpha" in text.lower() else 1] = 3.0  # not unit length on purpose
        return vector

    fake = make_fake(embed=embed)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        beta1 = lesson(c, "beta one")
        alpha = lesson(c, "the alpha lesson")
        beta2 = lesson(c, "beta two")  # newest
        pack = boot(c, "ALPHA please")
    assert pack["lessons"][0]["id"] == alpha["id"]
    assert pack["lessons"][0]["score"] == pytest.approx(1.0)
    assert {x["id"] for x in pack["lessons"][1:]} == {beta1["id"], beta2["id"]}
    assert all(x["score"] == pytest.approx(0.0) for x in pack["lessons"][1:])
    assert {"beta one", "the alpha lesson", "beta two", "ALPHA please"} <= set(seen)
    by_text = {row.text: row.embedding for row in fake.lessons(tenant)}
    unit0 = tuple(1.0 if i == 0 else 0.0 for i in range(DIM))
    assert by_text["the alpha lesson"] == unit0  # stored normalised


@pytest.mark.parametrize("dimensions", [0, 384, DIM - 1, DIM + 1, 1536])
def test_an_embedder_of_the_wrong_dimension_is_refused_at_construction(dimensions: int) -> None:
    def embed(text: str) -> list[float]:
        return [1.0] * dimensions

    with pytest.raises(ValueError, match=str(DIM)):
        FakeContextQ(embed=embed)


def test_vectors_are_unit_length_768_floats_and_deterministic(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    texts = [DB_LESSON, CSS_LESSON, "Short.", "Ünïcödé lessons — with punctuation!"]
    vectors: list[dict[str, tuple[float, ...] | None]] = []
    for _ in range(2):
        fake = make_fake()
        tenant = fake.create_tenant()
        with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
            for text in texts:
                lesson(c, text)
        vectors.append({row.text: row.embedding for row in fake.lessons(tenant)})
    first, second = vectors
    assert first == second
    for text in texts:
        vector = first[text]
        assert vector is not None and len(vector) == DIM
        assert all(isinstance(x, float) for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-9)
    assert first[DB_LESSON] != first[CSS_LESSON]


def test_lesson_workspace_and_session(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Tenant,
    other: tuple[Tenant, httpx2.Client],
) -> None:
    fake.create_workspace(tenant, "a")
    fake.create_workspace(tenant, "b")
    sid = start(client, workspace="a")["id"]
    in_a = lesson(client, "alpha lesson", workspace="a", session_id=sid)
    in_b = lesson(client, "beta lesson", workspace="b")
    nowhere = lesson(client, "general lesson", workspace="no-such-workspace")
    assert (in_a["workspace"], in_a["session_id"]) == ("a", sid)
    assert nowhere["workspace"] is None
    ids_a = {x["id"] for x in boot(client, "lesson", workspace="a")["lessons"]}
    ids_b = {x["id"] for x in boot(client, "lesson", workspace="b")["lessons"]}
    assert ids_a == {in_a["id"], nowhere["id"]}
    assert ids_b == {in_b["id"], nowhere["id"]}
    _, theirs = other
    error(
        theirs.post("/api/agent/lessons", json={"text": "x", "session_id": sid}), 404, "not_found"
    )
    assert boot(theirs, "lesson")["lessons"] == []
    error(
        client.post("/api/agent/lessons", json={"text": "x", "session_id": 999_999}),
        404,
        "not_found",
    )


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        ({}, {"text"}),
        ({"text": ""}, {"text"}),
        ({"text": 5}, {"text"}),
        ({"text": "t" * (wire.MAX_TEXT_CHARS + 1)}, {"text"}),
        ({"text": "x", "tags": "ops"}, {"tags"}),
        ({"text": "x", "tags": [""]}, {"tags.0"}),
        ({"text": "x", "tags": [1]}, {"tags.0"}),
        ({"text": "x", "session_id": "1"}, {"session_id"}),
        ({"text": "x", "workspace": ""}, {"workspace"}),
    ],
)
def test_lesson_body_validation(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, body: dict[str, Any], paths: set[str]
) -> None:
    found = error(client.post("/api/agent/lessons", json=body), 400, "validation_error")
    assert issue_paths(found) == paths
    assert fake.lessons(tenant) == [] and fake.audit_log() == []


def test_an_embedder_failure_keeps_the_lesson_without_a_vector(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    """Stored first, embedded after: a failing embedder leaves an unembedded, audited lesson."""

    def embed(text: str) -> list[float]:
        if "boom" in text:
            raise RuntimeError("embedding provider down")
        return [1.0] * DIM

    fake = make_fake(embed=embed)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        response = c.post("/api/agent/lessons", json={"text": "boom: the model is down"})
        assert response.status_code == 201
        assert response.json()["embedded"] is False
    assert actions(fake).count(A.LESSON_ADD) == 1
    [stored] = fake.lessons(tenant)
    assert stored.embedding is None
