"""The Agent Memory Layer's checkpoints under the ``seq`` optimistic lock, explored: k
ports (as k processes would hold them) checkpoint one run, and in no order of their
requests is an acknowledged checkpoint lost or stored with another's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from adapter import ContextQClient
from adapter.agent_memory import ContextQAgentMemory, RunRecord
from fake_contextq import FakeContextQ
from fake_contextq.explore import AgentHandle, Outcome, explore

RUN = "run-1"


def checkpointer(
    name: str, times: int
) -> Callable[[AgentHandle], list[tuple[int, dict[str, Any]]]]:
    def agent(handle: AgentHandle) -> list[tuple[int, dict[str, Any]]]:
        memory = handle.agent_memory()
        stored = []
        for i in range(times):
            state = {"agent": name, "step": i}
            seq = memory.checkpoint(RUN, state)
            assert seq is not None
            stored.append((seq, state))
        return stored

    return agent


def no_checkpoint_lost(outcome: Outcome) -> None:
    """Every seq an agent was given holds that agent's state, and nothing else is stored."""
    [session] = outcome.fake.agent_state(outcome.tenant_id).sessions
    kept = {c.seq: c.state for c in session.checkpoints}
    acknowledged = {seq: state for said in outcome.run.results for seq, state in said or []}
    assert kept == acknowledged, f"stored {kept}, acknowledged {acknowledged}"
    assert sorted(kept) == list(range(1, len(kept) + 1)), f"seqs {sorted(kept)}"


@pytest.mark.parametrize(
    ("agents", "times", "orders"), [(2, 1, 6), (2, 2, 32), (3, 1, 288), (3, 2, None)]
)
def test_no_checkpoint_is_lost_in_any_order(agents: int, times: int, orders: int | None) -> None:
    fake = FakeContextQ()
    tenant = fake.create_tenant("t")
    key = fake.mint_key(tenant)
    fake.create_workspace(tenant, "team")
    opener = ContextQAgentMemory(
        ContextQClient(key, http_client=fake.client()), "team", strict=True
    )
    opener.begin_run(RunRecord(RUN, task="share the run", status="running"))
    opener.close()
    found = explore(
        fake,
        [checkpointer(f"a{i}", times) for i in range(agents)],
        tenant=tenant,
        api_key=key,
        workspace="team",
        invariants=(),
        check=no_checkpoint_lost,
        seed=3,
    )
    assert found.failing == 0, str(found)
    if orders is not None:  # every order; 3 x 2 is beyond the bound: PCT's sample
        assert (found.complete, found.orders) == (True, orders)
    else:
        assert found.strategy == "PCT"
    # the lock was exercised: in some order an agent lost the race and retried
    assert any(entry.status == 409 for entry in fake.journal)
