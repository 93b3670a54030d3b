"""What only a database store has: persistence across restarts, schema versions, keys and
rows written by plain SQL, search ranked exactly as in memory, and writers in two processes
serialised on one database (SQLite file or Postgres). The HTTP suite itself runs on every
store through its ``all_stores`` marker."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.stores import schema as s
from fake_contextq.stores.sql import SchemaVersionError, SqlStore, database_url
from tests.helpers import context_body, fill, ok
from tests.stores import postgres_schema


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test runs on a SQLite file and on Postgres (the dev stack's database)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fake.db'}"
    else:
        with postgres_schema() as url:
            yield url


@pytest.fixture
def fake(db_url: str) -> Iterator[FakeContextQ]:
    """Overrides the suite's memory-backed ``fake``: ``tenant``, ``key`` and ``client`` follow."""
    store = SqlStore(db_url)
    with FakeContextQ(store=store) as instance:
        yield instance
    store.close()


# ----- contexts ---------------------------------------------------------------------------


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
        mem_client = memory.client(memory.mint_key(memory.create_tenant(), wire.SCOPES))
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


# ----- a database store only ----------------------------------------------------------------


def test_rows_and_keys_survive_a_restart(db_url: str) -> None:
    first_store = SqlStore(db_url)
    with FakeContextQ(store=first_store) as first:
        tenant = first.create_tenant("acme", plan="free")
        key = first.mint_key(tenant, wire.SCOPES)
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


@pytest.mark.parametrize(
    ("version", "says"),
    [
        (s.SCHEMA_VERSION + 41, "made by a newer fake-contextq: upgrade this one"),
        (s.SCHEMA_VERSION - 1, "made by an older fake-contextq, whose state this one cannot"),
    ],
)
def test_an_unknown_schema_version_is_refused_saying_what_to_do(
    db_url: str, version: int, says: str
) -> None:
    SqlStore(db_url).close()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.update(s.schema_version).values(version=version))
    engine.dispose()
    with pytest.raises(SchemaVersionError, match=f"schema_version \\[{version}\\].*{says}"):
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
        key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
        with fake.serve() as served, httpx2.Client(base_url=served.url) as c:
            c.headers["Authorization"] = f"Bearer {key}"
            ok(c.post("/api/contexts", json=context_body()), 201)
            assert ok(c.get("/api/contexts"))["total"] == 1


def _race(url: str, key: str, requests: list[tuple[str, Any]], start: Any, out: Any) -> None:
    """One process: its own store and fake on the shared database; send after the barrier."""
    store = SqlStore(url)
    with FakeContextQ(store=store) as fake, fake.client(key) as c:
        start.wait(timeout=60)
        for path, body in requests:
            out.put(c.post(path, json=body).status_code)
    store.close()


def _race_two(url: str, key: str, requests: list[tuple[str, Any]]) -> list[int]:
    """Run ``requests`` in two processes at once; every status, sorted."""
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(url, key, requests, start, out)) for _ in range(2)]
    for p in procs:
        p.start()
    statuses = sorted(out.get(timeout=120) for _ in range(2 * len(requests)))
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    return statuses


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
    statuses = _race_two(db_url, key, [("/api/contexts", context_body())] * attempts)
    room = 100 - existing
    assert statuses == [201] * room + [402] * (2 * attempts - room)
    assert len(fake.contexts(tenant)) == 100
    assert fake.verify_audit_chain() == 1 + room  # one bulk row, then one per create


def test_two_processes_racing_for_one_checkpoint_seq(
    fake: FakeContextQ, key: str, client: httpx2.Client, db_url: str
) -> None:
    session = ok(client.post("/api/agent/sessions", json={}), 201)
    path = f"/api/agent/sessions/{session['id']}/checkpoint"
    ok(client.post(path, json={"seq": 1, "state": {"step": 1}}), 201)
    statuses = _race_two(db_url, key, [(path, {"seq": 2, "state": {"step": 2}})])
    assert statuses == [201, 409]  # exactly one wins; the other is told seq_conflict
    resumed = ok(client.get(f"/api/agent/sessions/{session['id']}/resume"))
    assert resumed["checkpoint"]["seq"] == 2


