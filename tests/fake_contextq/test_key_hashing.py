"""API keys as ContextQ's public pages describe them: stored bcrypt-hashed, the plaintext
kept nowhere, found by their prefix and verified once per key per process, revoked at once
for every process sharing the database; keys of the earlier sha256 scheme still work."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import sqlalchemy as sa

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain import auth, keys
from fake_contextq.domain.records import ApiKey
from fake_contextq.stores.memory import MemoryStore
from fake_contextq.stores.sql import SqlStore
from tests.support.helpers import context_body

pytestmark = pytest.mark.all_stores


def _everything_stored(fake: FakeContextQ) -> str:
    """All a store holds, as text: the SQLite file's bytes, every Postgres row as JSON, or
    every value reachable from the memory store and the fake's backend."""
    store = fake.store
    if isinstance(store, SqlStore):
        if store.engine.dialect.name == "sqlite":
            path = Path(str(store.engine.url.database))
            files = [path, path.with_name(path.name + "-wal")]
            return "".join(f.read_bytes().decode("latin-1") for f in files if f.exists())
        with store.engine.connect() as conn:
            tables = list(sa.inspect(conn).get_table_names())
            return "".join(
                str(conn.execute(sa.text(f'select row_to_json(x) from "{t}" x')).all())
                for t in tables
            )
    seen: set[int] = set()
    out: list[str] = []

    def walk(value: Any) -> None:
        if id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list | tuple | set | frozenset):
            for v in value:
                walk(v)
        elif hasattr(value, "__dict__") or hasattr(value, "__slots__"):
            for name in getattr(value, "__slots__", ()):
                walk(getattr(value, name, None))
            for v in getattr(value, "__dict__", {}).values():
                walk(v)

    walk(store)
    walk(fake.backend)
    return "\n".join(out)


def test_the_plaintext_key_is_stored_nowhere(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant, wire.SCOPES)
    with fake.client(key) as c:
        assert c.post("/api/contexts", json=context_body()).status_code == 201
        assert c.get("/api/contexts").status_code == 200
    stored = _everything_stored(fake)
    assert key[: keys.KEY_DISPLAY_PREFIX_LENGTH] in stored  # the lookup prefix is kept
    assert key not in stored
    assert key[keys.KEY_DISPLAY_PREFIX_LENGTH :] not in stored


