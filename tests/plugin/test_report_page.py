"""``--contextq-report=DIR``: a self-contained HTML page for each failing test that used the
fakes (``--contextq-report-all``: each such test), named in the failure's report, and the
same page in pytest-html's report. (``test_report_browser.py`` opens one in Chromium.)"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from contextq_fixtures.html_report import file_name

AGENT_TESTS = """
import pytest
from fake_anthropic import memory, text, thinking, turn


def run(scripted_model, memory_tool, *turns, prompt="Remember that I prefer Rust."):
    scripted_model.script(*turns)
    return scripted_model.client.beta.messages.tool_runner(
        model="claude-opus-4-1",
        max_tokens=1024,
        tools=[memory_tool],
        messages=[{"role": "user", "content": prompt}],
    ).until_done()


def test_agent_fails(
    scripted_model, memory_tool, fake_contextq, contextq_api_key, contextq_workspace
):
    fake_contextq.seed_files(
        contextq_api_key, {"/memories/prefs.md": "Likes Go.\\n"}, workspace=contextq_workspace
    )
    final = run(
        scripted_model,
        memory_tool,
        memory.view("/memories"),
        memory.str_replace("/memories/prefs.md", "Go", "Rust <script>alert(1)</script>"),
        memory.create("/memories/notes/today.md", "standup at 10\\n"),
        memory.view("/memories/missing.md"),
        text("Noted, <b>Rust</b>."),
    )
    assert final.content[0].text == "Noted!", "the agent should have said Noted!"


def test_agent_passes(scripted_model, memory_tool):
    final = run(scripted_model, memory_tool, memory.view("/memories"), text("Nothing yet."))
    assert final.content[0].text == "Nothing yet."


def test_no_fakes_fails():
    assert 1 == 2


def test_unplayed_turn_fails_at_teardown(scripted_model, memory_tool):
    run(scripted_model, memory_tool, text("Hi."), text("never played"))
"""


@pytest.fixture
def agent_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_agent=AGENT_TESTS)
    return pytester


def page_of(directory: Path, test: str) -> str:
    return (directory / file_name(f"test_agent.py::{test}")).read_text("utf-8")


def test_a_page_for_each_failing_test_that_used_the_fakes(agent_tests: pytest.Pytester) -> None:
    result = agent_tests.runpytest_inprocess(
        "-p", "contextq_fixtures", "-p", "no:randomly", "--contextq-report=out"
    )
    result.assert_outcomes(passed=2, failed=2, errors=1)  # the teardown error's call passed
    out = agent_tests.path / "out"
    fails = file_name("test_agent.py::test_agent_fails")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [fails, file_name("test_agent.py::test_unplayed_turn_fails_at_teardown")]
    )  # not the passing test, not the test that used no fake
    assert fails.startswith("test_agent.py--test_agent_fails-")
    result.stdout.fnmatch_lines(["*contextq report*", f"written to {out / fails}"])

    page = page_of(out, "test_agent_fails")
    assert "AssertionError: the agent should have said Noted!" in html.unescape(page)
    # the conversation: the prompt, each call with its result beside it, the final text
    assert page.count('<div class="turn assistant">') == 5
    assert "Remember that I prefer Rust." in page
    calls = re.findall(r'<strong class="mono">memory</strong>', page)
    assert len(calls) == 4
    assert "The path /memories/missing.md does not exist" in page
    assert '<div class="result error">' in page
    assert "Noted, &lt;b&gt;Rust&lt;/b&gt;." in page
    # each memory command, its result and the ContextQ requests it made
    commands = re.findall(r'<tr class="command">(.*?)</tr>', page, re.S)
    assert len(commands) == 4
    assert "GET /api/contexts/by-external/mem-tool:memories/prefs.md → 200" in commands[1]
    assert "PUT /api/contexts/1 → 200" in commands[1]
    assert "POST /api/contexts → 201" in commands[2]
    # the files before the agent's first command and after, the changes as diffs
    files = re.findall(r'<div class="file (\w+)">\s*<h3>([^<]+)<', page)
    assert files == [
        ("added", "memories: /memories/notes/today.md"),
        ("changed", "memories: /memories/prefs.md"),  # seeded before the agent's first command
    ]
    assert '<span class="del">-Likes Go.</span>' in page
    assert '<span class="add">+Likes Rust &lt;script&gt;alert(1)&lt;/script&gt;.</span>' in page
    # every request the fake served, the seeding's included
    served = re.findall(r'<section id="requests">.*?</section>', page, re.S)[0]
    numbers = [int(n) for n in re.findall(r"<tr><td>(\d+)</td>", served)]
    made = sum(c.count("<br>") for c in commands)
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) > made > 0

    teardown = html.unescape(page_of(out, "test_unplayed_turn_fails_at_teardown"))
    assert "[teardown]" in teardown and "never played" in teardown


def test_the_page_is_one_self_contained_file(agent_tests: pytest.Pytester) -> None:
    agent_tests.runpytest_inprocess(
        "-p", "contextq_fixtures", "--contextq-report=out", "-k", "test_agent_fails"
    )
    page = page_of(agent_tests.path / "out", "test_agent_fails")
    assert "<style>" in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)  # nothing from elsewhere
    assert "<script" not in page.replace("&lt;script", "")  # no script at all
    assert "default-src 'none'" in page


def test_every_test_that_used_the_fakes_with_report_all(agent_tests: pytest.Pytester) -> None:
    agent_tests.runpytest_inprocess(
        "-p", "contextq_fixtures", "--contextq-report=out", "--contextq-report-all",
        "-k", "passes or no_fakes",
    )  # fmt: skip
    out = agent_tests.path / "out"
    assert [p.name for p in out.iterdir()] == [file_name("test_agent.py::test_agent_passes")]
    page = page_of(out, "test_agent_passes")
    assert '<span class="outcome passed">passed</span>' in page
    assert "The test passed." in page


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--contextq-report-all"], "--contextq-report-all needs --contextq-report=DIR"),
        (["--contextq-report="], "takes failed, never or a directory"),
        (["--contextq-report=afile"], "exists and is not a directory"),
    ],
)
def test_a_report_option_that_makes_no_sense_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], said: str
) -> None:
    pytester.makefile("", afile="not a directory")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()


@pytest.mark.plugin_autoload  # pytest-html and pytest-metadata, as installed
def test_pytest_html_shows_the_same_page(agent_tests: pytest.Pytester) -> None:
    result = agent_tests.runpytest_inprocess(
        "-p", "contextq_fixtures", "-p", "html", "--html=report.html",
        "--self-contained-html", "-k", "test_agent_fails",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    report = (agent_tests.path / "report.html").read_text("utf-8")
    blob = re.search(r'data-jsonblob="(.*?)"', report, re.S)
    assert blob, "pytest-html wrote no data"
    [run] = json.loads(html.unescape(blob.group(1)))["tests"]["test_agent.py::test_agent_fails"]
    [extra] = run["extras"]
    frame = re.fullmatch(
        r'<iframe title="contextq report" srcdoc="(.*)" style="[^"]*"></iframe>',
        extra["content"],
        re.S,
    )
    assert frame, extra["content"][:200]
    shown = html.unescape(frame.group(1))  # the page itself, as the file would hold it
    assert shown.startswith("<!doctype html>") and "Remember that I prefer Rust." in shown
    assert '<span class="add">+Likes Rust &lt;script&gt;' in shown
    assert not (agent_tests.path / "out").exists()  # no DIR asked for: no file written


# ----- a page never ends the run, never is half-written, never takes another's name -----------

HOSTILE_TESTS = """
import json


