"""The command line: ``fake-contextq serve``."""

from fake_contextq.cli.main import main

__all__ = ["main"]
