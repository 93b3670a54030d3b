"""The fake's HTTP behaviour on ``SqlStore`` (SQLite files): a representative slice of the
suite, plus what only a database store has: persistence across restarts, schema versions,
and writers in two processes serialised on one file."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa

from fake_contextq import AuditChainError, FakeContextQ, Tenant
from fake_contextq import schema as s
from fake_contextq.sqlstore import SchemaVersionError, SqlStore
from tests.conftest import ALL_SCOPES, context_body

POSTGRES_URL = os.environ.get(
    "CONTEXTQ_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# .ci/run sets this, so a Postgres that does not answer fails CI instead of skipping.
REQUIRE_POSTGRES = os.environ.get("CONTEXTQ_REQUIRE_POSTGRES") == "1"


def _postgres_schema() -> Iterator[str]:
    """A URL on a fresh Postgres schema of its own (parallel workers never meet)."""
    try:
        engine = sa.create_engine(POSTGRES_URL)
        with engine.connect() as conn:
            conn.execute(sa.text("select 1"))
    except Exception as exc:  # driver missing or server down
        message = (
            f"no Postgres at {POSTGRES_URL} ({type(exc).__name__}); set "
            "CONTEXTQ_TEST_DATABASE_URL to run the Postgres leg"
        )
        if REQUIRE_POSTGRES:
            pytest.fail(message)
        pytest.skip(message)
    name = f"t_{uuid.uuid4().hex[:16]}"
    with engine.begin() as conn:
        conn.execute(sa.text(f'create schema "{name}"'))
    url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={name}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'drop schema "{name}" cascade'))
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test runs on a SQLite file and on Postgres (the dev stack's database)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fake.db'}"
    else:
        yield from _postgres_schema()


@pytest.fixture
def fake(db_url: str) -> Iterator[FakeContextQ]:
    """Overrides the suite's memory-backed ``fake``: ``tenant``, ``key`` and ``client`` follow."""
    store = SqlStore(db_url)
    with FakeContextQ(store=store) as instance:
        yield instance
    store.close()


