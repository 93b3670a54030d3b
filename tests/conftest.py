"""Fixtures for the fake's own tests: a fresh fake, tenants, keys and clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant

ALL_SCOPES = ("read", "write", "admin")


@pytest.fixture
def fake() -> Iterator[FakeContextQ]:
    with FakeContextQ() as instance:
        yield instance


@pytest.fixture
def tenant(fake: FakeContextQ) -> Tenant:
    return fake.create_tenant("acme")


@pytest.fixture
def key(fake: FakeContextQ, tenant: Tenant) -> str:
    return fake.mint_key(tenant, ALL_SCOPES)


@pytest.fixture
def client(fake: FakeContextQ, key: str) -> Iterator[httpx2.Client]:
    with fake.client(key) as c:
        yield c


@pytest.fixture
def other(fake: FakeContextQ) -> tuple[Tenant, httpx2.Client]:
    """A second tenant with its own all-scopes client."""
    t = fake.create_tenant("globex")
    return t, fake.client(fake.mint_key(t, ALL_SCOPES))


def context_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "reference", "title": "A note", "content": "Some text."}
    body.update(overrides)
    return body


@pytest.fixture
def make_context(client: httpx2.Client) -> Callable[..., dict[str, Any]]:
    def make(**overrides: Any) -> dict[str, Any]:
        response = client.post("/api/contexts", json=context_body(**overrides))
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    return make
