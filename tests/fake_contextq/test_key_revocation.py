"""A revocation made by another process sharing the database is seen at once, although
each process remembers which row a key verified against (bcrypt runs once per key)."""

from __future__ import annotations

import pytest

from adapter import wire
from fake_contextq import FakeContextQ, _msgs
from fake_contextq.stores.sql import SqlStore
from tests.support.stores import StorePool, fresh_store


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_revocation_by_another_process_is_seen_at_the_next_request(
    store_pool: StorePool, kind: str
) -> None:
    store = fresh_store(store_pool, kind)
    assert isinstance(store, SqlStore)
    fake = FakeContextQ(store=store)
    tenant = fake.create_tenant("acme")
    key = fake.mint_key(tenant, wire.SCOPES)
    with fake.client(key) as c:
        assert c.get("/api/contexts").status_code == 200  # verified and remembered
    other = FakeContextQ(database_url=store.engine.url.render_as_string(hide_password=False))
    try:
        other.revoke_key(key)
    finally:
        other.close()
    with fake.client(key) as c:
        answer = c.get("/api/contexts")
    assert answer.status_code == 401
    assert answer.json()["message"] == _msgs.REVOKED_KEY
    fake.close()
