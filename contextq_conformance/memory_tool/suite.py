"""The kit's one test, run once per rule: collected with ``--pyargs
contextq_conformance.memory_tool.suite``, or imported into a test module of the backend's
(``from contextq_conformance.memory_tool.suite import test_memory_tool_rule``)."""

from __future__ import annotations

import pytest

from contextq_conformance.memory_tool.kit import Kit
from contextq_conformance.memory_tool.plugin import check_rule


def test_memory_tool_rule(
    memory_tool_kit: Kit, memory_tool_rule: str, request: pytest.FixtureRequest
) -> None:
    check_rule(memory_tool_kit, memory_tool_rule, request.config)


__all__ = ["test_memory_tool_rule"]
