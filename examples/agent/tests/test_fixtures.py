"""Each fixture of the contextq_fixtures plugin, as a downstream project uses it: the memory
tools, the clients, the marker, the served fake for a subprocess."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from adapter import (
    AsyncContextQClient,
    AsyncContextQMemoryTool,
    ContextQClient,
    ContextQMemoryTool,
)
from contextq_fixtures import ContextQServer
from fake_contextq import FakeContextQ, Tenant


def test_the_memory_tool_writes_into_the_fake(
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_workspace: str,
) -> None:
    result = memory_tool.call(
        {"command": "create", "path": "/memories/prefs.md", "file_text": "Prefers TypeScript.\n"}
    )
    assert result == "File created successfully at: /memories/prefs.md"
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.external_id == f"mem-tool:{contextq_workspace}/prefs.md"
    assert row.content == "Prefers TypeScript.\n"


def test_the_async_memory_tool(async_memory_tool: AsyncContextQMemoryTool) -> None:
    async def main() -> str:
        await async_memory_tool.call(
            {"command": "create", "path": "/memories/a.md", "file_text": "x"}
        )
        listing: str = await async_memory_tool.call({"command": "view", "path": "/memories"})
        return listing

    assert "/memories/a.md" in asyncio.run(main())


def test_the_clients(
    contextq_client: ContextQClient,
    async_contextq_client: AsyncContextQClient,
    contextq_workspace: str,
) -> None:
    made = contextq_client.create_context("reference", "t", "c", workspace=contextq_workspace)
    got = asyncio.run(async_contextq_client.get_context(made.id))
    assert got.content == "c"


@pytest.mark.contextq(plan="enterprise", workspace="acme", llm=True)
def test_the_marker_configures_the_fake(
    contextq_tenant: Tenant, contextq_workspace: str, contextq_client: ContextQClient
) -> None:
    assert contextq_tenant.plan == "enterprise"
    assert contextq_workspace == "acme"
    session = contextq_client.start_session(workspace="acme")
    assert contextq_client.handoff(session_id=session.id).workspace == "acme"


def test_the_server_is_reachable_from_a_subprocess(contextq_server: ContextQServer) -> None:
    code = (
        "import os, httpx2; r = httpx2.get(os.environ['CONTEXT_API_URL'] + '/api/workspaces',"
        " headers={'Authorization': 'Bearer ' + os.environ['CONTEXT_API_KEY']});"
        " print(r.status_code)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **contextq_server.env},
        timeout=60,
    )
    assert out.stdout.strip() == "200", out.stderr
    assert contextq_server.fake.journal.last.path == "/api/workspaces"
