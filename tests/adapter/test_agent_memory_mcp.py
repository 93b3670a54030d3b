"""``McpAgentMemory`` and the MCP client under it when the session breaks: a dropped
connection or an answer past the deadline costs that one call (the next opens a fresh
session), a tool result of any shape is a counted failure and never an exception,
closing never raises, and nothing keeps the agent's process alive."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import mcp_types as types
import pytest

from adapter import ContextQClient, wire
from adapter.agent_memory import McpAgentMemory, RunRecord
from adapter.mcp_client import SyncMcpClient
from fake_contextq import FakeContextQ, ServedFake, Tenant

WORKSPACE = "agents"


@pytest.fixture
def fake() -> Iterator[FakeContextQ]:
    made = FakeContextQ()
    yield made
    made.close()


@pytest.fixture
def tenant(fake: FakeContextQ) -> Tenant:
    made = fake.create_tenant("acme")
    fake.create_workspace(made, WORKSPACE)
    return made


@pytest.fixture
def key(fake: FakeContextQ, tenant: Tenant) -> str:
    return fake.mint_key(tenant, wire.SCOPES)


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve() as running:
        yield running


def _stored(fake: FakeContextQ, key: str, run_id: str) -> bool:
    with ContextQClient(key, http_client=fake.client()) as api:
        rows = api.iter_contexts(tag="agent-run")
        return any(row.external_id == f"agent-run:{run_id}" for row in rows)


# ----- a broken session costs one call ----------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "options"),
    [
        ({"drop": True}, {}),
        pytest.param({"delay": 3.0}, {"timeout": 1.0}, marks=pytest.mark.slow),  # waits 1 s
    ],
    ids=["dropped-connection", "answer-past-the-deadline"],
)
def test_after_a_broken_session_the_next_write_is_stored(
    fake: FakeContextQ, served: ServedFake, key: str, fault: dict[str, Any],
    options: dict[str, Any],
) -> None:  # fmt: skip
    memory = McpAgentMemory(
        SyncMcpClient(served.url + wire.MCP_PATH, api_key=key).open(), WORKSPACE, **options
    )
    try:
        fake.faults.inject("POST", wire.MCP_PATH, times=1, **fault)
        assert memory.list_records() == []
        assert [f.method for f in memory.failures] == ["list_records"]
        fake.faults.clear()
        record = RunRecord("r1", task="after the fault")
        assert memory.write_record(record) == record
        assert _stored(fake, key, "r1")
        assert [r.run_id for r in memory.list_records()] == ["r1"]
    finally:
        memory.close()


def test_closing_after_the_server_died_never_raises(served: ServedFake, key: str) -> None:
    session = SyncMcpClient(served.url + wire.MCP_PATH, api_key=key).open()
    memory = McpAgentMemory(session, WORKSPACE, timeout=2.0)
    assert memory.list_records() == []
    served.stop()
    assert memory.list_records() == [] and memory.failures  # counted, not raised
    started = time.monotonic()
    memory.close()
    session.close()  # twice: nothing left to close
    assert time.monotonic() - started < 2.0 + 1.0


AGENT = """
import sys
from adapter.agent_memory import select_agent_memory

memory = select_agent_memory()
print(type(memory).__name__, flush=True)
sys.stdin.readline()  # the test makes the next answer slow
print(memory.list_records(), len(memory.failures), flush=True)
# no close(): the interpreter must still exit
"""


@pytest.mark.slow  # a subprocess: not in --quick
def test_a_program_that_never_closes_exits_promptly_after_a_slow_answer(
    fake: FakeContextQ, served: ServedFake, key: str
) -> None:
    env = {
        **os.environ,
        "CONTEXTQ_MEMORY_BACKEND": "mcp",
        "CONTEXT_API_URL": served.url,
        "CONTEXT_API_KEY": key,
        "CONTEXTQ_WORKSPACE": WORKSPACE,
        "CONTEXTQ_MEMORY_TIMEOUT": "2",
    }
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert agent.stdin is not None and agent.stdout is not None
        assert agent.stdout.readline().strip() == "McpAgentMemory"
        # slower than the deadline, and than the 5 s read timeout the client once had
        fake.faults.inject("POST", wire.MCP_PATH, delay=6.0, times=1)
        agent.stdin.write("go\n")
        agent.stdin.flush()
        assert agent.stdout.readline().strip() == "[] 1"
        assert agent.wait(timeout=3) == 0  # it hung here for good, once
    finally:
        agent.kill()
        agent.wait()


# ----- a tool result of any shape is a counted failure -----------------------------------


def _text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


Reshape = Callable[[types.CallToolResult], types.CallToolResult]
#: How a server other than ContextQ's might answer a successful call.
SHAPES: dict[str, Reshape] = {
    "text-only-json": lambda r: r.model_copy(update={"structured_content": None}),
    "text-only-prose": lambda _: types.CallToolResult(
        content=[types.TextContent(type="text", text="Done, all good.")]
    ),
    "nothing": lambda _: types.CallToolResult(content=[]),
    "empty-object": lambda r: r.model_copy(update={"structured_content": {}}),
    "wrong-types": lambda r: r.model_copy(
        update={"structured_content": {"items": 7, "id": "x", "total": "many", "metadata": 3}}
    ),
    "a-list": lambda r: r.model_copy(update={"structured_content": [1, 2]}),
    "too-deep-text": lambda _: types.CallToolResult(
        content=[types.TextContent(type="text", text="[" * 5000 + "]" * 5000)]
    ),
}


class ReshapingSession(SyncMcpClient):
    """ContextQ's MCP tools with each successful result reshaped (errors pass as sent)."""

    reshape: Reshape

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        result = super().call_tool(name, arguments)
        return result if result.is_error else self.reshape(result)


