"""What the fixtures leave on a test item for the failure report, and marker options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fake_contextq import FakeContextQ

# Typed by annotation only: loading the plugin must not import the fake.
FAKE_KEY: pytest.StashKey[FakeContextQ] = pytest.StashKey()
MODEL_KEY = pytest.StashKey[Any]()
CALL_FAILED = pytest.StashKey[bool]()  # the test itself failed: its report has the causes
CALLS_KEY = pytest.StashKey[list[Any]]()  # the memory tool fixture's commands, for the page
MEMORY_BEFORE_KEY = pytest.StashKey[dict[str, str]]()  # memory files as the test began
MARKER = "contextq"
MARKER_OPTIONS = (
    "plan",
    "tenant",
    "workspace",
    "embeddings",
    "llm",
    "scopes",
    "explore_bound",
    "explore_seed",
)
EXPLORED_KEY = pytest.StashKey[list[Any]]()  # the interleavings fixture's explorations


def marker_options(node: pytest.Item | Any) -> dict[str, Any]:
    """The keyword arguments of the nearest ``@pytest.mark.contextq(...)``, checked."""
    marker = node.get_closest_marker(MARKER) if hasattr(node, "get_closest_marker") else None
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} takes keyword arguments only "
            f"({', '.join(MARKER_OPTIONS)}), got positional {marker.args!r}"
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER}: unknown option(s) {', '.join(unknown)}; "
            f"known: {', '.join(MARKER_OPTIONS)}"
        )
    return dict(marker.kwargs)
