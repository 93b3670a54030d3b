"""The scope matrix (``scopes.MATRIX``), expanded: one test per endpoint and key scope."""

from __future__ import annotations

import itertools

import pytest

from adapter.errors import ContextQError, ScopeDeniedError
from contextq_conformance.scopes import CALLS, MATRIX, SCOPES, make_fixtures
from contextq_conformance.targets import Target, Tenant

_counter = itertools.count()

CASES = [
    pytest.param(endpoint, scope, expected, id=f"{endpoint} [{scope}]")
    for endpoint, row in MATRIX.items()
    for scope, expected in zip(SCOPES, row, strict=True)
]


def test_every_endpoint_of_the_matrix_has_a_call() -> None:
    assert set(CALLS) == set(MATRIX)


@pytest.mark.contract(
    "auth.scope-per-endpoint", "auth.scope-denied-403", "auth.scope-denied-required"
)
@pytest.mark.parametrize(("endpoint", "scope", "expected"), CASES)
def test_scope(target: Target, tenant: Tenant, endpoint: str, scope: str, expected: int) -> None:
    fixtures = make_fixtures(tenant.client.api, next(_counter))
    client = target.client(tenant, () if scope == "none" else (scope,))
    refused: ContextQError | None = None
    try:
        CALLS[endpoint](client.api, fixtures)
    except ContextQError as exc:
        refused = exc
    status = client.status if refused is None else refused.status
    assert status == expected, f"{endpoint} with a {scope!r} key: {refused or status}"
    if expected == 403:
        assert isinstance(refused, ScopeDeniedError)
        assert refused.code == "scope_denied"
        # the one scope the row grants besides admin (admin itself for admin-only rows)
        row = MATRIX[endpoint]
        required = next(s for s, code in zip(SCOPES[1:], row[1:], strict=True) if code != 403)
        assert refused.required == required