EVERY_METHOD: dict[str, Callable[[McpAgentMemory], object]] = {
    "write_record": lambda m: m.write_record(RunRecord("r1", task="t", accomplished=("a",))),
    "list_records": lambda m: m.list_records(),
    "get_record": lambda m: m.get_record("r1"),
    "latest_record": lambda m: m.latest_record(),
    "list_open_issues": lambda m: m.list_open_issues(),
    "build_preamble": lambda m: m.build_preamble("t"),
    "boot": lambda m: m.boot("t"),
    "begin_run": lambda m: m.begin_run(RunRecord("r2", task="t", status="running")),
    "checkpoint": lambda m: m.checkpoint("r2", {"step": 1}),
    "resume": lambda m: m.resume("r2"),
    "open_tasks": lambda m: m.open_tasks("r2"),
    "add_lesson": lambda m: m.add_lesson("a lesson"),
    "handoff": lambda m: m.handoff("r2"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_no_tool_result_shape_raises_from_any_method(
    fake: FakeContextQ, key: str, shape: str
) -> None:
    session = ReshapingSession(fake.mcp_server(key))
    session.reshape = SHAPES[shape]
    memory = McpAgentMemory(session, WORKSPACE)
    try:
        for call in EVERY_METHOD.values():
            call(memory)  # raises nothing, whatever comes back
        if shape == "text-only-json":  # JSON in the text, as TypeScript servers send it
            assert memory.failures == []
            assert [r.run_id for r in memory.list_records()] == ["r1", "r2"]
        else:
            assert memory.failures and {f.code for f in memory.failures} <= {"mcp_error"}
    finally:
        memory.close()


class RecordingSession(SyncMcpClient):
    """ContextQ's MCP tools, each call's name and arguments kept."""

    calls: list[tuple[str, dict[str, Any]]]

    def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        self.calls.append((name, dict(arguments or {})))
        return super().call_tool(name, arguments)


def test_every_argument_sent_is_a_parameter_the_tool_lists(fake: FakeContextQ, key: str) -> None:
    """By its camelCase name, not a former one the fake still accepts as an alias, or a
    TypeScript server's Zod would drop it (and a required one would be missing)."""
    session = RecordingSession(fake.mcp_server(key))
    session.calls = []
    memory = McpAgentMemory(session, WORKSPACE, strict=True)
    for call in EVERY_METHOD.values():
        call(memory)
    listed = {t.name: t.input_schema for t in session.list_tools()}
    memory.close()
    sent = {name for name, _ in session.calls}
    assert {"agent_session_start", "agent_checkpoint", "agent_resume", "agent_boot"} <= sent
    for name, arguments in session.calls:
        assert set(arguments) <= set(listed[name]["properties"]), (name, arguments)
    assert not any(set(a) & set(wire.MCP_PARAM_NAMES) for _, a in session.calls)


def test_an_odd_answer_names_the_tool_and_what_was_wrong(fake: FakeContextQ, key: str) -> None:
    session = ReshapingSession(fake.mcp_server(key))
    for shape, said in [
        ("text-only-prose", "ctx_list: unexpected answer (ValueError: no structuredContent, "
                            "and its text is not JSON"),
        ("too-deep-text", "ctx_list: unexpected answer (ValueError: no structuredContent, "
                          "and its text is not JSON (the answer nests deeper than"),
        ("wrong-types", "ctx_list: unexpected answer (TypeError"),
    ]:  # fmt: skip
        session.reshape = SHAPES[shape]
        memory = McpAgentMemory(session, WORKSPACE)
        assert memory.list_records() == []
        [failure] = memory.failures
        assert said in failure.message, failure.message
    session.close()


def test_strict_raises_a_contextq_error_for_an_odd_answer(fake: FakeContextQ, key: str) -> None:
    from adapter.errors import ContextQError

    session = ReshapingSession(fake.mcp_server(key))
    session.reshape = SHAPES["a-list"]
    memory = McpAgentMemory(session, WORKSPACE, strict=True)
    with pytest.raises(ContextQError, match="unexpected answer"):
        memory.list_records()
    memory.close()


def test_a_text_only_tool_error_keeps_its_status_and_code(fake: FakeContextQ, key: str) -> None:
    """Without a structured error body, the error text says the status and code: a server
    without an LLM is still told apart (the handoff is rendered locally, not a failure)."""

    class TextErrors(SyncMcpClient):
        def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
            result = super().call_tool(name, arguments)
            return result.model_copy(update={"structured_content": None})

    memory = McpAgentMemory(TextErrors(fake.mcp_server(key)), WORKSPACE)
    record = RunRecord("r1", task="migrate", accomplished=("schema v2",))
    assert memory.write_record(record) == record
    assert memory.handoff("r1") == "Last run r1 (completed): migrate. done: schema v2"
    assert memory.failures == []
    memory.close()


@pytest.mark.slow  # waits for a deadline: not in --quick
def test_the_client_answers_after_its_deadline_with_a_fresh_session(
    fake: FakeContextQ, served: ServedFake, key: str
) -> None:
    with SyncMcpClient(served.url + wire.MCP_PATH, api_key=key, timeout=1.0) as session:
        fake.faults.inject("POST", wire.MCP_PATH, delay=3.0, times=1)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="no MCP answer within 1 s"):
            session.call_tool("ctx_list", {})
        assert time.monotonic() - started < 1.0 + 1.0
        assert session.call("ctx_list", {})["total"] == 0
