"""The MCP surface: the tools and their parameters, the two type enums, a scope denial, a
quota refusal, and the same record through MCP and REST. Against a real ContextQ the first
run says which of the assumed MCP details hold."""

from __future__ import annotations

import json

import httpx2
import pytest

from contextq_conformance._results import ok
from contextq_conformance._results import text as result_text
from contextq_conformance.targets import Target, Tenant

# Spelled here, not taken from adapter.wire (see test_search.py).
CORE = (
    "ctx_save", "ctx_search", "ctx_list", "ctx_get", "ctx_update", "ctx_delete", "ctx_bulk_update",
    "ctx_stats",
)  # fmt: skip
AGENT = (
    "agent_boot", "agent_resume", "agent_session_start", "agent_session_end",
    "agent_checkpoint", "agent_task_upsert", "agent_task_tick", "agent_lesson_add",
    "agent_handoff",
)  # fmt: skip
NINE = (
    "reference", "feedback", "project", "incident", "lesson", "user", "synthesis", "map", "moc"
)  # fmt: skip
SIX = NINE[:6]


@pytest.mark.contract("mcp.tools", "mcp.agent-tools")
def test_the_server_lists_the_core_and_agent_tools(target: Target, tenant: Tenant) -> None:
    names = {t.name for t in target.mcp(tenant.client).list_tools()}
    assert set(CORE) <= names, f"missing: {sorted(set(CORE) - names)}"
    assert set(AGENT) <= names, f"missing: {sorted(set(AGENT) - names)}"


@pytest.mark.contract("mcp.required-params", "mcp.save-types")
def test_save_and_search_take_the_documented_parameters(target: Target, tenant: Tenant) -> None:
    tools = {t.name: t.input_schema for t in target.mcp(tenant.client).list_tools()}
    save, search = tools["ctx_save"], tools["ctx_search"]
    assert "content" in save.get("required", [])
    assert {"content", "tags", "metadata"} <= set(save["properties"])
    assert "query" in search.get("required", [])
    assert {"query", "tags", "limit"} <= set(search["properties"])
    assert search["properties"]["limit"].get("default") == 10
    assert sorted(save["properties"]["type"]["enum"]) == sorted(NINE)


# The agent tools' parameters named in camelCase, where their REST fields are snake_case.
CAMEL_PARAMS = {
    "agent_session_start": {"parentSessionId"},
    "agent_session_end": {"sessionId"},
    "agent_checkpoint": {"sessionId"},
    "agent_resume": {"sessionId"},
    "agent_task_upsert": {"sessionId", "parentKey"},
    "agent_task_tick": {"taskId"},
    "agent_lesson_add": {"sessionId"},
    "agent_handoff": {"sessionId"},
    "agent_boot": {"tokenBudget"},
}


