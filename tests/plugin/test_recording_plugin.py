"""The plugin's recordings under pytester: ``@pytest.mark.anthropic_recording`` replays
``recordings/<module>/<test>.json`` through ``scripted_model``, and ``--anthropic-record-mode``
records it through the proxy (the "real API" here is a served scripted model)."""

from __future__ import annotations

import json
import re

import pytest

from fake_anthropic import ScriptedModel, memory, text

KEY = "sk-ant-api03-obviously-fake-plugin-key-0123456789"

AGENT_TEST = """
import pytest


@pytest.mark.anthropic_recording
def test_agent(scripted_model, memory_tool, fake_contextq, contextq_tenant):
    final = scripted_model.client.beta.messages.tool_runner(
        model="claude-opus-4-1",
        max_tokens=1024,
        tools=[memory_tool],
        messages=[{"role": "user", "content": PROMPT}],
    ).until_done()
    assert final.content[0].text == "Noted."
    assert [r.is_error for r in scripted_model.tool_results] == [False, False]
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.content == "Prefers TypeScript.\\n"
"""


def agent_test(prompt: str = "Remember that I prefer TypeScript.") -> str:
    return f"PROMPT = {prompt!r}\n" + AGENT_TEST


def upstream() -> ScriptedModel:
    model = ScriptedModel()
    model.script(
        memory.view("/memories"),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        text("Noted."),
    )
    return model


def test_record_once_then_replay_without_a_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_agent=agent_test())
    recording = pytester.path / "recordings" / "test_agent" / "test_agent.json"
    real = upstream()
    with real.serve() as served:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", served.url)
        recorded = pytester.runpytest_inprocess(
            "-p", "contextq_fixtures", "--anthropic-record-mode=once"
        )
    recorded.assert_outcomes(passed=1)
    real.verify()
    saved = recording.read_text("utf-8")
    assert KEY not in saved
    assert len(json.loads(saved)["exchanges"]) == 3

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    replayed = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    replayed.assert_outcomes(passed=1)

    # once: an existing recording is replayed, not recorded again (no upstream is running)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    again = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--anthropic-record-mode=once")
    again.assert_outcomes(passed=1)

    # a drifted request fails once, its report carrying the diff (no teardown error too)
    pytester.makepyfile(test_agent=agent_test("Remember that I prefer Go."))
    drifted = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    drifted.assert_outcomes(failed=1, errors=0)
    drifted.stdout.fnmatch_lines(["*scripted model problems*"])
    drifted.stdout.fnmatch_lines(["*does not match exchange 1 of the recording*"])
    drifted.stdout.fnmatch_lines(["*messages[[]0[]] (user).content[[]0[]] (text).text*"])
    drifted.stdout.fnmatch_lines(
        [
            "*record *recordings/test_agent/test_agent.json again: pytest "
            "--anthropic-record-mode=all (ANTHROPIC_API_KEY set) test_agent.py::test_agent*"
        ]
    )


def test_a_missing_recording_names_the_file_and_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=agent_test())
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*no recording *recordings/test_agent/test_agent.json*--anthropic-record-mode=once*"]
    )


def test_same_named_tests_of_two_modules_record_two_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyed by test name alone, the second module would replay the first one's run."""
    pytester.makepyfile(test_one=agent_test(), test_two=agent_test())
    real = ScriptedModel()
    for _ in range(2):
        real.script(
            memory.view("/memories"),
            memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
            text("Noted."),
        )
    with real.serve() as served:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", served.url)
        recorded = pytester.runpytest_inprocess(
            "-p", "contextq_fixtures", "--anthropic-record-mode=once", "-p", "no:randomly"
        )
    recorded.assert_outcomes(passed=2)
    files = sorted(p.relative_to(pytester.path).as_posix() for p in pytester.path.rglob("*.json"))
    assert files == [
        "recordings/test_one/test_agent.json",
        "recordings/test_two/test_agent.json",
    ]


