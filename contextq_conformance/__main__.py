"""``python -m contextq_conformance``: run the suite against a target, write the report."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from contextq_conformance._names import TARGETS, UNREACHABLE_EXIT

#: What the fake targets need (the ``fake`` extra), looked for without importing it.
FAKE_EXTRA = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "mcp", "bcrypt")


def _require(names: Sequence[str]) -> None:
    import importlib.util

    for name in names:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m contextq_conformance",
        description="Check a ContextQ against the wire contract this project assumes, and say "
        "per rule whether it held. The live target provisions throwaway tenants on a dev "
        "stack (CONTEXT_API_URL, and CONTEXTQ_DB_DSN or Docker access to its Postgres).",
        epilog="Arguments after -- go to pytest. 'python -m contextq_conformance memory-tool "
        "--help': the conformance kit for any memory-tool backend.",
    )
    parser.add_argument("--target", choices=TARGETS, default="in-process")
    parser.add_argument(
        "--report", metavar="PATH", help="write the per-rule table to PATH (Markdown)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["memory-tool"]:  # the memory-tool kit, a command of its own
        from contextq_conformance.memory_tool.cli import main as memory_tool

        return memory_tool(argv[1:])
    args, rest = _parser().parse_known_args(argv)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    pytest_args = [
        # its own configuration, not that of the project it is run from
        "-c",
        str(Path(__file__).with_name("pytest.ini")),
        "--pyargs",
        "contextq_conformance",
        "-p",
        "contextq_conformance.plugin",
        f"--contextq-target={args.target}",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        ".",
        *(["--contextq-conformance-report", args.report] if args.report else []),
        *rest,
    ]
    try:  # after parsing: --help needs none of it
        import pytest

        if args.target != "live":
            _require(FAKE_EXTRA)  # found, not imported: a module imported before pytest
            # starts cannot be assertion-rewritten, and pytest would warn of each one
        else:
            from contextq_conformance.targets import live_unreachable
    except ModuleNotFoundError as exc:
        print(
            f"contextq-conformance: needs {exc.name}; install the 'pytest' extra: "
            "pip install 'contextq-memory-tool[pytest]'",
            file=sys.stderr,
        )
        return 2
    if args.target == "live":
        why = live_unreachable()
        if why is not None:  # one line, and a report that checked nothing
            why = f"cannot set up the live target: {why}"
            print(f"contextq-conformance: {why}", file=sys.stderr)
            if args.report:
                _write_unchecked_report(args.report, why)
            return UNREACHABLE_EXIT
    # its own plugin alone: the plugins installed beside it (pytest-randomly, say) would
    # change the run, and would cost a second or two of imports (-p NAME after -- loads one)
    autoload = os.environ.get(AUTOLOAD)
    os.environ[AUTOLOAD] = "1"
    try:
        return int(pytest.main(pytest_args))
    finally:
        if autoload is None:
            os.environ.pop(AUTOLOAD, None)
        else:
            os.environ[AUTOLOAD] = autoload


def _write_unchecked_report(path: str, why: str) -> None:
    from contextq_conformance.report import RuleResults, markdown

    results = RuleResults("live", unreachable=why)
    with open(path, "w", encoding="utf-8") as out:
        out.write(markdown(results))


if __name__ == "__main__":
    sys.exit(main())
