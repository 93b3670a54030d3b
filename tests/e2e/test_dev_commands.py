"""``dev.py`` as a newcomer meets it: the README's quick start and dev.py's commands share
one install, ``dev.py test`` says how far a long run is, and the README says where the
served fake keeps its state."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from fake_contextq.cli.main import default_db_path

ROOT = Path(__file__).resolve().parents[2]


def _load_dev() -> Any:
    """``dev.py`` as a module (by path: it is a script beside the packages, not one)."""
    spec = importlib.util.spec_from_file_location("dev_script_commands", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dev = _load_dev()


def _readme_section(heading: str) -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


@pytest.fixture
def pip_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """dev.py's pip runs, recorded instead of run; dev.py's venv is this test's Python."""
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(dev, "_pip", lambda *args: calls.append(args))
    monkeypatch.setattr(dev, "PYTHON", Path(sys.executable))
    return calls


@pytest.mark.parametrize("command", ["serve", "test"])
def test_a_venv_that_has_what_a_command_needs_is_used_as_it_is(
    command: str, pip_calls: list[tuple[str, ...]], capsys: pytest.CaptureFixture[str]
) -> None:
    """This suite's venv holds the project and the dev extra, however it was installed:
    dev.py installs nothing into it, and says nothing."""
    dev.ensure_venv(dev.EXTRA.get(command, "dev"))
    assert pip_calls == []
    assert capsys.readouterr().out == ""


def test_a_venv_that_lacks_something_gets_the_extra_and_says_what_it_lacked(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pip_calls: list[tuple[str, ...]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A tree whose 'fake' extra names a distribution the venv lacks, a version it does not
    hold, and a command the installed project does not declare."""
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    pyproject = pyproject.replace('"jinja2>=3.1",', '"jinja2>=999", "no-such-dist-of-dev-py>=1",')
    pyproject = pyproject.replace(
        "[project.scripts]\n", '[project.scripts]\nnot-a-command-yet = "adapter:nothing"\n'
    )
    assert "no-such-dist-of-dev-py" in pyproject and "not-a-command-yet" in pyproject
    (tmp_path / "pyproject.toml").write_text(pyproject, "utf-8")
    shutil.copy(ROOT / "dev.py", tmp_path / "dev.py")
    monkeypatch.setattr(dev, "ROOT", tmp_path)

    dev.ensure_venv("fake")

    assert pip_calls == [("install", "--editable", f"{tmp_path}[fake]")]
    said = capsys.readouterr().out
    assert "installing the project with its 'fake' extra" in said
    assert "jinja2>=999 (3." in said and "no-such-dist-of-dev-py>=1" in said
    assert "the console_scripts entry point 'not-a-command-yet'" in said


def test_the_readme_quick_start_installs_what_dev_py_serve_needs() -> None:
    """The quick start's venv is dev.py's, with an extra that holds what ``serve`` and
    ``demo`` need: after it, they start without installing anything."""
    section = _readme_section("Quick start")
    assert f"python3 -m venv {dev.VENV.name} " in section
    [spec] = re.findall(r"pip install -e '\.(\[[\w,]+\])'", section)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]
    held, todo = set(), list(Requirement(f"x{spec}").extras)
    while todo:  # an extra that names the project's other extras holds them too
        extra = todo.pop()
        held.add(extra)
        for req in map(Requirement, extras[extra]):
            if req.name == "contextq-memory-tool":
                todo.extend(req.extras - held)
    assert {dev.EXTRA["serve"], dev.EXTRA["demo"]} <= held


def test_the_readme_says_where_the_served_fake_keeps_its_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    folder = default_db_path().parent.relative_to("/home/someone")
    section = _readme_section("Two commands")
    assert f"~/{folder}/" in section
    assert "$XDG_DATA_HOME/fake-contextq/" in section
    assert "python3 dev.py serve --memory" in section  # a commands block checks the option


def test_the_readme_says_on_what_the_suites_time_was_measured() -> None:
    section = _readme_section("Two commands")
    assert "idle 2-core machine" in section
    assert re.search(r"\b\d+ s\b.*--quick.*\b\d+ s\b", section, re.S)


@pytest.mark.slow
def test_dev_test_says_how_far_the_run_is(tmp_path: Path) -> None:
    """Rows of dots end with the count so far; a line adds the time (every 30 s; here, at
    each row's end), on a line of its own. With two workers, as dev.py test runs."""
    (tmp_path / "test_many.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('n', range(300))\ndef test_n(n):\n    pass\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "dev.py"),
            "_pytest",
            *("-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path)),
            *("-n", "2", "-p", "no:randomly", "-p", "no:cacheprovider", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "DEV_PY_PROGRESS_EVERY": "0"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    rows = [line for line in lines if re.fullmatch(r"\.+ +\[ *\d+/300\]", line)]
    said = [line for line in lines if "tests run" in line]
    assert len(rows) >= 3 and rows[-1].endswith("[300/300]"), done.stdout
    assert said, done.stdout
    assert all(re.fullmatch(r"dev\.py: \d+ of 300 tests run, \d+:\d\d elapsed", s) for s in said)
