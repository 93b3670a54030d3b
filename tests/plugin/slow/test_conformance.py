"""The conformance suite run as its users run it (``python -m contextq_conformance``): green
on every target, and able to catch a fake that breaks one rule."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contextq_conformance.rules import RULES
from tests.support.live_stack import dev_stack

ROOT = Path(__file__).resolve().parents[3]
#: Rules only HTTP to ``/mcp`` can check: in-process, where the MCP server is driven in
#: memory, they are not checked (served and live, they are).
MCP_HTTP_ONLY = {"mcp.cors-preflight", "mcp.protocol-versions"}


def held_unless_in_process(rows: dict[str, tuple[str, str]], target: str) -> None:
    """Every rule held, but those that need HTTP to ``/mcp`` where there is none."""
    unchecked = MCP_HTTP_ONLY if target == "in-process" else set()
    assert {rule for rule, (_, result) in rows.items() if result != "held"} == unchecked
    assert {rows[rule][1] for rule in unchecked} <= {"not checked"}


def conformance(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTQ_", "CONTEXT_API"))}
    return subprocess.run(
        [sys.executable, "-m", "contextq_conformance", *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )


def report_rows(path: Path) -> dict[str, tuple[str, str]]:
    """rule id -> (source, result) from the Markdown table."""
    rows = {}
    for line in path.read_text().splitlines():
        match = re.match(r"\| `([^`]+)` \| (public|seed|assumed) \| \**([a-z ]+?)\** \|", line)
        if match:
            rows[match[1]] = (match[2], match[3])
    return rows


@pytest.mark.parametrize("target", ["in-process", "served"])
def test_the_suite_is_green_on_the_fake(target: str, tmp_path: Path) -> None:
    report = tmp_path / "fidelity.md"
    result = conformance("--target", target, "--report", str(report), "--", "-q")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    rows = report_rows(report)
    assert set(rows) == set(RULES)
    held_unless_in_process(rows, target)
    assert report.read_text().startswith(f"# ContextQ conformance: target `{target}`")


def test_the_live_target_runs_through_throwaway_tenants(tmp_path: Path) -> None:
    """The live plumbing, proven against the fake on Postgres standing in for a dev stack."""
    with dev_stack() as stack:
        report = tmp_path / "fidelity.md"
        result = conformance(
            "--target", "live", "--report", str(report), "--", "-q", env=stack.env()
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert {result for _, result in report_rows(report).values()} == {"held"}
        # every tenant the run made is gone or stripped: no key and no user survives
        assert stack.scalar("select count(*) from users") == 0
        throwaway_keys = stack.scalar(
            "select count(*) from api_keys k join tenants t on t.id = k.tenant_id "
            "where t.name like 'cqmt-live-%'"
        )
        assert throwaway_keys == 0
        assert re.search(
            r"contextq live: \d+ throwaway tenant\(s\) cleaned up, every key and user "
            r"removed; \d+ tenant row\(s\) left in place",
            result.stdout,
        )


#: An obviously fake password: it must not show anywhere, however the run ends.
PASSWORD = "not-a-real-pw-7f3a"
NO_DATABASE = f"postgresql://me:{PASSWORD}@127.0.0.1:1/db?sslmode=disable"


def _unreachable_env(what: str, stack_dsn: str = "") -> tuple[dict[str, str], str]:
    if what == "database":
        return (
            {"CONTEXTQ_DB_DSN": NO_DATABASE, "CONTEXT_API_URL": "http://127.0.0.1:9"},
            "cannot connect to the database at postgresql://me:***@127.0.0.1:1/db",
        )
    return (
        {"CONTEXTQ_DB_DSN": stack_dsn, "CONTEXT_API_URL": "http://127.0.0.1:9"},
        "cannot reach ContextQ at http://127.0.0.1:9",
    )


def _assert_nothing_checked(report: Path, why: str) -> None:
    rows = report_rows(report)
    assert set(rows) == set(RULES)
    assert {result for _, result in rows.values()} == {"not checked"}
    assert why in report.read_text()


@pytest.mark.parametrize("what", ["database", "api"])
def test_an_unreachable_live_target_stops_after_one_line(what: str, tmp_path: Path) -> None:
    """Not 154 set-up errors and 43 rules that "did not hold": one line saying what could
    not be reached, a non-zero exit, and a report in which no rule was checked."""
    with dev_stack() as stack:
        env, why = _unreachable_env(what, stack.dsn)
        report = tmp_path / "fidelity.md"
        result = conformance("--target", "live", "--report", str(report), env=env)
        assert result.returncode == 3
        assert result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith("contextq-conformance: cannot set up the live target: ")
        assert why in line
        assert PASSWORD not in result.stderr + report.read_text()
        _assert_nothing_checked(report, why)
        if what == "api":  # nothing was made on the database that did answer
            assert stack.scalar("select count(*) from tenants") == 0


def test_run_by_pytest_itself_an_unreachable_target_stops_at_once(tmp_path: Path) -> None:
    env, why = _unreachable_env("database")
    report = tmp_path / "fidelity.md"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTQ_", "CONTEXT_API"))}
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "--pyargs", "contextq_conformance",
            "-p", "contextq_conformance.plugin", "--contextq-target=live",
            "--contextq-conformance-report", str(report), "-p", "no:cacheprovider",
        ],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    out = result.stdout + result.stderr
    assert result.returncode == 3, out[-3000:]
    assert "Traceback" not in out and " error" not in out
    assert sum(why in line for line in out.splitlines()) == 1
    assert PASSWORD not in out
    _assert_nothing_checked(report, why)


BROKEN_SEARCH = '''
from fake_contextq.domain import shapes


def pytest_configure(config):
    """A fake with one rule flipped: search accepts 'synthesis' as a type filter."""
    types = shapes.SEARCH.field("type")
    shapes.SEARCH = shapes.SEARCH.with_fields(
        shapes.Choice(name="type", options=(*types.options, "synthesis"))
    )
'''


def test_a_fake_that_breaks_one_rule_fails_exactly_its_tests(tmp_path: Path) -> None:
    """The rule breaks REST's search; the MCP tool still refuses the type by its own input
    schema (a TypeScript server's tool declares its enum), so only REST's test fails."""
    (tmp_path / "broken_search.py").write_text(BROKEN_SEARCH)
    report = tmp_path / "fidelity.md"
    result = conformance(
        "--report", str(report), "--", "-q", "-p", "broken_search",
        env={"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:]
    failed = re.findall(r"^FAILED (\S+)", result.stdout, re.MULTILINE)
    assert failed == [
        "contextq_conformance/test_search.py::test_any_other_type_is_a_400[synthesis]"
    ]
    rows = report_rows(report)
    assert rows.pop("search.type-enum") == ("seed", "did not hold")
    held_unless_in_process(rows, "in-process")
    assert "DID NOT HOLD [seed] search.type-enum:" in result.stdout


def test_an_unknown_rule_id_is_refused_at_collection(tmp_path: Path) -> None:
    (tmp_path / "test_typo.py").write_text(
        "import pytest\n\n@pytest.mark.contract('search.typo')\ndef test_x():\n    pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "contextq_conformance.plugin", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode != 0
    assert "unknown: ['search.typo']" in result.stdout + result.stderr


def test_the_command_explains_itself() -> None:
    result = conformance("--help")
    assert result.returncode == 0
    assert "--target {in-process,served,live}" in result.stdout
    assert "--report PATH" in result.stdout


def test_a_run_reads_none_of_the_projects_config_and_warns_of_nothing(tmp_path: Path) -> None:
    """Run from a downstream project: its pytest configuration is not the suite's."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "--an-option-of-that-project"\n'
    )
    result = conformance("--target", "in-process", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "configfile: " in result.stdout and "pyproject.toml" not in result.stdout
    assert "warning" not in result.stdout.lower()
