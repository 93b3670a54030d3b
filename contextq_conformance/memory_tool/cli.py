"""``python -m contextq_conformance memory-tool``: run the kit against a backend's factory,
print one line per rule, and exit 0 (every rule passed or declared), 1 (a rule failed) or
2 (the factory, the declarations or the command line could not be used)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Final

from contextq_conformance.memory_tool._calls import DEFAULT_TIMEOUT
from contextq_conformance.memory_tool.rules import RULES

USAGE_EXIT: Final = 2
PROG: Final = "python -m contextq_conformance memory-tool"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check a memory-tool backend against the SDK's own "
        "BetaLocalFilesystemMemoryTool and the kit's rules, and say per rule: pass, fail "
        "or declared.",
    )
    parser.add_argument(
        "--factory",
        metavar="MODULE:CALLABLE",
        help="a callable of no arguments returning a fresh BetaAbstractMemoryTool over the "
        "backend's storage (each call: one more instance on the same storage)",
    )
    parser.add_argument(
        "--async-factory",
        metavar="MODULE:CALLABLE",
        help="the same for a BetaAsyncAbstractMemoryTool; with --factory, the sync and "
        "async tools are also compared",
    )
    parser.add_argument(
        "--declare", metavar="FILE", help="the backend's declarations (TOML or .json)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the report to PATH as JSON")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"the longest one command may take (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--seed", type=int, help="the concurrency rules' seed (default: a new one, printed)"
    )
    parser.add_argument(
        "--rule",
        action="append",
        choices=list(RULES),
        metavar="ID",
        help="run only this rule (repeatable)",
    )
    return parser


def _fail(message: str) -> int:
    print(f"memory-tool: {message}", file=sys.stderr)
    return USAGE_EXIT


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not args.factory and not args.async_factory:
        return _fail("give --factory, --async-factory, or both")
    if args.timeout <= 0:
        return _fail("--timeout must be more than 0")
    from contextq_conformance.memory_tool.declarations import DeclarationError, load_declarations
    from contextq_conformance.memory_tool.factory import FactoryError, load_factory
    from contextq_conformance.memory_tool.kit import Kit

    try:
        declarations = load_declarations(args.declare) if args.declare else None
    except DeclarationError as exc:
        return _fail(f"--declare: {exc}")
    loaded = []
    for option, spec, asynchronous in (
        ("--factory", args.factory, False),
        ("--async-factory", args.async_factory, True),
    ):
        try:
            loaded.append(load_factory(spec, asynchronous=asynchronous) if spec else None)
        except FactoryError as exc:
            return _fail(f"{option} {exc}")
    factory, async_factory = loaded
    kit = Kit(
        factory,
        async_factory,
        declarations=declarations,
        timeout=args.timeout,
        seed=args.seed,
        names=(args.factory or "", args.async_factory or ""),
    )
    report = kit.run(args.rule)
    sys.stdout.write(report.text())
    if args.json:
        report.write_json(args.json)
        print(f"report written to {args.json}")
    return report.exit_status


__all__ = ["USAGE_EXIT", "main"]
