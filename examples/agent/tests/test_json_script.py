"""A script written as JSON, in the API's own shapes: a reply pasted from a real run is a
turn as it stands. The same file can be served to another process
(``fake-anthropic serve tests/scripts/remember.json``)."""

from __future__ import annotations

from pathlib import Path

from support_agent import answer

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel
from fake_contextq import FakeContextQ, Tenant

SCRIPT = Path(__file__).parent / "scripts" / "remember.json"


def test_the_agent_follows_a_json_script(
    memory_tool: ContextQMemoryTool, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    with ScriptedModel.from_json(SCRIPT) as model:  # leaving the block verifies the script
        reply = answer(model.client, memory_tool, "I prefer dark mode.")

    assert reply == "Noted: dark mode."
    assert fake_contextq.memory_files(contextq_tenant, "memories") == {
        "/memories/prefs.md": "Prefers dark mode.\n"
    }
