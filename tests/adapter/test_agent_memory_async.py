"""The async twin: an asyncio agent awaits the same backends, concurrently, and gets what
the synchronous port gives."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapter import ContextQClient, wire
from adapter.agent_memory import (
    AsyncAgentMemory,
    ContextQAgentMemory,
    RunRecord,
    select_async_agent_memory,
)
from fake_contextq import FakeContextQ


@pytest.mark.parametrize("backend", ["local", "contextq", "mcp"])
def test_an_async_agent_awaits_the_same_memory(backend: str, tmp_path: Path) -> None:
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "agents")
    with fake.serve() as served:
        env = {
            "CONTEXTQ_MEMORY_BACKEND": backend,
            "CONTEXT_API_URL": served.url,
            "CONTEXT_API_KEY": fake.mint_key(tenant, wire.SCOPES),
            "CONTEXTQ_WORKSPACE": "agents",
        }

        async def agent() -> AsyncAgentMemory:
            memory = await select_async_agent_memory(env, directory=tmp_path)
            records = [RunRecord(f"r{i}", task=f"task {i}", issues=(f"issue {i}",))
                       for i in range(5)]  # fmt: skip
            written = await asyncio.gather(*(memory.write_record(r) for r in records))
            assert written == records
            assert sorted(r.run_id for r in await memory.list_records()) == [
                f"r{i}" for i in range(5)
            ]
            assert await memory.get_record("r3") == records[3]
            assert len(await memory.list_open_issues()) == 5
            assert "MEMORY (" in await memory.build_preamble("task 3 issue")
            if memory.capabilities.checkpoint:
                await memory.begin_run(RunRecord("long", task="long", status="running"))
                seqs = await asyncio.gather(
                    *(memory.checkpoint("long", {"i": i}) for i in range(6))
                )
                assert sorted(s for s in seqs if s is not None) == [1, 2, 3, 4, 5, 6]
                resumed = await memory.resume("long")
                assert resumed is not None and resumed.checkpoint is not None
            else:
                assert await memory.checkpoint("long", {"i": 0}) is None
            assert memory.failures == []
            return memory

        async def run_and_close() -> None:
            async with await agent() as memory:
                assert memory.failures == []

        asyncio.run(run_and_close())
    fake.close()


@pytest.fixture
def stalled() -> Iterator[tuple[str, str]]:
    """A served ContextQ whose REST answers never come (its URL and a key)."""
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "agents")
    fake.faults.inject("*", "/api/*", delay=600, times=None)
    with fake.serve() as served:
        yield served.url, fake.mint_key(tenant, wire.SCOPES)
    fake.close()


def test_many_awaited_calls_each_end_at_their_own_deadline(stalled: tuple[str, str]) -> None:
    """The deadline starts when the call is awaited: calls awaited together do not queue for
    a few shared worker threads, each waiting out the deadlines of those before it."""
    url, key = stalled
    memory = AsyncAgentMemory(
        ContextQAgentMemory(ContextQClient(key, base_url=url, max_retries=0), "agents",
                            timeout=0.5)
    )  # fmt: skip

    async def agent() -> float:
        started = time.monotonic()
        assert await asyncio.gather(*(memory.list_records() for _ in range(40))) == [[]] * 40
        return time.monotonic() - started

    assert asyncio.run(agent()) < 0.5 + 1.0  # was 0.5 s per (cores + 4) calls
    assert len(memory.failures) == 40


ABANDONING_AGENT = """
import asyncio, sys
from adapter import ContextQClient
from adapter.agent_memory import AsyncAgentMemory, ContextQAgentMemory

client = ContextQClient(sys.argv[2], base_url=sys.argv[1], max_retries=0)
memory = AsyncAgentMemory(ContextQAgentMemory(client, "agents", timeout=60))

async def main():
    try:
        await asyncio.wait_for(memory.list_records(), 0.5)
    except TimeoutError:
        print("gave up", flush=True)

asyncio.run(main())
"""


@pytest.mark.slow  # a subprocess: not in --quick
def test_an_async_agent_that_gives_up_on_a_call_exits_promptly(
    stalled: tuple[str, str],
) -> None:
    """The call it stopped awaiting runs on past the end of its loop until its deadline
    (60 s here); the interpreter does not wait for it (it did, loop and exit alike)."""
    url, key = stalled
    agent = subprocess.Popen(
        [sys.executable, "-c", ABANDONING_AGENT, url, key], stdout=subprocess.PIPE, text=True
    )
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip() == "gave up"
        assert agent.wait(timeout=5) == 0
    finally:
        agent.kill()
        agent.wait()
