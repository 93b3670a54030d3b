"""A run recorded once against the real API and replayed offline: the recording is
``tests/recordings/test_recorded/<test name>.json``; a request that drifts from it fails
the test with a diff. Record it again with ``--anthropic-record-mode=all`` (a key set)."""

from __future__ import annotations

import pytest
from support_agent import answer

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel
from fake_contextq import FakeContextQ, Tenant


@pytest.mark.anthropic_recording
def test_the_agent_remembers_a_time_zone(
    scripted_model: ScriptedModel,
    memory_tool: ContextQMemoryTool,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    reply = answer(scripted_model.client, memory_tool, "Remember that I work from Oslo time.")

    assert "Oslo" in reply
    assert fake_contextq.memory_files(contextq_tenant, "memories") == {
        "/memories/timezone.md": "Works on Oslo time (Europe/Oslo).\n"
    }
