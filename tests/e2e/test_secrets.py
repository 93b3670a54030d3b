"""No repr, error, log line or failure report of the client, the plugin, the live fixtures,
the conformance suite or the fake's facade shows an API key or a database password, in
any form a URL or DSN carries it (``user:pw@``, ``?password=``, ``password=...``)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

import adapter
from adapter import (
    AsyncContextQClient,
    AsyncContextQMemoryTool,
    ContextQClient,
    ContextQMemoryTool,
    errors,
)
from adapter.errors import redact
from contextq_conformance.targets import _client as conformance_client
from contextq_fixtures import ContextQServer
from contextq_fixtures.database import DockerPsqlDatabase, DsnDatabase, LiveSetupError
from contextq_fixtures.live import LiveConfig, LiveStack, LiveTenant
from fake_contextq import FakeContextQ
from tests.support.stores import postgres_schema

#: Obviously fake secrets, long enough that no other text holds them by chance.
KEY = "sk_live_" + "5ec2e7" * 6 + "beef"
PW = "fake-db-pw-93ce1b"
ANY_KEY = re.compile(r"sk_live_[0-9a-f]{40}")
#: A database password in every form a URL or DSN writes it.
DSNS = [
    f"postgresql://me:{PW}@127.0.0.1:1/db",
    f"postgresql://me:{PW}@127.0.0.1:1/db?sslmode=disable",
    f"postgresql://:{PW}@127.0.0.1:1/db",
    f"postgresql://me@127.0.0.1:1/db?password={PW}&sslmode=disable",
    f"postgresql://127.0.0.1:1/db?user=me&password={PW}",
    f"host=127.0.0.1 port=1 user=me password={PW} dbname=db",
    f"host=127.0.0.1 port=1 user=me password='{PW}' dbname=db",
]


def shows_no_secret(*texts: str, key: str = KEY) -> None:
    for text in texts:
        assert key not in text and key[12:] not in text, text
        assert PW not in text, text


@pytest.mark.parametrize(
    "text",
    [*DSNS, f"http://u:{PW}@h/x", f"PGPASSWORD={PW}", f"Bearer {KEY}", f"{{'k': '{KEY}'}}"],
)
def test_redact_masks_every_form(text: str) -> None:
    shows_no_secret(redact(text))
    assert "***" in redact(text)


def test_redact_leaves_ordinary_text_alone() -> None:
    for text in (
        "http://host:8080/path@x",
        "http://user@host/",
        "password authentication failed for user 'me'",
        "expected 'sk_live_' and 40 lowercase hex characters",
    ):
        assert redact(text) == text


def _every_substitution(text: str) -> str:
    """What ``redact`` did before it screened text for what its patterns need."""
    for pattern, mask in (
        (errors._URL_PASSWORD, rf"\1{errors.REDACTED}@"),
        (errors._KEYWORD_PASSWORD, rf"\1{errors.REDACTED}"),
        (errors._QUERY_SECRET, rf"\1{errors.REDACTED}"),
        (errors._URL_FRAGMENT, rf"\1#{errors.REDACTED}"),
        (errors._API_KEY, rf"\1{errors.REDACTED}"),
    ):
        text = pattern.sub(mask, text)
    return text


#: Every credential name the query pattern knows, in any case, and case-folded letters
#: (the long s, the Kelvin sign) that an ignore-case pattern matches too.
_NAMES = "key apikey token accesstoken auth authorization secret password passwd pwd sig"
_QUERIES = [
    f"{sep}{prefix}{name}=v4lue"
    for sep in ("?", "&")
    for prefix in ("", "x_", "a.")
    for word in (*_NAMES.split(), "signature", "credential", "credentials")
    for name in (
        word,
        word.upper(),
        word.title(),
        word.replace("s", "\u017f"),
        word.replace("k", "\u212a"),
    )
]


@pytest.mark.parametrize(
    "text",
    [
        *DSNS,
        *_QUERIES,
        f"HTTP://U:{PW}@h/x",
        "https://h/p#access_token=abc",
        f"PgPassWord = '{PW}'",
        f"key {KEY}",
        "limit=50&offset=0",
        "max_tokens=5",
    ],
)
def test_the_screen_of_redact_skips_no_secret(text: str) -> None:
    """A text the screen lets through unchanged holds nothing the patterns would mask."""
    assert redact(text) == _every_substitution(text)


def test_the_clients_and_tools_never_show_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    fake = FakeContextQ()
    tenant = fake.create_tenant()
    key = fake.mint_key(tenant, ("read", "write", "admin"))
    fake.faults.inject("GET", "/api/contexts", status=503, times=None)
    fake.faults.inject("POST", "/api/contexts", drop=True, times=None)
    texts: list[str] = []
    api = ContextQClient(key, http_client=fake.client(), retry_backoff=0)
    for call in (api.list_contexts, lambda: api.create_context("reference", "t", "c")):
        with pytest.raises(adapter.ContextQError) as caught:
            call()
        texts += [str(caught.value), repr(caught.value), repr(caught.value.details)]
    aapi = AsyncContextQClient(key, http_client=fake.async_client(), retry_backoff=0)
    with pytest.raises(adapter.ContextQError) as acaught:
        asyncio.run(aapi.list_contexts())
    texts += [str(acaught.value), repr(acaught.value)]
    tool = ContextQMemoryTool(key, http_client=fake.client())
    atool = AsyncContextQMemoryTool(key, http_client=fake.async_client())
    texts += [repr(api), repr(aapi), repr(tool), repr(atool), str(tool), caplog.text]
    texts += [repr(fake), repr(tenant), repr(fake.keys(tenant)), str(fake.journal)]
    with fake.serve() as served:
        texts.append(repr(served))
        texts.append(repr(ContextQServer(served.url, key, fake, served)))
    shows_no_secret(*texts, key=key)
    fake.close()


@pytest.mark.parametrize("cls", [ContextQClient, AsyncContextQClient])
@pytest.mark.parametrize(
    "url",
    [
        f"http://me:{PW}@ctx.example",
        f"http://:{PW}@ctx.example",
        f"http://ctx.example/?password={PW}",
        f"ftp://me:{PW}@ctx.example",
        f"http://me:{PW}@[::1",
    ],
)
def test_a_base_url_with_a_password_is_refused_without_showing_it(cls: Any, url: str) -> None:
    with pytest.raises(ValueError) as caught:
        cls(KEY, base_url=url)
    shows_no_secret(str(caught.value))


def test_the_live_configuration_never_shows_the_password() -> None:
    for dsn in DSNS:
        config = LiveConfig.from_env({"CONTEXTQ_DB_DSN": dsn})
        database = config.database()
        stack = LiveStack(config, database)
        shows_no_secret(repr(config), str(config), repr(database), database.description)
        shows_no_secret(repr(stack))
        stack.close()
    docker = DockerPsqlDatabase(
        database=f"postgresql://me:{PW}@db/x", env={"PGPASSWORD": PW}, docker_host="unix:///x"
    )
    shows_no_secret(repr(docker), docker.description)
    config = LiveConfig(db_name=f"postgresql://me:{PW}@db/x", docker_host=f"tcp://u:{PW}@d:2375")
    shows_no_secret(repr(config))


@pytest.mark.parametrize("dsn", DSNS)
def test_a_database_that_does_not_answer_is_an_error_without_the_password(dsn: str) -> None:
    database = DsnDatabase(dsn, connect_timeout=1)
    with pytest.raises(LiveSetupError) as caught:
        database.query("SELECT 1", {})
    shows_no_secret(str(caught.value), repr(caught.value))
    assert "cannot connect to the database at" in str(caught.value)


def test_a_dsn_the_driver_cannot_parse_is_an_error_without_the_password() -> None:
    for dsn in (f"host=h password={PW} nonsense", f"postgresql://me:{PW}@h:notaport/db"):
        with pytest.raises(LiveSetupError) as caught:
            DsnDatabase(dsn, connect_timeout=1).query("SELECT 1", {})
        shows_no_secret(str(caught.value))


@pytest.mark.parametrize(
    "api_url", [f"http://me:{PW}@127.0.0.1:9", f"http://127.0.0.1:9/?password={PW}"]
)
def test_an_api_url_with_a_password_is_refused_without_showing_it(api_url: str) -> None:
    stack = LiveStack(LiveConfig(api_url=api_url), DsnDatabase(DSNS[0]))
    with pytest.raises(LiveSetupError) as caught:
        stack.check_api()
    shows_no_secret(str(caught.value), repr(stack))
    stack.close()


def test_a_live_tenant_and_a_conformance_client_never_show_the_key() -> None:
    client = ContextQClient(KEY, base_url="http://127.0.0.1:9")
    tenant = LiveTenant("http://127.0.0.1:9", 1, "cqmt-live-x", KEY, 2, 3, client)
    made = conformance_client(KEY, "http://127.0.0.1:9")
    shows_no_secret(repr(tenant), str(tenant), repr(made), repr(made.api))
    assert tenant.env["CONTEXT_API_KEY"] == KEY  # what a subprocess needs, on request
    made.http.close()
    client.close()


@pytest.fixture
def postgres_url_with_password() -> Iterator[str]:
    with postgres_schema() as url:  # the local server trusts us: any password is accepted
        yield url.replace("postgres@", f"postgres:{PW}@", 1)


def test_the_fake_on_a_database_with_a_password_never_shows_it(
    postgres_url_with_password: str,
) -> None:
    with FakeContextQ(database_url=postgres_url_with_password) as fake:
        texts = [repr(fake), repr(fake.store), str(fake.journal)]
        with fake.serve() as served:
            texts.append(repr(served))
        fake.store.close()  # type: ignore[attr-defined]
    shows_no_secret(*texts)


FAILING = """
def test_server(contextq_server, memory_tool, contextq_client, async_contextq_client):
    contextq_client.list_workspaces()
    assert contextq_server is None

