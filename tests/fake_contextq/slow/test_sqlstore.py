"""What only a database store has: persistence across restarts, schema versions, keys and
rows written by plain SQL, search ranked exactly as in memory, and writers in two processes
serialised on one database (SQLite file or Postgres). The HTTP suite itself runs on every
store through its ``all_stores`` marker."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain import keys
from fake_contextq.http.control import new_control_token
from fake_contextq.stores import schema as s
from fake_contextq.stores.sql import (
    PostgresStore,
    SchemaVersionError,
    SqlStore,
    advisory_lock_key,
    database_url,
)
from tests.support.helpers import context_body, fill, ok
from tests.support.stores import postgres_schema


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
        # ids start again, as they do on a fresh database
        again = second.create_tenant("again")
        assert again.id == 1
        with second.client(second.mint_key(again, wire.SCOPES)) as c:
            assert ok(c.post("/api/contexts", json=context_body()), 201)["id"] == 1
        assert [row.id for row in second.audit_log()][:1] == [1]
        assert second.verify_audit_chain() >= 1
    second_store.close()


@pytest.mark.parametrize(
    ("version", "says"),
    [
        (s.SCHEMA_VERSION + 41, "made by a newer fake-contextq: upgrade this one"),
        (min(s.UPGRADES_FROM) - 1, "made by an older fake-contextq, whose state this one"),
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


def test_a_version_2_database_is_upgraded_in_place_keeping_its_state(db_url: str) -> None:
    """Version 3 only added tables: a dev stack's older database gains them, keeps its
    rows, and serves every operation, the new ones included."""
    added = [s.saved_searches, s.context_links, s.ingest_jobs]
    first = SqlStore(db_url)
    with FakeContextQ(store=first) as fake:
        key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
        with fake.client(key) as c:
            kept = ok(c.post("/api/contexts", json=context_body(title="kept")), 201)
    first.close()
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:  # what a version-2 fake left behind
        for table in added:
            table.drop(conn)
        conn.execute(sa.update(s.schema_version).values(version=2))
    engine.dispose()
    store = SqlStore(db_url)
    with FakeContextQ(store=store) as fake, fake.client(key) as c:
        assert ok(c.get(f"/api/contexts/{kept['id']}"))["title"] == "kept"
        other = ok(c.post("/api/contexts", json=context_body(title="other")), 201)
        ok(c.post(f"/api/contexts/{kept['id']}/links", json={"targetId": other["id"]}), 201)
    store.close()
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        assert list(conn.execute(sa.select(s.schema_version.c.version)).scalars()) == [3]
        assert {t.name for t in added} <= set(sa.inspect(conn).get_table_names())
    engine.dispose()


@pytest.mark.parametrize("version", [2, s.SCHEMA_VERSION])
def test_a_lone_schema_version_table_is_not_taken_for_a_fakes(tmp_path: Path, version: int) -> None:
    """Only a database holding every table its version had is used (or upgraded); one with
    a schema_version and nothing else is refused untouched."""
    url = f"sqlite:///{tmp_path / 'other.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE schema_version (version INTEGER PRIMARY KEY)")
        conn.exec_driver_sql(f"INSERT INTO schema_version VALUES ({version})")
    with pytest.raises(
        SchemaVersionError, match=rf"schema_version \[{version}\] but no .*not made"
    ):
        SqlStore(url)
    with engine.connect() as conn:
        assert sa.inspect(conn).get_table_names() == ["schema_version"]
    engine.dispose()


@pytest.mark.parametrize(
    ("column", "version"),
    [("TEXT", "'1.2.3'"), ("TEXT", "'2'"), ("INTEGER", "NULL"), ("REAL", "2.5")],
)
def test_a_schema_version_that_is_no_whole_number_is_refused_as_not_a_fakes(
    tmp_path: Path, column: str, version: str
) -> None:
    """Another tool's ``schema_version`` table (a text version, a null) was a TypeError
    comparing it with 3, not the SchemaVersionError a caller catches, and 2.5 was said to be
    an older fake-contextq's; the database is left as it was either way."""
    url = f"sqlite:///{tmp_path / 'other.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE schema_version (version {column})")
        conn.exec_driver_sql(f"INSERT INTO schema_version VALUES ({version})")
    with pytest.raises(SchemaVersionError, match="not made by fake-contextq"):
        SqlStore(url)
    with engine.connect() as conn:
        assert sa.inspect(conn).get_table_names() == ["schema_version"]
    engine.dispose()


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
    """Run ``requests`` in two processes at once; every status, sorted. The processes are
    forked from a fork server that imported this module once for the worker (no threads,
    nothing of the test's state), rather than spawned, each importing the fake again."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
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
                "hash": keys.hash_key(plaintext),
                "prefix": keys.key_display_prefix(plaintext),
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


def test_a_context_read_again_shows_what_another_store_wrote_since(
    fake: FakeContextQ, key: str, client: httpx2.Client, db_url: str
) -> None:
    """A store keeps the record of each row it read, by what the row held: a row another
    process rewrote (or deleted) since reads as it is now, by id and by external id."""
    made = ok(
        client.post("/api/contexts", json={**context_body(title="one"), "externalId": "x"}), 201
    )
    for _ in range(2):  # the second read finds the first's record
        assert ok(client.get("/api/contexts/by-external/x")) == made
        assert ok(client.get(f"/api/contexts/{made['id']}")) == made
    other_store = SqlStore(db_url)
    with FakeContextQ(store=other_store) as other, other.client(key) as elsewhere:
        changed = ok(elsewhere.put(f"/api/contexts/{made['id']}", json={"title": "two"}))
        assert ok(client.get("/api/contexts/by-external/x")) == changed
        assert ok(client.get(f"/api/contexts/{made['id']}"))["title"] == "two"
        assert elsewhere.delete(f"/api/contexts/{made['id']}").status_code == 204
    other_store.close()
    assert client.get("/api/contexts/by-external/x").status_code == 404
    assert client.get(f"/api/contexts/{made['id']}").status_code == 404


# ----- locks: one per schema, bounded waits, and never on the event loop -------------------


def _wait_for_lock_waiter(url: str, lock_key: int | None) -> None:
    """Return once some session waits for the advisory lock ``lock_key`` (bounded)."""
    engine = sa.create_engine(database_url(url))
    query = sa.text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE wait_event = 'advisory' AND position(:lock in query) > 0"
    )
    try:
        for _ in range(1500):
            with engine.connect() as conn:
                if conn.execute(query, {"lock": f"pg_advisory_xact_lock({lock_key})"}).scalar():
                    return
            time.sleep(0.02)
        raise AssertionError(f"nothing came to wait for advisory lock {lock_key}")
    finally:
        engine.dispose()


def test_a_held_write_lock_stops_only_fakes_on_its_schema_and_they_answer_503() -> None:
    """A transaction left open by one fake (a stalled process) holds its schema's lock:
    a fake on another schema writes on; one on the same schema gets a 503 naming the lock
    after its ``lock_timeout``, writes nothing, and writes once the lock is free."""
    with postgres_schema() as url_a, postgres_schema() as url_b:
        holder = SqlStore(url_a)
        same = SqlStore(url_a, lock_timeout=0.3)
        other = SqlStore(url_b, lock_timeout=0.3)  # waiting for holder's lock would 503
        try:
            assert holder.schema != other.schema
            assert holder.lock_key == same.lock_key != other.lock_key
            with FakeContextQ(store=same) as on_a, FakeContextQ(store=other) as on_b:
                tenant_a = on_a.create_tenant()
                key_a = on_a.mint_key(tenant_a, wire.SCOPES)
                key_b = on_b.mint_key(on_b.create_tenant(), wire.SCOPES)
                with on_a.client(key_a) as a, on_b.client(key_b) as b:
                    first = ok(a.post("/api/contexts", json=context_body()), 201)
                    with holder.transaction():
                        holder.last_audit_hash()  # the first statement takes the lock
                        ok(b.post("/api/contexts", json=context_body()), 201)
                        ok(b.post("/api/agent/sessions", json={}), 201)
                        refused = a.post("/api/contexts", json=context_body(title="lost"))
                        assert ok(a.get(f"/api/contexts/{first['id']}")) == first  # no lock
                        # the key is checked before any lock: a bad one is a 401, not a 503
                        stranger = a.post(
                            "/api/contexts",
                            json=context_body(title="lost too"),
                            headers={
                                "Authorization": wire.authorization(
                                    wire.KEY_PREFIX + "0" * wire.KEY_HEX_LENGTH
                                )
                            },
                        )
                        assert stranger.status_code == 401, stranger.text
                        assert stranger.json()["error"] == "unauthorized"
                    body = refused.json()
                    assert refused.status_code == 503, body
                    assert body["error"] == "database_busy"
                    assert body["lock"] == _msgs.PG_WRITE_LOCK.format(
                        key=holder.lock_key, schema=holder.schema, database=holder.database
                    )
                    assert f"advisory lock {holder.lock_key}" in body["message"]
                    assert "0.3s" in body["message"]
                    later = ok(a.post("/api/contexts", json=context_body()), 201)
                assert [c.id for c in on_a.contexts(tenant_a)] == [first["id"], later["id"]]
                assert on_a.verify_audit_chain() == 2
        finally:
            for store in (holder, same, other):
                store.close()


def test_health_and_reads_answer_while_a_write_waits_for_the_lock() -> None:
    """A served fake runs database work off its event loop: while one request waits for
    the lock, the health route and another tenant's read still answer."""
    with postgres_schema() as url:
        holder = SqlStore(url)
        store = SqlStore(url, lock_timeout=120)
        pool = ThreadPoolExecutor(1)
        try:
            with FakeContextQ(store=store) as fake:
                key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
                other_key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
                with fake.client(other_key) as c:
                    theirs = ok(c.post("/api/contexts", json=context_body()), 201)
                token = new_control_token()
                with (
                    fake.serve(control_token=token) as served,
                    httpx2.Client(base_url=served.url, timeout=60) as http,
                    httpx2.Client(base_url=served.url, timeout=150) as writer,
                ):
                    writer.headers["Authorization"] = wire.authorization(key)
                    http.headers["Authorization"] = wire.authorization(other_key)
                    with holder.transaction():
                        holder.last_audit_hash()
                        stalled = pool.submit(writer.post, "/api/contexts", json=context_body())
                        _wait_for_lock_waiter(url, holder.lock_key)
                        assert http.get("/_fake/health").json() == {"ok": True}
                        assert ok(http.get(f"/api/contexts/{theirs['id']}")) == theirs
                        assert not stalled.done()
                    ok(stalled.result(timeout=150), 201)  # the lock is free: it goes through
        finally:
            pool.shutdown()
            holder.close()
            store.close()


