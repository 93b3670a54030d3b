"""The agent-memory port's contract, against a ContextQ that misbehaves: whatever the
server does (hang, drip a byte a second in the headers or the body, close the connection,
answer 500, garbage, JSON nested too deep, MCP tool results in text only), no method of
either remote backend raises, none takes longer than its deadline plus a second, and once
the server is healthy again the next write is stored."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapter import ContextQClient, wire
from adapter.agent_memory import (
    ContextQAgentMemory,
    LocalAgentMemory,
    McpAgentMemory,
    RemoteAgentMemory,
    RunRecord,
    select_agent_memory,
)
from adapter.errors import ContextQError
from adapter.mcp_client import SyncMcpClient
from fake_contextq import FakeContextQ, Tenant
from tests.support.misbehaving import HTTP_MODES, TEXT_MODES, MisbehavingServer

pytestmark = pytest.mark.slow  # real sockets and deadlines running out: not in --quick

WORKSPACE = "agents"
DEADLINE = 1.0  # each method's, in these tests (the default is 10 s)
SLACK = 1.0  # the contract: a method returns within its deadline plus a second

#: Every method of the port, called as an agent would.
CALLS: dict[str, Callable[[RemoteAgentMemory], object]] = {
    "write_record": lambda m: m.write_record(RunRecord("r1", task="t", accomplished=("a",))),
    "list_records": lambda m: m.list_records(),
    "get_record": lambda m: m.get_record("r0"),
    "latest_record": lambda m: m.latest_record(),
    "list_open_issues": lambda m: m.list_open_issues(),
    "build_preamble": lambda m: m.build_preamble("t"),
    "boot": lambda m: m.boot("t"),
    "begin_run": lambda m: m.begin_run(RunRecord("r2", task="t", status="running")),
    "checkpoint": lambda m: m.checkpoint("r0", {"step": 1}),
    "resume": lambda m: m.resume("r0"),
    "open_tasks": lambda m: m.open_tasks("r0"),
    "add_lesson": lambda m: m.add_lesson("a lesson", run_id="r0"),
    "handoff": lambda m: m.handoff("r0"),
}


@dataclass
class Stack:
    fake: FakeContextQ
    tenant: Tenant
    key: str
    server: MisbehavingServer

    def memory(self, backend: str) -> RemoteAgentMemory:
        if backend == "contextq":
            client = ContextQClient(self.key, base_url=self.server.url)
            return ContextQAgentMemory(client, WORKSPACE, timeout=DEADLINE)
        session = SyncMcpClient(self.server.url + wire.MCP_PATH, api_key=self.key)
        return McpAgentMemory(session, WORKSPACE, timeout=DEADLINE)

    def env(self, backend: str) -> dict[str, str]:
        return {
            "CONTEXTQ_MEMORY_BACKEND": backend,
            "CONTEXT_API_URL": self.server.url,
            "CONTEXT_API_KEY": self.key,
            "CONTEXTQ_WORKSPACE": WORKSPACE,
            "CONTEXTQ_MEMORY_TIMEOUT": str(DEADLINE),
        }

    def stored(self, run_id: str) -> bool:
        with ContextQClient(self.key, http_client=self.fake.client()) as api:
            return any(
                row.external_id == f"agent-run:{run_id}"
                for row in api.iter_contexts(tag="agent-run")
            )


@pytest.fixture
def stack() -> Iterator[Stack]:
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, WORKSPACE)
    with fake.serve() as served, MisbehavingServer(served.url) as server:
        yield Stack(fake, tenant, fake.mint_key(tenant, wire.SCOPES), server)
    fake.close()


def _every_method(memory: RemoteAgentMemory) -> dict[str, tuple[float, object]]:
    """Each method's time and outcome (its answer or what it raised), all at once (so the
    test waits one deadline, not thirteen); a method still running is left out."""
    seen: dict[str, tuple[float, object]] = {}

    def timed(name: str, call: Callable[[RemoteAgentMemory], object]) -> None:
        started = time.monotonic()
        try:
            outcome = call(memory)
        except BaseException as exc:  # the contract says never: report it
            outcome = exc
        seen[name] = (time.monotonic() - started, outcome)

    threads = [threading.Thread(target=timed, args=item, daemon=True) for item in CALLS.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE + SLACK + 5)
    return dict(seen)


CASES = [("contextq", mode) for mode in HTTP_MODES] + [
    ("mcp", mode) for mode in HTTP_MODES + TEXT_MODES
]


def _set_up(memory: RemoteAgentMemory) -> bool:
    """The first record, on the healthy server: a set-up, not the contract, so a first
    connection slower than the test's one-second deadline (a loaded machine) is tried again."""
    record = RunRecord("r0", task="t", status="running")
    return any(memory.begin_run(record) is not None for _ in range(5))


@pytest.mark.parametrize(("backend", "mode"), CASES)
def test_no_method_raises_or_overruns_and_the_next_write_is_stored(
    stack: Stack, backend: str, mode: str
) -> None:
    if mode in TEXT_MODES:  # a server that sends no structuredContent declares no output
        stack.server.mode = "text-only"  # schemas from its first listing on, as TS ones do
    memory = stack.memory(backend)
    assert _set_up(memory), "the healthy server never took the first run record"
    stack.server.mode = mode
    seen = _every_method(memory)
    assert set(seen) == set(CALLS), f"still running past the deadline: {set(CALLS) - set(seen)}"
    for name, (took, outcome) in seen.items():
        assert not isinstance(outcome, BaseException), f"{name} raised {outcome!r}"
        assert took < DEADLINE + SLACK, f"{name} took {took:.2f} s"
    if mode == "text-only":  # the tools' JSON as text, as a TypeScript server sends it
        assert memory.failures == []
    else:
        assert memory.failures, "the server misbehaved, yet no failure was counted"
    stack.server.mode = "healthy"
    record = RunRecord("after", task="recover", accomplished=("stored",))
    assert memory.write_record(record) == record
    assert stack.stored("after")
    stack.server.mode = mode  # and closing never raises nor waits past the deadline
    started = time.monotonic()
    memory.close()
    assert time.monotonic() - started < DEADLINE + SLACK


@pytest.mark.parametrize("backend", ["contextq", "mcp"])
@pytest.mark.parametrize(("mode", "strict"), [("hang", False), ("drip-headers", True)])
def test_selecting_a_backend_waits_no_longer_than_its_deadline(
    stack: Stack, tmp_path: Path, backend: str, mode: str, strict: bool
) -> None:
    stack.server.mode = mode
    started = time.monotonic()
    if strict:
        with pytest.raises(ContextQError, match=r"cannot be used: .*(time|deadline|within)"):
            select_agent_memory(stack.env(backend), directory=tmp_path, strict=True)
    else:
        assert isinstance(select_agent_memory(stack.env(backend), directory=tmp_path),
                          LocalAgentMemory)  # fmt: skip
    assert time.monotonic() - started < DEADLINE + SLACK


def test_garbage_and_deep_answers_are_clear_failures(stack: Stack) -> None:
    memory: Any = stack.memory("contextq")
    for mode, said in (("garbage", "Expecting value"), ("deep", "nests deeper than")):
        stack.server.mode = mode
        assert memory.list_records() == []
        assert said in memory.failures[-1].message