def test_two_processes_writing_at_once_never_fork_the_audit_chain(
    fake: FakeContextQ, key: str, db_url: str
) -> None:
    writes = [("/api/contexts", context_body()), ("/api/agent/lessons", {"text": "a lesson"})]
    statuses = _race_two(db_url, key, writes * 10)
    assert statuses == [201] * 40
    rows = fake.audit_log()
    assert fake.verify_audit_chain() == len(rows) == 40
    # one chain, not two: every row names a different predecessor, and only the first none
    assert len({row.prev_hash for row in rows}) == 40
    assert [row.prev_hash for row in rows].count(None) == 1


def _insert_tenant_and_key_by_plain_sql(url: str, plaintext: str) -> int:
    """What the live fixtures do to a dev stack's database: INSERTs, ids left to it."""
    engine = sa.create_engine(database_url(url))
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            now, as_json = "now()", "CAST(:scopes AS json)"
        else:
            now, as_json = "strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')", ":scopes"
        tenant_id = int(
            conn.execute(
                sa.text(
                    f"INSERT INTO tenants (name, created_at) VALUES ('sql', {now}) RETURNING id"
                )
            ).scalar_one()
        )
        conn.execute(
            sa.text(
                "INSERT INTO api_keys (tenant_id, key_hash, prefix, scopes, created_at) "
                f"VALUES (:tenant, :hash, :prefix, {as_json}, {now})"
            ),
            {
                "tenant": tenant_id,
                "hash": wire.hash_key(plaintext),
                "prefix": wire.key_display_prefix(plaintext),
                "scopes": json.dumps(list(wire.SCOPES)),
            },
        )
    engine.dispose()
    return tenant_id


def test_a_key_inserted_by_plain_sql_authenticates(fake: FakeContextQ, db_url: str) -> None:
    first = fake.create_tenant("made by the fake")
    plaintext = "sk_live_" + "ab12" * 10
    tenant_id = _insert_tenant_and_key_by_plain_sql(db_url, plaintext)
    assert tenant_id == first.id + 1  # the database's own ids: the sequence the fake uses
    with fake.client(plaintext) as c:
        made = ok(c.post("/api/contexts", json=context_body(externalId="via-sql")), 201)
        assert ok(c.get("/api/contexts"))["total"] == 1
        ok(c.post("/api/workspaces", json={"slug": "admin-scope"}), 201)
    (sql_tenant,) = [t for t in fake.tenants() if t.id == tenant_id]
    assert sql_tenant.plan == "free"  # the column's default, as a bare INSERT leaves it
    assert [c.id for c in fake.contexts(sql_tenant)] == [made["id"]]
    assert fake.create_tenant("after").id == tenant_id + 1  # no collision after SQL writes
    assert fake.audit_log()[-1].actor_key_prefix == plaintext[:12]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not a url", "not a database URL"),
        ("mysql://root@127.0.0.1/test", "speaks sqlite and postgresql, not 'mysql'"),
    ],
)
def test_a_bad_database_url_is_refused_with_what_to_give(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        SqlStore(url)


def test_a_bare_postgresql_url_means_psycopg() -> None:
    assert database_url("postgresql://u@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgres://u@h/db").drivername == "postgresql+psycopg"
    assert database_url("postgresql+asyncpg://u@h/db").drivername == "postgresql+asyncpg"


def test_search_sees_writes_made_through_another_store_on_the_same_database(
    fake: FakeContextQ, key: str, client: httpx2.Client, db_url: str
) -> None:
    """Each store caches its search index; another process's writes must still show."""

    def titles(c: httpx2.Client, query: str) -> list[str]:
        return [
            h["context"]["title"]
            for h in ok(c.post("/api/search", json={"query": query}))["results"]
        ]

    first = ok(client.post("/api/contexts", json=context_body(title="alpha deploy")), 201)
    second = ok(client.post("/api/contexts", json=context_body(title="beta deploy")), 201)
    assert sorted(titles(client, "deploy")) == ["alpha deploy", "beta deploy"]  # now cached
    other_store = SqlStore(db_url)
    with FakeContextQ(store=other_store) as other, other.client(key) as elsewhere:
        ok(elsewhere.put(f"/api/contexts/{first['id']}", json={"title": "alpha release"}))
        assert elsewhere.delete(f"/api/contexts/{second['id']}").status_code == 204
        ok(elsewhere.post("/api/contexts", json=context_body(title="gamma deploy")), 201)
    other_store.close()
    assert titles(client, "deploy") == ["gamma deploy"]
    assert titles(client, "release") == ["alpha release"]
    assert titles(client, "beta") == []