def test_a_command_with_a_lone_surrogate(memory_tool):
    memory_tool.call({"command": "create", "path": "/memories/a\\ud800.md", "file_text": "x"})


def test_a_memory_file_sent_with_a_lone_surrogate(
    fake_contextq, contextq_api_key, contextq_workspace, memory_tool
):
    body = {"type": "reference", "title": "n.md", "content": "x \\ud800 y",
            "externalId": "mem-tool:" + contextq_workspace + "/n.md"}
    with fake_contextq.client(contextq_api_key) as client:
        client.post("/api/contexts", content=json.dumps(body).encode(),
                    headers={"content-type": "application/json"}).raise_for_status()
    assert False, "a failure with the file in memory"


def test_later(fake_contextq):
    pass
"""


def test_a_lone_surrogate_anywhere_is_u_fffd_on_the_page_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_hostile=HOSTILE_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "contextq_fixtures", "-p", "no:randomly", "--contextq-report=out"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # not INTERNAL_ERROR (3)
    result.assert_outcomes(failed=2, passed=1)
    out = pytester.path / "out"
    command = out / file_name("test_hostile.py::test_a_command_with_a_lone_surrogate")
    memory = out / file_name("test_hostile.py::test_a_memory_file_sent_with_a_lone_surrogate")
    assert sorted(out.iterdir()) == sorted([command, memory])  # no temporary file left
    assert "a\ufffd.md" in command.read_text("utf-8")
    assert "x \ufffd y" in memory.read_text("utf-8")


def test_a_page_that_cannot_be_written_is_a_warning_and_the_run_goes_on(
    agent_tests: pytest.Pytester,
) -> None:
    out = agent_tests.path / "out"
    (out / file_name("test_agent.py::test_agent_fails")).mkdir(parents=True)  # in the way
    result = agent_tests.runpytest_inprocess(
        "-p", "contextq_fixtures", "-p", "no:randomly", "--contextq-report=out"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=2, errors=1)  # every test ran
    result.stdout.fnmatch_lines(
        [
            "*contextq report*",
            "not written: IsADirectoryError:*",
            "*ReportNotWritten: the contextq report of test_agent.py::test_agent_fails was not*",
        ]
    )
    teardown = out / file_name("test_agent.py::test_unplayed_turn_fails_at_teardown")
    assert teardown.read_text("utf-8").startswith("<!doctype html>")
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []


COLLIDING_IDS = ["a/b", "a.b", "x::y", "x--y", "x-y", "a b", "a-b"]


def test_every_failing_test_gets_a_page_of_its_own_the_same_in_every_run(
    pytester: pytest.Pytester,
) -> None:
    """Test ids that one readable name could stand for ('/' and '.', '::' and '--', ' ' and '-')."""
    pytester.makepyfile(
        test_ids=f"""
import pytest


@pytest.mark.parametrize("case", {COLLIDING_IDS!r}, ids={COLLIDING_IDS!r})
def test_case(case, fake_contextq):
    assert False, case
"""
    )
    names = []
    for _ in range(2):
        result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--contextq-report=out")
        result.assert_outcomes(failed=len(COLLIDING_IDS))
        names.append(sorted(p.name for p in (pytester.path / "out").iterdir()))
    expected = sorted(file_name(f"test_ids.py::test_case[{case}]") for case in COLLIDING_IDS)
    assert names[0] == names[1] == expected
    assert len(set(expected)) == len(COLLIDING_IDS)
    for case in COLLIDING_IDS:
        page = pytester.path / "out" / file_name(f"test_ids.py::test_case[{case}]")
        assert f"test_ids.py::test_case[{case}]" in html.unescape(page.read_text("utf-8"))
