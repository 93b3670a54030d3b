"""An agent on ContextQ's MCP tools, and a Claude that calls them through the API's MCP
connector: the scripted model really calls the served fake's /mcp."""

from __future__ import annotations

import pytest

from adapter import ContextQClient, wire
from fake_anthropic import ScriptedModel, mcp_tool_use, text, turn
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.mcp import SyncMcpClient, result_text


def test_an_agent_saves_through_contextqs_mcp_tools(
    contextq_mcp: SyncMcpClient, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    saved = contextq_mcp.call("ctx_save", {"content": "We ship on Tuesdays.", "tags": ["process"]})
    found = contextq_mcp.call("ctx_search", {"query": "ship", "tags": ["process"]})

    assert found["results"][0]["context"]["id"] == saved["id"]
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.title == "We ship on Tuesdays."


@pytest.mark.contextq(plan="free")
def test_the_free_plan_refuses_the_101st_save(
    contextq_mcp: SyncMcpClient, contextq_client: ContextQClient
) -> None:
    contextq_client.bulk_upsert(
        [
            {"type": "reference", "title": f"n{i}", "content": "x", "external_id": f"e{i}"}
            for i in range(100)
        ]
    )
    refused = contextq_mcp.call_tool("ctx_save", {"content": "one too many"})

    assert refused.is_error  # a tool error carries its code in its text, as a TS server's does
    assert wire.mcp_error_code(result_text(refused)) == "quota_exceeded"


def test_the_mcp_connector_calls_the_served_fake(
    scripted_model: ScriptedModel,
    contextq_mcp_url: str,
    contextq_api_key: str,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    scripted_model.script(
        turn(
            mcp_tool_use("ctx_save", {"content": "Deploy freeze on Friday."}, server="contextq"),
            text("Saved."),
        )
    )
    reply = scripted_model.client.beta.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Remember the deploy freeze."}],
        mcp_servers=[
            {
                "type": "url",
                "name": "contextq",
                "url": contextq_mcp_url,
                "authorization_token": contextq_api_key,
            }
        ],
        tools=[{"type": "mcp_toolset", "mcp_server_name": "contextq"}],
        betas=["mcp-client-2025-11-20"],
    )

    assert [b.type for b in reply.content] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert [c.content for c in fake_contextq.contexts(contextq_tenant)] == [
        "Deploy freeze on Friday."
    ]
