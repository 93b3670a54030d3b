"""Throwaway tenants on a live ContextQ dev stack, provisioned and cleaned up as the seed's
live e2e script does.

A tenant, an owner user and one read+write+admin key are INSERTed straight into the
stack's database (``tenant_sql``); the test gets the plaintext key, the database only
its hash. Cleanup, whatever happened: the tenant's contexts and workspaces through the
API, then the key row, then the user row, then the tenant row, but only when the tenant
has no chained audit row (the chain is global: deleting such a tenant would fork it), else
the row is left and a line says so. Names carry a prefix, the run's id and the creation
time, so ``reap`` can find what a killed run left and take away its keys and users.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

import httpx2

from adapter import ContextQClient, wire
from adapter._tls import default_ssl_context
from adapter.errors import AuthenticationError, ContextQConnectionError, redact
from contextq_fixtures import tenant_sql
from contextq_fixtures.database import (
    FOREIGN_KEY_VIOLATION,
    Database,
    DockerPsqlDatabase,
    DsnDatabase,
    LiveSetupError,
    one_row,
)
from fake_contextq.domain import keys
from fake_contextq.domain.quota import DEFAULT_PLAN

#: Every throwaway tenant's name starts with this.
TENANT_PREFIX: Final = "cqmt-live"
_STAMP: Final = "%Y%m%dT%H%M%SZ"
_NAME = re.compile(rf"^{TENANT_PREFIX}-(?P<run>[0-9a-f]{{8}})-(?P<at>\d{{8}}T\d{{6}}Z)-(?P<n>\d+)$")
#: A well-formed key that is never sent: it only lets ``check_api`` run the client's checks
#: of the API URL.
_PROBE_KEY: Final = wire.KEY_PREFIX + "0" * 40

#: How minted keys are stored: ``bcrypt`` (``keys.DEFAULT_KEY_HASH``) or ``sha256``.
KEY_HASH_ENV: Final = "CONTEXTQ_KEY_HASH"
#: The bcrypt cost minted keys are hashed at (``keys.LIVE_BCRYPT_ROUNDS`` unless set).
KEY_COST_ENV: Final = "CONTEXTQ_KEY_COST"

Report = Callable[[str], None]
TenantRowFate = Literal["deleted", "chained", "referenced"]


class CleanupError(RuntimeError):
    """Cleanup could not finish; the message lists every step that failed."""


def _digest(key: str) -> str:
    """How this run remembers a key it minted: never the plaintext itself."""
    return hashlib.sha256(key.encode()).hexdigest()


def _key_cost(raw: str) -> int:
    if not raw.strip():
        return keys.LIVE_BCRYPT_ROUNDS
    try:
        cost = int(raw)
    except ValueError:
        cost = -1
    if cost not in keys.BCRYPT_COSTS:
        raise LiveSetupError(
            f"{KEY_COST_ENV} must be a bcrypt cost, a whole number from "
            f"{keys.BCRYPT_COSTS.start} to {keys.BCRYPT_COSTS.stop - 1}, got {raw!r}"
        )
    return cost


def _key_hash_scheme(raw: str) -> str:
    scheme = raw.strip().lower() or keys.DEFAULT_KEY_HASH
    if scheme not in keys.KEY_HASH_SCHEMES:
        raise LiveSetupError(
            f"{KEY_HASH_ENV} must be one of {', '.join(keys.KEY_HASH_SCHEMES)}, got {raw!r}"
        )
    return scheme


@dataclass(frozen=True)
class LiveConfig:
    """Where the dev stack is. ``from_env`` reads the variables the docs list
    (docs/how-to/live-stack.md)."""

    api_url: str = "http://localhost:38200"
    dsn: str | None = None
    container: str = tenant_sql.DEFAULT_CONTAINER
    db_user: str = tenant_sql.DEFAULT_DB_USER
    db_name: str = tenant_sql.DEFAULT_DB_NAME
    docker_host: str | None = None
    reap_after: timedelta = timedelta(hours=1)
    timeout: float = 10.0
    mcp_url: str | None = None  # CONTEXTQ_MCP_URL; None: the API's origin + /mcp
    key_hash: str = keys.DEFAULT_KEY_HASH  # CONTEXTQ_KEY_HASH: how minted keys are stored
    key_cost: int = keys.LIVE_BCRYPT_ROUNDS  # CONTEXTQ_KEY_COST: bcrypt's cost for them

    @property
    def mcp_endpoint(self) -> str:
        """Where the stack's MCP server answers (streamable HTTP)."""
        from adapter import wire

        return self.mcp_url or self.api_url.rstrip("/") + wire.MCP_PATH

    def __repr__(self) -> str:  # the DSN's password, if any, never shows
        return (
            f"LiveConfig(api_url={redact(self.api_url)!r}, "
            f"dsn={None if self.dsn is None else redact(self.dsn)!r}, "
            f"container={self.container!r}, db_user={self.db_user!r}, "
            f"db_name={redact(self.db_name)!r}, "
            f"docker_host={None if self.docker_host is None else redact(self.docker_host)!r}, "
            f"reap_after={self.reap_after!r}, timeout={self.timeout!r}, "
            f"key_hash={self.key_hash!r}, key_cost={self.key_cost!r}, "
            f"mcp_url={None if self.mcp_url is None else redact(self.mcp_url)!r})"
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LiveConfig:
        env = os.environ if env is None else env
        defaults = cls()
        raw_age = env.get("CONTEXTQ_LIVE_REAP_AFTER", "")
        try:
            age = timedelta(seconds=float(raw_age)) if raw_age else defaults.reap_after
        except ValueError:
            raise LiveSetupError(
                f"CONTEXTQ_LIVE_REAP_AFTER must be a number of seconds, got {raw_age!r}"
            ) from None
        return cls(
            api_url=env.get("CONTEXT_API_URL") or defaults.api_url,
            dsn=env.get("CONTEXTQ_DB_DSN") or None,
            container=env.get("CONTEXTQ_DB_CONTAINER") or defaults.container,
            db_user=env.get("CONTEXTQ_DB_USER") or defaults.db_user,
            db_name=env.get("CONTEXTQ_DB_NAME") or defaults.db_name,
            docker_host=env.get("DOCKER_HOST") or None,
            reap_after=age,
            mcp_url=env.get("CONTEXTQ_MCP_URL") or None,
            key_hash=_key_hash_scheme(env.get(KEY_HASH_ENV, "")),
            key_cost=_key_cost(env.get(KEY_COST_ENV, "")),
        )

    def database(self) -> Database:
        """A DSN when one is given, else ``docker exec`` into the Postgres container."""
        if self.dsn:
            return DsnDatabase(self.dsn)
        return DockerPsqlDatabase(
            container=self.container,
            user=self.db_user,
            database=self.db_name,
            docker_host=self.docker_host,
        )


@dataclass(frozen=True)
class LiveTenant:
    """One throwaway tenant: what a test needs to talk to the stack as it."""

    base_url: str
    tenant_id: int
    name: str
    key: str = field(repr=False)
    user_id: int
    key_id: int
    client: ContextQClient = field(repr=False, compare=False)

    def __repr__(self) -> str:  # never the key
        return (
            f"LiveTenant(base_url={redact(self.base_url)!r}, tenant_id={self.tenant_id!r}, "
            f"name={self.name!r}, key=<hidden>, user_id={self.user_id!r}, "
            f"key_id={self.key_id!r})"
        )

    @property
    def env(self) -> dict[str, str]:
        """``CONTEXT_API_URL`` and ``CONTEXT_API_KEY``, for a subprocess."""
        return {"CONTEXT_API_URL": self.base_url, "CONTEXT_API_KEY": self.key}


def tenant_name(run_id: str, created: datetime, n: int) -> str:
    return f"{TENANT_PREFIX}-{run_id}-{created.astimezone(UTC).strftime(_STAMP)}-{n}"


def parse_tenant_name(name: str) -> tuple[str, datetime] | None:
    """The run id and creation time a throwaway tenant's name carries (None: not one)."""
    match = _NAME.match(name)
    if match is None:
        return None
    created = datetime.strptime(match["at"], _STAMP).replace(tzinfo=UTC)
    return match["run"], created


def _now() -> datetime:
    return datetime.now(UTC)


class LiveStack:
    """One run against a dev stack: its database, its run id, the tenants it made."""

    def __init__(
        self,
        config: LiveConfig,
        database: Database | None = None,
        *,
        report: Report = print,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.config = config
        self.database = database if database is not None else config.database()
        self.report = report
        self.clock = clock
        self.run_id = secrets.token_hex(4)
        self._made = 0
        self._key_ids: dict[str, int] = {}  # sha256 of each key minted here -> its row id

    def __repr__(self) -> str:
        return f"LiveStack(run_id={self.run_id!r}, config={self.config!r})"

    # ----- reachability ---------------------------------------------------------------

    def check(self) -> None:
        """Prove the stack is there before anything relies on it: the database runs a
        statement and the API answers (any HTTP status: no key is needed to be refused).
        Either failing is a ``LiveSetupError`` that says what could not be reached."""
        one_row(self.database.query(tenant_sql.PING, {}), "checking the database")
        self.check_api()

    def check_api(self) -> None:
        """The API answers HTTP at ``config.api_url`` (without a key: a 401 will do)."""
        shown = redact(self.config.api_url)
        where = f"ContextQ at {shown}"
        try:
            # the client's own checks of the URL (http(s), a host, no credentials in it)
            ContextQClient(_PROBE_KEY, base_url=self.config.api_url).close()
            url = self.config.api_url.rstrip("/") + wire.Routes.LIST_WORKSPACES.path()
            with httpx2.Client(timeout=self.config.timeout, verify=default_ssl_context()) as http:
                http.get(url, headers={"Accept": "application/json"})
        except ValueError as exc:
            raise LiveSetupError(f"cannot use {where}: {exc}; check CONTEXT_API_URL") from None
        except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
            raise LiveSetupError(
                f"cannot reach {where}: {redact(str(exc)) or type(exc).__name__}; is the dev "
                "stack running? (set CONTEXT_API_URL)"
            ) from None

    # ----- provisioning ---------------------------------------------------------------

    def provision(self, plan: str | None = None) -> LiveTenant:
        """A new throwaway tenant with one verified key; on any failure nothing is left."""
        self._made += 1
        name = tenant_name(self.run_id, self.clock(), self._made)
        key = wire.KEY_PREFIX + secrets.token_hex(20)
        # built first: a URL the client refuses leaves no rows behind
        client = ContextQClient(
            key, base_url=self.config.api_url, timeout=self.config.timeout, max_retries=1
        )
        try:
            row = self._insert_tenant(name, key, plan)
        except BaseException:
            client.close()
            raise
        tenant_id, user_id, key_id = (int(str(v)) for v in row)
        self._key_ids[_digest(key)] = key_id
        tenant = LiveTenant(self.config.api_url, tenant_id, name, key, user_id, key_id, client)
        try:
            self._verify(tenant)
        except BaseException as failure:
            left: list[str] = []
            self._remove_rows(tenant, left)
            client.close()
            for problem in left:
                failure.add_note(f"and removing the rows just made failed too: {problem}")
            raise
        return tenant

    def _insert_tenant(self, name: str, key: str, plan: str | None) -> tuple[str | None, ...]:
        return one_row(
            self.database.query(
                tenant_sql.PROVISION,
                {
                    "name": name,
                    "plan": plan or DEFAULT_PLAN,
                    "email": f"{name}@contextq-live.invalid",
                    "key_hash": self._hash(key),
                    "prefix": keys.key_display_prefix(key),
                    "scopes": list(wire.SCOPES),
                },
            ),
            "provisioning a throwaway tenant",
        )

    def _verify(self, tenant: LiveTenant) -> None:
        """One read with the minted key: proves the API and the schema assumption."""
        try:
            tenant.client.list_workspaces()
        except AuthenticationError as exc:
            raise LiveSetupError(
                f"ContextQ at {redact(tenant.base_url)} refused the key minted by direct INSERT "
                f"({exc.status} {exc.code}): the assumed api_keys columns or key hash "
                f"({self.config.key_hash}: {KEY_HASH_ENV}={self.config.key_hash}; "
                f"{KEY_HASH_ENV}=bcrypt|sha256 picks another, see fake_contextq/domain/keys.py) do "
                "not match this ContextQ's, or the API reads another database than "
                f"{self.database.description}"
            ) from None
        except ContextQConnectionError as exc:
            raise LiveSetupError(
                f"cannot reach ContextQ at {redact(tenant.base_url)}: {redact(str(exc))}; is the "
                "dev stack running? (set CONTEXT_API_URL)"
            ) from None

    def mint_key(self, tenant: LiveTenant, scopes: tuple[str, ...]) -> str:
        """Another key of a throwaway tenant, with exactly ``scopes`` (cleanup removes it
        with the others)."""
        key = wire.KEY_PREFIX + secrets.token_hex(20)
        rows = self.database.query(
            tenant_sql.MINT_KEY,
            {
                "tenant_id": tenant.tenant_id,
                "key_hash": self._hash(key),
                "prefix": keys.key_display_prefix(key),
                "scopes": list(scopes),
            },
        )
        (key_id,) = one_row(rows, "minting a key")
        self._key_ids[_digest(key)] = int(str(key_id))
        return key

    def _hash(self, key: str) -> str:
        """The key as the stack stores it: bcrypt at the real service's likely cost (or the
        cost ``CONTEXTQ_KEY_COST`` names), or the scheme ``CONTEXTQ_KEY_HASH`` names."""
        return keys.hash_key(key, self.config.key_hash, rounds=self.config.key_cost)

    def revoke_key(self, key: str) -> None:
        """Revoke a key by SQL, as an admin of the stack would: by its row's id (a salted
        hash cannot be matched in SQL), known for every key this run minted."""
        key_id = self._key_ids.get(_digest(key))
        if key_id is None:
            raise LiveSetupError("revoke_key: that key was not minted by this run")
        rows = self.database.query(tenant_sql.REVOKE_KEY, {"key_id": key_id})
        one_row(rows, "revoking a key")

    def audit_rows(self, tenant: LiveTenant) -> int:
        """How many audit rows the tenant has produced (the API does not show them)."""
        (count,) = one_row(
            self.database.query(tenant_sql.COUNT_AUDIT, {"tenant_id": tenant.tenant_id}),
            "counting audit rows",
        )
        return int(str(count))

    def set_plan(self, tenant: LiveTenant, plan: str) -> None:
        """Move a throwaway tenant to another plan (for quota tests), by SQL."""
        found = self.database.query(
            tenant_sql.SET_PLAN, {"plan": plan, "tenant_id": tenant.tenant_id}
        )
        if not found:
            raise LiveSetupError(f"tenant {tenant.name} (id {tenant.tenant_id}) is gone")

    @contextmanager
    def tenant(self, plan: str | None = None) -> Iterator[LiveTenant]:
        """A throwaway tenant for the block, cleaned up however the block ends. A cleanup
        failure after a failing block is attached to the block's exception as a note, so
        the block's own failure is what is reported."""
        tenant = self.provision(plan)
        try:
            yield tenant
        except BaseException as failure:
            try:
                self.cleanup(tenant)
            except Exception as also:  # the block's failure is the one to report
                failure.add_note(f"and cleanup failed too: {also}")
            raise
        self.cleanup(tenant)

    # ----- cleanup --------------------------------------------------------------------

    def cleanup(self, tenant: LiveTenant) -> None:
        """The seed's order: contexts and workspaces through the API, then the key row, the
        user row, and the tenant row unless it has chained audit rows. Every step runs even
        if one before it failed; the failures are raised together at the end."""
        failures: list[str] = []
        removed = self._remove_through_api(tenant, failures)
        tenant.client.close()
        self._remove_rows(tenant, failures, removed)
        if failures:
            raise CleanupError(
                f"cleanup of tenant {tenant.name} (id {tenant.tenant_id}): " + "; ".join(failures)
            )

    def _remove_through_api(self, tenant: LiveTenant, failures: list[str]) -> str:
        contexts = workspaces = 0
        try:
            for summary in list(tenant.client.iter_contexts()):
                tenant.client.delete_context(summary.id)
                contexts += 1
            for workspace in tenant.client.list_workspaces():
                tenant.client.delete_workspace(workspace.slug)
                workspaces += 1
        except Exception as exc:  # whatever it was, the rows below must still go
            failures.append(
                f"deleting its contexts and workspaces through the API: {exc or type(exc).__name__}"
            )
        return f"{_count(contexts, 'context')}, {_count(workspaces, 'workspace')}"

    def _remove_rows(self, tenant: LiveTenant, failures: list[str], removed: str = "") -> None:
        steps = [
            ("key", tenant_sql.DELETE_KEYS),
            ("user", tenant_sql.DELETE_USERS),
        ]
        done = [removed] if removed else []
        for what, statement in steps:
            try:
                rows = self.database.query(statement, {"tenant_id": tenant.tenant_id})
                done.append(_count(len(rows), what))
            except LiveSetupError as exc:
                failures.append(f"deleting its {what} rows: {exc}")
        try:
            kept = self._remove_tenant_row(tenant.tenant_id, tenant.name)
        except LiveSetupError as exc:
            failures.append(f"deleting its tenant row: {exc}")
            return
        done.append("tenant row kept" if kept else "tenant row deleted")
        self.report(
            f"contextq live: cleaned up {tenant.name} (id {tenant.tenant_id}): " + ", ".join(done)
        )

    def _delete_tenant_row(self, tenant_id: int) -> TenantRowFate:
        """Delete the tenant row unless the chain forbids it (``chained``) or other rows
        still refer to it (``referenced``: e.g. agent sessions, which no endpoint deletes,
        or the audit log's very first row)."""
        try:
            deleted = self.database.query(
                tenant_sql.DELETE_TENANT_UNLESS_CHAINED, {"tenant_id": tenant_id}
            )
        except LiveSetupError as exc:
            if exc.sqlstate != FOREIGN_KEY_VIOLATION:
                raise
            return "referenced"
        return "deleted" if deleted else "chained"

    def _remove_tenant_row(self, tenant_id: int, name: str) -> bool:
        """Delete the tenant row where allowed, else say why it stays; True when kept."""
        fate = self._delete_tenant_row(tenant_id)
        if fate == "deleted":
            return False
        if fate == "referenced":
            self.report(
                f"contextq live: left tenant {name} (id {tenant_id}) in place: other rows "
                "still refer to it (rows the API cannot delete, or the audit log's first "
                "row); its keys and users are gone"
            )
            return True
        (chained,) = one_row(
            self.database.query(tenant_sql.COUNT_CHAINED, {"tenant_id": tenant_id}),
            "counting chained audit rows",
        )
        self.report(
            f"contextq live: left tenant {name} (id {tenant_id}) in place: it has {chained} "
            "chained audit row(s), and the audit chain is global, so deleting it would fork "
            "the chain for every later row (its keys and users are gone)"
        )
        return True

    def rows_left(self, tenant_id: int) -> tuple[int, int, int]:
        """How many key, user and tenant rows a tenant still has (for tests and checks)."""
        keys, users, tenants = one_row(
            self.database.query(tenant_sql.COUNT_ROWS, {"tenant_id": tenant_id}), "counting rows"
        )
        return int(str(keys)), int(str(users)), int(str(tenants))

    # ----- the reaper -----------------------------------------------------------------

    def reap(self) -> list[str]:
        """Strip the keys and users (and tenant rows, where the chain allows) of throwaway
        tenants older than ``reap_after`` that other runs left, e.g. killed ones. Returns
        and reports one line per tenant that lost anything."""
        cutoff = self.clock() - self.config.reap_after
        lines: list[str] = []
        candidates = self.database.query(
            tenant_sql.THROWAWAY_TENANTS, {"pattern": f"{TENANT_PREFIX}-%"}
        )
        for raw_id, name in candidates:
            parsed = parse_tenant_name(str(name))
            if parsed is None or raw_id is None:
                continue
            run_id, created = parsed
            if run_id == self.run_id or created > cutoff:
                continue
            tenant_id = int(raw_id)
            try:
                line = self._reap_one(tenant_id, str(name), run_id, created)
            except LiveSetupError as exc:
                line = f"contextq live: could not reap {name} (id {tenant_id}): {exc}"
            if line:
                lines.append(line)
                self.report(line)
        return lines

    def _reap_one(self, tenant_id: int, name: str, run_id: str, created: datetime) -> str:
        keys = len(self.database.query(tenant_sql.DELETE_KEYS, {"tenant_id": tenant_id}))
        users = len(self.database.query(tenant_sql.DELETE_USERS, {"tenant_id": tenant_id}))
        deleted = self._delete_tenant_row(tenant_id) == "deleted"
        if not (keys or users or deleted):
            return ""
        return (
            f"contextq live: reaped {name} (id {tenant_id}, created {created:%Y-%m-%d %H:%M}Z "
            f"by run {run_id}): {_count(keys, 'key')}, {_count(users, 'user')}, tenant row "
            + ("deleted" if deleted else "kept (chained audit rows, or rows that refer to it)")
        )

    def close(self) -> None:
        self.database.close()


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")
