"""The MCP saved-search tools: the names are public (ContextQ's docs page), every parameter
and answer shape is assumed, so against a real ContextQ the first run says which hold."""

from __future__ import annotations

import pytest

from contextq_conformance._results import ok, text
from contextq_conformance.targets import Target, Tenant


def _ids(answer: dict[str, object]) -> list[int]:
    results = answer["results"]
    assert isinstance(results, list)
    return [r["context"]["id"] for r in results]


@pytest.mark.contract("mcp.saved-searches")
@pytest.mark.parametrize("run", ["ctx_saved_searches_run", "ctx_run_saved_search"])
def test_a_saved_search_runs_as_its_search_and_goes_when_deleted(
    target: Target, tenant: Tenant, run: str
) -> None:
    mcp = target.mcp(tenant.client)
    api = tenant.client.api
    api.create_context("reference", "Deploy day", "We deploy on Tuesdays.", tags=["ops"])
    api.create_context("reference", "Deploy freeze", "No deploys in December.", tags=["ops"])
    api.create_context("reference", "Lunch", "Tuesdays are tacos.")
    query = {"query": "deploy", "tags": ["ops"], "limit": 5}
    saved = ok(mcp.call_tool("ctx_saved_searches_create", {"name": "deploys", **query}))
    assert saved["name"] == "deploys" and saved["query"] == "deploy"
    searched = ok(mcp.call_tool("ctx_search", query))
    assert len(_ids(searched)) == 2
    assert _ids(ok(mcp.call_tool(run, {"id": saved["id"]}))) == _ids(searched)
    ok(mcp.call_tool("ctx_saved_searches_delete", {"id": saved["id"]}))
    gone = mcp.call_tool(run, {"id": saved["id"]})
    assert gone.is_error
    assert "404" in text(gone) and "not_found" in text(gone), text(gone)
