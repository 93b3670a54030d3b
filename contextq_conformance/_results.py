"""Reading an MCP tool result the same way in every MCP test: its text, and its
``structuredContent`` when the call succeeded."""

from __future__ import annotations

from typing import Any


def text(result: Any) -> str:
    """The result's text blocks, joined (an error result says what went wrong there)."""
    return "".join(getattr(block, "text", "") for block in result.content)


def ok(result: Any) -> dict[str, Any]:
    """A tool result's ``structuredContent``; a tool error fails the rule, with its text."""
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict), text(result)
    return result.structured_content
