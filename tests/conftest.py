"""Fixtures for the fake's own tests: a fresh fake, tenants, keys and clients.

A module marked ``pytestmark = pytest.mark.all_stores`` runs three times, on the memory
store, on SQLite and on Postgres: one contract, three stores. Elsewhere ``fake`` is the
memory store. Helpers a test imports by name live in ``tests/support/helpers.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from tests.support.helpers import context_body
from tests.support.raw_http import Handler, RawUpstream
from tests.support.stores import STORE_KINDS, StorePool, fresh_store

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

ALL_STORES = "all_stores"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test under ``all_stores`` that reaches a store runs once per ``STORE_KINDS``."""
    if "store_kind" in metafunc.fixturenames and metafunc.definition.get_closest_marker(ALL_STORES):
        metafunc.parametrize("store_kind", STORE_KINDS, indirect=True)


@pytest.fixture(scope="session")
def toolkit_imported() -> None:
    """Every module of the toolkit imported once, before any in-process pytest run: pytester
    drops the modules a run imported when the run ends, and a class imported again is
    another class (an ``except`` of the first would not catch the second's errors)."""
    import importlib
    import pkgutil

    for name in ("adapter", "fake_server", "fake_contextq", "fake_anthropic", "contextq_fixtures"):
        package = importlib.import_module(name)
        for found in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if not found.name.endswith("__main__"):  # a command, not a module
                importlib.import_module(found.name)
    # httpx2 imports its backend at its first request and maps the backend's errors by
    # class: a backend imported again after a run would raise errors httpx2 lets through
    importlib.import_module("httpcore2")


@pytest.fixture(autouse=True)
def _pytester_without_autoload(request: pytest.FixtureRequest) -> None:
    """A pytest run a test starts (pytester, in-process or not) loads only the plugins it
    names (``-p``), not every one installed here: those cost two seconds of imports a run
    (hypothesis, schemathesis, pytest-html...). A test about loading by entry point is
    marked ``plugin_autoload``."""
    if "pytester" in request.fixturenames and not request.node.get_closest_marker(
        "plugin_autoload"
    ):
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    if "pytester" in request.fixturenames:
        request.getfixturevalue("toolkit_imported")


@pytest.fixture(scope="session")
def store_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StorePool]:
    pool = StorePool(tmp_path_factory.mktemp("stores"))
    yield pool
    pool.close()


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = getattr(request, "param", "memory")
    return kind


@pytest.fixture
def make_fake(store_kind: str, store_pool: StorePool) -> Iterator[Callable[..., FakeContextQ]]:
    """Build a fake on this leg's store; each call empties a SQL store first."""
    made: list[FakeContextQ] = []

    def make(**options: Any) -> FakeContextQ:
        instance = FakeContextQ(store=fresh_store(store_pool, store_kind), **options)
        made.append(instance)
        return instance

    yield make
    for instance in made:
        instance.close()


@pytest.fixture
def fake(make_fake: Callable[..., FakeContextQ]) -> FakeContextQ:
    return make_fake()


@pytest.fixture
def llm_fake(make_fake: Callable[..., FakeContextQ]) -> FakeContextQ:
    """A fake whose handoff writer is the built-in LLM stand-in."""
    return make_fake(llm=True)


@pytest.fixture
def tenant(fake: FakeContextQ) -> Tenant:
    return fake.create_tenant("acme")


@pytest.fixture
def key(fake: FakeContextQ, tenant: Tenant) -> str:
    return fake.mint_key(tenant, wire.SCOPES)


@pytest.fixture
def client(fake: FakeContextQ, key: str) -> Iterator[httpx2.Client]:
    with fake.client(key) as c:
        yield c


@pytest.fixture
def other(fake: FakeContextQ) -> Iterator[tuple[Tenant, httpx2.Client]]:
    """A second tenant with its own all-scopes client."""
    t = fake.create_tenant("globex")
    with fake.client(fake.mint_key(t, wire.SCOPES)) as c:
        yield t, c


@pytest.fixture
def make_context(client: httpx2.Client) -> Callable[..., dict[str, Any]]:
    def make(**overrides: Any) -> dict[str, Any]:
        response = client.post("/api/contexts", json=context_body(**overrides))
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    return make


@pytest.fixture
def upstream_for() -> Iterator[Callable[[Handler], RawUpstream]]:
    made: list[RawUpstream] = []

    def make(handler: Handler) -> RawUpstream:
        made.append(RawUpstream(handler))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """The system's headless Chromium (``tests/support/browser.py``), for one module: Playwright's
    sync API keeps an event loop running on the thread while it is open, so no other
    module's test may run beside it (``asyncio.run`` would refuse). The browser modules
    are one xdist group (``pytestmark``), so a worker runs them one after another."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium

    path = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def browser_context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh profile (no cookies) for one test."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.set_default_timeout(10_000)
    yield context
    context.close()


@pytest.fixture
def page(browser_context: BrowserContext) -> Page:
    return browser_context.new_page()
