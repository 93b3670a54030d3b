"""The memory-tool kit's own rules at their edges: bad input (a factory that cannot be
used, declarations that say something unknown, a backend that hangs or raises), the
report's layout, reading cut views through their hints, and ContextQ's path safety."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contextq_conformance.__main__ import main as conformance_main
from contextq_conformance.memory_tool import (
    RULES,
    DeclarationError,
    Declarations,
    Kit,
    load_declarations,
)
from contextq_conformance.memory_tool._views import page
from contextq_conformance.memory_tool.backends import DECLARATIONS
from contextq_conformance.memory_tool.backends.contextq import memory_tool
from contextq_conformance.memory_tool.declarations import parse_declarations
from contextq_conformance.memory_tool.report import LAYOUT_VERSION, STATUSES
from tests.support import memory_backends

BACKENDS = "tests.support.memory_backends"


def kit_cli(*args: str) -> int:
    return conformance_main(["memory-tool", *args])


def test_every_rule_has_a_stable_id_in_its_group_and_one_line() -> None:
    for rule_id, rule in RULES.items():
        assert rule_id.startswith(f"{rule.group}.") and rule_id == rule.id
        assert "\n" not in rule.text and rule.text[0].islower()
    assert len({r.group for r in RULES.values()}) == 6


@pytest.mark.parametrize(
    ("spec", "what"),
    [
        ("no_colon", "no_colon: not package.module:callable"),
        ("tests.support.nowhere:f", "cannot import tests.support.nowhere: ModuleNotFoundError"),
        (f"{BACKENDS}:missing", f"{BACKENDS} has no 'missing'"),
        (f"{BACKENDS}:EXAMPLE", "EXAMPLE is not callable"),
        (f"{BACKENDS}:not_a_tool", "returned builtins.object, not a BetaAbstractMemoryTool"),
        (f"{BACKENDS}:raising_factory", "raised RuntimeError: no database configured"),
    ],
)
def test_a_factory_that_cannot_be_used_is_one_line_and_exit_2(
    spec: str, what: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kit_cli("--factory", spec) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.splitlines()
    assert line.startswith(f"memory-tool: --factory {spec}") and what in line


def test_a_sync_tool_given_as_the_async_factory_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = "contextq_conformance.memory_tool.backends.contextq:memory_tool"
    assert kit_cli("--async-factory", spec) == 2
    assert "not a BetaAsyncAbstractMemoryTool" in capsys.readouterr().err


def test_no_factory_and_bad_declarations_are_usage_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert kit_cli() == 2
    assert "give --factory, --async-factory, or both" in capsys.readouterr().err
    bad = tmp_path / "d.toml"
    bad.write_text('[differences]\n"results.nope" = "why"\n')
    spec = "contextq_conformance.memory_tool.backends.sdk:local_filesystem"
    assert kit_cli("--factory", spec, "--declare", str(bad)) == 2
    assert "unknown rule 'results.nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("data", "what"),
    [
        ({"limit": {}}, "unknown section 'limit'"),
        ({"limits": {"max_file": 3}}, "unknown key(s) in [limits]: ['max_file']"),
        ({"limits": {"max_file_bytes": 0}}, "must be a positive integer"),
        ({"limits": {"max_file_bytes": True}}, "must be a positive integer"),
        ({"limits": {"directory_sizes": "inode"}}, "directory_sizes must be one of"),
        ({"differences": {"limits.file-size": " "}}, "needs a reason"),
        ({"behaviour": {"creates_may_all_back_off": "yes"}}, "must be a boolean"),
    ],
)
def test_declarations_refuse_what_the_kit_does_not_know(data: object, what: str) -> None:
    with pytest.raises(DeclarationError) as caught:
        parse_declarations(data)
    assert what in str(caught.value)


def test_declarations_read_as_toml_and_as_json_alike(tmp_path: Path) -> None:
    as_json = tmp_path / "d.json"
    as_json.write_text(json.dumps({"limits": {"max_file_bytes": 10, "max_view_chars": 300}}))
    as_toml = tmp_path / "d.toml"
    as_toml.write_text("[limits]\nmax_file_bytes = 10\nmax_view_chars = 300\n")
    assert load_declarations(as_json) == load_declarations(as_toml) == Declarations(10, 300)


def test_a_hanging_command_fails_its_rule_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    try:
        status = kit_cli(
            "--factory", f"{BACKENDS}:hanging_tool", "--timeout", "0.5",
            "--rule", "results.view-file", "--rule", "results.create",
        )  # fmt: skip
    finally:
        memory_backends.Hanging.release.set()
    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith("FAIL     results.view-file: ")
    assert "a command got no answer in 0.5 s: the rule stopped there" in out
    assert "\nPASS     results.create: " in out


def test_a_backend_raising_other_than_tool_error_is_a_failure_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert kit_cli("--factory", f"{BACKENDS}:raising_tool", "--rule", "results.create") == 1
    out = capsys.readouterr().out
    assert "[crash] builtins.KeyError: 'create'" in out
    assert "set-up step 1 of 8 differs" not in out  # a compared step: the first one
    assert "step 1 of 8 differs" in out


def test_the_json_report_has_its_documented_layout(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    spec = "contextq_conformance.memory_tool.backends.sdk:local_filesystem"
    status = kit_cli(
        "--factory", spec, "--json", str(path), "--seed", "7",
        "--rule", "results.create", "--rule", "parity.sync-async",
    )  # fmt: skip
    report = json.loads(path.read_text())
    assert status == 0 == report["exit_status"]
    assert report["layout"] == LAYOUT_VERSION
    assert set(report) == {"layout", "backend", "summary", "exit_status", "rules"}
    assert report["backend"]["factory"] == spec and report["backend"]["seed"] == 7
    assert report["summary"] == {"pass": 1, "fail": 0, "declared": 0, "not run": 1}
    assert [r["status"] for r in report["rules"]] == ["pass", "not run"]
    assert set(report["rules"][0]) == {
        "id", "group", "statement", "status", "reason", "problems", "commands", "notes",
        "figures", "seconds",
    }  # fmt: skip
    assert set(report["summary"]) == set(STATUSES)


def test_a_declared_failure_is_declared_with_its_reason() -> None:
    kit = Kit(
        memory_backends.raising_tool,
        declarations=Declarations(differences={"results.insert": "it raises on purpose"}),
    )
    result = kit.run_rule("results.insert")
    assert (result.status, result.reason) == ("declared", "it raises on purpose")
    assert kit.run().exit_status == 1  # the other rules fail, undeclared


def test_a_cut_view_is_read_with_its_hint() -> None:
    text = (
        "Here's the content of /memories/a.md with line numbers:\n"
        "     1\tone\n     2\ttwo\tcolumns\n"
        "[Output cut at 200 characters after line 2 of 9. View the rest with view_range [3, 9].]"
    )
    found = page(text)
    assert found is not None
    assert found.lines == [(1, "one"), (2, "two\tcolumns")] and found.hint == (3, 9)


def test_contextq_refuses_every_hostile_form_including_fullwidth_dots() -> None:
    """The defect of issue 37 (two fullwidth full stops, U+FF0E, as a name, stored in pinned
    mode) stays fixed: the kit's path-safety rule passes against ContextQMemoryTool
    outright, undeclared."""
    kit = Kit(memory_tool, declarations=load_declarations(DECLARATIONS["contextq"]))
    assert "path-safety.hostile" not in kit.declarations.differences
    result = kit.run_rule("path-safety.hostile")
    assert result.status == "pass", result.text()
    assert result.figures["forms"] >= 30


REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "memory-tool-kit.md"


def test_the_reference_lists_every_rule_and_plugin_option_as_they_are() -> None:
    from contextq_conformance.memory_tool import plugin

    page = REFERENCE.read_text("utf-8")
    rows = dict(re.findall(r"^\| `([a-z-]+\.[a-z-]+)` \| (.*) \|$", page, re.M))
    assert rows == {rule.id: rule.text for rule in RULES.values()}
    options = set(re.findall(r"^\| `(--memory-tool-[a-z-]+)", page, re.M))
    assert options == {v for k, v in vars(plugin).items() if k.endswith("_OPTION")}
    fixtures = set(re.findall(r"^\| `(memory_tool_[a-z_]+)` \|", page, re.M))
    assert fixtures == {"memory_tool_factory", "memory_tool_async_factory",
                        "memory_tool_declarations", "memory_tool_kit"}  # fmt: skip
    assert all(hasattr(plugin, name) for name in fixtures)


def test_contextqs_declarations_are_the_deliberate_differences_page() -> None:
    """One place declares ContextQMemoryTool's differences to the kit; the explanation page
    shows the same, row for row."""
    page = (REFERENCE.parents[1] / "explanation" / "deliberate-differences.md").read_text()
    section = page.split("## Declared to the memory-tool kit", 1)[1]
    rows = dict(re.findall(r"^\| `([\w.-]+)` \| (.*) \|$", section, re.M))
    declared = load_declarations(DECLARATIONS["contextq"])
    limits = declared.as_json()["limits"]
    assert rows == {**{k: str(v) for k, v in limits.items()}, **declared.differences}
