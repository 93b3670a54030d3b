"""Authentication's details: the header's spacing, scopes named as one string, and the exact
sentences of the 401s and 403s."""

from __future__ import annotations

import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, ValidationFailed, _msgs
from tests.support.helpers import context_body

pytestmark = pytest.mark.all_stores


def status_with(fake: FakeContextQ, header: str) -> tuple[int, str | None]:
    with fake.client() as c:
        response = c.get("/api/contexts", headers={"Authorization": header})
    return response.status_code, response.json().get(
        "message"
    ) if response.status_code >= 400 else None


@pytest.mark.parametrize(
    "template",
    ["Bearer {key}", "Bearer    {key}", "BEARER {key}", "  Bearer {key}", "Bearer {key}   "],
)
def test_the_bearer_key_is_found_whatever_the_spacing_and_case(
    fake: FakeContextQ, key: str, template: str
) -> None:
    assert status_with(fake, template.format(key=key)) == (200, None)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("   ", _msgs.MISSING_AUTH),
        ("Bearer    ", _msgs.NOT_BEARER),
        ("Bearerx {key}", _msgs.NOT_BEARER),
        ("Token {key}", _msgs.NOT_BEARER),
        ("{key}", _msgs.NOT_BEARER),
        ("Bearer {key} extra", _msgs.MALFORMED_KEY),
        ("Bearer  x{key}", _msgs.MALFORMED_KEY),
    ],
)
def test_each_bad_header_gets_its_own_401(
    fake: FakeContextQ, key: str, header: str, message: str
) -> None:
    assert status_with(fake, header.format(key=key)) == (401, message)


def test_minted_keys_have_the_contract_shape_and_differ(fake: FakeContextQ, tenant: Tenant) -> None:
    keys = {fake.mint_key(tenant) for _ in range(3)}
    assert len(keys) == 3
    assert all(wire.KEY_RE.fullmatch(k) for k in keys), keys
    assert all(len(k) == len("sk_live_") + 40 for k in keys)


@pytest.mark.parametrize(
    ("spec", "scopes"),
    [
        ("read,write", ("read", "write")),
        ("read write", ("read", "write")),
        (" admin , read ,, ", ("admin", "read")),
        ("write,write,read", ("write", "read")),
        (("read", "read"), ("read",)),
        ("", ()),
    ],
)
def test_scopes_named_as_a_string_or_a_list(
    fake: FakeContextQ, tenant: Tenant, spec: str | tuple[str, ...], scopes: tuple[str, ...]
) -> None:
    fake.mint_key(tenant, spec)
    assert fake.keys(tenant)[-1].scopes == scopes


def test_an_unknown_scope_is_refused_naming_the_scopes(fake: FakeContextQ, tenant: Tenant) -> None:
    with pytest.raises(ValidationFailed) as caught:
        fake.mint_key(tenant, "read,delete")
    assert caught.value.issues == [
        {"path": "scopes", "message": "Unknown scope 'delete'; scopes are read, write and admin."}
    ]
    assert fake.keys(tenant) == []


@pytest.mark.parametrize(
    ("held", "method", "path", "required", "listed"),
    [
        ((), "GET", "/api/contexts", "read", "none"),
        (("read",), "POST", "/api/contexts", "write", "read"),
        (("write",), "GET", "/api/contexts", "read", "write"),
        (("read", "write"), "POST", "/api/workspaces", "admin", "read, write"),
    ],
)
def test_the_403_names_the_scope_needed_and_the_scopes_held(
    fake: FakeContextQ,
    tenant: Tenant,
    held: tuple[str, ...],
    method: str,
    path: str,
    required: str,
    listed: str,
) -> None:
    body = {"slug": "ws"} if path == "/api/workspaces" else context_body()
    with fake.client(fake.mint_key(tenant, held)) as c:
        response = c.request(method, path, json=body if method == "POST" else None)
    assert response.status_code == 403
    assert response.json() == {
        "error": "scope_denied",
        "message": f"This API key lacks the '{required}' scope (it has: {listed}).",
        "required": required,
    }
