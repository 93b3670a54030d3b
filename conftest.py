"""Project-wide pytest set-up: the project's own plugin, loaded as downstream projects load
it, hypothesis profiles shared by every test directory, and ``--quick``, the loop to run
while working (``python3 dev.py test --quick``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["contextq_fixtures", "pytester"]

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    print_blob=True,
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

#: What --quick leaves out: slow by nature, each checked in full by the whole suite.
#: Whole modules (not even collected), then tests by fixture, by store, or marked slow.
SLOW_MODULES = frozenset(
    {
        "tests/e2e/slow/test_served.py",
        "tests/e2e/slow/test_live_roundtrip.py",
        "tests/e2e/slow/test_bench_script.py",
        "tests/plugin/slow/test_conformance.py",
        "tests/fake_contextq/slow/test_dashboard_browser.py",
        "tests/plugin/slow/test_docker_engine.py",
        "tests/e2e/slow/test_lean_install.py",
        "tests/plugin/slow/test_live_plugin.py",
        "tests/fake_contextq/slow/test_openapi_fuzz.py",
        "tests/plugin/slow/test_report_browser.py",
        "tests/fake_contextq/slow/test_sqlstore.py",
        "tests/fake_anthropic/slow/test_vcr_recipe.py",
    }
)
SLOW_FIXTURES = frozenset({"pytester", "browser", "page", "browser_context", "stack"})
SLOW_STORES = ("sqlite", "postgres")
ROOT = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the fast loop: leave out tests that run subprocesses or pytest itself, real "
        "databases (the SQLite and Postgres legs), the browser, and the long property "
        "and state-machine runs (marked slow)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: a long run (a state machine, a differential) that --quick leaves out"
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not config.getoption("--quick"):
        return None
    try:
        where = collection_path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None
    slow = any(where == m or where.startswith(m + "/") for m in SLOW_MODULES)
    return True if slow else None


def _slow(item: pytest.Item) -> bool:
    if item.get_closest_marker("slow") is not None:
        return True
    if item.name == "runTest":  # a hypothesis state machine, run as a unittest case
        return True
    names = set(getattr(item, "fixturenames", ()))
    if names & SLOW_FIXTURES:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(params.get(name) in SLOW_STORES for name in ("store_kind", "kind"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--quick"):
        return
    kept = [item for item in items if not _slow(item)]
    left_out = [item for item in items if _slow(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
