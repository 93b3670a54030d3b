"""Every tool's result satisfies the output schema it advertises, and the protocol
versions are negotiated from one set, as ContextQ's TypeScript server negotiates them."""

from __future__ import annotations

from typing import Any

import httpx2
import jsonschema
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.mcp import SyncMcpClient, result_text
from fake_contextq.mcp.versions import (
    LATEST_PROTOCOL_VERSION,
    NEWER_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
    negotiated,
)
from fake_contextq.service.operations import MCP_TOOLS


def _calls(mcp: SyncMcpClient, fake: FakeContextQ, tenant: Tenant) -> dict[str, dict[str, Any]]:
    """One successful call of every tool, its arguments by name."""
    fake.create_workspace(tenant, "w")
    saved = mcp.call("ctx_save", {"content": "a fact", "externalId": "e1", "workspace": "w"})
    session = mcp.call("agent_session_start", {"workspace": "w"})["id"]
    task = mcp.call("agent_task_upsert", {"sessionId": session, "key": "k", "title": "t"})
    other = mcp.call("ctx_save", {"content": "to delete"})["id"]
    kept = mcp.call("ctx_saved_searches_create", {"name": "kept", "query": "fact"})["id"]
    gone = mcp.call("ctx_saved_searches_create", {"name": "gone", "query": "x"})["id"]
    other_kept = mcp.call("ctx_save", {"content": "linked to"})["id"]
    job = mcp.call("ctx_ingest", {"text": "queued"})["id"]
    return {
        "ctx_save": {"content": "another"},
        "ctx_list": {"tags": [], "limit": 5},
        "ctx_stats": {},
        "ctx_bulk_update": {
            "contexts": [{"type": "reference", "title": "b", "content": "c", "externalId": "b1"}]
        },
        "ctx_get": {"externalId": "e1"},
        "ctx_update": {"id": saved["id"], "title": "renamed"},
        "ctx_delete": {"id": other},
        "ctx_search": {"query": "fact"},
        "agent_session_start": {},
        "agent_checkpoint": {"sessionId": session, "seq": 1, "state": {"at": 1}},
        "agent_resume": {"sessionId": session},
        "agent_task_upsert": {"sessionId": session, "key": "k2", "title": "t2"},
        "agent_task_tick": {"taskId": task["id"], "evidence": "done"},
        "agent_lesson_add": {"text": "a lesson", "workspace": "w"},
        "agent_handoff": {"sessionId": session},
        "agent_boot": {"goal": "resume", "workspace": "w"},
        "agent_session_end": {"sessionId": session, "status": "completed"},
        "ctx_import": {"contexts": [{"content": "imported"}, {"content": "too", "tags": ["t"]}]},
        "ctx_chunks": {"id": saved["id"]},
        "ctx_mocs": {"limit": 5},
        "ctx_saved_searches_list": {},
        "ctx_saved_searches_create": {"name": "another", "query": "q", "type": "lesson"},
        "ctx_saved_searches_get": {"id": kept},
        "ctx_saved_searches_update": {"id": kept, "limit": None},
        "ctx_saved_searches_run": {"id": kept},
        "ctx_run_saved_search": {"id": kept},
        "ctx_saved_searches_delete": {"id": gone},
        "ctx_dream": {"workspace": "w"},
        "ctx_evolve": {"id": saved["id"], "instruction": "tighten it"},
        "ctx_regenerate_mocs": {"workspace": "w"},
        "ctx_link": {"id": saved["id"], "targetId": other_kept, "relation": "supports"},
        "ctx_links": {"id": saved["id"]},
        "ctx_ingest": {"text": "# One\nfirst\n# Two\nsecond"},
        "ctx_ingest_status": {"jobId": job},
    }


def test_every_tools_success_satisfies_its_output_schema(llm_fake: FakeContextQ) -> None:
    tenant = llm_fake.create_tenant("acme")
    key = llm_fake.mint_key(tenant, wire.SCOPES)
    with SyncMcpClient(llm_fake.mcp_server(key)) as mcp:
        listed = {t.name: t for t in mcp.list_tools()}
        calls = _calls(mcp, llm_fake, tenant)
        assert set(calls) == {t.name for t in MCP_TOOLS}
        for name, args in calls.items():
            result = mcp.call_tool(name, args)
            assert not result.is_error, (name, result_text(result))
            schema = listed[name].output_schema
            assert schema is not None and schema["type"] == "object"
            jsonschema.validate(result.structured_content, schema)


