"""Failure reports: what the fake served and what the scripted model saw, as text sections
of a failed test's report; with ``--contextq-report=DIR``, one HTML page per failed test
that used the fakes (``--contextq-report-all``: per such test), also handed to pytest-html
when it runs. The page's module loads only when a page is written.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from contextq_fixtures._state import (
    CALLS_KEY,
    EXPLORED_KEY,
    FAKE_KEY,
    MEMORY_BEFORE_KEY,
    MODEL_KEY,
)

if TYPE_CHECKING:
    from contextq_fixtures.html_report import MemoryCall

OPTION: Final = "--contextq-report"
ALL_OPTION: Final = "--contextq-report-all"
KEYWORDS: Final = ("failed", "never")
WRITTEN = pytest.StashKey[Path | None]()
FAILURES = pytest.StashKey[list[str]]()


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        OPTION,
        default="failed",
        metavar="failed|never|DIR",
        help="failed (default): a failed test that used the fakes gets the fake's request "
        "journal and the model's transcript as report sections; never: not; a directory: "
        "that too, and DIR/<test id>-<digest>.html, a page of the conversation, the memory "
        "commands and their requests, the memory files before and after, and the failure (name a "
        "directory called failed or never ./failed)",
    )
    group.addoption(
        ALL_OPTION,
        action="store_true",
        help=f"with {OPTION}=DIR, write the page for every test that used the fakes",
    )


def configure(config: pytest.Config) -> None:
    value = str(config.getoption(OPTION))
    if not value.strip():
        raise pytest.UsageError(f"{OPTION} takes failed, never or a directory; got ''")
    if config.getoption(ALL_OPTION) and report_dir(config) is None:
        raise pytest.UsageError(f"{ALL_OPTION} needs {OPTION}=DIR, the directory to write to")
    directory = report_dir(config)
    if directory is not None and directory.exists() and not directory.is_dir():
        raise pytest.UsageError(f"{OPTION}={value}: {directory} exists and is not a directory")


def sections_on(config: pytest.Config) -> bool:
    return str(config.getoption(OPTION)) != "never"


def report_dir(config: pytest.Config) -> Path | None:
    """Where pages go, or None (the option is a keyword)."""
    value = str(config.getoption(OPTION))
    if value in KEYWORDS:
        return None
    return Path(value).expanduser().resolve()


def _html_plugin(config: pytest.Config) -> Any | None:
    """pytest-html's extras module when pytest-html runs (``--html``), else None."""
    if not config.pluginmanager.hasplugin("html") or not getattr(config.option, "htmlpath", None):
        return None
    try:  # imported by name: pytest-html ships no type information
        return importlib.import_module("pytest_html.extras")
    except ImportError:
        return None


def recording(config: pytest.Config) -> bool:
    """Whether the fixtures note what the page needs (memory commands, files before)."""
    return report_dir(config) is not None or _html_plugin(config) is not None


def sections(item: pytest.Item) -> list[tuple[str, str]]:
    """The extra report sections for a failed test that used these fixtures. Never raises:
    a section that cannot be made says so instead (an exception here would end the whole
    pytest session)."""
    out: list[tuple[str, str]] = []
    fake = item.stash.get(FAKE_KEY, None)
    model: Any = item.stash.get(MODEL_KEY, None)
    made: list[tuple[str, Callable[[], str]]] = []
    if fake is not None:
        made.append(("ContextQ requests (fake_contextq.journal)", fake.journal.table))
    if model is not None:
        made.append(("scripted model transcript", model.transcript))
    for found in item.stash.get(EXPLORED_KEY, []):
        if found.failures:
            made.append(("interleavings: the simplest failing order", found.__str__))
    for title, text in made:
        try:
            out.append((title, _well_formed(text())))
        except Exception as exc:
            out.append((title, f"not shown: {type(exc).__name__}: {exc}"))
    return out


def _well_formed(text: str) -> str:
    from contextq_fixtures.html_report import well_formed

    return well_formed(text)


class ReportNotWritten(pytest.PytestWarning):
    """A failed test's page could not be written; the run carries on."""


def note_calls(item: pytest.Item) -> list[MemoryCall]:
    """The list the memory tool fixture appends each command to."""
    return item.stash.setdefault(CALLS_KEY, [])


def before_call(item: pytest.Item) -> None:
    """At the start of the test's own code: the memory files as they stand."""
    fake = item.stash.get(FAKE_KEY, None)
    if fake is not None and recording(item.config):
        from contextq_fixtures.html_report import memory_files

        item.stash[MEMORY_BEFORE_KEY] = memory_files(fake)


def _page(item: pytest.Item, outcome: str) -> str:
    from contextq_fixtures.html_report import render

    model: Any = item.stash.get(MODEL_KEY, None)
    failures: list[str] = item.stash.get(FAILURES, [])
    calls: list[MemoryCall] = item.stash.get(CALLS_KEY, [])
    return render(
        nodeid=item.nodeid,
        outcome=outcome,
        failure="\n\n".join(failures),
        model=model,
        fake=item.stash.get(FAKE_KEY, None),
        calls=calls,
        before=item.stash.get(MEMORY_BEFORE_KEY, None),
        problems=model.problems() if model is not None else (),
        explored=item.stash.get(EXPLORED_KEY, []),
    )


def after_report(item: pytest.Item, report: pytest.TestReport) -> None:
    """Write the page (once per test) when a phase failed, or at the end with
    ``--contextq-report-all``; name it in the failed report, and hand it to pytest-html."""
    used = FAKE_KEY in item.stash or MODEL_KEY in item.stash
    if not used or WRITTEN in item.stash:
        return
    if report.failed:
        item.stash.setdefault(FAILURES, []).append(f"[{report.when}] {report.longreprtext}")
    last = report.when == "teardown"
    wanted = report.failed or (last and item.config.getoption(ALL_OPTION))
    if not wanted:
        return
    directory = report_dir(item.config)
    html = _html_plugin(item.config)
    if directory is None and html is None:
        return
    item.stash[WRITTEN] = None
    try:
        page = _well_formed(_page(item, "failed" if item.stash.get(FAILURES, []) else "passed"))
        if directory is not None:
            from contextq_fixtures.html_report import write

            path = write(directory, item.nodeid, page)
            item.stash[WRITTEN] = path
            if report.failed:
                report.sections.append(("contextq report", f"written to {path}"))
    except Exception as exc:  # the page is an aid: its failure must not end the session
        _not_written(item, report, exc)
        return
    if html is not None and report.failed:
        from markupsafe import escape

        frame = (
            f'<iframe title="contextq report" srcdoc="{escape(page)}" '
            'style="width:100%;height:48rem;border:1px solid #ccc"></iframe>'
        )
        report.extras = [*getattr(report, "extras", []), html.html(frame)]  # type: ignore[attr-defined]


def _not_written(item: pytest.Item, report: pytest.TestReport, exc: Exception) -> None:
    """Say that the page is missing and why, in the test's report and as a warning; a
    warning turned into an error (``-W error``) is not let out either."""
    why = f"{type(exc).__name__}: {exc}"
    report.sections.append(("contextq report", f"not written: {why}"))
    with contextlib.suppress(Exception):
        item.warn(ReportNotWritten(f"the contextq report of {item.nodeid} was not written: {why}"))


__all__ = [
    "ALL_OPTION",
    "OPTION",
    "ReportNotWritten",
    "add_options",
    "after_report",
    "before_call",
    "configure",
    "note_calls",
    "recording",
    "report_dir",
    "sections",
    "sections_on",
]
