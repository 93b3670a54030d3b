"""The agent with a scripted Claude and a fake ContextQ: the conversation runs offline, and
what the agent stored is asserted where it landed."""

from __future__ import annotations

from support_agent import answer

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel, memory, text
from fake_contextq import FakeContextQ, Tenant


def test_the_agent_remembers_a_preference(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    scripted_model.script(
        memory.view("/memories"),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        text("Noted: TypeScript."),
    )

    reply = answer(scripted_model.client, memory_tool, "Remember that I prefer TypeScript.")

    assert reply == "Noted: TypeScript."
    assert fake_contextq.memory_files(contextq_tenant, "memories") == {
        "/memories/prefs.md": "Prefers TypeScript.\n"
    }


def test_the_agent_reads_what_an_earlier_conversation_left(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_api_key: str,
    contextq_workspace: str,
) -> None:
    fake_contextq.seed_files(
        contextq_api_key, {"/memories/prefs.md": "Prefers Go.\n"}, workspace=contextq_workspace
    )
    scripted_model.script(memory.view("/memories/prefs.md"), text("You prefer Go."))

    reply = answer(scripted_model.client, memory_tool, "Which language do I prefer?")

    assert reply == "You prefer Go."
    [viewed] = scripted_model.tool_results
    assert "Prefers Go." in viewed.content and not viewed.is_error
    # the agent sent its instructions and both tools on every request
    first = scripted_model.requests[0].body
    assert first["system"].startswith("You are a support agent.")
    assert [tool["name"] for tool in first["tools"]] == ["memory", "memory_recall"]


def test_a_refused_command_reaches_claude_as_an_error_result(
    scripted_model: ScriptedModel, memory_tool: ContextQMemoryTool
) -> None:
    scripted_model.script(
        memory.view("/memories/missing.md"),
        text("I have nothing on that yet."),
    )

    answer(scripted_model.client, memory_tool, "What do you know about me?")

    [missing] = scripted_model.tool_results
    assert missing.is_error
    assert missing.content == (
        "The path /memories/missing.md does not exist. Please provide a valid path."
    )
