import pytest
from anthropic.lib.tools import ToolError


@pytest.mark.contextq(scopes=("read",))
def test_a_read_only_key_cannot_write_a_memory(memory_tool):
    with pytest.raises(ToolError, match="lacks the 'write' scope"):
        memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})


@pytest.mark.contextq(plan="free")
def test_the_free_plan_refuses_the_101st_context(memory_tool, fake_contextq, contextq_tenant):
    fake_contextq.fill(contextq_tenant)  # to the quota, in one bulk upsert
    with pytest.raises(ToolError, match="the free plan allows 100 contexts"):
        memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})


def test_seeded_files_are_what_the_tool_shows(
    memory_tool, fake_contextq, contextq_tenant, contextq_api_key, contextq_workspace
):
    fake_contextq.seed_files(
        contextq_api_key, {"/memories/prefs.md": "Likes Go.\n"}, workspace=contextq_workspace
    )
    memory_tool.call(
        {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "Go", "new_str": "Rust"}
    )
    assert fake_contextq.memory_files(contextq_tenant, contextq_workspace) == {
        "/memories/prefs.md": "Likes Rust.\n"
    }
