"""Search: the six-type filter, the answer's shape, the limit."""

from __future__ import annotations

import itertools

import pytest

from adapter.errors import ValidationError
from contextq_conformance.targets import Tenant

# Spelled here, not taken from adapter.wire: the suite states what ContextQ must
# do, so a fake whose contract drifts fails it instead of agreeing with itself.
SEARCHABLE = ("reference", "feedback", "project", "incident", "lesson", "user")


@pytest.mark.contract("search.type-enum")
@pytest.mark.parametrize("type_", SEARCHABLE)
def test_the_six_types_filter_a_search(tenant: Tenant, type_: str) -> None:
    api = tenant.client.api
    api.create_context(type_, "deploy notes", "how we deploy")
    api.create_context("reference" if type_ != "reference" else "user", "deploy too", "deploy")
    hits = api.search("deploy", type=type_)
    assert [h.context.type for h in hits] == [type_]


@pytest.mark.contract("search.type-enum")
@pytest.mark.parametrize("type_", ["synthesis", "map", "moc", "nonsense"])
def test_any_other_type_is_a_400(tenant: Tenant, type_: str) -> None:
    with pytest.raises(ValidationError) as caught:
        tenant.client.api.search("deploy", type=type_)
    assert (caught.value.status, caught.value.code) == (400, "validation_error")


@pytest.mark.contract("search.shape", "search.hybrid")
def test_results_are_summaries_best_first_with_scores_and_snippets(tenant: Tenant) -> None:
    """Membership and order of scores only: a hybrid ranking (full text fused with vector
    similarity) may order and score the matches in ways no client should rely on."""
    api = tenant.client.api
    api.create_context("reference", "Unrelated", "nothing here about it")
    strong = api.create_context("reference", "Deploy deploy", "deploy the deploy pipeline")
    weak = api.create_context("reference", "Notes", "we deploy on fridays sometimes, rarely")
    hits = api.search("deploy")
    assert {strong.id, weak.id} <= {h.context.id for h in hits}
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    assert all(isinstance(h.snippet, str) for h in hits)
    assert not hasattr(hits[0].context, "content")


@pytest.mark.contract("search.hybrid")
def test_an_exact_title_match_ranks_first(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_context("reference", "Notes", "the release checklist lives in the wiki")
    api.create_context("reference", "Release", "a checklist for each release")
    exact = api.create_context("reference", "Release checklist", "steps before shipping")
    hits = api.search("release checklist")
    assert hits and hits[0].context.id == exact.id


@pytest.mark.contract("search.limit-50")
def test_a_search_limit_over_50_is_refused(tenant: Tenant) -> None:
    with pytest.raises(ValidationError):
        tenant.client.api.search("anything", limit=51)
    assert tenant.client.api.search("anything", limit=50) == []
