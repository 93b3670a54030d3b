"""Two ways to reach a dev stack's database: a DSN (psycopg), or ``docker exec`` into its
Postgres container running ``psql`` (the ``docker`` SDK). Both run the statements of
``tenant_sql`` and give back rows of text; both turn every failure into a
``LiveSetupError`` that says what to check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

from adapter.errors import redact
from contextq_fixtures import tenant_sql

#: psql prints NULL as this (``-P null=...``), which no value of ours can be.
_NULL = "\x1bNULL\x1b"
#: psql's field separator in unaligned output (a unit separator).
_SEP = "\x1f"


class LiveSetupError(RuntimeError):
    """The live stack could not be reached or used; the message says what to check.
    ``sqlstate`` is PostgreSQL's error code when a statement failed."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


#: PostgreSQL's SQLSTATE for a foreign key violation.
FOREIGN_KEY_VIOLATION = "23503"


Row = tuple[str | None, ...]


class Database(Protocol):
    """Where throwaway tenants are provisioned: one statement at a time, committed."""

    description: str

    def query(self, statement: str, params: Mapping[str, tenant_sql.Value]) -> list[Row]: ...

    def close(self) -> None: ...


@dataclass
class DsnDatabase:
    """A database reached with psycopg through a libpq DSN or URL (``CONTEXTQ_DB_DSN``)."""

    dsn: str = field(repr=False)
    connect_timeout: float = 10.0
    description: str = field(init=False)
    _conn: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.description = f"the database at {redact(self.dsn)}"

    def __repr__(self) -> str:  # the DSN's password never shows
        return f"DsnDatabase(dsn={redact(self.dsn)!r}, connect_timeout={self.connect_timeout!r})"

    def _said(self, exc: BaseException) -> str:
        """The first line of a driver's error, with the DSN's password masked however the
        driver quoted it."""
        return _first_line(exc, secrets=_passwords(self.dsn))

    def _connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            try:
                import psycopg
            except ImportError:
                raise LiveSetupError(
                    "CONTEXTQ_DB_DSN needs psycopg: pip install 'contextq-memory-tool[live]'"
                ) from None
            try:
                self._conn = psycopg.connect(
                    self.dsn, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
                )
            except psycopg.Error as exc:
                raise LiveSetupError(
                    f"cannot connect to {self.description}: {self._said(exc)}; check "
                    "CONTEXTQ_DB_DSN and that the dev stack's Postgres is up"
                ) from None
        return self._conn

    def query(self, statement: str, params: Mapping[str, tenant_sql.Value]) -> list[Row]:
        conn = self._connection()  # first: it explains a missing psycopg
        import psycopg

        try:
            with conn.cursor() as cursor:
                cursor.execute(statement, tenant_sql.driver_params(params))
                found = cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            raise LiveSetupError(
                f"SQL on {self.description} failed: {self._said(exc)}",
                sqlstate=getattr(exc, "sqlstate", None),
            ) from None
        return [tuple(None if v is None else str(v) for v in row) for row in found]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@dataclass
