"""``select_agent_memory``: configuration alone picks the backend, and anything missing or
unreachable is the local backend with one log line saying why."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapter import ContextQError, wire
from adapter.agent_memory import (
    ContextQAgentMemory,
    LocalAgentMemory,
    McpAgentMemory,
    NoAgentMemory,
    RunRecord,
    select_agent_memory,
)
from adapter.mcp_client import SyncMcpClient
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


# ----- strict raises; nothing secret is shown; the probe's deadline ------------------------

UNREACHABLE = {
    "CONTEXT_API_URL": "http://127.0.0.1:9",
    "CONTEXT_API_KEY": "sk_live_" + "a" * 40,
    "CONTEXTQ_WORKSPACE": "agents",
}


def test_strict_raises_for_an_unknown_backend_naming_the_valid_ones(tmp_path: Path) -> None:
    env = {"CONTEXTQ_MEMORY_BACKEND": "contextqq", **UNREACHABLE}
    with pytest.raises(ValueError, match=r"'contextqq' is none of local, contextq, mcp"):
        select_agent_memory(env, directory=tmp_path, strict=True)
    assert not tmp_path.joinpath("r1.json").exists()


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_strict_raises_for_missing_values_naming_them(tmp_path: Path, backend: str) -> None:
    env = {"CONTEXTQ_MEMORY_BACKEND": backend, "CONTEXT_API_URL": "http://127.0.0.1:9"}
    with pytest.raises(ValueError, match=f"{backend} needs CONTEXT_API_KEY, CONTEXTQ_WORKSPACE"):
        select_agent_memory(env, directory=tmp_path, strict=True)


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_strict_raises_for_an_unreachable_service_naming_it(tmp_path: Path, backend: str) -> None:
    from adapter.errors import ContextQConnectionError

    env = {"CONTEXTQ_MEMORY_BACKEND": backend, **UNREACHABLE}
    with pytest.raises(ContextQConnectionError, match=r"at http://127\.0\.0\.1:9.* cannot be used"):
        select_agent_memory(env, directory=tmp_path, strict=True)


def test_strict_raises_for_a_refused_key(tmp_path: Path, served: tuple[ServedFake, str]) -> None:
    from adapter.errors import AuthenticationError

    env = _env(served, "contextq", CONTEXT_API_KEY="sk_live_" + "0" * 40)
    said = r"ContextQ at http://\S+ cannot be used: GET /api/workspaces: Unknown API key"
    with pytest.raises(AuthenticationError, match=said) as refused:
        select_agent_memory(env, directory=tmp_path, strict=True)
    assert (refused.value.status, refused.value.code) == (401, "unauthorized")


SECRET = "hunter2-7f3a9c"
TOKEN = "tok-51d0e8b2"


@pytest.mark.parametrize(
    ("backend", "more"),
    [
        ("mcp", {"CONTEXTQ_MCP_URL": f"http://me:{SECRET}@127.0.0.1:9/mcp?token={TOKEN}#{TOKEN}"}),
        ("mcp", {"CONTEXT_API_URL": f"http://me:{SECRET}@127.0.0.1:9"}),
        ("contextq", {"CONTEXT_API_URL": f"http://127.0.0.1:9/?token={TOKEN}"}),
        ("contextq", {"CONTEXT_API_URL": f"http://me:{SECRET}@127.0.0.1:9"}),
        ("contextq", {"CONTEXT_API_URL": f"http://127.0.0.1:9/#{TOKEN}"}),
    ],
    ids=["mcp-url", "mcp-api-url", "token-query", "password", "fragment"],
)
def test_no_log_line_or_error_shows_a_password_token_or_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, backend: str, more: dict[str, str]
) -> None:
    key = UNREACHABLE["CONTEXT_API_KEY"]
    env = {"CONTEXTQ_MEMORY_BACKEND": backend, **UNREACHABLE, **more}
    with caplog.at_level(logging.DEBUG):
        assert isinstance(select_agent_memory(env, directory=tmp_path), LocalAgentMemory)
    assert SECRET not in caplog.text and TOKEN not in caplog.text and key[8:] not in caplog.text
    assert "***" in caplog.text
    with pytest.raises((ValueError, ContextQError)) as raised:
        select_agent_memory(env, directory=tmp_path, strict=True)
    for text in (str(raised.value), repr(raised.value)):
        assert SECRET not in text and TOKEN not in text and key[8:] not in text, text
    assert "***" in str(raised.value)


def test_failures_and_their_log_lines_show_no_token(
    served: tuple[ServedFake, str], caplog: pytest.LogCaptureFixture
) -> None:
    running, key = served
    url = running.url + wire.MCP_PATH + f"?token={TOKEN}"
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        memory = McpAgentMemory(SyncMcpClient(url, api_key=key), "agents", timeout=2.0)
        running.stop()  # every call now fails, with whatever the transport says
        assert memory.list_records() == []
        memory.close()
    assert memory.failures
    texts = [caplog.text, *(f.message for f in memory.failures)]
    assert all(TOKEN not in text for text in texts), texts


@pytest.mark.parametrize("raw", ["soon", "0", "-3", "inf"])
def test_a_timeout_that_is_not_seconds_is_refused(tmp_path: Path, raw: str) -> None:
    env = {"CONTEXTQ_MEMORY_BACKEND": "contextq", **UNREACHABLE, "CONTEXTQ_MEMORY_TIMEOUT": raw}
    with pytest.raises(ValueError, match=f"CONTEXTQ_MEMORY_TIMEOUT='{raw}' is not a number"):
        select_agent_memory(env, directory=tmp_path, strict=True)


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
def test_the_timeout_is_each_methods_deadline(
    tmp_path: Path, served: tuple[ServedFake, str], backend: str
) -> None:
    from_env: Any = select_agent_memory(
        _env(served, backend, CONTEXTQ_MEMORY_TIMEOUT="2.5"), directory=tmp_path
    )
    given: Any = select_agent_memory(_env(served, backend), directory=tmp_path, timeout=4)
    default: Any = select_agent_memory(_env(served, backend), directory=tmp_path)
    try:
        assert (from_env.timeout, given.timeout, default.timeout) == (2.5, 4, 10)
    finally:
        for memory in (from_env, given, default):
            _close(memory)