def test_a_held_sqlite_write_lock_answers_503_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "fake.db"
    store = SqlStore(f"sqlite:///{path}", busy_timeout=0.2)
    try:
        with FakeContextQ(store=store) as fake:
            key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
            stalled = sqlite3.connect(path, isolation_level=None)
            try:
                stalled.execute("BEGIN IMMEDIATE")
                with fake.client(key) as c:
                    refused = c.post("/api/contexts", json=context_body())
                stalled.execute("ROLLBACK")
            finally:
                stalled.close()
            body = refused.json()
            assert refused.status_code == 503, body
            assert body["lock"] == _msgs.SQLITE_LOCK.format(path=str(path))
            with fake.client(key) as c:
                ok(c.post("/api/contexts", json=context_body()), 201)
    finally:
        store.close()


def test_each_schema_has_its_own_lock_and_a_missing_schema_is_refused() -> None:
    with postgres_schema() as url:
        store = SqlStore(url)
        try:
            assert store.database is not None and store.schema is not None
            assert store.lock_key == advisory_lock_key(store.database, store.schema)
            assert advisory_lock_key(store.database, "elsewhere") != store.lock_key
        finally:
            store.close()
        missing = sa.make_url(url).update_query_dict({"options": "-csearch_path=no_such_schema"})
        with pytest.raises(ValueError, match=r"no schema on the search_path \(no_such_schema\)"):
            SqlStore(missing)


