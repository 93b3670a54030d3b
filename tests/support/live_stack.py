"""A stand-in for a ContextQ dev stack, built from this project's own parts: the fake served
on Postgres (the machine's server, a schema of its own), reachable by DSN or through the
Docker Engine API stand-in as the container ``shared-context-postgres``."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from contextq_fixtures.live import KEY_COST_ENV, LiveConfig
from fake_contextq import FakeContextQ, ServedFake
from tests.support.docker_engine import DockerEngineStandIn, StandInContainer
from tests.support.stores import postgres_schema

CONTAINER = "shared-context-postgres"
#: bcrypt's lowest cost, for the keys tests mint (the default, 10, costs 60 ms a key to mint
#: and again to verify; test_live.py checks that a run without a setting mints at it).
TEST_KEY_COST = 4


@dataclass
class DevStack:
    fake: FakeContextQ
    served: ServedFake
    database_url: str  # SQLAlchemy form, for the fake
    dsn: str  # libpq form, for psycopg and psql
    schema: str
    docker_host: str | None = None

    def config(self, *, docker: bool = False, **overrides: object) -> LiveConfig:
        """What a downstream project would configure: the API URL and the database. Keys
        are minted at bcrypt's lowest cost, as in ``env``."""
        values: dict[str, object] = {
            "api_url": self.served.url,
            "key_cost": TEST_KEY_COST,
            "dsn": None if docker else self.dsn,
            "container": CONTAINER,
            "db_user": "postgres",
            "db_name": "test",
            "docker_host": self.docker_host if docker else None,
        }
        values.update(overrides)
        return LiveConfig(**values)  # type: ignore[arg-type]

    def env(self, *, docker: bool = False) -> dict[str, str]:
        """The same as environment variables, for a subprocess or pytester. Keys are
        minted at bcrypt's lowest cost: the stack verifies a key at the cost its hash
        holds, and cost 10 (the default, which test_live.py checks) costs 60 ms a key."""
        env = {"CONTEXT_API_URL": self.served.url, KEY_COST_ENV: str(TEST_KEY_COST)}
        if docker:
            assert self.docker_host is not None
            env |= {
                "DOCKER_HOST": self.docker_host,
                "CONTEXTQ_DB_CONTAINER": CONTAINER,
                "CONTEXTQ_DB_USER": "postgres",
                "CONTEXTQ_DB_NAME": "test",
            }
        else:
            env["CONTEXTQ_DB_DSN"] = self.dsn
        return env

    def scalar(self, sql: str, **params: object) -> object:
        engine = sa.create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                return conn.execute(sa.text(sql), params).scalar()
        finally:
            engine.dispose()


def _schema_of(database_url: str) -> str:
    options = sa.make_url(database_url).query["options"]
    assert isinstance(options, str)
    return options.removeprefix("-csearch_path=")


@contextmanager
def docker_engine_for(database_url: str) -> Iterator[DockerEngineStandIn]:
    """A Docker Engine API stand-in whose Postgres container runs psql on the schema of
    ``database_url`` (the machine's server)."""
    directory = Path(tempfile.mkdtemp(prefix="cq-docker-", dir="/tmp"))
    container = StandInContainer(
        name=CONTAINER,
        env={
            "PGHOST": "127.0.0.1",
            "PGPORT": "5432",
            "PGOPTIONS": f"-csearch_path={_schema_of(database_url)}",
        },
    )
    with DockerEngineStandIn(directory / "docker.sock", {CONTAINER: container}) as engine:
        yield engine


def libpq_dsn(database_url: str) -> str:
    return (
        sa.make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    )


@contextmanager
def dev_stack(*, with_docker: bool = False) -> Iterator[DevStack]:
    """The fake on a fresh Postgres schema, served on a free port; optionally a Docker
    Engine API stand-in whose Postgres container runs psql on that schema."""
    with ExitStack() as stack:
        url = stack.enter_context(postgres_schema())
        schema = _schema_of(url)
        fake = stack.enter_context(FakeContextQ(database_url=url))
        stack.callback(fake.store.close)  # type: ignore[attr-defined]
        served = stack.enter_context(fake.serve())
        docker_host = None
        if with_docker:
            docker_host = stack.enter_context(docker_engine_for(url)).base_url
        yield DevStack(fake, served, url, libpq_dsn(url), schema, docker_host)
