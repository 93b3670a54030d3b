"""The pytest plugin as a downstream project meets it: pytester runs a project that loads
``-p contextq_fixtures``, and the plugin's own options, markers and failure reports."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings

from contextq_fixtures import strategies
from fake_contextq import FakeContextQ

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent"


def test_the_example_project_passes_as_its_readme_runs_it(pytester: pytest.Pytester) -> None:
    """examples/agent, copied out of this repository and run with its own configuration
    (which loads the plugin), as ``dev.py package`` runs it against the wheel."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True)
    expected = sum(p.read_text().count("\ndef test_") for p in EXAMPLE.glob("tests/test_*.py"))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=expected)


def test_options_and_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--help")
    result.stdout.fnmatch_lines(["*--contextq-report*"])
    markers = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--markers")
    markers.stdout.fnmatch_lines(["*@pytest.mark.contextq(plan=*"])


@pytest.mark.plugin_autoload  # the hint is an entry point, loaded as every installed plugin
def test_not_loaded_unless_asked_and_a_missing_fixture_says_how_to_load_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("""
        def test_x(fake_contextq): pass
        def test_y(memory_tool): pass
        def test_z(no_such_fixture): pass
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "*fixture 'fake_contextq' comes from the contextq_fixtures plugin, which this "
            "session did not load: run pytest -p contextq_fixtures*",
            "*fixture 'fake_contextq' not found*",
        ]
    )
    text = result.stdout.str()
    assert "fixture 'memory_tool' comes from the contextq_fixtures plugin" in text
    assert text.count("comes from the contextq_fixtures plugin") == 2  # not for test_z's
    off = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:contextq_hint")
    assert "comes from the contextq_fixtures plugin" not in off.stdout.str()


def test_the_hint_knows_every_fixture_of_the_plugin() -> None:
    import contextq_fixtures
    import contextq_hint

    provided = {
        name
        for name in contextq_fixtures.__all__
        if hasattr(getattr(contextq_fixtures, name), "_fixture_function_marker")
        or type(getattr(contextq_fixtures, name)).__name__ == "FixtureFunctionDefinition"
    }
    assert "memory_tool" in provided and provided == contextq_hint.FIXTURES


def test_a_failure_report_shows_the_journal(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_fails(memory_tool):
            memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
            assert False, "boom"
    """)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ContextQ requests (fake_contextq.journal)*",
            "*method*target*status*tenant*ms*",
            "*POST*/api/contexts*201*",
        ]
    )
    quiet = pytester.runpytest_inprocess("-p", "contextq_fixtures", "--contextq-report=never")
    assert "ContextQ requests" not in quiet.stdout.str()


def test_a_bad_marker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.contextq(color="red")
        def test_x(fake_contextq): pass
    """)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.stdout.fnmatch_lines(["*unknown option(s) color*"])


@settings(max_examples=60)
@given(strategies.memory_paths())
def test_valid_paths_are_accepted(path: str) -> None:
    from adapter.paths import segments

    assert segments(path)


@settings(max_examples=100)
@given(strategies.hostile_memory_paths())
def test_hostile_paths_are_refused(path: str) -> None:
    from anthropic.lib.tools import ToolError

    from adapter.paths import segments

    with pytest.raises(ToolError):
        segments(path)


@settings(max_examples=40)
@given(strategies.memory_commands())
def test_generated_commands_run_without_crashing(command: dict[str, object]) -> None:
    from anthropic.lib.tools import ToolError

    from adapter import ContextQMemoryTool

    fake = FakeContextQ()
    tenant = fake.create_tenant(plan="enterprise")
    fake.create_workspace(tenant, "m")
    tool = ContextQMemoryTool(
        fake.mint_key(tenant, ("read", "write")), http_client=fake.client(), workspace="m"
    )
    with contextlib.suppress(ToolError):
        assert isinstance(tool.call(command), str)


def test_scripted_model_failures_fail_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from fake_anthropic import text

        def test_unused(scripted_model):
            scripted_model.script(text("never played"))

        def test_overrun(scripted_model):
            scripted_model.script(text("one"))
            client = scripted_model.client
            client.messages.create(model="m", max_tokens=10,
                                   messages=[{"role": "user", "content": "hi"}])
            try:
                client.messages.create(model="m", max_tokens=10,
                                       messages=[{"role": "user", "content": "again"}])
            except Exception:
                pass

        def test_opt_out(scripted_model):
            scripted_model.script(text("never played"))
            scripted_model.allow_unused()
    """)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(["*scripted model transcript*"])


def test_the_demo_command() -> None:
    import io

    from contextq_demo import run_demo

    out = io.StringIO()
    assert run_demo(out) == 0
    text = out.getvalue()
    assert "externalId=mem-tool:demo/preferences.md" in text
    assert "- Editor: Helix" in text
    assert "POST    /api/contexts" in text
    assert "Final answer: Noted" in text
