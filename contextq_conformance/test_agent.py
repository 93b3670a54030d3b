"""The Agent Memory Layer: sessions, checkpoints, tasks, lessons, handoff, boot."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adapter.errors import (
    EvidenceRequiredError,
    NoWorkspaceError,
    SeqConflictError,
    UnavailableError,
)
from contextq_conformance.targets import Tenant


@pytest.mark.contract("agent.session-unknown-workspace")
def test_an_unknown_workspace_on_a_session_silently_becomes_none(tenant: Tenant) -> None:
    session = tenant.client.api.start_session(workspace="no-such-workspace")
    assert tenant.client.status == 201
    assert session.workspace is None


@pytest.mark.contract("agent.session-parent")
def test_a_session_links_to_its_parent_and_keeps_free_metadata(tenant: Tenant) -> None:
    api = tenant.client.api
    parent = api.start_session(metadata={"agent": "planner", "nested": {"n": [1, 2]}})
    child = api.start_session(parent_session_id=parent.id)
    assert child.parent_session_id == parent.id
    assert api.get_session(parent.id).metadata == {"agent": "planner", "nested": {"n": [1, 2]}}


@pytest.mark.contract("agent.checkpoint-seq")
def test_checkpoints_take_exactly_the_next_seq(tenant: Tenant) -> None:
    api = tenant.client.api
    session = api.start_session()
    with pytest.raises(SeqConflictError) as caught:
        api.checkpoint(session.id, 2, {"step": 2})
    assert (caught.value.status, caught.value.code, caught.value.expected) == (
        409,
        "seq_conflict",
        1,
    )
    assert api.checkpoint(session.id, 1, {"step": 1}).seq == 1
    with pytest.raises(SeqConflictError) as again:
        api.checkpoint(session.id, 1, {"step": "replayed"})
    assert again.value.expected == 2
    assert api.checkpoint(session.id, 2, {"step": 2}).seq == 2


@pytest.mark.contract("agent.resume", "agent.task-upsert-key")
def test_resume_gives_the_latest_checkpoint_and_the_open_tasks(tenant: Tenant) -> None:
    api = tenant.client.api
    session = api.start_session()
    api.checkpoint(session.id, 1, {"step": 1}, summary="first")
    api.checkpoint(session.id, 2, {"step": 2}, summary="second")
    first = api.upsert_task(session.id, "build", "Build it")
    again = api.upsert_task(session.id, "build", "Build it, renamed")
    assert again.id == first.id and again.title == "Build it, renamed"
    done = api.upsert_task(session.id, "test", "Test it")
    api.tick_task(done.id, "12 tests pass")
    resumed = api.resume(session.id)
    assert resumed.checkpoint is not None and resumed.checkpoint.seq == 2
    assert [t.key for t in resumed.open_tasks] == ["build"]


@pytest.mark.contract("agent.tick-evidence")
@pytest.mark.parametrize("evidence", ["", "   "])
def test_a_tick_without_evidence_is_422(tenant: Tenant, evidence: str) -> None:
    api = tenant.client.api
    session = api.start_session()
    task = api.upsert_task(session.id, "t", "A task")
    with pytest.raises(EvidenceRequiredError) as caught:
        api.tick_task(task.id, evidence)
    assert (caught.value.status, caught.value.code) == (422, "evidence_required")


@pytest.mark.contract("agent.lesson-201")
def test_a_lesson_is_stored_with_201(tenant: Tenant) -> None:
    lesson = tenant.client.api.add_lesson("Run migrations before deploys.", tags=["ops"])
    assert tenant.client.status == 201
    assert (lesson.text, lesson.tags) == ("Run migrations before deploys.", ("ops",))


@pytest.mark.contract("agent.handoff-no-workspace")
def test_a_handoff_with_no_workspace_anywhere_is_400(tenant: Tenant) -> None:
    api = tenant.client.api
    session = api.start_session()
    attempts: list[Callable[[], object]] = [
        lambda: api.handoff(),
        lambda: api.handoff(session_id=session.id),
    ]
    for attempt in attempts:
        with pytest.raises(NoWorkspaceError) as caught:
            attempt()
        assert (caught.value.status, caught.value.code) == (400, "no_workspace")


@pytest.mark.contract("agent.handoff-no-llm")
def test_a_handoff_without_an_llm_provider_is_503(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_workspace("ws")
    try:
        api.handoff(workspace="ws")
    except UnavailableError as exc:
        status = exc.status
    else:
        pytest.skip("this ContextQ has an LLM provider configured: handoff answered")
    assert status == 503


@pytest.mark.contract("agent.boot-pack")
def test_boot_assembles_resume_handoff_lessons_and_facts(tenant: Tenant) -> None:
    api = tenant.client.api
    api.create_workspace("ws")
    session = api.start_session(workspace="ws")
    api.checkpoint(session.id, 1, {"step": 1})
    api.add_lesson("Deploys need a migration first.", workspace="ws")
    api.create_context("reference", "Deploy guide", "how to deploy", workspace="ws")
    pack = api.boot("deploy the service", workspace="ws")
    assert pack.resume is not None and pack.resume.session.id == session.id
    assert [lesson.text for lesson in pack.lessons] == ["Deploys need a migration first."]
    assert [fact.context.title for fact in pack.facts] == ["Deploy guide"]
    assert pack.tokens_used <= pack.token_budget