class DockerPsqlDatabase:
    """``psql`` run by ``docker exec`` in the dev stack's Postgres container, as the seed's
    script reaches it. ``docker_host`` overrides ``DOCKER_HOST``; ``database`` may be a
    name or a libpq URL; ``env`` is passed to ``psql`` (e.g. ``PGPASSWORD``)."""

    container: str = tenant_sql.DEFAULT_CONTAINER
    user: str = tenant_sql.DEFAULT_DB_USER
    database: str = tenant_sql.DEFAULT_DB_NAME
    docker_host: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    description: str = field(init=False)
    _client: Any = field(default=None, init=False, repr=False)
    _container: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.description = f"psql in the Docker container {self.container!r}"

    def __repr__(self) -> str:  # a password in the database URL or in env never shows
        host = None if self.docker_host is None else redact(self.docker_host)
        return (
            f"DockerPsqlDatabase(container={self.container!r}, user={self.user!r}, "
            f"database={redact(self.database)!r}, docker_host={host!r}, "
            f"env=<{len(self.env)} variable(s) hidden>, timeout={self.timeout!r})"
        )

    def _target(self) -> Any:
        if self._container is not None:
            return self._container
        try:
            import docker
            import docker.errors
        except ImportError:
            raise LiveSetupError(
                "reaching the database by docker exec needs the docker package: pip install "
                "'contextq-memory-tool[live]' (or set CONTEXTQ_DB_DSN to connect directly)"
            ) from None
        where = self.docker_host or "DOCKER_HOST or the default socket"
        try:
            if self.docker_host is not None:
                self._client = docker.DockerClient(base_url=self.docker_host, timeout=30)
            else:
                self._client = docker.from_env(timeout=30)
        except docker.errors.DockerException as exc:
            raise LiveSetupError(
                f"cannot reach Docker ({where}): {_first_line(exc)}; is Docker running and "
                "may this user use its socket? (or set CONTEXTQ_DB_DSN to skip Docker)"
            ) from None
        try:
            self._container = self._client.containers.get(self.container)
        except docker.errors.NotFound:
            raise LiveSetupError(
                f"Docker has no container named {self.container!r}; is the dev stack up? "
                "(set CONTEXTQ_DB_CONTAINER to its Postgres container's name)"
            ) from None
        except docker.errors.DockerException as exc:
            raise LiveSetupError(f"cannot reach Docker ({where}): {_first_line(exc)}") from None
        return self._container

    def query(self, statement: str, params: Mapping[str, tenant_sql.Value]) -> list[Row]:
        container = self._target()  # first: it explains a missing docker package
        import docker.errors

        sql = tenant_sql.render(statement, params)
        argv = [
            "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose",
            "-F", _SEP, "-P", f"null={_NULL}",
            "-U", self.user, "-d", self.database, "-c", sql,
        ]  # fmt: skip
        try:
            result = container.exec_run(argv, demux=True, environment=dict(self.env))
        except docker.errors.DockerException as exc:
            raise LiveSetupError(
                f"docker exec into {self.container!r} failed: {_first_line(exc)}"
            ) from None
        stdout, stderr = result.output if result.output is not None else (None, None)
        out = (stdout or b"").decode("utf-8", "replace")
        err = (stderr or b"").decode("utf-8", "replace").strip()
        if result.exit_code != 0:
            state = re.search(r"ERROR:\s+([0-9A-Z]{5}):", err)
            raise LiveSetupError(
                f"{self.description} failed (exit {result.exit_code}): "
                f"{_masked(err.splitlines()[0], self._secrets()) if err else 'no message'}; check "
                f"CONTEXTQ_DB_USER ({self.user!r}) and CONTEXTQ_DB_NAME "
                f"({redact(self.database)!r})",
                sqlstate=state.group(1) if state else None,
            )
        return [_parse_row(line) for line in out.splitlines() if line]

    def _secrets(self) -> list[str]:
        found = _passwords(self.database)
        found += [v for k, v in self.env.items() if "PASSWORD" in k.upper() and v]
        return found

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = self._container = None


def _parse_row(line: str) -> Row:
    return tuple(None if cell == _NULL else cell for cell in line.split(_SEP))


def _first_line(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    text = str(exc).strip()
    return _masked(text.splitlines()[0], secrets) if text else type(exc).__name__


def _masked(text: str, secrets: Sequence[str]) -> str:
    """``text`` with passwords in any URL form masked, and each known secret too."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact(text)


def _passwords(dsn: str) -> list[str]:
    """The password a DSN or URL carries, as written and as decoded (for masking)."""
    found = re.findall(r"://[^\s/?#@:]*:([^\s/?#]*)@", dsn)
    found += [m.strip("'\"") for m in re.findall(r"(?i)\bpassword\s*=\s*('[^']*'|[^\s&#]+)", dsn)]
    return [p for p in {*found, *(unquote(p) for p in found)} if len(p) >= 3]


def one_row(rows: Sequence[Row], what: str) -> Row:
    if len(rows) != 1:
        raise LiveSetupError(f"{what}: expected one row, got {len(rows)}")
    return rows[0]
