"""The served fake's ``/mcp`` as fastmcp's ``Client`` sees it (streamable HTTP, the key as a
bearer token): an unknown tool and a bad argument are ``isError`` results, which fastmcp
turns into a ``ToolError`` carrying the server's text (or, with ``raise_on_error=False``,
hands back as an error result) rather than a protocol error, and a save reads back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError
from mcp import types

from fake_contextq import FakeContextQ, ServedFake, Tenant, _msgs


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve() as running:
        yield running


def _client(served: ServedFake, key: str) -> Client[StreamableHttpTransport]:
    return Client(StreamableHttpTransport(served.mcp_url, auth=key))


def _text(content: list[Any]) -> str:
    [block] = content
    assert isinstance(block, types.TextContent), block
    return block.text


def _bad_arguments_head(tool: str) -> str:
    return _msgs.MCP_ERROR_OF.format(
        code=-32602, message=_msgs.MCP_BAD_ARGUMENTS.format(name=tool, problem="")
    )


def test_fastmcp_sees_an_unknown_tool_as_an_error_result(served: ServedFake, key: str) -> None:
    async def main() -> tuple[list[str], str, str]:
        async with _client(served, key) as client:
            names = [tool.name for tool in await client.list_tools()]
            with pytest.raises(ToolError) as raised:
                await client.call_tool("ctx_no_such_tool", {})
            result = await client.call_tool("ctx_no_such_tool", {}, raise_on_error=False)
            assert result.is_error
            return names, str(raised.value), _text(result.content)

    names, raised, text = asyncio.run(main())

    assert {"ctx_save", "ctx_get"} <= set(names)
    assert raised == text == "MCP error -32602: Tool ctx_no_such_tool not found"


def test_fastmcp_sees_a_bad_argument_as_an_error_result(served: ServedFake, key: str) -> None:
    async def main() -> tuple[str, str]:
        async with _client(served, key) as client:
            await client.list_tools()  # fastmcp then holds ctx_get's output schema
            with pytest.raises(ToolError) as raised:
                await client.call_tool("ctx_get", {"id": "not-a-number"})
            result = await client.call_tool("ctx_get", {"id": "not-a-number"}, raise_on_error=False)
            assert result.is_error
            assert result.structured_content is None
            return str(raised.value), _text(result.content)

    raised, text = asyncio.run(main())

    assert raised == text
    head = _bad_arguments_head("ctx_get")
    assert text.startswith(head), text
    issues = json.loads(text[len(head) :])
    assert [(i["code"], i["path"]) for i in issues] == [("invalid_type", ["id"])]


def test_fastmcp_saves_and_reads_back(served: ServedFake, key: str) -> None:
    async def main() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        async with _client(served, key) as client:
            saved = await client.call_tool("ctx_save", {"content": "Deploys go out on Tuesdays."})
            assert saved.structured_content is not None
            got = await client.call_tool("ctx_get", {"id": saved.structured_content["id"]})
            return saved.structured_content, got.structured_content

    saved, got = asyncio.run(main())

    assert saved is not None
    assert got is not None
    assert got["id"] == saved["id"]
    assert got["content"] == "Deploys go out on Tuesdays."


def test_fastmcp_calls_a_renamed_parameter_by_either_name_but_not_both(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    """The agent tools' camelCase parameters; their former snake_case names are aliases
    until fake-contextq 0.2, and both at once is an error result saying which to use."""
    fake.create_workspace(tenant, "w")

    async def main() -> tuple[list[int], str]:
        async with _client(served, key) as client:
            started = await client.call_tool("agent_session_start", {"workspace": "w"})
            assert started.structured_content is not None
            session = started.structured_content["id"]
            resumed = []
            for name in ("sessionId", "session_id"):
                answer = await client.call_tool("agent_resume", {name: session})
                assert answer.structured_content is not None
                resumed.append(answer.structured_content["session"]["id"])
            both = {"sessionId": session, "session_id": session}
            with pytest.raises(ToolError) as raised:
                await client.call_tool("agent_resume", both)
            return [session, *resumed], str(raised.value)

    ids, raised = asyncio.run(main())

    assert ids[1:] == [ids[0], ids[0]]
    assert raised.startswith(_bad_arguments_head("agent_resume")), raised
    assert "Give sessionId only: session_id is its former name" in raised
