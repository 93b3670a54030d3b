"""The live fixtures: throwaway tenants on a real ContextQ dev stack, gated.

Off unless ``--contextq-live`` is given or ``CONTEXTQ_LIVE=1`` is set: then every test
that uses a live fixture, or is marked ``contextq_live``, skips with a reason that says
how to turn them on. On, an unreachable API or database is an error, never a skip, and
never a pass: a test that only carries the marker gets the stack (and its check) too.

The live machinery (``live``, ``database``, ``tenant_sql``, the adapter) is imported only
when a live fixture runs with live tests on.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

import pytest

if TYPE_CHECKING:
    from contextq_fixtures.live import LiveStack, LiveTenant

LIVE_OPTION: Final = "--contextq-live"
LIVE_ENV: Final = "CONTEXTQ_LIVE"
LIVE_MARKER: Final = "contextq_live"
SKIP_REASON: Final = (
    f"live ContextQ tests are off: pass {LIVE_OPTION} or set {LIVE_ENV}=1, with "
    "CONTEXT_API_URL (default http://localhost:38200) and either CONTEXTQ_DB_DSN or Docker "
    "access to the stack's Postgres container (CONTEXTQ_DB_CONTAINER, default "
    "shared-context-postgres)"
)
_LINES = pytest.StashKey[list[str]]()


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        LIVE_OPTION,
        action="store_true",
        default=False,
        help=f"run the live tests against a ContextQ dev stack (also: {LIVE_ENV}=1)",
    )


def configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{LIVE_MARKER}: needs a live ContextQ dev stack; skipped unless {LIVE_OPTION} "
        f"or {LIVE_ENV}=1",
    )
    config.stash[_LINES] = []


def live_enabled(config: pytest.Config) -> bool:
    return bool(config.getoption(LIVE_OPTION)) or os.environ.get(LIVE_ENV) == "1"


def skip_unless_live(item: pytest.Item) -> None:
    if item.get_closest_marker(LIVE_MARKER) is not None and not live_enabled(item.config):
        pytest.skip(SKIP_REASON)


def require_stack(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With live tests on, a test that only carries the marker still gets the session's
    stack, so it meets the same reachability check as the fixtures (unreachable: an
    error, never a pass)."""
    if not live_enabled(config):
        return
    for item in items:
        names = getattr(item, "fixturenames", None)
        if (
            item.get_closest_marker(LIVE_MARKER) is not None
            and isinstance(names, list)
            and "contextq_live" not in names
        ):
            names.append("contextq_live")


def summary_lines(config: pytest.Config) -> list[str]:
    """What the live fixtures said (cleanup, tenants left in place, reaping)."""
    return config.stash.get(_LINES, [])


@pytest.fixture(scope="session")
def contextq_live(request: pytest.FixtureRequest) -> Iterator[LiveStack]:
    """The dev stack for this session, after reaping what killed runs left behind."""
    if not live_enabled(request.config):
        pytest.skip(SKIP_REASON)
    lines = request.config.stash.setdefault(_LINES, [])
    from contextq_fixtures.database import LiveSetupError
    from contextq_fixtures.live import LiveConfig, LiveStack

    try:
        stack = LiveStack(LiveConfig.from_env(), report=lines.append)
    except LiveSetupError as exc:
        raise pytest.fail.Exception(f"contextq live: {exc}", pytrace=False) from None
    try:
        stack.check()
        stack.reap()
    except LiveSetupError as exc:
        stack.close()
        raise pytest.fail.Exception(f"contextq live: {exc}", pytrace=False) from None
    yield stack
    stack.close()


@pytest.fixture
def contextq_live_tenants(contextq_live: LiveStack) -> Iterator[Callable[..., LiveTenant]]:
    """Make throwaway tenants (``make(plan=None)``), each cleaned up after the test."""
    from contextq_fixtures.database import LiveSetupError

    made: list[LiveTenant] = []

    def make(plan: str | None = None) -> LiveTenant:
        try:
            tenant = contextq_live.provision(plan)
        except LiveSetupError as exc:
            raise pytest.fail.Exception(f"contextq live: {exc}", pytrace=False) from None
        made.append(tenant)
        return tenant

    yield make
    errors = []
    for tenant in reversed(made):
        try:
            contextq_live.cleanup(tenant)
        except Exception as exc:  # every tenant gets its cleanup, whatever the others did
            errors.append(str(exc))
    if errors:
        raise pytest.fail.Exception("contextq live: " + "\n".join(errors), pytrace=False)


@pytest.fixture
def contextq_live_tenant(contextq_live_tenants: Callable[..., LiveTenant]) -> LiveTenant:
    """A throwaway tenant on the live stack: ``base_url``, ``tenant_id``, ``key`` and a ready
    ``client`` (``adapter.ContextQClient``). Cleaned up after the test, however it ends."""
    return contextq_live_tenants()
