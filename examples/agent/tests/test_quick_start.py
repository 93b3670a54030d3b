from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel, memory, text
from fake_contextq import FakeContextQ, Tenant


def test_claude_remembers_a_preference(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    scripted_model.script(memory.create("/memories/prefs.md", "Likes Go.\n"), text("Noted."))
    scripted_model.client.beta.messages.tool_runner(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        tools=[memory_tool],
        messages=[{"role": "user", "content": "Remember that I like Go."}],
    ).until_done()
    assert fake_contextq.memory_files(contextq_tenant, "memories") == {
        "/memories/prefs.md": "Likes Go.\n"
    }
