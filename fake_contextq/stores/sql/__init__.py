"""``SqlStore``: the ``Store`` interface on SQLAlchemy Core, for SQLite or PostgreSQL.

Same meaning as ``MemoryStore``, method by method; the model keeps every rule. A
``transaction()`` is one database transaction that serialises writers as ``MemoryStore``'s
lock serialises threads (``sqlite``: ``BEGIN IMMEDIATE``; ``postgres``: an advisory lock of
the schema's); a lock not free within the store's timeout answers 503 ``database_busy``
naming it, instead of a hang. The store methods use the connection of the current
thread's transaction; nested ``transaction()`` calls join it. An exception leaving the
outermost block rolls everything back (``MemoryStore`` has no rollback; the model
validates before writing).

Lists and searches read a per-tenant cache of contexts that each store keeps in memory
and brings up to date from the rows written since (``contexts.revision`` against
``tenants.contexts_revision``): after no change that costs one indexed query, after a
write it reads only what changed, whichever process wrote it. Search ranks with the same
BM25 code as the memory store (``SearchIndex``), so scores and ties are identical.
Contexts written to the database by anything but a ``SqlStore`` do not bump the
revision, so such a row shows in lists and searches only after its tenant's next write.

Ids come from the database (identity columns, SQLite ``AUTOINCREMENT``), so rows inserted
by plain SQL, as the live fixtures provision tenants, users and keys, never collide with
the fake's.

``base`` holds what both dialects do alike, ``sqlite`` and ``postgres`` what differs;
``SqlStore(url)`` is the store of the dialect ``url`` names (importing this package
registers both).
"""

from __future__ import annotations

from fake_contextq.stores.sql._urls import database_url, redacted_url, url_secrets
from fake_contextq.stores.sql.base import (
    DEFAULT_CONNECTIONS,
    NoTransaction,
    SchemaVersionError,
    SqlStore,
)
from fake_contextq.stores.sql.postgres import PostgresStore, advisory_lock_key
from fake_contextq.stores.sql.sqlite import SqliteStore

__all__ = [
    "DEFAULT_CONNECTIONS",
    "NoTransaction",
    "PostgresStore",
    "SchemaVersionError",
    "SqlStore",
    "SqliteStore",
    "advisory_lock_key",
    "database_url",
    "redacted_url",
    "url_secrets",
]
