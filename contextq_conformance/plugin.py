"""The pytest plugin of the conformance suite: ``--contextq-target``, the ``contract``
marker, the fixtures the tests use, and the per-rule summary (terminal and Markdown)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from contextq_conformance._names import TARGETS, UNREACHABLE_EXIT
from contextq_conformance.report import RuleResults, markdown, terminal_lines
from contextq_conformance.rules import RULES
from contextq_conformance.targets import Target, Tenant, make_target

TARGET_OPTION: Final = "--contextq-target"
REPORT_OPTION: Final = "--contextq-conformance-report"
MARKER: Final = "contract"
_RESULTS = pytest.StashKey[RuleResults]()
_TARGET = pytest.StashKey[Target]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("contextq-conformance", "ContextQ conformance suite")
    group.addoption(
        TARGET_OPTION,
        choices=TARGETS,
        default="in-process",
        help="what to check: the fake in-process (default), the fake served, or a live "
        "dev stack (CONTEXT_API_URL and its database, as for --contextq-live)",
    )
    group.addoption(
        REPORT_OPTION,
        metavar="PATH",
        default=None,
        help="write the per-rule summary to PATH as a Markdown table",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*rule_ids): the wire-contract rules this test checks "
        "(contextq_conformance.rules.RULES)",
    )
    config.stash[_RESULTS] = RuleResults(config.getoption(TARGET_OPTION))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers(MARKER):
            unknown = [r for r in marker.args if r not in RULES]
            if unknown or not marker.args:
                raise pytest.UsageError(
                    f"{item.nodeid}: @pytest.mark.{MARKER} needs rule ids of "
                    f"contextq_conformance.rules.RULES; unknown: {unknown or '(none given)'}"
                )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Any:
    report: pytest.TestReport = yield
    rules = [r for marker in item.iter_markers(MARKER) for r in marker.args]
    if rules:
        item.config.stash[_RESULTS].record(item.nodeid, rules, report)
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the report however the run ended (a run stopped because the target could not
    be reached gets one too: every rule "not checked")."""
    results = session.config.stash.get(_RESULTS, None)
    path = session.config.getoption(REPORT_OPTION)
    if path and results is not None and (results.seen or results.unreachable):
        Path(path).write_text(markdown(results), encoding="utf-8")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    results = config.stash.get(_RESULTS, None)
    if results is None or not (results.seen or results.unreachable):
        return
    terminalreporter.section(f"contextq conformance ({results.target})")
    for line in terminal_lines(results):
        terminalreporter.write_line(line)
    path = config.getoption(REPORT_OPTION)
    if path:
        terminalreporter.write_line(f"report written to {path}")
    target = config.stash.get(_TARGET, None)
    lines: list[str] = list(getattr(target, "lines", []))
    if lines:
        cleaned = sum(1 for line in lines if line.startswith("contextq live: cleaned up"))
        kept = sum(1 for line in lines if line.startswith("contextq live: left tenant"))
        terminalreporter.write_line(
            f"contextq live: {cleaned} throwaway tenant(s) cleaned up, every key and user "
            f"removed; {kept} tenant row(s) left in place (chained audit rows, or rows "
            "that refer to them)"
        )
        for line in lines:  # the reaper's and anything unusual, whole
            if not line.startswith(("contextq live: cleaned up", "contextq live: left tenant")):
                terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def contextq_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The target of this run (``--contextq-target``)."""
    name = request.config.getoption(TARGET_OPTION)
    try:
        target = make_target(name)
    except Exception as exc:
        # One line, then stop: every test needs the target, so nothing can be checked (the
        # summary and the report say "not checked" for every rule, not "did not hold").
        why = f"cannot set up the {name} target: {exc}"
        request.config.stash[_RESULTS].unreachable = why
        pytest.exit(f"contextq-conformance: {why}", returncode=UNREACHABLE_EXIT)
    request.config.stash[_TARGET] = target
    yield target
    target.close()


@pytest.fixture
def target(contextq_target: Target) -> Iterator[Target]:
    """The target, with everything a test made on it removed afterwards."""
    yield contextq_target
    contextq_target.finish_test()


@pytest.fixture
def tenant(target: Target) -> Tenant:
    """A fresh, empty tenant on the free plan, with an all-scopes client."""
    return target.tenant()
