"""Negative tests: a key without a scope, a tenant at its quota, files already there."""

from __future__ import annotations

import pytest
from anthropic.lib.tools import ToolError

from adapter import ContextQMemoryTool
from fake_contextq import FakeContextQ, Tenant


@pytest.mark.contextq(scopes=("read",))
def test_a_read_only_key_cannot_write_a_memory(memory_tool: ContextQMemoryTool) -> None:
    with pytest.raises(ToolError, match="lacks the 'write' scope"):
        memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})


@pytest.mark.contextq(plan="free")
def test_the_free_plan_refuses_the_101st_context(
    memory_tool: ContextQMemoryTool, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    fake_contextq.fill(contextq_tenant)  # to the quota, in one bulk upsert
    with pytest.raises(ToolError, match="the free plan allows 100 contexts"):
        memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})


def test_seeded_files_are_what_the_tool_shows(
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_api_key: str,
    contextq_workspace: str,
) -> None:
    fake_contextq.seed_files(
        contextq_api_key, {"/memories/prefs.md": "Likes Go.\n"}, workspace=contextq_workspace
    )
    memory_tool.call(
        {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "Go", "new_str": "Rust"}
    )
    assert fake_contextq.memory_files(contextq_tenant, contextq_workspace) == {
        "/memories/prefs.md": "Likes Rust.\n"
    }


def test_contextq_down_reaches_claude_as_a_tool_error(
    memory_tool: ContextQMemoryTool, fake_contextq: FakeContextQ
) -> None:
    fake_contextq.faults.inject("*", "/api/*", status=503, times=None)
    with pytest.raises(ToolError, match=r"ContextQ is unavailable \(503\)"):
        memory_tool.call({"command": "view", "path": "/memories"})
