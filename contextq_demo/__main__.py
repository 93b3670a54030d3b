"""``python -m contextq_demo`` / ``contextq-demo``."""

from __future__ import annotations

import argparse
import sys


def _parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="contextq-demo",
        description="Play a short scripted Claude conversation through the memory tool "
        "against an in-process fake ContextQ, offline and with no key, and print the "
        "transcript, the requests ContextQ served and what landed there.",
    )


def main(argv: list[str] | None = None) -> int:
    _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        from contextq_demo.demo import run_demo
    except ModuleNotFoundError as exc:
        print(
            f"contextq-demo: needs {exc.name}; install the 'fake' extra: "
            "pip install 'contextq-memory-tool[fake]'",
            file=sys.stderr,
        )
        return 2
    return run_demo(sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
