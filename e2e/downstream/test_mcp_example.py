import pytest

from fake_anthropic import mcp_tool_use, text, turn


def test_an_agent_saves_through_contextqs_mcp_tools(contextq_mcp, fake_contextq, contextq_tenant):
    saved = contextq_mcp.call("ctx_save", {"content": "We ship on Tuesdays.", "tags": ["process"]})
    found = contextq_mcp.call("ctx_search", {"query": "ship", "tags": ["process"]})

    assert found["results"][0]["context"]["id"] == saved["id"]
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.title == "We ship on Tuesdays."


@pytest.mark.contextq(plan="free")
def test_the_free_plan_refuses_the_101st_save(contextq_mcp, contextq_client):
    contextq_client.bulk_upsert(
        [
            {"type": "reference", "title": f"n{i}", "content": "x", "external_id": f"e{i}"}
            for i in range(100)
        ]
    )
    refused = contextq_mcp.call_tool("ctx_save", {"content": "one too many"})

    assert refused.is_error
    assert refused.structured_content["error"] == "quota_exceeded"


def test_the_mcp_connector_calls_the_served_fake(
    scripted_model, contextq_mcp_url, contextq_api_key, fake_contextq, contextq_tenant
):
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
