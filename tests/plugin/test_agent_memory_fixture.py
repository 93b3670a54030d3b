"""The plugin's agent-memory fixtures, as a user's test meets them: ``agent_memory`` (a
strict REST port on the test's fake), ``agent_memory_factory`` (each backend, strict or
not) and ``agent_memory_env`` (the environment ``select_agent_memory()`` reads, pointing
at the served fake). What a port writes is asserted on the fake's own state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapter.agent_memory import (
    AgentMemory,
    AsyncAgentMemory,
    ContextQAgentMemory,
    LocalAgentMemory,
    McpAgentMemory,
    RemoteAgentMemory,
    RunRecord,
    select_agent_memory,
)
from adapter.errors import ContextQError, ScopeDeniedError
from contextq_fixtures import AgentMemoryEnv, AgentMemoryFactory
from fake_contextq import FakeContextQ, Tenant


def _run(memory: AgentMemory, run_id: str = "run-1") -> RunRecord:
    """A whole run through the port, as an agent core would make it."""
    memory.begin_run(RunRecord(run_id, task="migrate the schema", status="running"))
    memory.checkpoint(run_id, {"step": 1})
    done = RunRecord(
        run_id,
        task="migrate the schema",
        accomplished=("schema migrated",),
        next=("drop the old table",),
        issues=("the backup took 2 h",),
    )
    memory.write_record(done)
    return done


def _assert_run_landed(fake: FakeContextQ, tenant: Tenant, workspace: str | None) -> None:
    state = fake.agent_state(tenant)
    [run] = state.sessions
    assert run.session.status == "completed"
    assert run.session.workspace == workspace
    assert run.session.metadata["run_id"] == "run-1"
    assert [c.state for c in run.checkpoints] == [{"step": 1}]
    assert sorted((t.title, t.status) for t in run.tasks) == [
        ("drop the old table", "pending"),
        ("schema migrated", "verified"),
    ]
    assert [(lesson.text, lesson.session_id) for lesson in state.lessons] == [
        ("the backup took 2 h", run.session.id)
    ]
    [record] = [c for c in fake.contexts(tenant) if c.external_id == "agent-run:run-1"]
    assert record.workspace == workspace and record.tags == ("agent-run",)
    assert record.metadata["agentRun"]["accomplished"] == ["schema migrated"]


# ----- agent_memory ----------------------------------------------------------------------------


def test_agent_memory_is_a_strict_rest_port_on_the_tests_fake_and_workspace(
    agent_memory: ContextQAgentMemory,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_workspace: str,
) -> None:
    assert isinstance(agent_memory, ContextQAgentMemory) and isinstance(agent_memory, AgentMemory)
    assert agent_memory.strict and agent_memory.workspace == contextq_workspace
    written = _run(agent_memory)
    _assert_run_landed(fake_contextq, contextq_tenant, contextq_workspace)
    assert agent_memory.get_record("run-1") == written
    assert agent_memory.failures == []


def test_agent_memory_raises_what_a_production_port_would_absorb(
    agent_memory: ContextQAgentMemory, fake_contextq: FakeContextQ
) -> None:
    fake_contextq.faults.inject("POST", "/api/agent/sessions", status=503, times=None)
    with pytest.raises(ContextQError, match="503"):
        agent_memory.begin_run(RunRecord("run-1", task="t", status="running"))
    assert agent_memory.failures == []


@pytest.mark.contextq(scopes=("read",))
def test_a_key_without_write_scope_fails_the_test_at_the_first_write(
    agent_memory: ContextQAgentMemory,
) -> None:
    with pytest.raises(ScopeDeniedError):
        agent_memory.write_record(RunRecord("run-1", task="t"))


@pytest.mark.contextq(workspace="agents", llm=True)
def test_the_marker_configures_the_fake_behind_agent_memory(
    agent_memory: ContextQAgentMemory, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    _run(agent_memory)
    _assert_run_landed(fake_contextq, contextq_tenant, "agents")
    [handoff] = fake_contextq.agent_state(contextq_tenant).handoffs  # the server's LLM wrote it
    assert handoff.workspace == "agents"


async def _async_run(memory: AsyncAgentMemory) -> None:
    await memory.write_record(RunRecord("run-1", task="t", accomplished=("a",)))


def test_agent_memory_has_an_async_twin(
    agent_memory: ContextQAgentMemory, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    import asyncio

    asyncio.run(_async_run(AsyncAgentMemory(agent_memory)))
    [run] = fake_contextq.agent_state(contextq_tenant).sessions
    assert [t.title for t in run.tasks] == ["a"]


# ----- agent_memory_factory --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "kind"), [("contextq", ContextQAgentMemory), ("mcp", McpAgentMemory)]
)
def test_each_remote_backend_writes_the_same_run_to_the_fake(
    agent_memory_factory: AgentMemoryFactory,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_workspace: str,
    backend: str,
    kind: type,
) -> None:
    memory = agent_memory_factory(backend)
    assert isinstance(memory, kind) and isinstance(memory, RemoteAgentMemory) and memory.strict
    _run(memory)
    _assert_run_landed(fake_contextq, contextq_tenant, contextq_workspace)


def test_the_local_backend_writes_under_tmp_path_and_nothing_to_the_fake(
    agent_memory_factory: AgentMemoryFactory,
    fake_contextq: FakeContextQ,
    tmp_path: Path,
) -> None:
    memory = agent_memory_factory("local")
    assert isinstance(memory, LocalAgentMemory) and memory.strict
    written = _run(memory)
    assert sorted(p.name for p in (tmp_path / "agent-memory").iterdir()) == ["run-1.json"]
    assert agent_memory_factory("local").list_records() == [written]  # one directory a test
    assert len(fake_contextq.journal) == 0


def test_strict_false_is_the_production_behaviour(
    agent_memory_factory: AgentMemoryFactory, fake_contextq: FakeContextQ
) -> None:
    memory = agent_memory_factory(strict=False)
    fake_contextq.faults.inject("POST", "/api/agent/sessions", status=503, times=None)
    _run(memory)  # an outage is "no memory", never a failed run
    assert [(f.method, f.code) for f in memory.failures] == [
        ("begin_run", "injected_fault"),
        ("checkpoint", "injected_fault"),
        ("write_record", "injected_fault"),
    ]


def test_the_factory_takes_another_workspace_and_another_key(
    agent_memory_factory: AgentMemoryFactory,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
) -> None:
    created = agent_memory_factory(workspace="elsewhere")  # the admin key creates it
    _run(created)
    _assert_run_landed(fake_contextq, contextq_tenant, "elsewhere")
    reader = agent_memory_factory(api_key=fake_contextq.mint_key(contextq_tenant, ("read",)))
    assert reader.get_record("run-1") is not None
    with pytest.raises(ScopeDeniedError):
        reader.add_lesson("read-only keys cannot write")


def test_the_factory_with_no_workspace_stores_sessions_without_one(
    agent_memory_factory: AgentMemoryFactory, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> None:
    _run(agent_memory_factory(workspace=None))
    _assert_run_landed(fake_contextq, contextq_tenant, None)


def test_an_unknown_backend_is_a_clear_error(agent_memory_factory: AgentMemoryFactory) -> None:
    with pytest.raises(ValueError, match=r"one of contextq, mcp, local, not 'rest'"):
        agent_memory_factory("rest")


def test_the_factory_closes_what_it_made(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        made = []

        def test_make(agent_memory_factory):
            made.append(agent_memory_factory("contextq"))
            made.append(agent_memory_factory("mcp"))
            made[1].list_records()
            assert made[1].remote.session.is_open

        def test_closed():
            rest, mcp = made
            assert rest.remote.client._http.is_closed
            assert not mcp.remote.session.is_open
    """)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "-p", "no:randomly")
    result.assert_outcomes(passed=2)


