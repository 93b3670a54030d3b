"""The plugin's ``interleavings`` fixture, as a user's test meets it: two scripted agents,
each running the SDK's tool runner with its own memory tool, explored on the test's fake;
the marker's bound and seed; and what a failed test's report and page show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextq_fixtures import Interleavings
from contextq_fixtures.html_report import file_name
from fake_anthropic import ScriptedModel, memory, text
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.explore import LOST_UPDATE, Agent, AgentHandle

NOTES = "/memories/notes.md"


def scripted(*turns: Any) -> Agent:
    """An agent: its own scripted model (a new one each order: a script plays once)
    driving the tool runner with this agent's memory tool."""

    def agent(handle: AgentHandle) -> str:
        model = ScriptedModel()
        model.script(*turns)
        final = model.client.beta.messages.tool_runner(
            model="claude-opus-4-1",
            max_tokens=1024,
            tools=[handle.memory_tool()],
            messages=[{"role": "user", "content": "Update the notes."}],
        ).until_done()
        model.verify()
        return str(final.content[0].text)  # type: ignore[union-attr]

    return agent


def test_two_scripted_agents_running_the_tool_runner(
    interleavings: Interleavings,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_api_key: str,
    contextq_workspace: str,
) -> None:
    fake_contextq.seed_files(
        contextq_api_key, {NOTES: "alpha\nbeta\n"}, workspace=contextq_workspace
    )
    writer_a = scripted(
        memory.view(NOTES), memory.str_replace(NOTES, "alpha", "ALPHA"), text("Done.")
    )
    writer_b = scripted(memory.str_replace(NOTES, "beta", "BETA"), text("Done."))
    found = interleavings.explore([writer_a, writer_b])
    # a: view (1 GET), str_replace (GET, PUT); b: str_replace (GET, PUT): 5!/(3!2!) = 10
    assert (found.strategy, found.complete, found.orders) == ("exhaustive", True, 10)
    assert found.failing == found.broken(LOST_UPDATE.name) > 0
    minimal = found.minimal
    assert minimal is not None
    assert minimal.run.results == ["Done.", "Done."]  # both agents were told it worked
    assert "str_replace /memories/notes.md" in str(minimal)
    serial = interleavings.explorer([writer_a, writer_b]).replay((0, 0, 0, 1, 1))
    assert not serial.failed
    assert fake_contextq.memory_files(contextq_tenant) == {
        f"/memories/{contextq_workspace}/notes.md": "ALPHA\nBETA\n"
    }


@pytest.mark.contextq(explore_bound=3, explore_seed=11)
def test_the_marker_sets_the_bound_and_the_seed(
    interleavings: Interleavings, fake_contextq: FakeContextQ, contextq_api_key: str
) -> None:
    fake_contextq.seed_files(contextq_api_key, {NOTES: "alpha\nbeta\n"}, workspace="memories")
    writer_a = scripted(memory.str_replace(NOTES, "alpha", "A"), text("Done."))
    writer_b = scripted(memory.str_replace(NOTES, "beta", "B"), text("Done."))
    found = interleavings.explore([writer_a, writer_b], runs=20)
    assert (found.strategy, found.seed) == ("PCT", 11)
    assert "6 orders counted from the first run exceed the bound 3" in found.why


LOSING_TEST = """
from fake_contextq.explore import AgentHandle

def editor(old, new):
    def agent(handle: AgentHandle):
        handle.memory_tool().call(
            {"command": "str_replace", "path": "/memories/n.md", "old_str": old, "new_str": new}
        )
    return agent

def test_two_editors(interleavings, fake_contextq, contextq_api_key):
    fake_contextq.seed_files(contextq_api_key, {"/memories/n.md": "x\\ny\\n"}, workspace="memories")
    interleavings.explore([editor("x", "X"), editor("y", "Y")]).check()
"""


def test_a_failed_exploration_in_the_report_and_on_the_page(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=LOSING_TEST)
    result = pytester.runpytest_inprocess(
        "-p", "contextq_fixtures", "-p", "no:randomly", "--contextq-report=out"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*interleavings: the simplest failing order*",
            "*schedule [[]0, 1, 1, 0[]] (1 preemption(s)); "
            "replay: explorer.replay([[]0, 1, 1, 0[]])",
            "*broken: lost update: step 4 (PUT by a0) overwrote context 1 "
            "as written at step 3 by a1*",
        ]
    )
    page = (Path(pytester.path) / "out" / file_name("test_agent.py::test_two_editors")).read_text(
        "utf-8"
    )
    assert '<section id="interleavings">' in page
    assert "explorer.replay([0, 1, 1, 0])" in page
    assert '<td>a1</td><td class="mono">str_replace /memories/n.md</td>' in page
    assert "lost update: step 4 (PUT by a0)" in page