def test_a_recording_at_the_old_place_says_where_to_move_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=agent_test())
    old = pytester.path / "recordings" / "test_agent.json"
    old.parent.mkdir()
    old.write_text('{"format": "fake-anthropic-recording", "exchanges": []}')
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*the recording of test_agent.py::test_agent is at *recordings/test_agent.json, "
            "where recordings were kept before*move it there (git mv *recordings/test_agent.json "
            "*recordings/test_agent/test_agent.json)*"
        ]
    )


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            '{"format": "fake-anthropic-recording", "version": 1, "exchanges": []}',
            "holds no exchange",
        ),
        ('{"format": "something else"}', "not a recording"),
        ("not json at all", "not valid JSON"),
    ],
)
def test_a_recording_that_cannot_serve_names_the_option_that_records_it_again(
    pytester: pytest.Pytester, content: str, said: str
) -> None:
    """--anthropic-record-mode=once keeps an existing file, so it must say =all."""
    pytester.makepyfile(test_agent=agent_test())
    path = pytester.path / "recordings" / "test_agent" / "test_agent.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{said}*record it again with --anthropic-record-mode=all*"])
    # once in the report (the short summary repeats it whole under CI, which is its way)
    assert result.stdout.str().split("short test summary info")[0].count("record it again") == 1


def test_recording_without_a_key_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    pytester.makepyfile(test_agent=agent_test())
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--anthropic-record-mode=all")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--anthropic-record-mode=all*needs an API key*ANTHROPIC_API_KEY*"]
    )


def test_unmarked_tests_keep_the_plain_scripted_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from fake_anthropic import text

        def test_plain(scripted_model):
            scripted_model.script(text("hi"))
            reply = scripted_model.client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
            assert reply.content[0].text == "hi"
        """
    )
    pytester.runpytest_inprocess("-p", "contextq_fixtures").assert_outcomes(passed=1)


def test_the_option_and_marker_are_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--help")
    result.stdout.fnmatch_lines(["*--anthropic-record-mode*"])
    markers = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--markers")
    markers.stdout.fnmatch_lines(["*anthropic_recording(path=None, match='strict')*"])


def test_a_recording_whose_upstream_never_answered_leaves_no_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Otherwise the next --anthropic-record-mode=once would take the empty file for a
    recording and fail with "used up: 0 exchange(s)"."""
    pytester.makepyfile(test_agent=agent_test())
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--anthropic-record-mode=once")
    result.assert_outcomes(failed=1)
    assert not list((pytester.path / "recordings").rglob("*.json"))


def test_a_used_up_script_is_reported_once_with_its_cause(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_overrun="""
        from fake_anthropic import memory

        def test_overrun(scripted_model, memory_tool):
            scripted_model.script(memory.view("/memories"))
            scripted_model.client.beta.messages.tool_runner(
                model="m",
                max_tokens=10,
                tools=[memory_tool],
                messages=[{"role": "user", "content": "hi"}],
            ).until_done()
    """
    )
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--contextq-report=never")
    result.assert_outcomes(failed=1, errors=0)
    out = result.stdout.lines
    header = next(i for i, line in enumerate(out) if "_ test_overrun _" in line)
    # the cause is the report's first line, and the short summary's
    assert out[header + 1].startswith("scripted model problems: request 2: the script is used up")
    result.stdout.fnmatch_lines(["FAILED *test_overrun - scripted model problems: request 2*"])
    # the test's frame and the exception stay; the SDK's and the fakes' frames go
    report = result.stdout.str().split("short test summary info")[0]
    assert "test_overrun.py:10: " in report
    # the SDK's own wording around the fake's sentence changed in anthropic 2.17
    # ("Error code: 500 - {...}" before, "500 <message> (request_id: ...)" since): only the
    # exception's class and the fake's sentence on its line are the plugin's to keep
    [raised] = [line for line in out if re.match(r"E\s+anthropic\.InternalServerError: ", line)]
    assert "scripted model: the script is used up" in raised
    for library_frame in ("_beta_runner.py", "_beta_threads.py", "contextlib.py", "httpx2"):
        assert library_frame not in report
    assert report.count("the script is used up") == 2  # the cause, and the exception's text
    assert len(out) < 40