def test_a_key_is_stored_as_its_prefix_and_a_bcrypt_hash(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    key = fake.mint_key(tenant)
    [stored] = fake.keys(tenant)
    assert stored.prefix == key[: keys.KEY_DISPLAY_PREFIX_LENGTH]
    assert stored.key_hash.startswith("$2b$")
    assert bcrypt.checkpw(key.encode(), stored.key_hash.encode())


@pytest.fixture
def checkpw_calls(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counting)
    return calls


def test_a_key_is_verified_once_per_process_not_per_request(
    fake: FakeContextQ, tenant: Tenant, checkpw_calls: list[bytes]
) -> None:
    key = "sk_live_" + "7c" * 20
    _put_key(fake, tenant, key, keys.hash_key(key, rounds=4))
    with fake.client(key) as c:
        for _ in range(20):
            assert c.get("/api/contexts").status_code == 200
    assert len(checkpw_calls) == 1


def test_a_key_minted_here_is_known_without_bcrypt(
    fake: FakeContextQ, tenant: Tenant, checkpw_calls: list[bytes]
) -> None:
    key = fake.mint_key(tenant)
    with fake.client(key) as c:
        assert c.get("/api/contexts").status_code == 200
    assert checkpw_calls == []
    fake.revoke_key(key)
    with fake.client(key) as c:
        assert c.get("/api/contexts").json()["message"] == _msgs.REVOKED_KEY


def test_a_known_key_whose_row_went_never_answers_for_the_row_that_took_its_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A minted key's row can go without this process dropping what it knows of it (a
    snapshot restored, a mint rolled back, another process's reset); a new key that then
    gets its id and, one time in 65,536, its display prefix must not let the old one in."""
    store = MemoryStore()
    fake = FakeContextQ(store=store)
    first, second = fake.create_tenant("one"), fake.create_tenant("two")
    before = store.snapshot()
    minted = iter(["sk_live_abcd" + "1" * 36, "sk_live_abcd" + "2" * 36])
    monkeypatch.setattr(auth, "new_key", lambda: next(minted))
    gone = fake.mint_key(first)
    store.restore(before)  # the row is gone; the mint is still known
    kept = fake.mint_key(second)  # the same id, the same display prefix
    with fake.client(gone) as c:
        refused = c.get("/api/contexts")
    assert (refused.status_code, refused.json()["message"]) == (401, _msgs.UNKNOWN_KEY)
    with fake.client(kept) as c:
        assert c.get("/api/contexts").status_code == 200
    fake.close()


def test_a_wrong_key_with_a_known_prefix_is_refused(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant)
    forged = key[:-1] + ("0" if key[-1] != "0" else "1")
    with fake.client(forged) as c:
        answer = c.get("/api/contexts")
    assert answer.status_code == 401
    assert answer.json()["message"] == _msgs.UNKNOWN_KEY
    with fake.client(key) as c:
        assert c.get("/api/contexts").status_code == 200


def _put_key(fake: FakeContextQ, tenant: Tenant, plaintext: str, key_hash: str) -> None:
    store = fake.store
    with store.transaction():
        store.put_key(
            ApiKey(
                id=store.next_id("api_key"),
                tenant_id=tenant.id,
                key_hash=key_hash,
                prefix=keys.key_display_prefix(plaintext),
                scopes=wire.SCOPES,
                created_at=datetime.now(UTC),
            )
        )


def test_keys_sharing_a_prefix_each_reach_their_own_tenant(fake: FakeContextQ) -> None:
    """The prefix holds 16 bits of the key: lookups must verify every row it finds."""
    first, second = fake.create_tenant("a"), fake.create_tenant("b")
    one, two = "sk_live_abcd" + "1" * 36, "sk_live_abcd" + "2" * 36
    _put_key(fake, first, one, keys.hash_key(one, rounds=4))
    _put_key(fake, second, two, keys.hash_key(two, rounds=4))
    with fake.client(one) as c:
        made = c.post("/api/contexts", json=context_body(title="first's"))
        assert made.status_code == 201
    with fake.client(two) as c:
        assert c.get("/api/contexts").json()["total"] == 0
    assert [c.title for c in fake.contexts(first)] == ["first's"]


def test_a_key_of_the_earlier_sha256_scheme_still_authenticates(
    fake: FakeContextQ, tenant: Tenant
) -> None:
    old = "sk_live_" + "5e" * 20
    _put_key(fake, tenant, old, hashlib.sha256(old.encode()).hexdigest())
    with fake.client(old) as c:
        assert c.get("/api/contexts").status_code == 200
    fake.revoke_key(old)
    with fake.client(old) as c:
        assert c.get("/api/contexts").json()["message"] == _msgs.REVOKED_KEY


def test_a_reset_forgets_verified_keys(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant)
    with fake.client(key) as c:
        assert c.get("/api/contexts").status_code == 200
    fake.reset()
    with fake.client(key) as c:
        assert c.get("/api/contexts").json()["message"] == _msgs.UNKNOWN_KEY


def test_an_old_format_sqlite_file_opens_and_its_keys_work(tmp_path: Path) -> None:
    """A file of this fake from before bcrypt: sha256 key rows, no prefix index."""
    path = tmp_path / "old.db"
    made = FakeContextQ(database_url=f"sqlite:///{path}")
    tenant = made.create_tenant("old")
    made.close()
    old = "sk_live_" + "0a" * 20
    with sqlite3.connect(path) as conn:
        conn.execute("drop index ix_api_keys_prefix")
        conn.execute(
            "insert into api_keys (tenant_id, key_hash, prefix, scopes, revoked, created_at) "
            "values (?, ?, ?, ?, 0, ?)",
            (
                tenant.id,
                hashlib.sha256(old.encode()).hexdigest(),
                old[:12],
                '["read", "write", "admin"]',
                "2026-01-01 00:00:00.000000",
            ),
        )
    reopened = FakeContextQ(database_url=f"sqlite:///{path}")
    try:
        with reopened.client(old) as c:
            assert c.post("/api/contexts", json=context_body()).status_code == 201
        with sqlite3.connect(path) as conn:
            names = {row[0] for row in conn.execute("select name from sqlite_master")}
        assert "ix_api_keys_prefix" in names
        new = reopened.mint_key(reopened.tenants()[0])
        assert reopened.keys(tenant)[-1].key_hash.startswith("$2b$")
        with reopened.client(new) as c:
            assert c.get("/api/contexts").json()["total"] == 1
    finally:
        reopened.close()
