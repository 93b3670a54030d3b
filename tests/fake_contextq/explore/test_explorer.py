"""The interleaving explorer on raw read-modify-write agents (no adapter involved): how it
counts and enumerates orders, what it reports, and the bad input it copes with."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from fake_contextq import FakeContextQ, Tenant
from fake_contextq.explore import (
    LOST_UPDATE,
    AgentHandle,
    Explorer,
    Outcome,
    explore,
    orders_of,
)

EXT = "notes"


@pytest.fixture
def fake() -> FakeContextQ:
    fake = FakeContextQ()
    tenant = fake.create_tenant("t")
    key = fake.mint_key(tenant)
    with fake.client(key) as client:
        client.post(
            "/api/contexts",
            json={"type": "reference", "title": "n", "content": "", "externalId": EXT},
        ).raise_for_status()
    return fake


@pytest.fixture
def tenant(fake: FakeContextQ) -> Tenant:
    return fake.tenants()[0]


def appender(word: str, times: int = 1) -> Callable[[AgentHandle], None]:
    """An agent that appends ``word`` by read-modify-write: a GET then a PUT, ``times``."""

    def agent(handle: AgentHandle) -> None:
        handle.doing(f"append {word}")
        with handle.client() as client:
            for _ in range(times):
                found = client.get(f"/api/contexts/by-external/{EXT}").json()
                put = client.put(
                    f"/api/contexts/{found['id']}", json={"content": found["content"] + word}
                )
                put.raise_for_status()

    return agent


def content(fake: FakeContextQ, tenant: Tenant) -> str:
    return next(c.content for c in fake.contexts(tenant) if c.external_id == EXT)


def test_orders_are_counted_per_request_keeping_each_agents_order() -> None:
    assert orders_of([2, 2]) == 6  # one str_replace each: a GET and a PUT
    assert orders_of([4, 4]) == 70  # two each
    assert orders_of([2, 2, 2]) == 90
    assert orders_of([0, 3]) == 1


def test_two_read_modify_writes_every_order_and_the_four_that_lose_one(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    found = explore(fake, [appender("A"), appender("B")], tenant=tenant)
    assert (found.strategy, found.complete, found.orders, found.runs) == ("exhaustive", True, 6, 6)
    assert found.schedules == {
        (0, 0, 1, 1),
        (0, 1, 0, 1),
        (0, 1, 1, 0),
        (1, 0, 0, 1),
        (1, 0, 1, 0),
        (1, 1, 0, 0),
    }
    # every order in which both read before either wrote loses one of the two appends
    assert found.failing == found.broken(LOST_UPDATE.name) == 4
    minimal = found.minimal
    assert minimal is not None
    assert minimal.schedule == (0, 1, 1, 0)  # one preemption: a1 runs between a0's two steps
    assert minimal.run.preemptions == 1
    text = str(minimal)
    assert "explorer.replay([0, 1, 1, 0])" in text
    assert "a0     append A  GET /api/contexts/by-external/notes  200" in text
    assert "step 4 (PUT by a0) overwrote context 1 as written at step 3 by a1" in text
    assert '"content": "A"' in text  # the state: B's append is gone
    with pytest.raises(AssertionError, match="4 failing"):
        found.check()


def test_replay_reruns_exactly_that_order_and_leaves_its_state(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    explorer = Explorer(fake, [appender("A"), appender("B")], tenant=tenant)
    lost = explorer.replay([1, 0, 0, 1])
    assert lost.schedule == (1, 0, 0, 1)
    assert [(s.agent, s.method) for s in lost.steps] == [
        (1, "GET"),
        (0, "GET"),
        (0, "PUT"),
        (1, "PUT"),
    ]
    assert [v.invariant for v in lost.violations] == [LOST_UPDATE.name]
    assert content(fake, tenant) == "B"
    serial = explorer.replay([0, 0, 1, 1])
    assert not serial.failed
    assert content(fake, tenant) == "AB"  # every order starts from the same state


def test_two_appends_each_are_seventy_orders(fake: FakeContextQ, tenant: Tenant) -> None:
    found = explore(fake, [appender("A", 2), appender("B", 2)], tenant=tenant)
    assert (found.complete, found.orders) == (True, 70)
    serial = {(0,) * 4 + (1,) * 4, (1,) * 4 + (0,) * 4}
    losing = {f.schedule for f in found.failures}
    assert not losing & serial
    assert len(losing) == found.failing > 0


def test_data_dependent_agents_are_followed(fake: FakeContextQ, tenant: Tenant) -> None:
    """The second agent writes only if it reads an empty file: 2 requests in some
    orders, 1 in others; the explorer enumerates what the agents actually do."""

    def if_empty(handle: AgentHandle) -> str:
        with handle.client() as client:
            found = client.get(f"/api/contexts/by-external/{EXT}").json()
            if found["content"]:
                return "left alone"
            client.put(f"/api/contexts/{found['id']}", json={"content": "first"})
            return "wrote"

    found = explore(fake, [appender("A"), if_empty], tenant=tenant)
    assert found.complete
    lengths = {len(s) for s in found.schedules}
    assert lengths == {3, 4}
    assert (0, 0, 1) in found.schedules  # a1 read A and stopped


def test_an_agent_without_requests_and_one_alone(fake: FakeContextQ, tenant: Tenant) -> None:
    found = explore(fake, [appender("A"), lambda _handle: None], tenant=tenant)
    assert (found.complete, found.schedules, found.failing) == (True, {(0, 0)}, 0)


def test_an_agent_that_raises_is_reported_with_its_schedule(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    def fails(handle: AgentHandle) -> None:
        with handle.client() as client:
            client.get(f"/api/contexts/by-external/{EXT}")
        raise RuntimeError("the agent's own bug")

    found = explore(fake, [appender("A"), fails], tenant=tenant)
    assert found.complete and found.failing == found.orders == 3
    minimal = found.minimal
    assert minimal is not None
    assert [v.invariant for v in minimal.run.violations] == ["agent raised"]
    assert "RuntimeError: the agent's own bug" in str(minimal)


def test_a_deadlock_is_reported_within_the_timeout(fake: FakeContextQ, tenant: Tenant) -> None:
    """a1 waits for a signal a0 never sends: the order stops at the timeout, reported."""
    never = threading.Event()

    def waits(handle: AgentHandle) -> None:
        with handle.client() as client:
            client.get(f"/api/contexts/by-external/{EXT}")
            never.wait(30)

    try:
        found = explore(fake, [appender("A"), waits], tenant=tenant, timeout=0.2)
    finally:
        never.set()
    minimal = found.minimal
    assert minimal is not None
    assert minimal.run.stuck == (1,)
    assert minimal.run.violations[0].invariant == "deadlock"
    assert "a1 neither sent a request nor ended within 0.2s" in str(minimal)


def test_beyond_the_bound_a_seeded_pct_sample_reproduced_by_its_seed(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    agents = [appender("A", 2), appender("B", 2)]
    lines: list[str] = []
    first = explore(fake, agents, tenant=tenant, bound=10, runs=30, seed=7, progress=lines.append)
    again = explore(fake, agents, tenant=tenant, bound=10, runs=30, seed=7)
    assert first.strategy == "PCT"
    assert "70 orders counted from the first run exceed the bound 10" in first.why
    assert first.seed == 7 and "seed 7" in first.summary()
    assert not first.complete
    assert first.schedules == again.schedules
    assert first.failing > 0  # PCT finds the lost update among 30 runs
    other = explore(fake, agents, tenant=tenant, bound=10, runs=30, seed=8)
    assert other.schedules != first.schedules


def test_a_user_invariant_as_a_callable(fake: FakeContextQ, tenant: Tenant) -> None:
    def both_appends(outcome: Outcome) -> Any:
        text = content(outcome.fake, outcome.tenant_id)  # type: ignore[arg-type]
        assert sorted(text) == ["A", "B"], f"the file holds {text!r}"

    found = explore(
        fake, [appender("A"), appender("B")], tenant=tenant, invariants=(), check=both_appends
    )
    assert found.failing == found.broken("both_appends") == 4
    assert "the file holds 'A'" in str(found)


def test_async_agents(fake: FakeContextQ, tenant: Tenant) -> None:
    async def append(handle: AgentHandle) -> None:
        async with handle.async_client() as client:
            found = (await client.get(f"/api/contexts/by-external/{EXT}")).json()
            await client.put(f"/api/contexts/{found['id']}", json={"content": "z"})

    found = explore(fake, [append, appender("A")], tenant=tenant)
    assert (found.complete, found.orders, found.failing) == (True, 6, 4)


def test_a_copy_left_beside_its_source_and_a_file_under_a_file(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    def copies(handle: AgentHandle) -> None:
        tool = handle.memory_tool(workspace="team")
        tool.call({"command": "create", "path": "/memories/a", "file_text": "x"})
        with handle.client() as client:
            row = client.get("/api/contexts/by-external/mem-tool:team%2Fa").json()
            client.post(
                "/api/contexts",
                json={
                    "type": "reference",
                    "title": "b",
                    "content": row["content"],
                    "externalId": "mem-tool:team/a/b",
                    "tags": ["mem-tool"],
                    "workspace": "team",
                },
            ).raise_for_status()

    fake.create_workspace(tenant, "team")
    found = explore(fake, [copies], tenant=tenant)
    broken = {v.invariant for v in found.failures[0].run.violations}
    assert broken == {"no file at two paths", "no file and directory at one path"}


def test_the_explorer_refuses_what_it_cannot_do(fake: FakeContextQ, tenant: Tenant) -> None:
    with pytest.raises(ValueError, match="at least one agent"):
        Explorer(fake, [], tenant=tenant)
    fake.create_tenant("other")
    with pytest.raises(ValueError, match="2 tenants: give tenant="):
        Explorer(fake, [appender("A")])
