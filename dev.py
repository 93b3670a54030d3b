#!/usr/bin/env python3
"""One entry point for a fresh machine that has only Python 3.11+.

    python3 dev.py serve [fake-contextq serve options]   start the fake ContextQ server
    python3 dev.py test [pytest options]                  run the test suite
    python3 dev.py check                                  ruff and mypy
    python3 dev.py bench                                  the benchmark

The first run creates ``.venv`` beside this file and installs the project into it
(with the ``dev`` extra); later runs reinstall only when ``pyproject.toml`` changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
STAMP = VENV / ".installed-from"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


def _fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    if sys.version_info < (3, 11):
        sys.exit(f"dev.py: Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    if not PYTHON.exists():
        print(f"dev.py: creating {VENV.name}/ (first run)", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        return
    print("dev.py: installing the project and its dev tools into .venv/", flush=True)
    pip = [str(PYTHON), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "--editable", f"{ROOT}[dev]"], check=True, cwd=ROOT)
    STAMP.write_text(_fingerprint())


def run(*cmd: str) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in ("serve", "test", "check", "bench"):
        print(f"dev.py: unknown command {command!r}\n{__doc__}", file=sys.stderr)
        return 2
    ensure_venv()
    if command == "serve":
        return run(BIN / "fake-contextq", "serve", *rest)
    if command == "test":
        return run(PYTHON, "-m", "pytest", *rest)
    if command == "bench":
        return run(PYTHON, "benchmarks/bench.py", *rest)
    status = run(PYTHON, "-m", "ruff", "check", ".")
    formatted = ("fake_contextq", "adapter", "benchmarks")
    status |= run(PYTHON, "-m", "ruff", "format", "--check", *formatted)
    status |= run(PYTHON, "-m", "mypy")
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
