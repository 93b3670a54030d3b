"""The suite runs in random order (pytest-randomly, pinned in the ``dev`` extra), and
``python3 dev.py test`` prints the seed first so a failing order can be replayed."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load_dev() -> Any:
    """``dev.py`` as a module (by path: it is a script beside the packages, not one)."""
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dev = _load_dev()


def test_pytest_randomly_is_pinned_in_the_dev_extra() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pinned = [d for d in extras["dev"] if d.startswith("pytest-randomly")]
    assert len(pinned) == 1 and "==" in pinned[0]


def test_this_run_is_in_random_order_unless_turned_off(request: pytest.FixtureRequest) -> None:
    turned_off = "no:randomly" in request.config.invocation_params.args
    assert request.config.pluginmanager.has_plugin("randomly") is not turned_off


def test_dev_test_picks_and_prints_the_seed(capsys: pytest.CaptureFixture[str]) -> None:
    [arg] = dev._test_order(["-q", "tests/adapter/test_client.py"])
    seed = int(arg.removeprefix("--randomly-seed="))
    out = capsys.readouterr().out
    assert f"seed {seed}" in out
    assert f"python3 dev.py test --randomly-seed={seed}" in out
    assert "-p no:randomly" in out


@pytest.mark.parametrize(
    "args", [["--randomly-seed=3"], ["--randomly-seed", "3"], ["-p", "no:randomly", "-q"]]
)
def test_a_given_seed_or_file_order_is_left_alone(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert dev._test_order(args) == []
    assert capsys.readouterr().out == ""
