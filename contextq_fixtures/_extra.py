"""Imports a fixture makes when it first runs, and the one-line failure when the packages
of the ``pytest`` extra are missing (the plugin itself loads with pytest alone)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import pytest

INSTALL: Final = "pip install 'contextq-memory-tool[pytest]'"
#: This distribution's own packages: one of them missing is a broken install, not an extra.
_OURS: Final = frozenset(
    {"adapter", "contextq_fixtures", "fake_anthropic", "fake_contextq", "fake_server"}
)


@contextmanager
def needs_extra(fixture: str) -> Iterator[None]:
    """Turn a third-party package missing from the imports in the block into a failure of
    the test that says which extra to install, with no traceback."""
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if not missing or missing in _OURS:
            raise
        raise pytest.fail.Exception(
            f"contextq_fixtures: the {fixture} fixture needs {missing}, which is not "
            f"installed: {INSTALL}",
            pytrace=False,
        ) from None
