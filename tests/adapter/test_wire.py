"""The wire contract's route table is the one both sides use: every route the client can
call is a route the fake serves, with the method, path and success status the table says,
and the contract module stands alone."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter import ContextQClient, wire
from fake_contextq import FakeContextQ


def _openapi(fake: FakeContextQ) -> dict[str, Any]:
    with fake.client() as c:
        doc: dict[str, Any] = c.get("/openapi.json").json()
    return doc


def test_the_fake_serves_exactly_the_routes_of_the_table() -> None:
    with FakeContextQ() as fake:
        paths = _openapi(fake)["paths"]
    served = {
        (method.upper(), path)
        for path, operations in paths.items()
        for method in operations
        if path.startswith("/api/")
    }
    assert served == {(r.method, r.template) for r in wire.ROUTES}


@pytest.mark.parametrize("route", wire.ROUTES, ids=lambda r: r.name)
def test_each_route_documents_its_success_status(route: wire.Route) -> None:
    with FakeContextQ() as fake:
        operation = _openapi(fake)["paths"][route.template][route.method.lower()]
    assert str(route.status) in operation["responses"]


def test_a_path_parameter_is_sent_as_one_encoded_segment() -> None:
    route = wire.Routes.GET_CONTEXT_BY_EXTERNAL
    assert route.path(external_id="a/b c") == "/api/contexts/by-external/a%2Fb%20c"
    assert route.path(external_id="..") == "/api/contexts/by-external/%2E%2E"
    assert route.path(external_id=".") == "/api/contexts/by-external/%2E"
    assert wire.Routes.GET_CONTEXT.path(context_id=7) == "/api/contexts/7"


def test_the_client_reaches_every_context_route_through_the_table() -> None:
    """A call plan the client makes lands on the route of the same name in the fake."""
    with FakeContextQ() as fake:
        tenant = fake.create_tenant()
        key = fake.mint_key(tenant, wire.SCOPES)
        with ContextQClient(key, http_client=fake.client()) as client:
            made = client.create_context("reference", "t", "c", external_id="x/y")
            client.get_context(made.id)
            client.get_context_by_external_id("x/y")
            client.update_context(made.id, title="u")
            client.list_contexts()
            client.search("c")
            client.create_workspace("ws")
            client.archive_workspace("ws")
            client.list_workspaces()
            client.delete_context(made.id)
            client.delete_workspace("ws")
        seen = [(e.method, e.status) for e in fake.journal]
    expected = [
        wire.Routes.CREATE_CONTEXT,
        wire.Routes.GET_CONTEXT,
        wire.Routes.GET_CONTEXT_BY_EXTERNAL,
        wire.Routes.UPDATE_CONTEXT,
        wire.Routes.LIST_CONTEXTS,
        wire.Routes.SEARCH,
        wire.Routes.CREATE_WORKSPACE,
        wire.Routes.ARCHIVE_WORKSPACE,
        wire.Routes.LIST_WORKSPACES,
        wire.Routes.DELETE_CONTEXT,
        wire.Routes.DELETE_WORKSPACE,
    ]
    assert seen == [(r.method, r.status) for r in expected]


def test_the_authorization_header_carries_the_key_the_contract_way() -> None:
    with FakeContextQ() as fake:
        key = fake.mint_key(fake.create_tenant())
        with fake.client() as c:
            ok = c.get("/api/contexts", headers={"Authorization": wire.authorization(key)})
            raw = c.get("/api/contexts", headers={"Authorization": key})
    assert ok.status_code == 200
    assert raw.status_code == 401


def test_the_contract_module_imports_nothing_of_the_project() -> None:
    code = (
        "import json, sys\n"
        "import adapter.wire\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('adapter', 'fake_contextq', 'fake_anthropic', 'fake_server', 'contextq_fixtures', "
        "'contextq_conformance', 'contextq_demo', 'httpx2', 'anthropic'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    # adapter._lazy is the package's lazy-export helper: the standard library only
    assert json.loads(out) == ["adapter", "adapter._lazy", "adapter.wire"]


def test_route_table_names_are_unique_and_scopes_are_known() -> None:
    assert len({r.name for r in wire.ROUTES}) == len(wire.ROUTES)
    assert len({(r.method, r.template) for r in wire.ROUTES}) == len(wire.ROUTES)
    assert {r.scope for r in wire.ROUTES} == set(wire.SCOPES)


def test_a_route_path_without_its_parameter_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"get_context: /api/contexts/\{context_id\} needs"):
        wire.Routes.GET_CONTEXT.path()


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4)
)
#: JSON as a Python caller may hand it: tuples for arrays, keys that are not strings, lone
#: surrogates in text
_json_ish = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), inner, max_size=3),
    ),
    max_leaves=12,
)


@given(value=_json_ish, limit=st.integers(min_value=0, max_value=5))
def test_well_formed_within_is_both_walks_in_one(value: Any, limit: int) -> None:
    """What an MCP tool's arguments get on every call: the depth check and the well-formed
    copy, in one walk that answers as the two do."""
    within, well = wire.well_formed_within(value, limit)
    assert within is not wire.nested_too_deep(value, limit)
    assert well == (wire.well_formed_json(value) if within else None)
