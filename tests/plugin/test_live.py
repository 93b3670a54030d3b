"""Throwaway tenants on a dev stack: the fake served on Postgres stands in for ContextQ,
reached by DSN and by ``docker exec`` through a Docker Engine API stand-in."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from adapter import ContextQClient, wire
from adapter.errors import AuthenticationError
from contextq_fixtures import tenant_sql
from contextq_fixtures.database import DockerPsqlDatabase, DsnDatabase, LiveSetupError
from contextq_fixtures.live import (
    KEY_COST_ENV,
    KEY_HASH_ENV,
    LiveConfig,
    LiveStack,
    LiveTenant,
    parse_tenant_name,
    tenant_name,
)
from fake_contextq.domain import keys
from fake_contextq.stores import schema
from tests.support.live_stack import CONTAINER, DevStack, dev_stack


@pytest.fixture(scope="module")
def stack() -> Iterator[DevStack]:
    with dev_stack(with_docker=True) as made:
        yield made


@pytest.fixture(params=["dsn", "docker"])
def live(request: pytest.FixtureRequest, stack: DevStack) -> Iterator[LiveStack]:
    """The same stack reached both ways; ``said`` holds every line it reported."""
    said: list[str] = []
    made = LiveStack(stack.config(docker=request.param == "docker"), report=said.append)
    made.said = said  # type: ignore[attr-defined]
    yield made
    made.close()


def said(live: LiveStack) -> list[str]:
    lines: list[str] = live.said  # type: ignore[attr-defined]
    return lines


def test_the_sql_names_only_tables_and_columns_of_the_schema_module() -> None:
    for table, columns in tenant_sql.USES.items():
        assert table in schema.metadata.tables, table
        missing = set(columns) - set(schema.metadata.tables[table].c.keys())
        assert not missing, (table, missing)


def test_a_provisioned_tenant_has_one_working_key_and_an_owner(
    live: LiveStack, stack: DevStack
) -> None:
    tenant = live.provision()
    assert parse_tenant_name(tenant.name) == (live.run_id, parse_tenant_name(tenant.name)[1])  # type: ignore[index]
    assert tenant.key.startswith("sk_live_") and tenant.key not in repr(tenant)
    assert live.rows_left(tenant.tenant_id) == (1, 1, 1)
    stored_hash = stack.scalar(
        "select key_hash from api_keys where tenant_id = :t", t=tenant.tenant_id
    )
    assert stored_hash != tenant.key and tenant.key not in str(stored_hash)  # only its hash
    role = stack.scalar("select role from users where tenant_id = :t", t=tenant.tenant_id)
    assert role == "owner"
    assert tenant.client.list_contexts().total == 0  # starts empty, on the free plan
    workspace = tenant.client.create_workspace("scratch")  # admin scope
    assert workspace.slug == "scratch"
    live.cleanup(tenant)


def test_a_tenant_can_start_on_another_plan_or_move_to_one(
    live: LiveStack, stack: DevStack
) -> None:
    pro = live.provision(plan="pro")
    assert stack.scalar("select plan from tenants where id = :t", t=pro.tenant_id) == "pro"
    live.set_plan(pro, "free")
    assert stack.scalar("select plan from tenants where id = :t", t=pro.tenant_id) == "free"
    live.cleanup(pro)
    with pytest.raises(LiveSetupError, match="is gone"):
        live.set_plan(pro, "pro")


def test_more_keys_with_fewer_scopes_work_and_go_with_the_tenant(live: LiveStack) -> None:
    from adapter import ContextQClient
    from adapter.errors import ScopeDeniedError

    tenant = live.provision()
    reader = live.mint_key(tenant, ("read",))
    with ContextQClient(reader, base_url=tenant.base_url) as client:
        assert client.list_contexts().total == 0
        with pytest.raises(ScopeDeniedError):
            client.create_context(type="reference", title="t", content="c")
    assert live.rows_left(tenant.tenant_id)[0] == 2
    live.cleanup(tenant)
    assert live.rows_left(tenant.tenant_id) == (0, 0, 0)


def test_a_tenant_that_wrote_nothing_is_deleted_whole(live: LiveStack) -> None:
    tenant = live.provision()
    tenant.client.list_workspaces()
    live.cleanup(tenant)
    assert live.rows_left(tenant.tenant_id) == (0, 0, 0)
    assert said(live)[-1].endswith("0 contexts, 0 workspaces, 1 key, 1 user, tenant row deleted")


def test_a_tenant_with_chained_audit_rows_is_kept_with_a_line_saying_so(
    live: LiveStack, stack: DevStack
) -> None:
    tenant = live.provision()
    tenant.client.create_workspace("ws")
    tenant.client.create_context(type="reference", title="t", content="c", workspace="ws")
    tenant.client.create_context(type="reference", title="u", content="d")
    live.cleanup(tenant)
    assert live.rows_left(tenant.tenant_id) == (0, 0, 1)  # no key, no user; the row stays
    assert (
        stack.scalar("select count(*) from contexts where tenant_id = :t", t=tenant.tenant_id) == 0
    )
    assert (
        stack.scalar("select count(*) from workspaces where tenant_id = :t", t=tenant.tenant_id)
        == 0
    )
    chained = stack.scalar(
        "select count(*) from activity_logs where tenant_id = :t and prev_hash is not null",
        t=tenant.tenant_id,
    )
    assert chained in (5, 6)  # six writes; the first row of a fresh log has no prev_hash
    left = [line for line in said(live) if "left tenant" in line]
    assert left == [
        f"contextq live: left tenant {tenant.name} (id {tenant.tenant_id}) in place: it has "
        f"{chained} chained audit row(s), and the audit chain is global, so deleting it would "
        "fork the chain for every later row (its keys and users are gone)"
    ]
    assert said(live)[-1].endswith("2 contexts, 1 workspace, 1 key, 1 user, tenant row kept")
    assert stack.fake.verify_audit_chain() > 0  # the chain is whole


@pytest.mark.parametrize("docker", [False, True])
def test_a_tenant_that_other_rows_still_refer_to_is_kept_not_an_error(docker: bool) -> None:
    """On a fresh stack the tenant's one write is the log's first row (no prev_hash, so
    not chained), but its agent session, which no endpoint deletes, refers to it."""
    with dev_stack(with_docker=docker) as fresh:
        lines: list[str] = []
        live = LiveStack(fresh.config(docker=docker), report=lines.append)
        tenant = live.provision()
        tenant.client.start_session()
        live.cleanup(tenant)
        assert live.rows_left(tenant.tenant_id) == (0, 0, 1)
        assert lines[0] == (
            f"contextq live: left tenant {tenant.name} (id {tenant.tenant_id}) in place: other "
            "rows still refer to it (rows the API cannot delete, or the audit log's first "
            "row); its keys and users are gone"
        )
        live.close()


def test_an_exception_after_provisioning_still_cleans_up(live: LiveStack) -> None:
    seen: list[LiveTenant] = []

    def blow_up() -> None:
        with live.tenant() as tenant:
            seen.append(tenant)
            tenant.client.create_context(type="reference", title="t", content="c")
            assert live.rows_left(tenant.tenant_id) == (1, 1, 1)
            raise RuntimeError("the test blew up")

    with pytest.raises(RuntimeError, match="the test blew up") as caught:
        blow_up()
    (tenant,) = seen
    assert live.rows_left(tenant.tenant_id) == (0, 0, 1)
    assert not getattr(caught.value, "__notes__", None)  # cleanup itself went fine


def test_a_cleanup_failure_does_not_hide_the_tests_failure_and_rows_still_go(
    live: LiveStack,
) -> None:
    seen: list[LiveTenant] = []

    def fail() -> None:
        with live.tenant() as tenant:
            seen.append(tenant)
            tenant.client.create_context(type="reference", title="t", content="c")
            tenant.client.close()  # the API is now out of reach for cleanup
            raise AssertionError("the test's own failure")

    with pytest.raises(AssertionError, match="the test's own failure") as caught:
        fail()
    (tenant,) = seen
    (note,) = caught.value.__notes__
    assert note.startswith(f"and cleanup failed too: cleanup of tenant {tenant.name}")
    assert "through the API" in note
    assert live.rows_left(tenant.tenant_id) == (0, 0, 1)  # key and user gone regardless


def test_an_unreachable_api_is_a_clear_error_and_leaves_nothing(
    live: LiveStack, stack: DevStack
) -> None:
    before = stack.scalar("select count(*) from api_keys")
    offline = LiveStack(replace(live.config, api_url="http://127.0.0.1:9"), live.database)
    with pytest.raises(LiveSetupError, match=r"cannot reach ContextQ at http://127.0.0.1:9"):
        offline.provision()
    assert stack.scalar("select count(*) from api_keys") == before
    assert (
        stack.scalar("select count(*) from users where email like :p", p=f"%{offline.run_id}%") == 0
    )


def test_an_api_that_refuses_the_minted_key_is_a_clear_error_and_leaves_nothing() -> None:
    """The schema assumption is wrong (here: the API reads another database): 401."""
    with dev_stack() as api_side, dev_stack() as db_side:
        config = db_side.config(api_url=api_side.served.url)
        live = LiveStack(config, report=lambda _: None)
        with pytest.raises(LiveSetupError, match="refused the key minted by direct INSERT") as e:
            live.provision()
        assert "401" in str(e.value) and "CONTEXTQ_KEY_HASH=bcrypt" in str(e.value)
        assert db_side.scalar("select count(*) from api_keys") == 0
        assert db_side.scalar("select count(*) from users") == 0
        assert db_side.scalar("select count(*) from tenants") == 0
        live.close()


def test_an_unreachable_database_is_one_clear_line(stack: DevStack) -> None:
    config = stack.config(dsn="postgresql://postgres@127.0.0.1:1/test")
    with pytest.raises(
        LiveSetupError,
        match=r"cannot connect to the database at postgresql://postgres@127.0.0.1:1/test",
    ):
        LiveStack(config).provision()
    config = stack.config(dsn="postgresql://me:s3cret@127.0.0.1:1/test")
    with pytest.raises(LiveSetupError) as caught:
        LiveStack(config).provision()
    assert "s3cret" not in str(caught.value)


# ----- the reaper ------------------------------------------------------------------------


def _old_tenant(live: LiveStack, hours: float, *, write: bool) -> LiveTenant:
    """A tenant as a run killed ``hours`` ago left it: provisioned, never cleaned up."""
    killed = LiveStack(
        live.config, live.database, clock=lambda: datetime.now(UTC) - timedelta(hours=hours)
    )
    tenant = killed.provision()
    if write:
        tenant.client.create_context(type="reference", title="t", content="c")
    tenant.client.close()
    return tenant


def test_the_reaper_strips_old_leftovers_of_other_runs_and_says_what(live: LiveStack) -> None:
    chained = _old_tenant(live, 3, write=True)
    clean = _old_tenant(live, 2, write=False)
    young = _old_tenant(live, 0.1, write=False)
    mine = live.provision()
    lines = live.reap()
    assert live.rows_left(chained.tenant_id) == (0, 0, 1)
    assert live.rows_left(clean.tenant_id) == (0, 0, 0)
    assert live.rows_left(young.tenant_id) == (1, 1, 1)  # younger than the stated age
    assert live.rows_left(mine.tenant_id) == (1, 1, 1)  # this run's own
    assert [line.split(" (id")[0] for line in lines] == [
        f"contextq live: reaped {chained.name}",
        f"contextq live: reaped {clean.name}",
    ]
    assert lines[0].endswith(
        "1 key, 1 user, tenant row kept (chained audit rows, or rows that refer to it)"
    )
    assert lines[1].endswith("1 key, 1 user, tenant row deleted")
    assert live.reap() == []  # nothing left to say the second time
    live.cleanup(mine)
    LiveStack(replace(live.config, reap_after=timedelta(0)), live.database).reap()
    assert live.rows_left(young.tenant_id) == (0, 0, 0)


def test_names_carry_the_prefix_the_run_and_the_time() -> None:
    at = datetime(2026, 11, 30, 8, 15, 42, tzinfo=UTC)
    name = tenant_name("0badcafe", at, 3)
    assert name == "cqmt-live-0badcafe-20261130T081542Z-3"
    assert parse_tenant_name(name) == ("0badcafe", at)
    assert parse_tenant_name("cqmt-live-nothex00-20261130T081542Z-3") is None
    assert parse_tenant_name("acme") is None


_KILLED_RUN = """
import sys, time
from contextq_fixtures.live import LiveConfig, LiveStack
live = LiveStack(LiveConfig(api_url=sys.argv[1], dsn=sys.argv[2]))
tenant = live.provision()
print(tenant.tenant_id, flush=True)
time.sleep(60)
"""


@pytest.mark.slow  # a subprocess: not in --quick
def test_a_run_killed_with_sigkill_leaves_nothing_usable_after_the_reap(
    live: LiveStack, stack: DevStack
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN, stack.served.url, stack.dsn],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert proc.stdout is not None
    tenant_id = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert live.rows_left(tenant_id) == (1, 1, 1)  # no finally ran
    expired = LiveStack(
        replace(live.config, reap_after=timedelta(0)), live.database, report=lambda _: None
    )
    assert len(expired.reap()) >= 1
    assert live.rows_left(tenant_id) == (0, 0, 0)


# ----- docker exec: what goes wrong is one message naming what to check --------------------


def test_docker_without_a_socket_says_so() -> None:
    database = DockerPsqlDatabase(docker_host="unix:///tmp/no-such-docker.sock")
    with pytest.raises(
        LiveSetupError, match=r"cannot reach Docker \(unix:///tmp/no-such-docker.sock\)"
    ):
        database.query("select 1", {})


def test_docker_without_the_container_says_which_name_to_set(stack: DevStack) -> None:
    database = DockerPsqlDatabase(container="no-such-postgres", docker_host=stack.docker_host)
    with pytest.raises(
        LiveSetupError, match=r"no container named 'no-such-postgres'.*CONTEXTQ_DB_CONTAINER"
    ):
        database.query("select 1", {})


def test_psql_failing_in_the_container_says_what_to_check(stack: DevStack) -> None:
    database = DockerPsqlDatabase(
        container=CONTAINER, database="no_such_database", docker_host=stack.docker_host
    )
    with pytest.raises(
        LiveSetupError,
        match=r"psql in the Docker container .* failed \(exit 2\): "
        r".*no_such_database.*CONTEXTQ_DB_NAME",
    ):
        database.query("select 1", {})


def test_psql_and_psycopg_read_the_same_rows(stack: DevStack) -> None:
    docker = DockerPsqlDatabase(container=CONTAINER, database="test", docker_host=stack.docker_host)
    statement = "select %(a)s::text, %(b)s::int, %(c)s::text, %(d)s::json::text"
    params: dict[str, tenant_sql.Value] = {"a": "it's \\ a|b", "b": 7, "c": None, "d": ["x", "y"]}
    dsn = DsnDatabase(stack.dsn)
    assert docker.query(statement, params) == dsn.query(statement, params)
    assert docker.query(statement, params) == [("it's \\ a|b", "7", None, '["x", "y"]')]
    dsn.close()
    docker.close()


@pytest.mark.slow  # a subprocess: not in --quick
def test_without_the_docker_package_it_says_how_to_get_it_or_avoid_it() -> None:
    code = (
        "import sys; sys.modules['docker'] = None\n"
        "from contextq_fixtures.database import DockerPsqlDatabase, LiveSetupError\n"
        "try:\n"
        "    DockerPsqlDatabase().query('select 1', {})\n"
        "except LiveSetupError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == (
        "reaching the database by docker exec needs the docker package: pip install "
        "'contextq-memory-tool[live]' (or set CONTEXTQ_DB_DSN to connect directly)"
    )


# ----- keys as the public docs describe them: bcrypt, found by prefix, revoked by id --------


def test_minted_keys_are_bcrypt_at_the_real_services_likely_cost(stack: DevStack) -> None:
    """Without ``CONTEXTQ_KEY_COST`` (which the other tests set to bcrypt's lowest)."""
    env = {k: v for k, v in stack.env().items() if k != KEY_COST_ENV}
    live = LiveStack(LiveConfig.from_env(env), report=lambda _: None)
    try:
        tenant = live.provision()
        stored = str(stack.scalar("select key_hash from api_keys where id = :k", k=tenant.key_id))
        assert stored.startswith(f"$2b${keys.LIVE_BCRYPT_ROUNDS:02d}$")
        assert keys.key_matches(tenant.key, stored)
        prefix = stack.scalar("select prefix from api_keys where id = :k", k=tenant.key_id)
        assert prefix == tenant.key[: keys.KEY_DISPLAY_PREFIX_LENGTH]
        assert tenant.client.list_contexts().total == 0  # the stack found it by prefix, verified
        live.cleanup(tenant)
    finally:
        live.close()


def test_a_stack_that_stores_sha256_is_one_setting_away(stack: DevStack) -> None:
    config = LiveConfig.from_env({**stack.env(), KEY_HASH_ENV: "sha256"})
    assert config.key_hash == keys.KEY_HASH_SHA256
    live = LiveStack(config, report=lambda _: None)
    try:
        tenant = live.provision()
        stored = stack.scalar("select key_hash from api_keys where id = :k", k=tenant.key_id)
        assert stored == hashlib.sha256(tenant.key.encode()).hexdigest()
        assert tenant.client.list_contexts().total == 0  # the fake reads both schemes
        live.cleanup(tenant)
    finally:
        live.close()


def test_keys_may_be_minted_at_another_bcrypt_cost(stack: DevStack) -> None:
    config = LiveConfig.from_env({**stack.env(), KEY_COST_ENV: "5"})
    assert config.key_cost == 5
    live = LiveStack(config, report=lambda _: None)
    try:
        tenant = live.provision()
        stored = str(stack.scalar("select key_hash from api_keys where id = :k", k=tenant.key_id))
        assert stored.startswith("$2b$05$")
        assert tenant.client.list_contexts().total == 0  # verified at the cost it holds
        live.cleanup(tenant)
    finally:
        live.close()


@pytest.mark.parametrize("cost", ["3", "32", "ten", "4.5"])
def test_a_cost_bcrypt_does_not_take_is_one_clear_error(cost: str) -> None:
    with pytest.raises(LiveSetupError, match=r"CONTEXTQ_KEY_COST must be a bcrypt cost, a whole"):
        LiveConfig.from_env({KEY_COST_ENV: cost})


def test_an_unknown_hash_scheme_is_one_clear_error() -> None:
    with pytest.raises(LiveSetupError, match="CONTEXTQ_KEY_HASH must be one of bcrypt, sha256"):
        LiveConfig.from_env({KEY_HASH_ENV: "md5"})


def test_a_minted_key_is_revoked_by_its_row_id(live: LiveStack, stack: DevStack) -> None:
    tenant = live.provision()
    extra = live.mint_key(tenant, ("read",))
    other = live.mint_key(tenant, ("read",))
    live.revoke_key(extra)
    revoked = stack.scalar(
        "select count(*) from api_keys where tenant_id = :t and revoked", t=tenant.tenant_id
    )
    assert revoked == 1
    gone = ContextQClient(extra, base_url=live.config.api_url, max_retries=0)
    with gone, pytest.raises(AuthenticationError):
        gone.list_contexts()
    with ContextQClient(other, base_url=live.config.api_url, max_retries=0) as kept:
        assert kept.list_contexts().total == 0
    with pytest.raises(LiveSetupError, match="not minted by this run"):
        live.revoke_key(wire.KEY_PREFIX + "0" * 40)
    live.cleanup(tenant)
