"""The agent layer's rules that mutation testing showed no other test asserting: record
timestamps from the fake's clock, the exact refusals, which session and handoff a
workspace's boot or handoff picks, and recall's fallbacks and tie-break."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ
from fake_contextq import _msgs as m
from fake_contextq.stores.sql import SqlStore
from tests.support.helpers import (
    boot,
    checkpoint,
    context_body,
    error,
    lesson,
    ok,
    resume,
    start,
    tick,
    upsert,
)

pytestmark = pytest.mark.all_stores

T0 = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def stamp(minutes: int) -> str:
    return wire.timestamp(T0 + timedelta(minutes=minutes))


class Clock:
    """A clock a test moves: each reading is ``now`` until ``advance``."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(make_fake: Callable[..., FakeContextQ], clock: Clock) -> Iterator[httpx2.Client]:
    """A client of a fake on ``clock``, with an LLM and a workspace ``ws``."""
    fake = make_fake(clock=clock, llm=True)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        yield c


# ----- timestamps: each record carries the clock's time -----


def test_records_are_stamped_by_the_clock(timed: httpx2.Client, clock: Clock) -> None:
    sid = start(timed, workspace="ws")["id"]
    clock.advance(1)
    cp = ok(checkpoint(timed, sid, 1), 201)
    assert isinstance(cp["id"], int) and cp["created_at"] == stamp(1)
    clock.advance(1)
    task = ok(upsert(timed, sid, "t1"), 201)
    assert (task["created_at"], task["updated_at"]) == (stamp(2), stamp(2))
    clock.advance(1)
    renamed = ok(upsert(timed, sid, "t1", title="renamed"), 200)
    assert (renamed["created_at"], renamed["updated_at"]) == (stamp(2), stamp(3))
    clock.advance(1)
    ticked = ok(tick(timed, task["id"], "tests pass"))
    assert (ticked["created_at"], ticked["updated_at"]) == (stamp(2), stamp(4))
    clock.advance(1)
    assert lesson(timed, "pin versions", workspace="ws")["created_at"] == stamp(5)
    clock.advance(1)
    handoff = ok(timed.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
    assert isinstance(handoff["id"], int) and handoff["created_at"] == stamp(6)


# ----- the exact refusals -----


def test_a_seq_conflict_names_both_numbers(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    ok(checkpoint(client, sid, 1), 201)
    body = error(checkpoint(client, sid, 5), 409, m.SEQ_CONFLICT)
    assert body["message"] == m.SEQ_CONFLICT_MSG.format(seq=5, expected=2)
    assert body["expected"] == 2


def test_an_unknown_parent_key_is_named_with_its_session(client: httpx2.Client) -> None:
    sid = start(client)["id"]
    body = error(upsert(client, sid, "child", parent_key="ghost"), 404, m.NOT_FOUND)
    assert body["message"] == f"No task with key 'ghost' in session {sid}."


@pytest.mark.parametrize("missing", [999, wire.MAX_ID + 1])
def test_unknown_sessions_and_tasks_are_named_in_the_404(
    client: httpx2.Client, missing: int
) -> None:
    body = error(client.get(f"/api/agent/sessions/{missing}"), 404, m.NOT_FOUND)
    assert body["message"] == f"Agent session {missing} not found."
    body = error(tick(client, missing, "done"), 404, m.NOT_FOUND)
    assert body["message"] == f"Agent task {missing} not found."


# ----- which session and handoff a workspace's boot and handoff use -----


def test_boot_in_a_workspace_resumes_its_own_latest_session_and_handoff(
    timed: httpx2.Client,
) -> None:
    ok(timed.post("/api/workspaces", json={"slug": "other"}), 201)
    mine = start(timed, workspace="ws")["id"]
    ok(timed.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
    start(timed, workspace="other")
    ok(timed.post("/api/agent/handoff", json={"workspace": "other"}), 201)
    pack = boot(timed, "anything", workspace="ws")
    assert pack["resume"]["session"]["id"] == mine
    assert pack["handoff"]["workspace"] == "ws"
    assert pack["handoff"]["session_id"] == mine


def test_a_handoff_for_a_workspace_uses_that_workspaces_latest_session(
    timed: httpx2.Client,
) -> None:
    ok(timed.post("/api/workspaces", json={"slug": "other"}), 201)
    mine = start(timed, workspace="ws")["id"]
    start(timed, workspace="other")
    handoff = ok(timed.post("/api/agent/handoff", json={"workspace": "ws"}), 201)
    assert handoff["session_id"] == mine


# ----- boot's facts -----


def test_a_boot_fact_without_content_shows_its_title(client: httpx2.Client) -> None:
    ok(client.post("/api/contexts", json=context_body(title="Rocket plans", content="")), 201)
    (fact,) = boot(client, "rocket")["facts"]
    assert fact["snippet"] == "Rocket plans"


def test_a_boot_facts_snippet_is_centred_on_the_goals_term(client: httpx2.Client) -> None:
    content = "filler " * 100 + "rocket launch window"
    ok(client.post("/api/contexts", json=context_body(content=content)), 201)
    (fact,) = boot(client, "rocket")["facts"]
    assert "rocket" in fact["snippet"]
    assert fact["snippet"].startswith("…")


# ----- recall -----


def zero_embedder(text: str) -> tuple[float, ...]:
    return (0.0,) * wire.EMBEDDING_DIMENSIONS


def test_a_zero_vector_is_no_embedding_and_boot_falls_back_to_recency(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    fake = make_fake(embed=zero_embedder)
    tenant = fake.create_tenant()
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        first = lesson(c, "pin versions")
        second = lesson(c, "run migrations")
        assert (first["embedded"], second["embedded"]) == (False, False)
        pack = boot(c, "deploy")
    assert [x["id"] for x in pack["lessons"]] == [second["id"], first["id"]]
    assert all("score" not in x for x in pack["lessons"])


def test_equally_close_lessons_are_recalled_newest_first(client: httpx2.Client) -> None:
    ids = [lesson(client, "pin the versions")["id"] for _ in range(3)]
    pack = boot(client, "pin the versions")
    assert [x["id"] for x in pack["lessons"]] == ids[::-1]
    assert len({x["score"] for x in pack["lessons"]}) == 1


# ----- on a database -----


def test_ids_and_lookups_on_a_database(tmp_path: Path) -> None:
    """A database store draws each kind's ids from its own table and keeps each record's
    tenant; an id beyond the 64-bit range is a 404 without a query (the memory store, where
    the mutation run's tests run, would accept any kind, any id and no tenant)."""
    with FakeContextQ(store=SqlStore(f"sqlite:///{tmp_path / 'fake.db'}"), llm=True) as fake:
        tenant = fake.create_tenant()
        fake.create_workspace(tenant, "ws")
        with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
            sid = start(c, workspace="ws")["id"]
            made = [
                ok(checkpoint(c, sid, 1), 201),
                ok(upsert(c, sid, "t1"), 201),
                lesson(c, "pin versions", workspace="ws"),
                ok(c.post("/api/agent/handoff", json={"workspace": "ws"}), 201),
            ]
            assert [x["id"] for x in made] == [1, 1, 1, 1]
            assert resume(c, sid)["checkpoint"]["id"] == 1
            missing = wire.MAX_ID + 1
            body = error(c.get(f"/api/agent/sessions/{missing}"), 404, m.NOT_FOUND)
            assert body["message"] == f"Agent session {missing} not found."
            body = error(tick(c, missing, "done"), 404, m.NOT_FOUND)
            assert body["message"] == f"Agent task {missing} not found."
        assert sid == 1
        assert fake.verify_audit_chain() == 5