def test_a_postgres_connection_lost_under_the_fake_is_replaced() -> None:
    """The Postgres path talks to libpq directly: a connection the server dropped costs
    the requests that find it, and the next ones get fresh connections."""
    with postgres_schema() as url:
        store = SqlStore(url)
        assert isinstance(store, PostgresStore)  # the URL picks the dialect's store
        admin = sa.create_engine(database_url(url))
        try:
            with FakeContextQ(store=store) as fake:
                key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
                with fake.client(key) as c:
                    ok(c.post("/api/contexts", json=context_body()), 201)
                    pids: list[int] = []
                    with store.read():
                        pids += store._pg.fetch_sql("SELECT pg_backend_pid()")[0]
                    with store.transaction():
                        pids += store._pg.fetch_sql("SELECT pg_backend_pid()")[0]
                    with admin.begin() as conn:
                        for pid in pids:
                            conn.execute(sa.select(sa.func.pg_terminate_backend(pid)))
                    statuses = [c.post("/api/contexts", json=context_body()).status_code]
                    statuses += [c.post("/api/contexts", json=context_body()).status_code]
                    statuses += [c.post("/api/contexts", json=context_body()).status_code]
                    assert statuses[-1] == 201, statuses
                    assert ok(c.get("/api/contexts"))["total"] == 1 + statuses.count(201)
                assert fake.verify_audit_chain() == 1 + statuses.count(201)
        finally:
            admin.dispose()
            store.close()


