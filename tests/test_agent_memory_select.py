"""``select_agent_memory``: configuration alone picks the backend, and anything missing or
unreachable is the local backend with one log line saying why."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapter import wire
from adapter.agent_memory import (
    ContextQAgentMemory,
    LocalAgentMemory,
    McpAgentMemory,
    NoAgentMemory,
    RunRecord,
    select_agent_memory,
)
from fake_contextq import FakeContextQ, ServedFake


@pytest.fixture
def served() -> Iterator[tuple[ServedFake, str]]:
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "agents")
    with fake.serve() as running:
        yield running, fake.mint_key(tenant, wire.SCOPES)
    fake.close()


def _env(served: tuple[ServedFake, str], backend: str, **more: str) -> dict[str, str]:
    running, key = served
    env = {
        "CONTEXTQ_MEMORY_BACKEND": backend,
        "CONTEXT_API_URL": running.url,
        "CONTEXT_API_KEY": key,
        "CONTEXTQ_WORKSPACE": "agents",
    }
    env.update(more)
    return env


def _close(memory: object) -> None:
    close = getattr(memory, "close", None)
    if close is not None:
        close()


def test_nothing_set_is_the_local_backend(tmp_path: Path) -> None:
    memory = select_agent_memory({}, directory=tmp_path)
    assert isinstance(memory, LocalAgentMemory) and memory.directory == tmp_path


def test_memory_off_stores_nothing(tmp_path: Path, served: tuple[ServedFake, str]) -> None:
    memory = select_agent_memory(_env(served, "contextq", CONTEXTQ_MEMORY="0"), directory=tmp_path)
    assert isinstance(memory, NoAgentMemory)
    assert memory.write_record(RunRecord("r1", task="t")) is None
    assert memory.list_records() == [] and memory.build_preamble("t") == ""
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_a_reachable_contextq_is_its_backend(
    tmp_path: Path, served: tuple[ServedFake, str], backend: str
) -> None:
    memory = select_agent_memory(_env(served, backend), directory=tmp_path)
    try:
        expected = ContextQAgentMemory if backend == "contextq" else McpAgentMemory
        assert isinstance(memory, expected)
        assert memory.write_record(RunRecord("r1", task="t")) is not None
        assert [r.run_id for r in memory.list_records()] == ["r1"]
    finally:
        _close(memory)


@pytest.mark.parametrize("missing", ["CONTEXT_API_URL", "CONTEXT_API_KEY", "CONTEXTQ_WORKSPACE"])
@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_a_missing_value_is_the_local_backend_naming_it(
    tmp_path: Path,
    served: tuple[ServedFake, str],
    caplog: pytest.LogCaptureFixture,
    backend: str,
    missing: str,
) -> None:
    env = _env(served, backend)
    del env[missing]
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        memory = select_agent_memory(env, directory=tmp_path)
    assert isinstance(memory, LocalAgentMemory)
    [line] = caplog.messages
    assert line == f"agent memory: using the local backend ({tmp_path}): {backend} needs {missing}"


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_an_unreachable_service_is_the_local_backend(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, backend: str
) -> None:
    env = {
        "CONTEXTQ_MEMORY_BACKEND": backend,
        "CONTEXT_API_URL": "http://127.0.0.1:9",
        "CONTEXT_API_KEY": "sk_live_" + "a" * 40,
        "CONTEXTQ_WORKSPACE": "agents",
    }
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        memory = select_agent_memory(env, directory=tmp_path)
    assert isinstance(memory, LocalAgentMemory)
    [line] = caplog.messages
    assert "cannot be used" in line and "127.0.0.1:9" in line


def test_a_refused_key_is_the_local_backend(
    tmp_path: Path, served: tuple[ServedFake, str], caplog: pytest.LogCaptureFixture
) -> None:
    env = _env(served, "contextq", CONTEXT_API_KEY="sk_live_" + "0" * 40)
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        assert isinstance(select_agent_memory(env, directory=tmp_path), LocalAgentMemory)
    assert "401" in caplog.text


def test_an_unknown_backend_is_the_local_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        memory = select_agent_memory({"CONTEXTQ_MEMORY_BACKEND": "redis"}, directory=tmp_path)
    assert isinstance(memory, LocalAgentMemory)
    assert "'redis' is none of local, contextq, mcp" in caplog.text


def test_local_writes_leave_no_temporary_files_and_skip_damaged_ones(tmp_path: Path) -> None:
    memory = LocalAgentMemory(tmp_path)
    memory.write_record(RunRecord("r1", task="t"))
    memory.write_record(RunRecord("r2", task="u"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r1.json", "r2.json"]
    (tmp_path / "r2.json").write_text("{not json")
    assert [r.run_id for r in memory.list_records()] == ["r1"]
    assert [f.method for f in memory.failures] == ["read"]


CRASHING_AGENT = """
import os, sys, time
from adapter.agent_memory import RunRecord, select_agent_memory

memory = select_agent_memory()
memory.begin_run(RunRecord("crash-1", task="a long job", status="running"))
memory.checkpoint("crash-1", {"step": 1}, summary="step one done")
memory.checkpoint("crash-1", {"step": 2}, summary="step two done")
print("checkpointed", flush=True)
time.sleep(60)  # killed here, before step three and before its record is written
"""


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
@pytest.mark.slow  # a subprocess: not in --quick
def test_a_run_killed_between_checkpoints_resumes_in_the_next_process(
    tmp_path: Path, served: tuple[ServedFake, str], backend: str
) -> None:
    import os
    import signal
    import subprocess
    import sys

    env = {**os.environ, **_env(served, backend)}
    agent = subprocess.Popen(
        [sys.executable, "-c", CRASHING_AGENT], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert agent.stdout is not None
        assert agent.stdout.readline().strip() == "checkpointed"
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=30)
    memory = select_agent_memory(_env(served, backend), directory=tmp_path)
    try:
        resumed = memory.resume("crash-1")
        assert resumed is not None and resumed.checkpoint is not None
        assert (resumed.checkpoint.seq, resumed.checkpoint.state) == (2, {"step": 2})
        assert resumed.checkpoint.summary == "step two done"
        assert memory.checkpoint("crash-1", {"step": 3}) == 3
        record = memory.get_record("crash-1")
        assert record is not None and record.status == "running"
        assert memory.failures == []
    finally:
        _close(memory)