# ----- agent_memory_env ------------------------------------------------------------------------


def test_the_env_makes_select_agent_memory_use_the_served_fake(
    agent_memory_env: AgentMemoryEnv,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_workspace: str,
) -> None:
    assert {name: os.environ[name] for name in agent_memory_env} == agent_memory_env
    memory = select_agent_memory()
    assert isinstance(memory, ContextQAgentMemory)
    _run(memory)
    memory.close()
    _assert_run_landed(fake_contextq, contextq_tenant, contextq_workspace)
    assert select_agent_memory(env=agent_memory_env, strict=True).get_record("run-1")


def test_one_more_variable_makes_it_the_mcp_backend(
    agent_memory_env: AgentMemoryEnv,
    monkeypatch: pytest.MonkeyPatch,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_workspace: str,
) -> None:
    monkeypatch.setenv("CONTEXTQ_MEMORY_BACKEND", "mcp")
    memory = select_agent_memory()
    assert isinstance(memory, McpAgentMemory)
    _run(memory)
    memory.close()
    _assert_run_landed(fake_contextq, contextq_tenant, contextq_workspace)


def test_the_env_overrides_what_the_environment_held(pytester: pytest.Pytester) -> None:
    """Memory switched off (or another MCP URL) in the developer's shell does not leak into
    the test, and the test's variables are gone after it."""
    pytester.makepyfile("""
        import os

        from adapter.agent_memory import ContextQAgentMemory, select_agent_memory

        def test_selects(agent_memory_env):
            assert "CONTEXTQ_MEMORY" not in os.environ
            assert "CONTEXTQ_MCP_URL" not in os.environ
            assert isinstance(select_agent_memory(), ContextQAgentMemory)

        def test_after():
            assert os.environ["CONTEXTQ_MEMORY"] == "0"
            assert "CONTEXT_API_URL" not in os.environ
    """)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONTEXTQ_MEMORY", "0")
        mp.setenv("CONTEXTQ_MCP_URL", "http://127.0.0.1:9/mcp")
        mp.delenv("CONTEXT_API_URL", raising=False)
        result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_failing_tests_report_never_shows_the_key(pytester: pytest.Pytester) -> None:
    """pytest prints fixture values and takes compared dicts apart: the env masks the key."""
    pytester.makepyfile("""
        import os

        def test_fails(agent_memory_env, agent_memory_factory, agent_memory):
            print("TAIL=" + os.environ["CONTEXT_API_KEY"][-12:])  # to look for below
            assert agent_memory_env == {"CONTEXT_API_KEY": "another"}
    """)
    result = pytester.runpytest_inprocess(
        "-p", "contextq_fixtures", "--tb=long", "--showlocals", "-vv"
    )
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    [tail] = [line.removeprefix("TAIL=") for line in text.splitlines() if line.startswith("TAIL=")]
    assert "AgentMemoryEnv(" in text and "'CONTEXT_API_KEY': ***" in text
    assert text.count(tail) == 1, "the key shows in the report"
