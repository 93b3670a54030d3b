"""Project-wide pytest set-up: the project's own plugin, loaded as downstream projects load
it, hypothesis profiles shared by every test directory, and ``--quick``, the loop to run
while working (``python3 dev.py test --quick``)."""

from __future__ import annotations

import functools
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

#: What --quick leaves out: slow by nature, each checked in full by the whole suite. A test
#: module in a folder of this name (``tests/<package>/slow/``) is slow, and not even
#: collected; elsewhere, tests by fixture, by store, or marked slow.
SLOW_FOLDER = "slow"
SLOW_FIXTURES = frozenset({"pytester", "browser", "page", "browser_context", "stack"})
SLOW_STORES = ("sqlite", "postgres")
ROOT = Path(__file__).resolve().parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="the fast loop: leave out the slow/ folders, tests that run subprocesses or "
        "pytest itself, real databases (the SQLite and Postgres legs), the browser, and the "
        "long property and state-machine runs (marked slow)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "slow: a long run (a state machine, a differential) that --quick leaves out; every "
        "test in a slow/ folder has it",
    )


@functools.cache
def _in_slow_folder(path: Path) -> bool:
    try:
        return SLOW_FOLDER in path.resolve().relative_to(ROOT).parts
    except ValueError:  # outside the project: a pytester run's own files
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if config.getoption("--quick") and _in_slow_folder(collection_path):
        return True
    return None


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


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # the folder's mark, so ``-m slow`` and ``-m "not slow"`` see it too
        if _in_slow_folder(item.path):
            item.add_marker(pytest.mark.slow)
    if not config.getoption("--quick"):
        return
    kept = [item for item in items if not _slow(item)]
    left_out = [item for item in items if _slow(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
