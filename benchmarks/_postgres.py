"""A scratch schema on the local Postgres, for the sections that set the SQL stores beside
the memory store."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from _registry import Bench


@contextlib.contextmanager
def postgres_schema(bench: Bench) -> Iterator[str | None]:
    """A database URL for a fresh schema on the local Postgres (``CONTEXTQ_BENCH_DATABASE_URL``
    or the tests' server), dropped afterwards; None, with a note, when no server answers."""
    import os
    import uuid

    import sqlalchemy as sa

    from fake_contextq.stores.sql import database_url

    pg_url = os.environ.get(
        "CONTEXTQ_BENCH_DATABASE_URL",
        os.environ.get("CONTEXTQ_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        admin = sa.create_engine(database_url(pg_url))
        with admin.begin() as conn:
            conn.execute(sa.text(f'create schema "{schema}"'))
    except Exception as exc:  # no server: the other rows still run
        bench.note(f"no Postgres at {pg_url} ({type(exc).__name__}); Postgres rows skipped")
        yield None
        return
    try:
        yield (
            database_url(pg_url)
            .update_query_dict({"options": f"-csearch_path={schema}"})
            .render_as_string(hide_password=False)
        )
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'drop schema "{schema}" cascade'))
        admin.dispose()
