"""The Anthropic SDK's own MCP helpers, offline: ``anthropic.lib.tools.mcp.async_mcp_tool``
turns the fake ContextQ's MCP tools into runnable tools, the async tool runner calls them
on the scripted model's ``tool_use``, and the rows land in the fake."""

from __future__ import annotations

import asyncio
from typing import Any

from anthropic.lib.tools.mcp import async_mcp_tool
from mcp import Client

from adapter import wire
from fake_anthropic import ScriptedModel, text, tool_use
from fake_contextq import FakeContextQ, Tenant


async def run_agent(fake: FakeContextQ, key: str, model: ScriptedModel) -> Any:
    async with Client(fake.mcp_server(key)) as mcp:
        listed = await mcp.list_tools()
        tools = [async_mcp_tool(t, mcp.session) for t in listed.tools]
        runner = model.async_client.beta.messages.tool_runner(
            model="claude-sonnet-4-5",
            max_tokens=512,
            tools=tools,
            messages=[{"role": "user", "content": "Remember that we ship on Tuesdays."}],
        )
        return await runner.until_done()


def test_sdk_mcp_tools_run_in_the_async_tool_runner_and_land_rows(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    model = ScriptedModel()
    model.script(
        tool_use("ctx_save", {"content": "We ship on Tuesdays.", "tags": ["process"]}),
        tool_use("ctx_search", {"query": "ship"}),
        text("Saved, and I can find it again."),
    )
    final = asyncio.run(run_agent(fake, key, model))
    model.verify()
    assert final.content[0].text == "Saved, and I can find it again."
    [row] = fake.contexts(tenant)
    assert (row.content, row.tags) == ("We ship on Tuesdays.", ("process",))
    saved, found = model.tool_results
    assert (saved.name, saved.is_error) == ("ctx_save", False)
    assert '"We ship on Tuesdays."' in saved.content
    assert found.name == "ctx_search"
    assert '"score"' in found.content


def test_a_contextq_refusal_reaches_the_model_as_an_error_tool_result(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    reader = fake.mint_key(tenant, (wire.READ,))
    model = ScriptedModel()
    model.script(tool_use("ctx_save", {"content": "x"}), text("I could not save it."))
    asyncio.run(run_agent(fake, reader, model))
    model.verify()
    [result] = model.tool_results
    assert result.is_error is True
    assert "ContextQ 403 scope_denied" in result.content
    assert fake.contexts(tenant) == []