def test_nul_characters_are_refused_and_lone_surrogates_are_u_fffd(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    """Postgres text cannot hold NUL: every store refuses it (wire.FORBIDDEN_TEXT_CHARS);
    a lone surrogate is U+FFFD (wire.well_formed) and answers as in memory, lookups
    included."""
    refused = client.post(
        "/api/contexts",
        json=context_body(title="a\0b", content="x'\0); --", externalId="id\0nul"),
    )
    assert refused.status_code == 400, refused.text
    assert {i["path"] for i in refused.json()["issues"]} == {"title", "content", "externalId"}
    assert fake.contexts(tenant) == []
    raw = json.dumps(context_body(title="a\ud800b", externalId="id\udfff")).encode()
    made = ok(
        client.post("/api/contexts", content=raw, headers={"content-type": "application/json"}),
        201,
    )
    assert (made["title"], made["externalId"]) == ("a\ufffdb", "id\ufffd")
    assert ok(client.get(f"/api/contexts/{made['id']}")) == made
    assert ok(client.get("/api/contexts/by-external/id%EF%BF%BD")) == made


# ----- connections ------------------------------------------------------------------------


def _create_from(client: httpx2.Client, out: list[int]) -> None:
    out.append(client.post("/api/contexts", json=context_body()).status_code)


def test_threads_that_come_and_go_all_get_answers_and_keep_no_connections(
    fake: FakeContextQ, key: str
) -> None:
    """25 short-lived threads, one after the other, then 16 at once, each with one request:
    every one gets its 201, and the connections are the store's, few and given back."""
    store = fake.store
    assert isinstance(store, SqlStore)
    statuses: list[int] = []
    with fake.client(key) as c:
        for _ in range(25):
            thread = threading.Thread(target=_create_from, args=(c, statuses))
            thread.start()
            thread.join(timeout=60)
        assert statuses == [201] * 25
        assert store.connections_open() <= 2  # reused, not one (or two) per thread
        barrier = threading.Barrier(16)

        def at_once() -> None:
            barrier.wait(timeout=60)
            _create_from(c, statuses)

        threads = [threading.Thread(target=at_once) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert statuses == [201] * 41
    assert store.connections_open() <= store.max_connections
    assert store.connections_lent() == 0  # every one given back
    assert ok(fake.client(key).get("/api/contexts"))["total"] == 41


def test_threads_each_with_their_own_store_client_do_not_exhaust_the_database(
    db_url: str,
) -> None:
    """Many more threads than connections, each doing requests straight on the store (the
    in-process client runs a lone request on the calling thread): all answered."""
    store = SqlStore(db_url, connections=3)
    try:
        with FakeContextQ(store=store) as fake:
            key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
            statuses: list[int] = []

            def work() -> None:
                with fake.client(key) as c:
                    _create_from(c, statuses)

            with ThreadPoolExecutor(max_workers=12) as pool:
                list(pool.map(lambda _: work(), range(40)))
            assert sorted(set(statuses)) == [201] and len(statuses) == 40
            assert store.connections_open() <= 3 and store.connections_lent() == 0
    finally:
        store.close()


def test_a_store_with_every_connection_lent_answers_503_naming_it(db_url: str) -> None:
    store = SqlStore(db_url, connections=1, busy_timeout=0.2, lock_timeout=0.2)
    try:
        with FakeContextQ(store=store) as fake:
            key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
            held, release = threading.Event(), threading.Event()

            def hold() -> None:
                with store.read():
                    held.set()
                    release.wait(timeout=60)

            holder = threading.Thread(target=hold)
            holder.start()
            try:
                assert held.wait(timeout=60)
                with fake.client(key) as c:
                    response = c.post("/api/contexts", json=context_body())
                assert response.status_code == 503, response.text
                assert "database connections" in response.json()["lock"]
            finally:
                release.set()
                holder.join(timeout=60)
            with fake.client(key) as c:
                ok(c.post("/api/contexts", json=context_body()), 201)
    finally:
        store.close()


# ----- a database this fake did not make ---------------------------------------------------


def test_a_sqlite_file_with_foreign_tables_is_refused_and_left_byte_for_byte(
    tmp_path: Path,
) -> None:
    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes VALUES (1, 'keep me')")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(
        SchemaVersionError, match=r"holds 1 table\(s\) this fake did not create \(notes\)"
    ):
        SqlStore(f"sqlite:///{path}")
    assert path.read_bytes() == before  # no table, no WAL switch, no pragma written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]


def test_a_postgres_schema_with_foreign_tables_is_refused_and_left_as_it_was() -> None:
    with postgres_schema() as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE invoices (id int primary key)"))
            with pytest.raises(SchemaVersionError, match=r"did not create \(invoices\)"):
                SqlStore(url)
            with engine.connect() as conn:
                assert sa.inspect(conn).get_table_names() == ["invoices"]
        finally:
            engine.dispose()


def test_a_new_sqlite_file_is_made_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SqlStore(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


@pytest.mark.parametrize(("durable", "level"), [(False, 1), (True, 2)])
def test_durable_sqlite_syncs_each_commit(tmp_path: Path, durable: bool, level: int) -> None:
    """``durable=True`` (``fake-contextq serve --durable``) runs SQLite with
    ``synchronous=FULL`` (2), so a commit is on disk before the answer; the default is
    ``NORMAL`` (1) in WAL mode, which can lose the last commits on power loss."""
    store = SqlStore(f"sqlite:///{tmp_path / 'durable.db'}", durable=durable)
    try:
        with store.transaction() as conn:
            assert isinstance(conn, sa.Connection)
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == level
    finally:
        store.close()


def test_a_served_sqlite_fake_reads_while_another_process_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    """On a SQLite file readers never wait for writers, so a served fake answers GETs on
    its event loop while a write waits for a lock another process holds (the write waits
    on a thread of the store's, and goes through once the lock is free)."""
    db = tmp_path / "served.db"
    store = SqlStore(f"sqlite:///{db}", busy_timeout=120)
    pool = ThreadPoolExecutor(1)
    holder = None
    try:
        assert not store.reads_wait
        with FakeContextQ(store=store) as fake:
            key = fake.mint_key(fake.create_tenant(), wire.SCOPES)
            with fake.client(key) as c:
                mine = ok(c.post("/api/contexts", json={**context_body(), "externalId": "k"}), 201)
            token = new_control_token()
            with (
                fake.serve(control_token=token) as served,
                httpx2.Client(base_url=served.url, timeout=60) as http,
                httpx2.Client(base_url=served.url, timeout=150) as writer,
            ):
                http.headers["Authorization"] = writer.headers["Authorization"] = (
                    wire.authorization(key)
                )
                holder = sqlite3.connect(db, isolation_level=None)
                holder.execute("BEGIN IMMEDIATE")
                stalled = pool.submit(writer.post, "/api/contexts", json=context_body())
                for _ in range(20):
                    assert ok(http.get(f"/api/contexts/{mine['id']}")) == mine
                    assert ok(http.get("/api/contexts/by-external/k")) == mine
                assert http.get("/_fake/health").json() == {"ok": True}
                assert not stalled.done()
                holder.execute("ROLLBACK")
                ok(stalled.result(timeout=150), 201)
    finally:
        if holder is not None:
            holder.close()
        pool.shutdown()
        store.close()
