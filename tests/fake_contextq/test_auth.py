"""Authentication (401) and scopes (403) on every route of the wire contract."""

from __future__ import annotations

from typing import Any

import pytest

from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain import keys
from tests.support.helpers import context_body

pytestmark = pytest.mark.all_stores

# (method, path, json body, scope the contract requires)
ROUTES: list[tuple[str, str, Any, str]] = [
    ("POST", "/api/contexts", context_body(), "write"),
    ("GET", "/api/contexts", None, "read"),
    ("GET", "/api/contexts/1", None, "read"),
    ("GET", "/api/contexts/by-external/x", None, "read"),
    ("PUT", "/api/contexts/1", {"title": "t"}, "write"),
    ("DELETE", "/api/contexts/1", None, "write"),
    ("POST", "/api/contexts/bulk-upsert", {"contexts": [context_body(externalId="e")]}, "write"),
    ("GET", "/api/workspaces", None, "read"),
    ("POST", "/api/workspaces", {"slug": "new-ws"}, "admin"),
    ("POST", "/api/workspaces/ws/archive", None, "admin"),
    ("DELETE", "/api/workspaces/ws", None, "admin"),
    ("POST", "/api/search", {"query": "note"}, "read"),
]
KEY_SCOPES = [(), ("read",), ("write",), ("read", "write"), ("admin",)]


def _granted(held: tuple[str, ...], required: str) -> bool:
    return required in held or "admin" in held


def _call(fake: FakeContextQ, key: str | None, method: str, path: str, body: Any) -> Any:
    with fake.client(key) as c:
        return c.request(method, path, json=body)


@pytest.fixture
def seeded(fake: FakeContextQ, tenant: Tenant) -> FakeContextQ:
    """A tenant holding context 1 (external id 'x') and workspace 'ws'."""
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, ("write",))) as c:
        assert c.post("/api/contexts", json=context_body(externalId="x")).status_code == 201
    return fake


@pytest.mark.parametrize(
    ("method", "path", "body", "required"), ROUTES, ids=[f"{m} {p}" for m, p, _, _ in ROUTES]
)
@pytest.mark.parametrize("scopes", KEY_SCOPES, ids=lambda s: "+".join(s) or "none")
def test_scope_matrix(
    seeded: FakeContextQ,
    tenant: Tenant,
    method: str,
    path: str,
    body: Any,
    required: str,
    scopes: tuple[str, ...],
) -> None:
    key = seeded.mint_key(tenant, scopes)
    response = _call(seeded, key, method, path, body)
    if _granted(scopes, required):
        assert response.status_code < 400, response.text
    else:
        assert response.status_code == 403
        assert response.json()["error"] == "scope_denied"
        assert response.json()["required"] == required


@pytest.mark.parametrize(
    ("method", "path", "body", "required"), ROUTES, ids=[f"{m} {p}" for m, p, _, _ in ROUTES]
)
def test_every_route_needs_a_key(
    seeded: FakeContextQ, method: str, path: str, body: Any, required: str
) -> None:
    response = _call(seeded, None, method, path, body)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": _msgs.MISSING_AUTH}


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("", _msgs.MISSING_AUTH),
        ("Basic dXNlcjpwYXNz", _msgs.NOT_BEARER),
        ("Bearer", _msgs.NOT_BEARER),
        ("Bearer sk_live_123", _msgs.MALFORMED_KEY),
        ("Bearer sk_test_" + "a" * 40, _msgs.MALFORMED_KEY),
        ("Bearer sk_live_" + "A" * 40, _msgs.MALFORMED_KEY),
        ("Bearer sk_live_" + "g" * 40, _msgs.MALFORMED_KEY),
        ("Bearer sk_live_" + "a" * 41, _msgs.MALFORMED_KEY),
        ("Bearer sk_live_" + "a" * 40, _msgs.UNKNOWN_KEY),
    ],
)
def test_bad_keys_get_401_saying_why(fake: FakeContextQ, header: str, message: str) -> None:
    with fake.client() as c:
        response = c.get("/api/contexts", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": message}


def test_revoked_key_is_refused(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant, ("read",))
    with fake.client(key) as c:
        assert c.get("/api/contexts").status_code == 200
        fake.revoke_key(key)
        response = c.get("/api/contexts")
    assert response.status_code == 401
    assert response.json()["message"] == _msgs.REVOKED_KEY


def test_bearer_scheme_is_case_insensitive(fake: FakeContextQ, key: str) -> None:
    with fake.client() as c:
        assert c.get("/api/contexts", headers={"Authorization": f"bearer {key}"}).status_code == 200


def test_only_the_hash_and_prefix_of_a_key_are_stored(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant, ("read",))
    stored = fake.keys(tenant)[-1]
    assert key not in repr(stored)
    assert stored.prefix == key[:12]
    assert stored.key_hash.startswith("$2b$04$")  # bcrypt, the fake's cost (see auth.py)
    assert keys.key_matches(key, stored.key_hash)
    assert stored.scopes == ("read",)


def test_minting_with_an_unknown_scope_is_refused(fake: FakeContextQ, tenant: Tenant) -> None:
    from fake_contextq import ValidationFailed

    with pytest.raises(ValidationFailed, match="Unknown scope 'delete'"):
        fake.mint_key(tenant, ("read", "delete"))


def test_the_401_comes_before_validation(fake: FakeContextQ) -> None:
    with fake.client() as c:
        response = c.post(
            "/api/contexts", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 401


def test_the_403_comes_before_validation(fake: FakeContextQ, tenant: Tenant) -> None:
    with fake.client(fake.mint_key(tenant, ("read",))) as c:
        response = c.post("/api/contexts", json={"type": "nonsense"})
    assert response.status_code == 403
