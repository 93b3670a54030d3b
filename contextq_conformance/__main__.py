"""``python -m contextq_conformance``: run the suite against a target, write the report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from contextq_conformance._names import TARGETS, UNREACHABLE_EXIT


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m contextq_conformance",
        description="Check a ContextQ against the wire contract this project assumes, and say "
        "per rule whether it held. The live target provisions throwaway tenants on a dev "
        "stack (CONTEXT_API_URL, and CONTEXTQ_DB_DSN or Docker access to its Postgres).",
        epilog="Arguments after -- go to pytest.",
    )
    parser.add_argument("--target", choices=TARGETS, default="in-process")
    parser.add_argument(
        "--report", metavar="PATH", help="write the per-rule table to PATH (Markdown)"
    )
    args, rest = parser.parse_known_args(argv)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    pytest_args = [
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
            import fake_contextq.fake  # noqa: F401  (the fake targets need the fake extra)
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
    return int(pytest.main(pytest_args))


def _write_unchecked_report(path: str, why: str) -> None:
    from contextq_conformance.report import RuleResults, markdown

    results = RuleResults("live", unreachable=why)
    with open(path, "w", encoding="utf-8") as out:
        out.write(markdown(results))


if __name__ == "__main__":
    sys.exit(main())
