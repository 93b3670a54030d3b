"""The agent memory port on ContextQ next to the typed client's bare calls it makes: a
preamble (one boot) and a run's write (its session, outcome, end, record and handoff)."""

from __future__ import annotations

import itertools
from typing import Any

from _measure import measure_interleaved
from _registry import Bench, section

from adapter import ContextQClient
from adapter.agent_memory import ContextQAgentMemory, RunRecord, mapping
from fake_contextq import FakeContextQ

OUTCOME: dict[str, Any] = {
    "accomplished": ("tests pass", "schema migrated"),
    "next": ("write the release notes",),
    "issues": ("the e2e suite is flaky",),
}


@section("agent memory port (ContextQ backend vs the typed client's bare calls)")
def bench_agent_memory(bench: Bench) -> None:
    """``build_preamble`` is one boot; ``begin_run`` + ``write_record`` of a 4-item outcome
    is the same 9 requests the bare calls below make (2 + 4 + 3)."""
    it = bench.iters(full=(200, 20), quick=(40, 5))
    fake = FakeContextQ(llm=True)  # handoffs are written, by the bare calls and the port alike
    tenant = fake.create_tenant(plan="enterprise")
    fake.create_workspace(tenant, "agents")
    key = fake.mint_key(tenant, ("read", "write"))
    client = ContextQClient(key, http_client=fake.client(), max_retries=0)
    memory = ContextQAgentMemory(client, "agents")
    memory.write_record(RunRecord("warm", task="warm up", **OUTCOME))
    ids = itertools.count()

    def bare_boot() -> object:
        return client.boot("release the api", workspace="agents", token_budget=1000)

    def port_preamble() -> object:
        return memory.build_preamble("release the api", max_chars=4000)

    def bare_write() -> object:
        record = RunRecord(f"bare-{next(ids)}", task="release the api", **OUTCOME)
        session = client.start_session(
            workspace="agents", metadata=mapping.session_metadata(record)
        )
        client.bulk_upsert([mapping.record_context(record, session.id, "agents")])
        for task in mapping.task_payloads(record):
            client.upsert_task(session.id, task.key, task.title, status=task.status,
                               evidence=task.evidence)  # fmt: skip
        for lesson in mapping.lesson_payloads(record):
            client.add_lesson(lesson["text"], workspace="agents", session_id=session.id,
                              tags=lesson["tags"])  # fmt: skip
        client.end_session(session.id, "completed", mapping.local_handoff(record))
        client.bulk_upsert([mapping.record_context(record, session.id, "agents")])
        client.handoff(session_id=session.id, workspace="agents")
        return session

    def port_write() -> object:
        record = RunRecord(f"port-{next(ids)}", task="release the api", **OUTCOME)
        memory.begin_run(record)
        return memory.write_record(record)

    boot, preamble, bare, port = measure_interleaved(
        [bare_boot, port_preamble, bare_write, port_write], it.n, it.warmup
    )
    if memory.failures:
        raise RuntimeError(f"the agent memory failed: {memory.failures}")
    bench.add("client: boot", boot)
    bench.add("agent memory: build_preamble (1 request)", preamble, baseline="client: boot")
    bench.add("client: 9 bare calls of a run", bare)
    bench.add(
        "agent memory: begin_run + write_record, 4 items (9 requests)",
        port,
        baseline="client: 9 bare calls of a run",
    )
    client.close()
    fake.close()
