#!/usr/bin/env python3
"""One entry point for a fresh machine that has only Python 3.11+.

    python3 dev.py serve [fake-contextq serve options]   start the fake ContextQ server
    python3 dev.py demo                                   a scripted memory-tool conversation,
                                                          offline, with no key
    python3 dev.py test [pytest options]                  run the test suite
    python3 dev.py check                                  ruff and mypy
    python3 dev.py bench                                  the benchmark
    python3 dev.py package                                build the sdist and wheel, check
                                                          them, and run the downstream tests
                                                          against the wheel in a fresh venv

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
    if command not in ("serve", "demo", "test", "check", "bench", "package"):
        print(f"dev.py: unknown command {command!r}\n{__doc__}", file=sys.stderr)
        return 2
    ensure_venv()
    if command == "serve":
        return run(BIN / "fake-contextq", "serve", *rest)
    if command == "demo":
        return run(BIN / "contextq-demo", *rest)
    if command == "test":
        parallel = [] if any(a.startswith(("-n", "--numprocesses")) for a in rest) else [
            "-n", "2"]
        return run(PYTHON, "-m", "pytest", *parallel, *rest)
    if command == "package":
        return package()
    if command == "bench":
        return run(PYTHON, "benchmarks/bench.py", *rest)
    status = run(PYTHON, "-m", "ruff", "check", ".")
    formatted = (
        "fake_contextq", "adapter", "contextq_fixtures", "contextq_conformance", "benchmarks"
    )
    status |= run(PYTHON, "-m", "ruff", "format", "--check", *formatted)
    status |= run(PYTHON, "-m", "mypy")
    return status


PACKAGES = ("fake_contextq", "adapter", "contextq_fixtures", "contextq_conformance")
REQUIRED = ("fastapi", "uvicorn", "httpx2", "anthropic")


def package() -> int:
    """Build, check, install the wheel (not editable) in a fresh venv, run downstream tests."""
    import shutil
    import tempfile
    import zipfile

    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    if run(PYTHON, "-m", "build", "--outdir", str(dist)) != 0:
        return 1
    [wheel] = dist.glob("*.whl")
    [sdist] = dist.glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    problems = []
    for pkg in PACKAGES:
        for source in (ROOT / pkg).rglob("*"):
            rel = source.relative_to(ROOT).as_posix()
            if source.is_file() and source.suffix in (".py", ".typed") and rel not in names:
                problems.append(f"{rel} is missing from {wheel.name}")
    if "Name: contextq-memory-tool" not in metadata:
        problems.append("the wheel's METADATA does not name contextq-memory-tool")
    for req in REQUIRED:
        if f"Requires-Dist: {req}" not in metadata:
            problems.append(f"the wheel does not require {req}")
    entry = next((zf_name for zf_name in names if zf_name.endswith("entry_points.txt")), None)
    if entry is None:
        problems.append("the wheel has no entry points (fake-contextq)")
    if problems:
        print("dev.py package:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"dev.py: built {wheel.name} and {sdist.name}; metadata and contents check out")
    with tempfile.TemporaryDirectory() as tmp:
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        py = env_dir / BIN.name / PYTHON.name
        pip = [str(py), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
        if subprocess.call([*pip, str(wheel), "pytest"]) != 0:
            return 1
        project = Path(tmp) / "downstream"
        shutil.copytree(ROOT / "e2e" / "downstream", project)
        print("dev.py: running the downstream tests against the installed wheel", flush=True)
        status = subprocess.call(
            [str(py), "-m", "pytest", "-p", "contextq_fixtures", "--strict-markers",
             "-p", "no:cacheprovider", "-q", str(project)],
            cwd=project,
        )
        if status != 0:
            return status
        print("dev.py: running the shipped conformance suite from the wheel", flush=True)
        return subprocess.call([str(py), "-m", "contextq_conformance", "--", "-q"], cwd=tmp)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