def test_fake(fake_contextq, contextq_tenant, scripted_model):
    scripted_model.allow_unused()
    assert fake_contextq is None
"""


def test_failure_reports_never_show_the_key(pytester: pytest.Pytester) -> None:
    """Locals (``-l``), the fixtures' reprs, the journal and transcript sections of a
    failed test: none holds a key."""
    pytester.makepyfile(FAILING)
    result = pytester.runpytest_inprocess(
        "-p", "contextq_fixtures", "-l", "-vv", "-p", "no:cacheprovider", "-p", "no:randomly"
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str() + result.stderr.str()
    assert "contextq_server = ContextQServer(url='http://127.0.0.1:" in out
    assert "ContextQ requests" in out
    assert ANY_KEY.search(out) is None


@pytest.mark.parametrize("name", ["token", "api_key", "sslkey_secret"])
def test_serve_on_a_database_url_with_a_credential_query_never_shows_it(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``?token=`` and the like are masked in a database URL as in any other URL, not only
    ``?password=``: the driver refuses the option, and the line saying so names the URL."""
    from fake_contextq.cli import main as fake_contextq_cli

    url = f"postgresql://me:{PW}@127.0.0.1:1/db?{name}={PW}x&sslmode=disable"
    assert fake_contextq_cli(["serve", "--port", "0", "--database-url", url]) != 0
    said = "".join(capsys.readouterr())
    assert "cannot use the database postgresql://me:***@127.0.0.1:1/db" in said, said
    shows_no_secret(said)
