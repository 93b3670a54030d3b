"""``python -m contextq_demo`` / ``contextq-demo``."""

from __future__ import annotations

import sys


def main() -> int:
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
