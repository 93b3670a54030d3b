#!/usr/bin/env python3
"""One entry point for a fresh machine that has only Python 3.11+.

    python3 dev.py serve [fake-contextq serve options]   start the fake ContextQ server, with
                                                          its dashboard (--no-control: none)
    python3 dev.py demo                                   a scripted memory-tool conversation,
                                                          offline, with no key
    python3 dev.py test [--quick] [pytest options]        run the test suite (--quick: the
                                                          fast loop, in-process and on the
                                                          memory store)
    python3 dev.py check                                  ruff and mypy
    python3 dev.py docs [--serve]                         build the documentation site
                                                          strictly (or serve it)
    python3 dev.py bench                                  the benchmark
    python3 dev.py package                                build the sdist and wheel, check
                                                          them, and run examples/agent's tests
                                                          against the wheel in a fresh venv
    python3 dev.py mutate [MODULE...]                     mutation-test the core modules
                                                          (all, or those named: a path or a
                                                          stem such as paths or quota)

The first run creates ``.venv`` beside this file and installs the project into it, with
the extra the command needs (serve and demo: ``fake``; the others: ``dev``, which holds
them all). A ``.venv`` that already has what a command needs is used as it is, however
it was installed (the quick start's ``pip install -e '.[pytest]'`` serves ``serve`` and
``demo``); one that lacks something gets only that, from ``pyproject.toml``. Every command
runs this tree's code (``python -m`` from here), whichever copy the venv holds.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")


#: The extra of pyproject.toml each command needs; the others need ``dev``.
EXTRA = {"serve": "fake", "demo": "fake"}


def ensure_venv(extra: str) -> None:
    """``.venv`` with the project and ``extra``: created and installed on the first run,
    completed when it lacks something, left alone when it has it all."""
    if sys.version_info < (3, 11):
        sys.exit(f"dev.py: Python 3.11 or newer is needed, this is {sys.version.split()[0]}")
    fresh = not PYTHON.exists()
    if fresh:
        print(f"dev.py: creating {VENV.name}/ (first run)", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
        _pip("install", "--upgrade", "pip")
        lacking = ["the project"]
    else:
        lacking = _lacking(extra)
        if not lacking:
            return
    shown = ", ".join(lacking[:6]) + (f" and {len(lacking) - 6} more" if len(lacking) > 6 else "")
    print(
        f"dev.py: installing the project with its {extra!r} extra into {VENV.name}/ "
        f"(it lacks {shown})",
        flush=True,
    )
    _pip("install", "--editable", f"{ROOT}[{extra}]")


def _pip(*args: str) -> None:
    quiet = ["--disable-pip-version-check", "--quiet"]
    subprocess.run([str(PYTHON), "-m", "pip", *args[:1], *quiet, *args[1:]], check=True, cwd=ROOT)


def _lacking(extra: str) -> list[str]:
    """What ``.venv`` lacks for ``extra``, asked of its own Python (``dev.py _lacking``)."""
    import json

    asked = subprocess.run(
        [str(PYTHON), str(ROOT / "dev.py"), "_lacking", extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if asked.returncode != 0:
        said = (asked.stderr.strip().splitlines() or ["no answer"])[-1]
        return [f"a check of what it holds ({said})"]
    found: list[str] = json.loads(asked.stdout)
    return found


def lacking(extra: str) -> list[str]:
    """Run in the venv's Python: what it lacks for a command that needs ``extra``. The
    project must be installed (editable or not: dev.py runs this tree's code either way)
    with the commands and entry points pyproject.toml declares, and every requirement of
    the base and of ``extra`` (the extras it names, and those of its requirements too) at a
    version its specifier allows. Empty when nothing is missing."""
    import importlib.metadata as md
    import tomllib

    requirements, utils = _packaging("requirements"), _packaging("utils")
    Requirement, InvalidRequirement = requirements.Requirement, requirements.InvalidRequirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    name = project["name"]
    extras = project.get("optional-dependencies", {})
    if extra not in extras:
        return [f"no extra {extra!r} in pyproject.toml"]
    try:
        installed = md.distribution(name)
    except md.PackageNotFoundError:
        return [f"the project ({name})"]
    declared = {("console_scripts", n) for n in project.get("scripts", {})}
    declared |= {(g, n) for g, group in project.get("entry-points", {}).items() for n in group}
    held = {(ep.group, ep.name) for ep in installed.entry_points}
    found = [f"the {group} entry point {n!r}" for group, n in sorted(declared - held)]

    wanted = [Requirement(r) for r in project.get("dependencies", [])]
    named, todo = set(), [extra]
    while todo:  # an extra may name the project's other extras: "contextq-memory-tool[fake]"
        current = todo.pop()
        if current not in named:
            named.add(current)
            for req in map(Requirement, extras[current]):
                if utils.canonicalize_name(req.name) == utils.canonicalize_name(name):
                    todo.extend(req.extras)
                else:
                    wanted.append(req)
    seen: set[str] = set()
    while wanted:
        req = wanted.pop(0)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if str(req) in seen:
            continue
        seen.add(str(req))
        try:
            version = md.version(req.name)
        except md.PackageNotFoundError:
            found.append(str(req))
            continue
        if not req.specifier.contains(version, prereleases=True):
            found.append(f"{req} ({version} installed)")
            continue
        for sub in req.extras:  # psycopg[binary]: what psycopg requires for "binary"
            for spec in md.requires(req.name) or []:
                try:
                    needed = Requirement(spec)
                except InvalidRequirement:
                    continue
                marker = needed.marker
                only_for_it = marker is not None and not marker.evaluate({"extra": ""})
                if only_for_it and marker.evaluate({"extra": sub}):
                    needed.marker = None
                    wanted.append(needed)
    return found


def _packaging(module: str) -> Any:
    """A module of ``packaging``; not every venv has it, but pip always carries a copy."""
    import importlib

    try:
        return importlib.import_module(f"packaging.{module}")
    except ImportError:
        return importlib.import_module(f"pip._vendor.packaging.{module}")


def _test_order(args: list[str]) -> list[str]:
    """The suite runs in random order (pytest-randomly). Unless the order is given
    (``--randomly-seed=N``) or turned off (``-p no:randomly``), pick the seed here and
    print it first, so a failure can be replayed even from a ``-q`` run."""
    if any(a.startswith("--randomly-seed") for a in args) or "no:randomly" in args:
        return []
    import secrets

    seed = secrets.randbelow(2**32)
    print(
        f"dev.py: tests in random order, seed {seed} (replay: python3 dev.py test "
        f"--randomly-seed={seed}; file order: -p no:randomly)",
        flush=True,
    )
    return [f"--randomly-seed={seed}"]


def _cached_bytecode() -> dict[str, str]:
    """The environment for the suite, with compiled modules (and pytest's rewritten test
    modules) cached under ``.venv/``: without them each of the suite's processes compiles the
    project again, 5 s of each pytest start-up, even where PYTHONDONTWRITEBYTECODE is set.
    The cache lives outside the source tree, which is what that setting usually protects."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(VENV / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


#: Seconds between two of dev.py test's progress lines (DEV_PY_PROGRESS_EVERY: another).
PROGRESS_EVERY = 30.0


def run_pytest(args: list[str]) -> int:
    """pytest (run in .venv's Python, from ROOT, as ``python -m pytest`` would be) with a
    progress line: each row of dots ends with how many tests ran of how many
    (``console_output_style = "count"`` in pyproject.toml), and every PROGRESS_EVERY
    seconds, at a row's end, a line adds the time so far. On a busy machine the suite takes
    several times what it takes on an idle one; this says where it is."""
    import time

    import pytest

    every = float(os.environ.get("DEV_PY_PROGRESS_EVERY", PROGRESS_EVERY))

    class Progress:
        def __init__(self) -> None:
            self.started = self.shown = time.monotonic()
            self.session: pytest.Session | None = None
            self.said = 0  # the count the last line gave

        def pytest_sessionstart(self, session: pytest.Session) -> None:
            self.session = session

        @pytest.hookimpl(trylast=True)  # after the terminal reporter wrote the report's dot
        def pytest_runtest_logreport(self) -> None:  # pluggy: the report is not needed
            now = time.monotonic()
            if self.session is None or now - self.shown < every:
                return
            reporter = self.session.config.pluginmanager.get_plugin("terminalreporter")
            writer = getattr(reporter, "_tw", None)  # pytest's writer: where the row is
            if reporter is None or writer is None or writer.width_of_current_line:
                return  # not at a row's end
            done, total = reporter.reported_progress, self.session.testscollected
            if 0 < done < total and done != self.said:
                self.shown, self.said = now, done
                elapsed = _minutes(now - self.started)
                reporter.write_line(f"dev.py: {done} of {total} tests run, {elapsed} elapsed")

    return int(pytest.main(args, plugins=[Progress()]))


def run(*cmd: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> int:
    return subprocess.call([str(c) for c in cmd], cwd=cwd, env=env)


def hand_over(*cmd: str) -> int:
    """Become ``cmd`` (exec on POSIX), so the server has this process's PID: a supervisor or
    ``kill`` that stops ``dev.py`` stops the server, and nothing is left running behind it.
    Windows has no exec that keeps the PID, so there it runs as a child."""
    if os.name != "nt":
        sys.stdout.flush()
        sys.stderr.flush()
        os.chdir(ROOT)  # where run() would have started it
        os.execv(cmd[0], list(cmd))
    return run(*cmd)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "_mutmut":  # dev.py mutate's child, already in .venv's Python
        return _mutmut_one(rest[0], rest[1:])
    if command == "_pytest":  # dev.py test's pytest, in .venv's Python
        return run_pytest(rest)
    if command == "_lacking":  # ensure_venv's question, asked of .venv's Python
        import json

        print(json.dumps(lacking(rest[0])))
        return 0
    if command not in ("serve", "demo", "test", "check", "docs", "bench", "package", "mutate"):
        print(f"dev.py: unknown command {command!r}\n{__doc__}", file=sys.stderr)
        return 2
    ensure_venv(EXTRA.get(command, "dev"))
    # python -m from ROOT: this tree's code, whichever copy of the project .venv holds
    if command == "serve":
        # a developer's server: the control routes and the dashboard on (--no-control: off)
        return hand_over(str(PYTHON), "-m", "fake_contextq.cli", "serve", "--control", *rest)
    if command == "demo":
        return run(PYTHON, "-m", "contextq_demo", *rest)
    if command == "test":
        if "--quick" in rest:  # and without the plugins the slow tests need: 1 s a process
            rest = [*rest, *(f"-pno:{p}" for p in ("schemathesis", "html", "recording"))]
        parallel = [] if any(a.startswith(("-n", "--numprocesses")) for a in rest) else ["-n", "2"]
        if not any(a.startswith("--dist") for a in rest):
            parallel += ["--dist", "loadgroup"]  # a group (the browser tests) on one worker
        order = _test_order(rest)
        tests = (PYTHON, ROOT / "dev.py", "_pytest")  # pytest, with a progress line
        return run(*tests, *parallel, *order, *rest, env=_cached_bytecode())
    if command == "package":
        return package()
    if command == "mutate":
        return mutate(rest)
    if command == "bench":
        return run(PYTHON, "benchmarks/bench.py", *rest)
    if command == "docs":
        return docs(rest)
    status = run(PYTHON, "-m", "ruff", "check", ".")
    formatted = (
        "adapter",
        "fake_server",
        "fake_contextq",
        "fake_anthropic",
        "contextq_demo",
        "contextq_fixtures",
        "contextq_conformance",
        "contextq_hint",
        "benchmarks",
        "examples",
        "tests",
        "e2e",
        "conftest.py",
        "dev.py",
        "docs/hooks.py",
    )
    status |= run(PYTHON, "-m", "ruff", "format", "--check", *formatted)
    status |= run(PYTHON, "-m", "mypy")
    # the bench is a script whose modules import each other from its folder: checked alone
    status |= run(PYTHON, "-m", "mypy", "benchmarks")
    status |= run(PYTHON, "-m", "mypy", "docs/hooks.py")  # the site's hook, loaded by MkDocs
    # the example project, strict by its own configuration, as a user's CI would check it
    # (MYPYPATH: mypy does not see an editable install's packages)
    status |= run(PYTHON, "-m", "mypy", ".", cwd=EXAMPLE, env={**os.environ, "MYPYPATH": str(ROOT)})
    status |= run(
        PYTHON, "-m", "mypy", ".", cwd=KIT_EXAMPLE, env={**os.environ, "MYPYPATH": str(ROOT)}
    )
    return status


def docs(args: list[str]) -> int:
    """Build the site (``docs/``, ``mkdocs.yml``) strictly into ``site/``: a broken link or
    reference fails; ``--serve`` serves it instead, rebuilding as you edit."""
    unknown = [a for a in args if a != "--serve"]
    if unknown:
        print(f"dev.py docs: unknown option(s) {' '.join(unknown)}; --serve", file=sys.stderr)
        return 2
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice of its successor
    if "--serve" in args:
        return run(PYTHON, "-m", "mkdocs", "serve", "--strict", env=env)
    return run(PYTHON, "-m", "mkdocs", "build", "--strict", "--quiet", env=env)


#: A downstream project: an agent and its tests, run against the installed wheel.
EXAMPLE = ROOT / "examples" / "agent"
KIT_EXAMPLE = ROOT / "examples" / "memory-backend"  # the memory-tool kit's example backend
#: Every top-level package the wheel ships; the files of each, subpackages too, are checked.
PACKAGES = (
    "adapter",
    "fake_server",
    "fake_contextq",
    "fake_anthropic",
    "contextq_demo",
    "contextq_fixtures",
    "contextq_conformance",
    "contextq_hint",
)
#: Files of those packages the wheel must carry: code, and the pages' templates and assets.
SHIPPED = (".py", ".typed", ".ini", ".html", ".css", ".js", ".svg", ".json")
#: The base requirements: everything a production install of the memory tool gets.
REQUIRED = ("anthropic", "httpx2")
#: Requirements the wheel may name only under an extra: requirement -> extra.
EXTRA_ONLY = {"fastapi": "fake", "uvicorn": "fake", "sqlalchemy": "fake"}
#: Distributions an install with no extras must not contain.
NOT_IN_LEAN = ("fastapi", "starlette", "uvicorn", "sqlalchemy")
#: Commands that, installed with no extras, must name the extra to install (exit status 2).
LEAN_COMMANDS = (
    (("fake-contextq", "serve", "--memory", "--port", "0"), "fake"),
    (("contextq-conformance",), "pytest"),
)


def _requirements(metadata: str) -> list[tuple[str, str]]:
    """(name, environment marker) of every ``Requires-Dist`` in a wheel's METADATA."""
    import re
    from email.parser import Parser

    found = []
    for req in Parser().parsestr(metadata).get_all("Requires-Dist") or []:
        spec, _, marker = req.partition(";")
        name = re.split(r"[\s\[<>=!~(]", spec.strip(), maxsplit=1)[0]
        found.append((name.lower().replace("_", "-"), marker.strip()))
    return found


def _check_wheel(names: set[str], metadata: str, wheel: Path) -> list[str]:
    problems = []
    for pkg in PACKAGES:
        for source in (ROOT / pkg).rglob("*"):
            rel = source.relative_to(ROOT).as_posix()
            if source.is_file() and source.suffix in SHIPPED and rel not in names:
                problems.append(f"{rel} is missing from {wheel.name}")
    shipped = {n.split("/")[0] for n in names if "/" in n and ".dist-info/" not in n}
    for extra_pkg in sorted(shipped - set(PACKAGES)):
        problems.append(f"{wheel.name} ships {extra_pkg}/, which PACKAGES does not check")
    if "Name: contextq-memory-tool" not in metadata:
        problems.append("the wheel's METADATA does not name contextq-memory-tool")
    requirements = _requirements(metadata)
    for req in REQUIRED:
        if (req, "") not in requirements:
            problems.append(f"the wheel does not require {req} (without an extra)")
    for req, extra in EXTRA_ONLY.items():
        markers = [marker for name, marker in requirements if name == req]
        if not markers:
            problems.append(f"the wheel does not name {req} under the {extra!r} extra")
        for marker in markers:
            if marker != f'extra == "{extra}"':
                problems.append(f"the wheel requires {req} with {marker or 'no extra'!r}")
    if not any(n.endswith(".dist-info/entry_points.txt") for n in names):
        problems.append("the wheel has no entry points (fake-contextq)")
    return problems


def _check_lean(env_dir: Path, py: Path) -> list[str]:
    """The wheel installed with no extras: ``import adapter`` works, the fake's packages
    are absent, and the fake's commands name the extra they need."""
    import json

    probe = (
        "import importlib.metadata as md, json, sysconfig\n"
        "from pathlib import Path\n"
        "import adapter.tool, adapter.client\n"
        "from adapter import ContextQClient, ContextQMemoryTool\n"
        "site = Path(sysconfig.get_paths()['purelib'])\n"
        "names = sorted({d.metadata['Name'].lower() for d in md.distributions()})\n"
        "size = sum(f.stat().st_size for f in site.rglob('*') if f.is_file())\n"
        "print(json.dumps({'names': names, 'bytes': size}))\n"
    )
    found = subprocess.run([str(py), "-c", probe], capture_output=True, text=True)
    if found.returncode != 0:
        return [f"import adapter fails with no extras installed:\n{found.stderr}"]
    report = json.loads(found.stdout)
    names: list[str] = report["names"]
    print(
        f"dev.py: with no extras, import adapter works; {len(names)} distributions "
        f"installed ({', '.join(names)}); site-packages {report['bytes'] / 1e6:.1f} MB "
        "(pip included)",
        flush=True,
    )
    problems = [f"{name} is installed with no extras" for name in NOT_IN_LEAN if name in names]
    for (command, *args), extra in LEAN_COMMANDS:
        ran = subprocess.run(
            [str(env_dir / BIN.name / command), *args], capture_output=True, text=True
        )
        said = ran.stderr.strip()
        if ran.returncode != 2 or f"contextq-memory-tool[{extra}]" not in said or "\n" in said:
            problems.append(
                f"{command} with no extras should exit 2 with one line naming the "
                f"{extra!r} extra; it exited {ran.returncode}: {said or ran.stdout}"
            )
    return problems


def package() -> int:
    """Build, check, install the wheel (not editable) with no extras in a fresh venv and
    check that install is lean, then add the ``pytest`` extra and run ``examples/agent``'s
    tests and the conformance suite against it."""
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
    problems = _check_wheel(names, metadata, wheel)
    if problems:
        print("dev.py package:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    print(f"dev.py: built {wheel.name} and {sdist.name}; metadata and contents check out")
    with tempfile.TemporaryDirectory() as tmp:
        env_dir = Path(tmp) / "venv"
        venv.EnvBuilder(with_pip=True).create(env_dir)
        py = env_dir / BIN.name / PYTHON.name
        pip = [str(py), "-m", "pip", "--disable-pip-version-check", "install", "--quiet"]
        print("dev.py: installing the wheel with no extras into a fresh venv", flush=True)
        if subprocess.call([*pip, str(wheel)]) != 0:
            return 1
        problems = _check_lean(env_dir, py)
        if problems:
            print("dev.py package:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        print("dev.py: adding the 'pytest' extra", flush=True)
        if subprocess.call([*pip, f"{wheel}[pytest]"]) != 0:
            return 1
        project = Path(tmp) / "agent"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
        print("dev.py: running examples/agent's tests against the installed wheel", flush=True)
        status = subprocess.call(
            [str(py), "-m", "pytest", "-p", "no:cacheprovider", "-q"], cwd=project
        )
        if status != 0:
            return status
        print("dev.py: running the shipped conformance suite from the wheel", flush=True)
        return subprocess.call([str(py), "-m", "contextq_conformance", "--", "-q"], cwd=tmp)


MUTANTS = ROOT / "mutants"
#: Surviving mutants judged equivalent (no test could tell them from the original): one a
#: line, ``<key> <mutant name> <why>``; the key hashes the mutated function and the change.
EQUIVALENT = ROOT / "mutmut-equivalent.txt"
KILLED = ("killed", "timeout", "caught by type check", "segfault")


def _mutate_modules() -> dict[str, list[str]]:
    """``[tool.dev.mutate]`` of pyproject.toml: each core module and the tests run against
    its mutants."""
    import tomllib

    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["dev"]["mutate"]
    return {str(module): [str(t) for t in tests] for module, tests in table.items()}


def mutate(names: list[str]) -> int:
    """Mutation-test each named core module (all by default), one at a time: mutmut copies
    the sources under ``mutants/`` and mutates the copy (the source tree is only read), then
    runs each mutant against the module's tests in one worker process."""
    import json
    import shutil
    import time

    modules = _mutate_modules()
    chosen = []
    for name in names or list(modules):
        found = [m for m in modules if name in (m, Path(m).stem, Path(m).with_suffix("").name)]
        if len(found) != 1:
            print(f"dev.py mutate: {name!r} is not one core module of {sorted(modules)}")
            return 2
        chosen.append(found[0])
    scores = []
    for module in chosen:
        shutil.rmtree(MUTANTS, ignore_errors=True)  # a fresh run: tests may have changed
        print(f"dev.py mutate: {module} against {' '.join(modules[module])}", flush=True)
        started = time.monotonic()
        status = run(str(PYTHON), "dev.py", "_mutmut", module, *modules[module])
        summary = MUTANTS / "dev-summary.json"
        if status != 0 or not summary.exists():
            print(f"dev.py mutate: mutmut failed on {module} (exit {status})", file=sys.stderr)
            return status or 1
        scores.append(json.loads(summary.read_text()) | {"seconds": time.monotonic() - started})
    print(
        "\nmodule                               mutants  killed  equivalent  survived  score"
        "     time"
    )
    for s in scores:
        print(
            f"{s['module']:<36} {s['total']:>7} {s['killed']:>7} {s['equivalent']:>11} "
            f"{s['survived']:>9} {s['score']:>5.1f}% {_minutes(s['seconds']):>8}"
        )
    print(f"{'total':<80} {_minutes(sum(s['seconds'] for s in scores)):>8}")
    return 0


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _equivalent_keys() -> dict[str, str]:
    if not EQUIVALENT.exists():
        return {}
    keys = {}
    for line in EQUIVALENT.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, rest = line.partition(" ")
            keys[key] = rest.strip()
    return keys


def _mutant_key(name: str, diff: str) -> str:
    """Stable across renumbering: the function mutated and the lines the mutant changes."""
    changed = [
        line[0] + line[1:].strip()
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    function = name.partition("__mutmut_")[0]
    return hashlib.sha256("\n".join([function, *changed]).encode()).hexdigest()[:10]


def _mutmut_one(module: str, tests: list[str]) -> int:
    """Run mutmut on ``module`` alone (``only_mutate``) against ``tests``, then print its
    survivors and write ``mutants/dev-summary.json``. The rest of mutmut's configuration is
    ``[tool.mutmut]`` in pyproject.toml."""
    import json

    from mutmut import configuration
    from mutmut.__main__ import _run
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.stats import status_by_exit_code

    config = configuration.config()
    config.only_mutate = [module]
    config.pytest_add_cli_args_test_selection = tests
    _run([], max_children=1)  # one worker: the machine is shared

    data = SourceFileMutationData(path=Path(module))
    data.load()
    equivalent = _equivalent_keys()
    killed = listed = 0
    survivors = []
    seen = set()
    for name, code in sorted(data.exit_code_by_key.items()):
        status = status_by_exit_code[code]
        if status in KILLED:
            killed += 1
            continue
        diff = get_diff_for_mutant(name, path=module)
        key = _mutant_key(name, diff)
        seen.add(key)
        if status == "survived" and key in equivalent:
            listed += 1
            continue
        survivors.append(f"{status}: {name} (key {key})\n{diff}")
    total = len(data.exit_code_by_key)
    tested = total - listed
    score = 100.0 * killed / tested if tested else 100.0
    print(f"\n{module}: {total} mutants, {killed} killed, {listed} equivalent, ", end="")
    print(f"{len(survivors)} not killed; score {score:.1f}%")
    for survivor in survivors:
        print(f"\n{survivor}")
    dotted = module.removesuffix(".py").replace("/", ".") + "."
    lapsed = [
        f"{key} {why}"
        for key, why in equivalent.items()
        if why.startswith(dotted) and key not in seen
    ]
    if lapsed:
        print(
            f"\n{len(lapsed)} listed equivalent(s) of {module} no longer match a surviving mutant"
        )
        print("(their code changed, or a test now kills them): remove these lines")
        print("\n".join(f"  {line}" for line in lapsed))
    summary = {
        "module": module,
        "total": total,
        "killed": killed,
        "equivalent": listed,
        "survived": len(survivors),
        "score": score,
    }
    (MUTANTS / "dev-summary.json").write_text(json.dumps(summary))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