def ok(response: httpx2.Response, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def fill(client: httpx2.Client, count: int, prefix: str = "e") -> None:
    items = [context_body(externalId=f"{prefix}{i}") for i in range(count)]
    ok(client.post("/api/contexts/bulk-upsert", json={"contexts": items}))


# ----- contexts ---------------------------------------------------------------------------


def test_contexts_crud(client: httpx2.Client, fake: FakeContextQ, tenant: Tenant) -> None:
    fake.create_workspace(tenant, "acme")
    body = context_body(
        workspace="acme", tags=["b", "a"], externalId="ext/1 ü", metadata={"z": 1, "a": [1.5, None]}
    )
    created = ok(client.post("/api/contexts", json=body), 201)
    assert created["workspace"] == "acme" and created["tags"] == ["b", "a"]
    assert created["metadata"] == {"z": 1, "a": [1.5, None]}
    assert ok(client.get(f"/api/contexts/{created['id']}")) == created
    assert ok(client.get("/api/contexts/by-external/ext%2F1%20%C3%BC")) == created

    updated = ok(client.put(f"/api/contexts/{created['id']}", json={"content": "new text"}))
    assert updated["content"] == "new text" and updated["title"] == created["title"]
    assert updated["createdAt"] == created["createdAt"]
    assert fake.context_json(tenant) == [updated]

    other = ok(client.post("/api/contexts", json=context_body(type="incident")), 201)
    listed = ok(client.get("/api/contexts", params={"tag": "a"}))
    assert (listed["total"], [c["id"] for c in listed["items"]]) == (1, [created["id"]])
    listed = ok(client.get("/api/contexts", params={"type": "incident"}))
    assert [c["id"] for c in listed["items"]] == [other["id"]]
    page = ok(client.get("/api/contexts", params={"limit": 1, "offset": 1}))
    assert (page["total"], [c["id"] for c in page["items"]]) == (2, [other["id"]])
    assert ok(client.get("/api/contexts", params={"workspace": "acme"}))["total"] == 1

    assert client.delete(f"/api/contexts/{created['id']}").status_code == 204
    assert client.get(f"/api/contexts/{created['id']}").status_code == 404
    assert client.get("/api/contexts/by-external/ext%2F1%20%C3%BC").status_code == 404
    # the external id is free again
    ok(client.post("/api/contexts", json=context_body(externalId="ext/1 ü")), 201)


def test_external_id_is_unique_per_tenant_across_workspaces(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, other: tuple[Tenant, httpx2.Client]
) -> None:
    fake.create_workspace(tenant, "one")
    fake.create_workspace(tenant, "two")
    ok(client.post("/api/contexts", json=context_body(workspace="one", externalId="x")), 201)
    response = client.post("/api/contexts", json=context_body(workspace="two", externalId="x"))
    assert response.status_code == 409
    assert response.json()["error"] == "external_id_taken"
    assert len(fake.contexts(tenant)) == 1
    # another tenant may use the same external id
    ok(other[1].post("/api/contexts", json=context_body(externalId="x")), 201)


def test_lone_surrogates_round_trip(client: httpx2.Client, fake: FakeContextQ) -> None:
    raw = b'{"type":"reference","title":"t \\ud800","content":"x \\udfff y","externalId":"\\ud801"}'
    created = client.post(
        "/api/contexts", content=raw, headers={"content-type": "application/json"}
    )
    assert created.status_code == 201, created.text
    assert ok(client.get(f"/api/contexts/{created.json()['id']}"))["content"] == "x \udfff y"
    assert client.get("/api/contexts/by-external/%ED%A0%81").status_code in (400, 404)
    # a value that happens to start with the escape marker is not mistaken for an escape
    tricky = s.ESCAPED_TEXT_MARKER + '"not json'
    made = ok(client.post("/api/contexts", json=context_body(content=tricky)), 201)
    assert ok(client.get(f"/api/contexts/{made['id']}"))["content"] == tricky


# ----- quota --------------------------------------------------------------------------------


def test_the_101st_context_is_a_402(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 99)
    ok(client.post("/api/contexts", json=context_body()), 201)  # the 100th
    response = client.post("/api/contexts", json=context_body())
    assert response.status_code == 402
    assert response.json()["error"] == "quota_exceeded"
    assert len(fake.contexts(tenant)) == 100


def test_a_bulk_upsert_over_the_quota_changes_nothing(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fill(client, 98)
    before = fake.context_json(tenant)
    audit_before = len(fake.audit_log())
    items = [context_body(externalId="e0", content="changed")]
    items += [context_body(externalId=f"new{i}") for i in range(3)]
    response = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert response.status_code == 402
    assert fake.context_json(tenant) == before  # neither the update nor any insert
    assert len(fake.audit_log()) == audit_before
    result = ok(client.post("/api/contexts/bulk-upsert", json={"contexts": items[:3]}))
    assert (result["created"], result["updated"]) == (2, 1)
    assert len(fake.contexts(tenant)) == 100


# ----- search -------------------------------------------------------------------------------

DOCS = [
    {"title": "Deploy guide", "content": "How to deploy the api to production.", "tags": ["ops"]},
    {"title": "Style", "content": "Prefer small functions; deploy often.", "tags": []},
    {"title": "Lunch", "content": "Tacos on friday.", "tags": ["deploy"]},
    {"title": "Unrelated", "content": "Nothing to see here.", "tags": []},
]


def _hit(hit: dict[str, Any]) -> tuple[Any, ...]:
    """A search hit without its timestamps (the two fakes' clocks differ)."""
    return (hit["context"]["id"], hit["context"]["title"], hit["score"], hit["snippet"])


def test_search_ranks_exactly_as_the_memory_store(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    with FakeContextQ() as memory:
        mem_client = memory.client(memory.mint_key(memory.create_tenant(), ALL_SCOPES))
        for doc in DOCS:
            ok(client.post("/api/contexts", json=context_body(**doc)), 201)
            ok(mem_client.post("/api/contexts", json=context_body(**doc)), 201)
        for query in (
            {"query": "deploy"},
            {"query": "deploy production", "limit": 2},
            {"query": "deploy", "tags": ["ops"]},
            {"query": "tacos", "type": "incident"},
            {"query": "zzz"},
        ):
            got = ok(client.post("/api/search", json=query))["results"]
            want = ok(mem_client.post("/api/search", json=query))["results"]
            assert [_hit(h) for h in got] == [_hit(h) for h in want], query
        ranked = ok(client.post("/api/search", json={"query": "deploy"}))["results"]
        assert [r["context"]["title"] for r in ranked] == ["Deploy guide", "Lunch", "Style"]
        # tenant isolation: the other tenant finds none of these
        assert ok(other[1].post("/api/search", json={"query": "deploy"}))["results"] == []
        ok(other[1].post("/api/contexts", json=context_body(title="deploy elsewhere")), 201)
        mine = ok(client.post("/api/search", json={"query": "elsewhere"}))["results"]
        assert mine == []


# ----- workspaces and audit -----------------------------------------------------------------


def test_deleting_a_workspace_that_holds_contexts_is_a_409(client: httpx2.Client) -> None:
    ok(client.post("/api/workspaces", json={"slug": "acme"}), 201)
    created = ok(client.post("/api/contexts", json=context_body(workspace="acme")), 201)
    response = client.delete("/api/workspaces/acme")
    assert response.status_code == 409
    assert response.json()["contexts"] == 1
    assert client.delete(f"/api/contexts/{created['id']}").status_code == 204
    assert client.delete("/api/workspaces/acme").status_code == 204
    assert ok(client.get("/api/workspaces")) == {"items": []}


def test_the_audit_chain_grows_verifies_and_catches_tampering(
    client: httpx2.Client, fake: FakeContextQ, db_url: str
) -> None:
    created = ok(client.post("/api/contexts", json=context_body(externalId="e")), 201)
    client.get(f"/api/contexts/{created['id']}")  # reads add no row
    client.put(f"/api/contexts/{created['id']}", json={"content": "v2"})
    client.post("/api/contexts", json={"type": "bad"})  # a failed write adds no row
    client.delete(f"/api/contexts/{created['id']}")
    rows = fake.audit_log()
    assert [r.action for r in rows] == ["context.create", "context.update", "context.delete"]
    assert rows[0].prev_hash is None and rows[1].prev_hash == rows[0].hash
    assert fake.verify_audit_chain() == 3

    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        t = s.activity_logs
        conn.execute(sa.update(t).where(t.c.id == rows[1].id).values(action="context.delete"))
    engine.dispose()
    with pytest.raises(AuditChainError):
        fake.verify_audit_chain()


# ----- agent layer --------------------------------------------------------------------------


def test_agent_sessions_checkpoints_tasks_lessons_and_boot(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.create_workspace(tenant, "proj")
    ok(client.post("/api/contexts", json=context_body(title="Deploy guide", content="deploy")), 201)
    parent = ok(client.post("/api/agent/sessions", json={"workspace": "proj"}), 201)
    meta = {"agent": "claude", "nested": {"n": [1, 2.5, None]}}
    sid = ok(
        client.post(
            "/api/agent/sessions",
            json={"workspace": "proj", "parent_session_id": parent["id"], "metadata": meta},
        ),
        201,
    )["id"]
    assert ok(client.get(f"/api/agent/sessions/{sid}"))["metadata"] == meta

    cp = f"/api/agent/sessions/{sid}/checkpoint"
    assert client.post(cp, json={"seq": 2, "state": {}}).json()["expected"] == 1
    ok(client.post(cp, json={"seq": 1, "state": {"step": 1}}), 201)
    conflict = client.post(cp, json={"seq": 1, "state": {"step": 1}})
    assert (conflict.status_code, conflict.json()["expected"]) == (409, 2)
    ok(client.post(cp, json={"seq": 2, "state": {"step": 2}}), 201)

    task = ok(
        client.post("/api/agent/tasks", json={"session_id": sid, "key": "build", "title": "B"}), 201
    )
    again = ok(
        client.post(
            "/api/agent/tasks",
            json={"session_id": sid, "key": "build", "title": "B2", "status": "in_progress"},
        )
    )
    assert again["id"] == task["id"] and again["title"] == "B2"
    child = ok(
        client.post(
            "/api/agent/tasks",
            json={"session_id": sid, "key": "test", "title": "T", "parent_key": "build"},
        ),
        201,
    )
    assert child["parent_id"] == task["id"]
    assert client.post(f"/api/agent/tasks/{child['id']}/tick", json={}).status_code == 422
    ok(client.post(f"/api/agent/tasks/{child['id']}/tick", json={"evidence": "green"}))
    tasks = ok(client.get(f"/api/agent/sessions/{sid}/tasks"))["items"]
    assert [t["key"] for t in tasks] == ["build", "test"]

    resumed = ok(client.get(f"/api/agent/sessions/{sid}/resume"))
    assert resumed["checkpoint"]["seq"] == 2
    assert [t["key"] for t in resumed["open_tasks"]] == ["build"]

    ok(client.post("/api/agent/lessons", json={"text": "Run the tests before deploying"}), 201)
    ok(
        client.post("/api/agent/lessons", json={"text": "Lunch is at noon", "workspace": "proj"}),
        201,
    )
    lessons = fake.lessons(tenant)
    assert all(x.embedding is not None and len(x.embedding) == 768 for x in lessons)
    with FakeContextQ() as memory:  # vectors survive the JSON column bit for bit
        m_client = memory.client(memory.mint_key(memory.create_tenant(), ALL_SCOPES))
        ok(
            m_client.post("/api/agent/lessons", json={"text": "Run the tests before deploying"}),
            201,
        )
        assert memory.lessons(1)[0].embedding == lessons[0].embedding

    ended = ok(client.post(f"/api/agent/sessions/{sid}/end", json={"status": "completed"}))
    assert ended["status"] == "completed"
    pack = ok(client.post("/api/agent/boot", json={"goal": "deploy safely", "workspace": "proj"}))
    assert pack["resume"]["session"]["id"] == sid
    assert [f["context"]["title"] for f in pack["facts"]] == ["Deploy guide"]
    assert pack["lessons"][0]["text"] == "Run the tests before deploying"
    assert fake.verify_audit_chain() == len(fake.audit_log())


# ----- a database store only ----------------------------------------------------------------


def test_rows_and_keys_survive_a_restart(db_url: str) -> None:
    first_store = SqlStore(db_url)
    with FakeContextQ(store=first_store) as first:
        tenant = first.create_tenant("acme", plan="free")
        key = first.mint_key(tenant, ALL_SCOPES)
        revoked = first.mint_key(tenant)
        first.revoke_key(revoked)
        with first.client(key) as c:
            ok(c.post("/api/workspaces", json={"slug": "ws"}), 201)
            made = ok(c.post("/api/contexts", json=context_body(externalId="kept")), 201)
    first_store.close()

    second_store = SqlStore(db_url)  # a second open creates nothing and checks the version
    with FakeContextQ(store=second_store) as second:
        assert [t.name for t in second.tenants()] == ["acme"]
        with second.client(key) as c:
            assert ok(c.get("/api/contexts/by-external/kept")) == made
            assert [w["slug"] for w in ok(c.get("/api/workspaces"))["items"]] == ["ws"]
            newer = ok(c.post("/api/contexts", json=context_body()), 201)
            assert newer["id"] == made["id"] + 1  # ids continue, never reused
        with second.client(revoked) as c:
            assert c.get("/api/contexts").status_code == 401
        with second.client("sk_live_" + "x" * 40) as c:
            assert c.get("/api/contexts").status_code == 401
        assert second.verify_audit_chain() == 3
        second.reset()
        assert second.tenants() == []
        assert second.audit_log() == []
    second_store.close()


def test_an_unknown_schema_version_is_refused(db_url: str) -> None:
    SqlStore(db_url).close()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.update(s.schema_version).values(version=s.SCHEMA_VERSION + 41))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="schema_version"):
        SqlStore(db_url)


def test_a_database_not_made_by_sqlstore_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE contexts (id INTEGER PRIMARY KEY)")
    engine.dispose()
    with pytest.raises(SchemaVersionError, match="not created by SqlStore"):
        SqlStore(url)


def test_an_in_memory_database_works_across_threads() -> None:
    with FakeContextQ(store=SqlStore("sqlite://")) as fake:
        key = fake.mint_key(fake.create_tenant(), ALL_SCOPES)
        with fake.serve() as served, httpx2.Client(base_url=served.url) as c:
            c.headers["Authorization"] = f"Bearer {key}"
            ok(c.post("/api/contexts", json=context_body()), 201)
            assert ok(c.get("/api/contexts"))["total"] == 1


def _race(url: str, key: str, attempts: int, start: Any, out: Any) -> None:
    """One process: its own store and fake on the shared file; create after the barrier."""
    store = SqlStore(url)
    with FakeContextQ(store=store) as fake, fake.client(key) as c:
        start.wait(timeout=60)
        for _ in range(attempts):
            out.put(c.post("/api/contexts", json=context_body()).status_code)
    store.close()


@pytest.mark.parametrize(("existing", "attempts"), [(99, 1), (85, 10)])
def test_two_processes_racing_for_the_last_contexts(
    fake: FakeContextQ,
    tenant: Tenant,
    key: str,
    client: httpx2.Client,
    db_url: str,
    existing: int,
    attempts: int,
) -> None:
    fill(client, existing)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(db_url, key, attempts, start, out)) for _ in range(2)]
    for p in procs:
        p.start()
    statuses = sorted(out.get(timeout=120) for _ in range(2 * attempts))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    room = 100 - existing
    assert statuses == [201] * room + [402] * (2 * attempts - room)
    assert len(fake.contexts(tenant)) == 100
    assert fake.verify_audit_chain() == 1 + room  # one bulk row, then one per create
