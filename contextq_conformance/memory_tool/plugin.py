"""The kit as pytest tests, one per rule: ``-p contextq_conformance.memory_tool.plugin``.

Name the backend with ``--memory-tool-factory`` (and ``--memory-tool-async-factory``,
``--memory-tool-declare``), or override the ``memory_tool_factory`` fixtures in a test
module; the tests are ``test_memory_tool_rule`` of ``contextq_conformance.memory_tool.suite``
(``--pyargs contextq_conformance.memory_tool.suite``, or import it into a test module).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

import pytest

from contextq_conformance.memory_tool._calls import DEFAULT_TIMEOUT
from contextq_conformance.memory_tool.declarations import (
    DeclarationError,
    Declarations,
    load_declarations,
)
from contextq_conformance.memory_tool.factory import FactoryError, load_factory
from contextq_conformance.memory_tool.kit import Kit
from contextq_conformance.memory_tool.report import DECLARED, FAIL, NOT_RUN, Report, RuleResult
from contextq_conformance.memory_tool.rules import RULES

FACTORY_OPTION: Final = "--memory-tool-factory"
ASYNC_FACTORY_OPTION: Final = "--memory-tool-async-factory"
DECLARE_OPTION: Final = "--memory-tool-declare"
TIMEOUT_OPTION: Final = "--memory-tool-timeout"
SEED_OPTION: Final = "--memory-tool-seed"
JSON_OPTION: Final = "--memory-tool-json"
_SEED = pytest.StashKey[int]()
_RESULTS = pytest.StashKey[list[RuleResult]]()
_BACKEND = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memory-tool-kit", "memory-tool conformance kit")
    group.addoption(
        FACTORY_OPTION,
        metavar="MODULE:CALLABLE",
        help="the backend: a callable returning a fresh BetaAbstractMemoryTool",
    )
    group.addoption(
        ASYNC_FACTORY_OPTION,
        metavar="MODULE:CALLABLE",
        help="the same for a BetaAsyncAbstractMemoryTool",
    )
    group.addoption(
        DECLARE_OPTION, metavar="FILE", help="the backend's declarations (TOML or .json)"
    )
    group.addoption(
        TIMEOUT_OPTION,
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"the longest one command may take (default {DEFAULT_TIMEOUT:g})",
    )
    group.addoption(SEED_OPTION, type=int, metavar="N", help="the concurrency rules' seed")
    group.addoption(JSON_OPTION, metavar="PATH", help="write the kit's report to PATH as JSON")


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption(SEED_OPTION)
    config.stash[_SEED] = seed if seed is not None else random.SystemRandom().randrange(10**6)
    config.stash[_RESULTS] = []


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "memory_tool_rule" in metafunc.fixturenames:
        metafunc.parametrize("memory_tool_rule", list(RULES), ids=list(RULES))


def _option_factory(config: pytest.Config, option: str, *, asynchronous: bool) -> Any:
    spec = config.getoption(option)
    if not spec:
        return None
    try:
        return load_factory(spec, asynchronous=asynchronous)
    except FactoryError as exc:
        raise pytest.UsageError(f"{option} {exc}") from None


@pytest.fixture
def memory_tool_factory(request: pytest.FixtureRequest) -> Callable[[], Any] | None:
    """The backend's factory (``--memory-tool-factory``); override it to name one in code."""
    return _option_factory(request.config, FACTORY_OPTION, asynchronous=False)  # type: ignore[no-any-return]


@pytest.fixture
def memory_tool_async_factory(request: pytest.FixtureRequest) -> Callable[[], Any] | None:
    """The backend's async factory (``--memory-tool-async-factory``), or None."""
    return _option_factory(request.config, ASYNC_FACTORY_OPTION, asynchronous=True)  # type: ignore[no-any-return]


@pytest.fixture
def memory_tool_declarations(request: pytest.FixtureRequest) -> Declarations:
    """The backend's declarations (``--memory-tool-declare``), or none."""
    path = request.config.getoption(DECLARE_OPTION)
    try:
        return load_declarations(path) if path else Declarations()
    except DeclarationError as exc:
        raise pytest.UsageError(f"{DECLARE_OPTION}: {exc}") from None


@pytest.fixture
def memory_tool_kit(
    request: pytest.FixtureRequest,
    memory_tool_factory: Callable[[], Any] | None,
    memory_tool_async_factory: Callable[[], Any] | None,
    memory_tool_declarations: Declarations,
) -> Kit:
    """The kit over the backend the fixtures above name."""
    if memory_tool_factory is None and memory_tool_async_factory is None:
        raise pytest.UsageError(
            f"the memory-tool kit needs a backend: {FACTORY_OPTION} or "
            f"{ASYNC_FACTORY_OPTION}, or a memory_tool_factory fixture"
        )
    config = request.config
    kit = Kit(
        memory_tool_factory,
        memory_tool_async_factory,
        declarations=memory_tool_declarations,
        timeout=config.getoption(TIMEOUT_OPTION),
        seed=config.stash[_SEED],
        names=(
            config.getoption(FACTORY_OPTION) or getattr(memory_tool_factory, "__qualname__", ""),
            config.getoption(ASYNC_FACTORY_OPTION)
            or getattr(memory_tool_async_factory, "__qualname__", ""),
        ),
    )
    config.stash[_BACKEND] = kit.describe()
    return kit


def check_rule(kit: Kit, rule_id: str, config: pytest.Config | None = None) -> RuleResult:
    """Run one rule as a test: a failure fails it with the report's text, a declared
    difference is an expected failure, a rule that cannot run is skipped."""
    result = kit.run_rule(rule_id)
    if config is not None:
        config.stash[_RESULTS].append(result)
    if result.status == FAIL:
        pytest.fail(result.text(), pytrace=False)
    if result.status == DECLARED:
        pytest.xfail(f"declared: {result.reason}")
    if result.status == NOT_RUN:
        pytest.skip(result.reason)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption(JSON_OPTION)
    results = session.config.stash.get(_RESULTS, [])
    if path and results:
        Report(results, session.config.stash.get(_BACKEND, {})).write_json(path)


__all__ = ["check_rule"]
