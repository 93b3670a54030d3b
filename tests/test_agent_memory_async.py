"""The async twin: an asyncio agent awaits the same backends, concurrently, and gets what
the synchronous port gives."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapter import wire
from adapter.agent_memory import AsyncAgentMemory, RunRecord, select_async_agent_memory
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

        memory = asyncio.run(agent())
        close = getattr(memory.sync, "close", None)
        if close is not None:
            close()
    fake.close()