@pytest.mark.contract("mcp.param-names")
def test_tool_parameters_are_camel_case(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    tools = {t.name: t.input_schema for t in mcp.list_tools()}
    snake = sorted(
        (name, param)
        for name, schema in tools.items()
        if name.startswith(("ctx_", "agent_"))
        for param in schema.get("properties", {})
        if "_" in param
    )
    assert snake == []
    missing = {
        name: sorted(wanted - set(tools[name].get("properties", {})))
        for name, wanted in CAMEL_PARAMS.items()
    }
    assert {name: gone for name, gone in missing.items() if gone} == {}
    session = ok(mcp.call_tool("agent_session_start", {}))["id"]
    resumed = ok(mcp.call_tool("agent_resume", {"sessionId": session}))
    assert resumed["session"]["id"] == session


@pytest.mark.contract("mcp.search-types", "mcp.tool-error")
@pytest.mark.parametrize("type_", ["synthesis", "map", "moc"])
def test_search_refuses_the_three_save_only_types(
    target: Target, tenant: Tenant, type_: str
) -> None:
    result = target.mcp(tenant.client).call_tool("ctx_search", {"query": "x", "type": type_})
    assert result.is_error
    text = result_text(result)
    # refused by the tool's own input schema (a TypeScript server's Zod enum) or by REST's
    # 400: either way the error result names the six types search takes
    assert "Input validation error" in text or ("400" in text and "validation_error" in text)
    assert all(repr(allowed) in text or f'\\"{allowed}\\"' in text for allowed in SIX), text


@pytest.mark.contract("mcp.scope-denied", "mcp.tool-error")
def test_a_read_only_key_cannot_save(target: Target, tenant: Tenant) -> None:
    reader = target.client(tenant, ["read"])
    result = target.mcp(reader).call_tool("ctx_save", {"content": "x"})
    assert result.is_error
    text = result_text(result)
    assert "403" in text and "scope_denied" in text
    assert tenant.client.api.list_contexts().total == 0


@pytest.mark.contract("mcp.quota", "mcp.tool-error")
def test_the_101st_save_of_a_free_tenant_is_refused(target: Target) -> None:
    tenant = target.tenant("free")
    items = [
        {"type": "reference", "title": "t", "content": "c", "external_id": f"m{i}"}
        for i in range(100)
    ]
    tenant.client.api.bulk_upsert(items)
    result = target.mcp(tenant.client).call_tool("ctx_save", {"content": "one too many"})
    assert result.is_error
    text = result_text(result)
    assert "402" in text and "quota_exceeded" in text
    assert tenant.client.api.list_contexts().total == 100


@pytest.mark.contract("mcp.same-record")
def test_a_record_reads_the_same_through_mcp_and_rest(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    result = mcp.call_tool("ctx_save", {"content": "Through MCP", "tags": ["a"]})
    assert not result.is_error
    saved = result.structured_content
    assert saved is not None
    assert json.loads(result.content[0].text) == saved  # type: ignore[union-attr]
    rest = tenant.client.http.get(
        f"{tenant.client.api.base_url}/api/contexts/{saved['id']}",
        headers={"Authorization": f"Bearer {tenant.client.key}"},
    )
    assert rest.json() == saved
    made = tenant.client.api.create_context("reference", "Through REST", "body")
    got = mcp.call_tool("ctx_get", {"id": made.id})
    assert got.structured_content is not None
    assert got.structured_content["title"] == "Through REST"
    assert got.structured_content["content"] == "body"


@pytest.mark.contract("mcp.unknown-key-401")
def test_the_mcp_endpoint_refuses_an_unknown_key(target: Target) -> None:
    unknown = "sk_live_" + "0" * 40
    url = target.mcp_url
    if url is None:  # in-process there is no HTTP: the tool's REST call is refused instead
        result = target.mcp(target.client_for_key(unknown)).call_tool("ctx_list", {})
        text = result_text(result)
        assert result.is_error and "401" in text and "unauthorized" in text
        return
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {
        "Authorization": f"Bearer {unknown}",
        "Accept": "application/json, text/event-stream",
    }
    answer = httpx2.post(url, json=request, headers=headers, timeout=30)
    assert answer.status_code == 401


@pytest.mark.contract("mcp.import")
def test_an_import_of_two_contexts_lands_both(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    items = [
        {"content": "Tuesdays only.", "title": "Deploy day", "externalId": "imp-1"},
        {"content": "Page the on-call.", "title": "Incidents", "type": "incident"},
    ]
    answer = ok(mcp.call_tool("ctx_import", {"contexts": items}))
    landed = tenant.client.api.list_contexts()
    assert landed.total == 2
    assert sorted(c.title for c in landed.items) == ["Deploy day", "Incidents"]
    first = tenant.client.api.get_context_by_external_id("imp-1")
    assert first.content == "Tuesdays only."
    assert (answer.get("created"), answer.get("updated")) == (2, 0), answer
    ids = answer.get("ids")
    assert isinstance(ids, list) and len(ids) == 2 and ids[0] == first.id, answer
    assert tenant.client.api.get_context(ids[1]).title == "Incidents"
