"""The memory-tool kit in CI against its three backends, as the how-to runs it: the SDK's
own local filesystem tool, ContextQMemoryTool on the in-process fake, and the example
SQLite backend (its own pytest run too). Each report is kept under
``artifacts/memory-tool-kit/``. Then backends with one defect planted each: every one
fails exactly the rule that names its defect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextq_conformance.memory_tool import Declarations, Kit, load_declarations
from contextq_conformance.memory_tool.backends import DECLARATIONS
from tests.support import memory_backends as mb

ROOT = Path(__file__).resolve().parents[3]
AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"  # the kit's plugin alone, as a backend's CI has
REPORTS = ROOT / "artifacts" / "memory-tool-kit"
KIT = "contextq_conformance.memory_tool.backends"
BACKENDS = {
    "sdk": (
        f"{KIT}.sdk:local_filesystem",
        f"{KIT}.sdk:async_local_filesystem",
        str(DECLARATIONS["sdk"]),
    ),
    "contextq": (
        f"{KIT}.contextq:memory_tool",
        f"{KIT}.contextq:async_memory_tool",
        str(DECLARATIONS["contextq"]),
    ),
    "example": (
        "sqlite_memory.factory:memory_tool",
        "sqlite_memory.factory:async_memory_tool",
        str(mb.DECLARATIONS),
    ),
}


def run_kit(name: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    factory, async_factory, declare = BACKENDS[name]
    REPORTS.mkdir(parents=True, exist_ok=True)
    report = REPORTS / f"{name}.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(mb.EXAMPLE)]),
        "MEMORY_DB": str(tmp_path / "memory.db"),
    }
    done = subprocess.run(
        [
            sys.executable, "-m", "contextq_conformance", "memory-tool",
            "--factory", factory, "--async-factory", async_factory,
            "--declare", declare,
            "--json", str(report),
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    (REPORTS / f"{name}.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    return done, json.loads(report.read_text())


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {rule["id"]: rule["status"] for rule in report["rules"]}


def test_contextq_passes_every_rule_or_declares_it(tmp_path: Path) -> None:
    done, report = run_kit("contextq", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = statuses(report)
    assert set(found.values()) <= {"pass", "declared"}, found
    assert found["path-safety.hostile"] == "pass"  # outright, not declared


def test_the_sdk_itself_passes_or_declares_and_the_report_shows_its_known_bug(
    tmp_path: Path,
) -> None:
    done, report = run_kit("sdk", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    found = statuses(report)
    assert set(found.values()) <= {"pass", "declared"}, found
    assert found["path-safety.hostile"] == "declared"
    [hostile] = [r for r in report["rules"] if r["id"] == "path-safety.hostile"]
    assert any('below /memoriesX "/memoriesX/y.md"' in p for p in hostile["problems"])
    assert all(found[r] == "pass" for r in found if r.startswith("results."))


def test_the_example_backend_passes_every_rule(tmp_path: Path) -> None:
    done, report = run_kit("example", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(statuses(report).values()) == {"pass"}, done.stdout


def test_the_example_project_passes_its_own_tests(tmp_path: Path) -> None:
    """examples/memory-backend copied out and run with its own configuration, as its README
    says: one test per rule of the kit."""
    project = tmp_path / "memory-backend"
    shutil.copytree(mb.EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "18 passed" in done.stdout, done.stdout


Factories = tuple[Callable[[], Any], Callable[[], Any] | None]


def _sync(cls: type[mb.SQLiteMemoryTool]) -> Callable[[Path], Factories]:
    return lambda db: (lambda: cls(str(db)), None)


def _with_async(cls: type[mb.AsyncSQLiteMemoryTool]) -> Callable[[Path], Factories]:
    return lambda db: (lambda: mb.SQLiteMemoryTool(str(db)), lambda: cls(str(db)))


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (_sync(mb.TraversalLetThrough), "path-safety.hostile"),
        (_sync(mb.ChangedString), "results.create"),
        (_sync(mb.LostCreate), "concurrency.one-create-wins"),
        (_sync(mb.OffByOne), "limits.file-size"),
        (_with_async(mb.AsyncTwinDiffers), "parity.sync-async"),
    ],
    ids=["traversal", "sdk-string", "lost-create", "limit-off-by-one", "async-twin"],
)
def test_one_planted_defect_fails_exactly_the_rule_naming_it(
    make: Callable[[Path], Factories], rule: str, tmp_path: Path
) -> None:
    factory, async_factory = make(tmp_path / "memory.db")
    kit = Kit(factory, async_factory, declarations=load_declarations(mb.DECLARATIONS))
    report = kit.run()
    failed = {r.rule_id for r in report.results if r.status == "fail"}
    assert failed == {rule}, report.text()
    assert report.exit_status == 1


def test_the_example_with_its_async_twin_passes_parity(tmp_path: Path) -> None:
    factory, async_factory = _with_async(mb.AsyncSQLiteMemoryTool)(tmp_path / "memory.db")
    kit = Kit(factory, async_factory, declarations=Declarations())
    assert kit.run_rule("parity.sync-async").status == "pass"


def test_the_pytest_form_runs_one_test_per_rule_with_the_reports_failure_text(
    tmp_path: Path,
) -> None:
    """``-p contextq_conformance.memory_tool.plugin`` with the options naming the backend:
    a declared rule is an expected failure, a failure shows the report's own text."""
    report = tmp_path / "kit.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "contextq_conformance.memory_tool.plugin",
            "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "-rA",
            "--pyargs", "contextq_conformance.memory_tool.suite",
            "--memory-tool-factory", f"{KIT}.sdk:local_filesystem",
            "--memory-tool-declare", str(DECLARATIONS["sdk"]),
            "--memory-tool-json", str(report), "--memory-tool-seed", "3",
        ],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), AUTOLOAD: "1"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_memory_tool_rule[path-safety.hostile] - declared: the SDK refuses" in done.stdout
    assert "SKIPPED [1]" in done.stdout and "needs both a sync and an async factory" in done.stdout
    written = json.loads(report.read_text())
    assert written["backend"]["seed"] == 3 and len(written["rules"]) == 18
    failing = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "contextq_conformance.memory_tool.plugin",
            "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
            "--pyargs", "contextq_conformance.memory_tool.suite",
            "--memory-tool-factory", f"{KIT}.sdk:local_filesystem",
            "-k", "path-safety.hostile",
        ],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), AUTOLOAD: "1"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert failing.returncode == 1
    assert "FAIL     path-safety.hostile: every hostile path form" in failing.stdout
    assert "hostile forms not refused as a ToolError:" in failing.stdout


def test_the_how_tos_failure_sample_is_what_the_kit_prints(tmp_path: Path) -> None:
    """docs/how-to/memory-tool-kit.md shows a result rule's failure: it is the text the kit
    gives for a backend that words one refusal its own way."""
    page = (ROOT / "docs" / "how-to" / "memory-tool-kit.md").read_text("utf-8")
    sample = page.split("```text\n", 1)[1].split("```", 1)[0]
    kit = Kit(lambda: mb.ChangedString(str(tmp_path / "memory.db")))
    assert kit.run_rule("results.create").text() + "\n" == sample