def test_a_tool_error_carries_no_structured_content_to_check(fake: FakeContextQ, key: str) -> None:
    """A TypeScript client checks any structuredContent against the output schema, an
    error's too: the error is its text alone, as McpServer's are."""
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        result = mcp.call_tool("ctx_get", {"id": 404})
    assert result.is_error and result.structured_content is None
    assert result_text(result).startswith("ContextQ 404 not_found:")


def test_a_whole_number_sent_as_a_float_is_that_integer_as_to_javascript(
    fake: FakeContextQ, key: str
) -> None:
    """``z.number().int()`` takes 5.0, and JavaScript holds it as 5: a path id, a body's
    count and a list of ids all reach REST as integers, never as a fault of the tool."""
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        made = mcp.call_tool("ctx_save", {"content": "c", "title": "t"}).structured_content
        assert made is not None
        got = mcp.call_tool("ctx_get", {"id": float(made["id"])})
        assert not got.is_error and got.structured_content == made
        gone = mcp.call_tool("ctx_get", {"id": 404.0})
        assert gone.is_error and result_text(gone).startswith("ContextQ 404 not_found:")
        listed = mcp.call_tool("ctx_list", {"limit": 1.0})
        assert not listed.is_error, result_text(listed)
        half = mcp.call_tool("ctx_get", {"id": 1.5})
        assert half.is_error and "Invalid input: expected int, received number" in result_text(half)
    assert [e.path for e in fake.journal] == [
        "/api/contexts",
        f"/api/contexts/{made['id']}",
        "/api/contexts/404",
        "/api/contexts",
    ]
    assert fake.journal[-1].query == "limit=1"


def test_ctx_get_says_its_one_of_in_its_schema(fake: FakeContextQ, key: str) -> None:
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        [get] = [t for t in mcp.list_tools() if t.name == "ctx_get"]
    validator = jsonschema.Draft202012Validator(get.input_schema)
    assert validator.is_valid({"id": 1}) and validator.is_valid({"externalId": "e"})
    assert not validator.is_valid({}) and not validator.is_valid({"id": 1, "externalId": "e"})


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2024-10-07", "2024-10-07"),
        ("2026-07-28", LATEST_PROTOCOL_VERSION),
        ("1999-01-01", LATEST_PROTOCOL_VERSION),
    ],
)
def test_initialize_over_http_answers_as_the_typescript_sdk(
    fake: FakeContextQ, key: str, asked: str, answered: str
) -> None:
    assert negotiated(asked, SUPPORTED_PROTOCOL_VERSIONS) == answered
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    with fake.serve() as served, httpx2.Client() as c:
        answer = c.post(served.mcp_url, json=body, headers=headers)
        assert answer.json()["result"]["protocolVersion"] == answered
        probe = c.post(
            served.mcp_url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={**headers, "MCP-Protocol-Version": "2026-07-28"},
        )
    assert probe.status_code == 400
    assert probe.json()["error"]["code"] == -32000
    assert "Unsupported protocol version: 2026-07-28" in probe.json()["error"]["message"]


def test_a_client_in_auto_mode_settles_on_the_newest_the_server_speaks(
    fake: FakeContextQ, key: str
) -> None:
    with fake.serve() as served, SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        assert mcp.protocol_version == LATEST_PROTOCOL_VERSION
        result = mcp.call_tool("ctx_no_such_tool", {})
    assert (
        result.is_error
        and result_text(result) == "MCP error -32602: Tool ctx_no_such_tool not found"
    )


def test_a_newer_version_set_serves_the_newer_era(fake: FakeContextQ, key: str) -> None:
    served_fake = fake.serve(mcp_versions=NEWER_PROTOCOL_VERSIONS)
    with served_fake as served, SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        assert mcp.protocol_version == NEWER_PROTOCOL_VERSIONS[0]
        assert mcp.call("ctx_stats", {})["total"] == 0
