"""The typed client's Agent Memory Layer methods, sync and async, against the fake."""

from __future__ import annotations

import asyncio

import pytest

import adapter
from adapter import AsyncContextQClient, ContextQClient
from fake_contextq import FakeContextQ


@pytest.fixture
def agent_fake() -> FakeContextQ:
    return FakeContextQ(llm=True)


def test_a_whole_run_through_the_sync_client(agent_fake: FakeContextQ) -> None:
    tenant = agent_fake.create_tenant()
    agent_fake.create_workspace(tenant, "acme")
    api = ContextQClient(
        agent_fake.mint_key(tenant, ("read", "write")), http_client=agent_fake.client()
    )
    api.create_context("reference", "Schema notes", "The schema migration runs nightly.")
    first = api.start_session(workspace="acme", metadata={"run": "r1"})
    assert isinstance(first, adapter.AgentSession)
    assert (first.workspace, first.status, first.metadata) == ("acme", "active", {"run": "r1"})
    assert api.get_session(first.id) == first
    cp = api.checkpoint(first.id, 1, {"step": 1}, summary="started")
    assert isinstance(cp, adapter.Checkpoint) and cp.seq == 1
    with pytest.raises(adapter.SeqConflictError) as caught:
        api.checkpoint(first.id, 1, {"step": 1})
    assert caught.value.expected == 2
    root = api.upsert_task(first.id, "root", "Ship it")
    child = api.upsert_task(first.id, "child", "Write tests", parent_key="root")
    assert child.parent_id == root.id and child.status == "pending"
    with pytest.raises(adapter.EvidenceRequiredError):
        api.tick_task(child.id, "  ")
    ticked = api.tick_task(child.id, "42 tests pass")
    assert (ticked.status, ticked.evidence) == ("verified", "42 tests pass")
    assert [t.key for t in api.list_tasks(first.id)] == ["root", "child"]
    resumed = api.resume(first.id)
    assert resumed.checkpoint == cp and [t.key for t in resumed.open_tasks] == ["root"]
    lesson = api.add_lesson(
        "Run database migrations before deploying.",
        workspace="acme",
        session_id=first.id,
        tags=["ops"],
    )
    assert lesson.embedded and lesson.tags == ("ops",)
    ended = api.end_session(first.id, "completed", summary="done")
    assert ended.ended_at is not None and ended.status == "completed"
    handoff = api.handoff(session_id=first.id)
    assert isinstance(handoff, adapter.Handoff) and "Write tests" in handoff.content
    second = api.start_session(workspace="acme", parent_session_id=first.id)
    pack = api.boot("migrate the schema", workspace="acme", token_budget=3000)
    assert isinstance(pack, adapter.BootPack)
    assert pack.resume is not None and pack.resume.session.id == second.id
    assert pack.handoff == handoff
    assert pack.lessons[0].id == lesson.id and pack.lessons[0].score is not None
    assert pack.facts[0].context.title == "Schema notes"
    assert 0 < pack.tokens_used <= 3000


def test_agent_errors_are_typed() -> None:
    fake = FakeContextQ()  # no LLM provider
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "acme")
    api = ContextQClient(fake.mint_key(tenant, ("read", "write")), http_client=fake.client())
    lost = api.start_session(workspace="no-such-workspace")
    assert lost.workspace is None  # the silent fallback
    with pytest.raises(adapter.NoWorkspaceError):
        api.handoff(session_id=lost.id)
    with pytest.raises(adapter.LLMUnavailableError):
        api.handoff(workspace="acme")
    with pytest.raises(adapter.NotFoundError):
        api.resume(999)
    with pytest.raises(adapter.ValidationError):
        api.boot("goal", token_budget=0)


def test_the_async_client_covers_the_agent_layer(agent_fake: FakeContextQ) -> None:
    tenant = agent_fake.create_tenant()
    agent_fake.create_workspace(tenant, "acme")
    key = agent_fake.mint_key(tenant, ("read", "write"))

    async def main() -> list[object]:
        async with AsyncContextQClient(key, http_client=agent_fake.async_client()) as api:
            session = await api.start_session(workspace="acme")
            await api.checkpoint(session.id, 1, {"a": 1})
            task = await api.upsert_task(session.id, "k", "Title")
            await api.tick_task(task.id, "evidence")
            await api.add_lesson("lesson text", workspace="acme")
            await api.end_session(session.id, "failed")
            handoff = await api.handoff(workspace="acme")
            pack = await api.boot("lesson", workspace="acme")
            got = await api.get_session(session.id)
            tasks = await api.list_tasks(session.id)
            resumed = await api.resume(session.id)
            return [
                got.status,
                tasks[0].status,
                resumed.checkpoint and resumed.checkpoint.seq,
                handoff.workspace,
                pack.lessons[0].text,
            ]

    assert asyncio.run(main()) == ["failed", "verified", 1, "acme", "lesson text"]
