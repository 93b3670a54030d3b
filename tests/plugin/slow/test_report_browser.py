"""A failing agent test's HTML page (``--contextq-report=DIR``), opened in headless
Chromium: the conversation, the memory diff and the failed assertion are there to read,
and the page asks nothing of the network. It leaves a screenshot under
``artifacts/screenshots/``."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from contextq_fixtures.html_report import file_name
from tests.plugin.test_report_page import AGENT_TESTS
from tests.support.browser import shoot

pytestmark = pytest.mark.xdist_group("chromium")  # one Chromium at a time, see conftest


def test_a_failing_tests_page_shows_the_conversation_the_diff_and_the_failure(
    pytester: pytest.Pytester, page: Page
) -> None:
    pytester.makepyfile(test_agent=AGENT_TESTS)
    pytester.runpytest_inprocess(
        "-p", "contextq_fixtures", "--contextq-report=out", "-k", "test_agent_fails"
    )
    path = pytester.path / "out" / file_name("test_agent.py::test_agent_fails")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(path.as_uri())

    expect(page.locator("header h1")).to_contain_text("test_agent.py::test_agent_fails")
    expect(page.locator("#failure-summary")).to_contain_text(
        "AssertionError: the agent should have said Noted!"
    )  # first, before the whole failure report (folded)
    turns = page.locator("#conversation .turn")
    expect(turns.first).to_contain_text("Remember that I prefer Rust.")
    expect(turns.last).to_contain_text("Noted, <b>Rust</b>.")  # as text
    calls = page.locator("#conversation .call")
    expect(calls).to_have_count(4)
    expect(calls.nth(3).locator(".result.error")).to_contain_text(
        "The path /memories/missing.md does not exist"
    )
    expect(page.locator("#commands tr.command")).to_have_count(4)
    changed = page.locator("#memory .file.changed")
    expect(changed.locator("h3")).to_contain_text("memories: /memories/prefs.md")
    expect(changed.locator(".diff .del")).to_have_text("-Likes Go.")
    expect(changed.locator(".diff .add")).to_have_text("+Likes Rust <script>alert(1)</script>.")
    expect(page.locator("#memory .file.added h3")).to_contain_text("/memories/notes/today.md")
    assert page.evaluate("document.scripts.length") == 0
    assert asked == [path.as_uri()]  # the page alone: no style, font or script fetched
    shoot(page, "report-failing-test")
