"""The three stores an ``all_stores`` module runs on, and white-box access that works on each.

``memory`` is ``FakeContextQ()``'s own store; ``sqlite`` is a file per xdist worker;
``postgres`` is a schema per worker on ``CONTEXTQ_TEST_DATABASE_URL`` (the machine's local
server by default). A SQL store is created once per worker and emptied before each test,
which is what keeps three legs of the suite affordable.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from fake_contextq.domain.store import Store
from fake_contextq.stores import schema as s
from fake_contextq.stores.memory import MemoryStore
from fake_contextq.stores.sql import SqlStore

STORE_KINDS = ("memory", "sqlite", "postgres")

POSTGRES_URL = os.environ.get(
    "CONTEXTQ_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# .ci/run sets this, so a Postgres that does not answer fails CI instead of skipping.
REQUIRE_POSTGRES = os.environ.get("CONTEXTQ_REQUIRE_POSTGRES") == "1"


_ANSWERED: list[bool] = []  # once Postgres answered, this process takes it as there


def postgres_unavailable() -> None:
    """Skip (or, under ``.ci/run``, fail) when no Postgres answers at ``POSTGRES_URL``."""
    if _ANSWERED:
        return
    try:
        engine = sa.create_engine(POSTGRES_URL)
        try:
            with engine.connect() as conn:
                conn.execute(sa.text("select 1"))
        finally:
            engine.dispose()
    except Exception as exc:  # driver missing or server down
        message = (
            f"no Postgres at {POSTGRES_URL} ({type(exc).__name__}); start one or set "
            "CONTEXTQ_TEST_DATABASE_URL to run the Postgres leg"
        )
        if REQUIRE_POSTGRES:
            pytest.fail(message)
        pytest.skip(message)
    _ANSWERED.append(True)


@contextmanager
def postgres_schema() -> Iterator[str]:
    """A URL whose ``search_path`` is a fresh schema of its own, dropped afterwards."""
    postgres_unavailable()
    name = f"t_{uuid.uuid4().hex[:16]}"
    engine = sa.create_engine(POSTGRES_URL)
    with engine.begin() as conn:
        conn.execute(sa.text(f'create schema "{name}"'))
    url = sa.make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={name}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f'drop schema "{name}" cascade'))
        engine.dispose()


class StorePool:
    """One SQL store per kind for a whole worker, created on first use."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._stores: dict[str, SqlStore] = {}
        self._exits = ExitStack()

    def get(self, kind: str) -> SqlStore:
        store = self._stores.get(kind)
        if store is None:
            if kind == "sqlite":
                store = SqlStore(f"sqlite:///{self._directory / 'fake.db'}")
            elif kind == "postgres":
                store = SqlStore(self._exits.enter_context(postgres_schema()))
            else:
                raise ValueError(f"unknown store kind {kind!r}; one of {STORE_KINDS}")
            self._stores[kind] = store
        return store

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._exits.close()


def fresh_store(pool: StorePool, kind: str) -> Store | None:
    """An empty store of ``kind`` (``None`` for memory: the fake makes its own)."""
    if kind == "memory":
        return None
    if kind == "postgres":
        postgres_unavailable()
    store = pool.get(kind)
    store.reset()
    return store


# ----- white-box tampering, so the chain checks run on every store ----------------------------


def tamper_audit(store: Store, row_id: int, **changes: Any) -> None:
    """Rewrite one stored audit row behind the model's back."""
    if isinstance(store, MemoryStore):
        store.audit_rows()  # the rows chained so far
        rows = store._audit  # white-box on purpose
        index = next(i for i, row in enumerate(rows) if row.id == row_id)
        rows[index] = replace(rows[index], **changes)
    elif isinstance(store, SqlStore):
        t = s.activity_logs
        with store.engine.begin() as conn:
            conn.execute(sa.update(t).where(t.c.id == row_id).values(**changes))
    else:
        raise TypeError(f"cannot tamper with {type(store).__name__}")


def delete_audit(store: Store, row_id: int) -> None:
    """Remove one stored audit row behind the model's back."""
    if isinstance(store, MemoryStore):
        store.audit_rows()  # the rows chained so far
        rows = store._audit
        rows[:] = [row for row in rows if row.id != row_id]
    elif isinstance(store, SqlStore):
        t = s.activity_logs
        with store.engine.begin() as conn:
            conn.execute(sa.delete(t).where(t.c.id == row_id))
    else:
        raise TypeError(f"cannot tamper with {type(store).__name__}")
