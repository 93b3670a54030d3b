"""The table of operations is the one declaration: a new operation is one entry (plus its
domain call and renderer), and routing, the scope check, the OpenAPI document and the MCP
tool list all pick it up; the fake's own table covers the contract's routes exactly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ
from fake_contextq.domain import records as r
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.http.transport import AsyncInProcessTransport, InProcessTransport
from fake_contextq.mcp import Rest, SyncMcpClient, bound_server
from fake_contextq.service import (
    MCP_TOOLS,
    OPERATIONS,
    ContextQService,
    Exposure,
    Inputs,
    Operation,
    Request,
)
from fake_contextq.service.operations import mcp_tools
from fake_contextq.service.tool_shapes import schema

COUNT_ROUTE = wire.Route("count_contexts", "GET", "/api/contexts-count", wire.READ)


def _count(backend: ContextQBackend, p: r.Principal, _: Inputs) -> int:
    return len(backend.contexts(p.tenant_id))


THROWAWAY = Operation(
    COUNT_ROUTE,
    "contexts",
    _count,
    lambda n: {"count": n},
    {"type": "object", "required": ["count"]},
    (403,),
    mcp=(Exposure("ctx_count", "Count the tenant's contexts.", schema({}), "assumed"),),
)
TABLE = (*OPERATIONS, THROWAWAY)


@pytest.fixture
def extended() -> Iterator[tuple[FakeContextQ, ContextQService]]:
    with FakeContextQ() as fake:
        yield fake, ContextQService(fake.backend, fake.journal, fake.faults, TABLE)


def test_a_new_operation_is_routed_scoped_and_journaled(
    extended: tuple[FakeContextQ, ContextQService],
) -> None:
    fake, service = extended
    tenant = fake.create_tenant()
    fake.fill(tenant, 3)
    reader, writer = fake.mint_key(tenant, [wire.READ]), fake.mint_key(tenant, [wire.WRITE])
    with httpx2.Client(transport=InProcessTransport(service), base_url=fake.base_url) as c:
        ok = c.get(COUNT_ROUTE.template, headers={"Authorization": wire.authorization(reader)})
        refused = c.get(COUNT_ROUTE.template, headers={"Authorization": wire.authorization(writer)})
        anonymous = c.get(COUNT_ROUTE.template)
        wrong_method = c.post(COUNT_ROUTE.template)
    assert (ok.status_code, ok.json()) == (200, {"count": 3})
    assert refused.status_code == 403 and refused.json()["error"] == "scope_denied"
    assert anonymous.status_code == 401
    assert wrong_method.status_code == 404
    assert [e.status for e in fake.journal][-4:] == [200, 403, 401, 404]


def test_a_new_operation_is_in_the_openapi_document(
    extended: tuple[FakeContextQ, ContextQService],
) -> None:
    fake, service = extended
    with httpx2.Client(transport=InProcessTransport(service), base_url=fake.base_url) as c:
        doc: dict[str, Any] = c.get("/openapi.json").json()
    documented = doc["paths"][COUNT_ROUTE.template]["get"]
    assert documented["tags"] == ["contexts"]
    assert set(documented["responses"]) == {"200", "401", "403", "413", "415"}
    with fake.client() as c:  # the fake's own service has no such operation
        assert COUNT_ROUTE.template not in c.get("/openapi.json").json()["paths"]


def test_a_new_operation_exposed_over_mcp_is_listed_and_called(
    extended: tuple[FakeContextQ, ContextQService],
) -> None:
    fake, service = extended
    tenant = fake.create_tenant()
    fake.fill(tenant, 2)
    key = fake.mint_key(tenant)
    rest = httpx2.AsyncClient(transport=AsyncInProcessTransport(service), base_url=fake.base_url)
    server = bound_server(Rest(rest, wire.authorization(key)), mcp_tools(TABLE))
    with SyncMcpClient(server) as mcp:
        names = [t.name for t in mcp.list_tools()]
        counted = mcp.call("ctx_count", {})
    assert names == [*(t.name for t in MCP_TOOLS), "ctx_count"]
    assert counted == {"count": 2}


def test_the_fake_serves_exactly_the_contract_routes_each_once() -> None:
    declared = [(op.route.method, op.route.template) for op in OPERATIONS]
    assert len(declared) == len(set(declared))
    assert {op.route for op in OPERATIONS} == set(wire.ROUTES)
    assert len({t.name for t in MCP_TOOLS}) == len(MCP_TOOLS)


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/api/contexts/12", "get_context"),
        ("HEAD", "/api/contexts/12", "get_context"),
        ("GET", "/api/contexts/by-external/a/b", "get_context_by_external"),
        ("GET", "/api/contexts/by-external", "get_context"),  # then a 400: not an id
        ("GET", "/api/contexts/bulk-upsert", "get_context"),
        ("POST", "/api/contexts/bulk-upsert", "bulk_upsert"),
        ("PUT", "/api/contexts/by-external/x", None),
        ("GET", "/api/contexts/", None),
        ("GET", "/api/contexts//", None),
        ("OPTIONS", "/api/contexts", None),
    ],
)
def test_routing_follows_the_table_in_order(method: str, path: str, expected: str | None) -> None:
    with FakeContextQ() as fake:
        found = fake.service.router.match(method, path)
    assert (found.op.name if found else None) == expected


def test_the_service_answers_without_any_transport() -> None:
    with FakeContextQ() as fake:
        key = fake.mint_key(fake.create_tenant())
        answer = fake.service.handle(
            Request("GET", "/api/contexts", headers={"authorization": wire.authorization(key)})
        )
    assert answer.status == 200
    assert dict(answer.headers)["content-type"] == wire.JSON_MEDIA_TYPE
    assert answer.body.startswith(b'{"items":[]')
