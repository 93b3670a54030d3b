"""The fake's code stays in pieces a maintainer can read: no function of ``fake_contextq``
runs past 120 lines (one of the one-service redesign's rules)."""

from __future__ import annotations

import ast
from pathlib import Path

import fake_contextq

MAX_FUNCTION_LINES = 120


def test_no_function_of_the_fake_is_over_120_lines() -> None:
    package = Path(fake_contextq.__file__).parent
    too_long = []
    for source in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    where = source.relative_to(package.parent).as_posix()
                    too_long.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    assert not too_long, "split these functions:\n" + "\n".join(too_long)
