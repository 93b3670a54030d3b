"""The SQL that provisions and removes throwaway tenants on a dev stack's database.

Every table and column named here is one of ``fake_contextq/schema.py`` (a test checks
it), so the fake on Postgres and a real ContextQ are provisioned by the same statements;
where ContextQ's real schema differs, this module and that one change together.

Statements use ``%(name)s`` placeholders. Through psycopg they are sent as parameters;
through ``psql`` (``docker exec``) each value is rendered as a SQL literal by ``render``,
so both transports run the very same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

#: [seed] The dev stack's Postgres container, which ``docker exec`` reaches.
DEFAULT_CONTAINER: Final = "shared-context-postgres"
#: [assumed] psql's role and database inside that container.
DEFAULT_DB_USER: Final = "postgres"
DEFAULT_DB_NAME: Final = "postgres"

#: Every table and column the statements below use: checked against the schema module.
USES: Final[Mapping[str, tuple[str, ...]]] = {
    "tenants": ("id", "name", "plan", "created_at"),
    "users": ("id", "tenant_id", "email", "role", "created_at"),
    "api_keys": ("id", "tenant_id", "key_hash", "prefix", "scopes", "revoked", "created_at"),
    "activity_logs": ("tenant_id", "prev_hash"),
}

#: Proves the database answers (names no table).
PING: Final = "SELECT 1"

# [assumed] One atomic statement: a tenant, its owner user and one key, ids from the
# database.
PROVISION: Final = """
WITH t AS (
    INSERT INTO tenants (name, plan, created_at)
    VALUES (%(name)s, %(plan)s, now())
    RETURNING id
), u AS (
    INSERT INTO users (tenant_id, email, role, created_at)
    SELECT id, %(email)s, 'owner', now() FROM t
    RETURNING id
), k AS (
    INSERT INTO api_keys (tenant_id, key_hash, prefix, scopes, revoked, created_at)
    SELECT id, %(key_hash)s, %(prefix)s, CAST(%(scopes)s AS json), false, now() FROM t
    RETURNING id
)
SELECT t.id, u.id, k.id FROM t, u, k
"""

# [assumed] Another key for an existing tenant (the conformance suite's scope matrix).
MINT_KEY: Final = """
INSERT INTO api_keys (tenant_id, key_hash, prefix, scopes, revoked, created_at)
VALUES (%(tenant_id)s, %(key_hash)s, %(prefix)s, CAST(%(scopes)s AS json), false, now())
RETURNING id
"""

# [assumed] By the key row's id: a salted (bcrypt) hash cannot be found by equality.
REVOKE_KEY: Final = "UPDATE api_keys SET revoked = true WHERE id = %(key_id)s RETURNING id"

# What the API cannot show: how many audit rows a tenant produced.
COUNT_AUDIT: Final = "SELECT count(*) FROM activity_logs WHERE tenant_id = %(tenant_id)s"

SET_PLAN: Final = "UPDATE tenants SET plan = %(plan)s WHERE id = %(tenant_id)s RETURNING id"

DELETE_KEYS: Final = "DELETE FROM api_keys WHERE tenant_id = %(tenant_id)s RETURNING id"

DELETE_USERS: Final = "DELETE FROM users WHERE tenant_id = %(tenant_id)s RETURNING id"

# [seed] The tenant row goes only when the tenant has no chained audit row: the chain is
# global, so deleting a tenant that produced one would fork it for every later row. The
# check and the delete are one statement, so no write can slip in between.
DELETE_TENANT_UNLESS_CHAINED: Final = """
DELETE FROM tenants
WHERE id = %(tenant_id)s
  AND NOT EXISTS (
    SELECT 1 FROM activity_logs
    WHERE activity_logs.tenant_id = %(tenant_id)s AND activity_logs.prev_hash IS NOT NULL
  )
RETURNING id
"""

COUNT_CHAINED: Final = """
SELECT count(*) FROM activity_logs
WHERE tenant_id = %(tenant_id)s AND prev_hash IS NOT NULL
"""

# What cleanup leaves, for the tests and the reaper's report: keys, users, tenant rows.
COUNT_ROWS: Final = """
SELECT
  (SELECT count(*) FROM api_keys WHERE tenant_id = %(tenant_id)s),
  (SELECT count(*) FROM users WHERE tenant_id = %(tenant_id)s),
  (SELECT count(*) FROM tenants WHERE id = %(tenant_id)s)
"""

# The reaper's candidates: every tenant named like a throwaway one (LIKE's ``_`` and
# ``%`` do not occur in the prefix, so it needs no escaping).
THROWAWAY_TENANTS: Final = "SELECT id, name FROM tenants WHERE name LIKE %(pattern)s ORDER BY id"

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")

Value = str | int | bool | None | list[str]


def literal(value: Value) -> str:
    """``value`` as a PostgreSQL literal (standard_conforming_strings, the default since
    PostgreSQL 9.1: a backslash is an ordinary character)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        value = json.dumps(value)
    if "\x00" in value:
        raise ValueError("a SQL string literal cannot hold a NUL character")
    return "'" + value.replace("'", "''") + "'"


def render(statement: str, params: Mapping[str, Value]) -> str:
    """The statement with every placeholder replaced by its value's literal."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in params:
            raise KeyError(f"no value for %({name})s")
        return literal(params[name])

    return _PLACEHOLDER.sub(one, statement)


def driver_params(params: Mapping[str, Value]) -> dict[str, object]:
    """Parameters as psycopg takes them (a list becomes its JSON text, as ``render``)."""
    return {k: json.dumps(v) if isinstance(v, list) else v for k, v in params.items()}
