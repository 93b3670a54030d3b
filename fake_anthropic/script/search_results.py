"""The tool-search item of a script: the server tool search's call and the result that
loads deferred tools by name (``tool_reference`` blocks), as the API plays them.

The shapes are SDK 2.14's: a ``server_tool_use`` named ``tool_search_tool_regex`` or
``tool_search_tool_bm25`` with ``input`` ``{"query": ...}``, answered in the same reply by a
``tool_search_tool_result`` whose ``content`` is either a ``tool_search_tool_search_result``
(``tool_references``: ``{"type": "tool_reference", "tool_name": ...}``) or a
``tool_search_tool_result_error`` (``error_code``, ``error_message``). One check serves the
Python builders and the JSON script, so both refuse the same malformed item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

Json = dict[str, Any]

SEARCH_TOOLS: Final = {"regex": "tool_search_tool_regex", "bm25": "tool_search_tool_bm25"}
"""The server tool search's variants and the tool name each is called by."""

RESULT_TYPE: Final = "tool_search_tool_result"
FOUND_TYPE: Final = "tool_search_tool_search_result"
ERROR_TYPE: Final = "tool_search_tool_result_error"
ERROR_CODES: Final = (
    "invalid_tool_input",
    "unavailable",
    "too_many_requests",
    "execution_time_exceeded",
)
"""``tool_search_tool_result_error.error_code`` values (SDK 2.14)."""


def found(tool_names: Sequence[str]) -> Json:
    """A result ``content`` that loads ``tool_names``."""
    return {
        "type": FOUND_TYPE,
        "tool_references": [{"type": "tool_reference", "tool_name": n} for n in tool_names],
    }


def result_fault(content: object) -> str | None:
    """What is wrong with a ``tool_search_tool_result``'s ``content`` (the field named as
    a path below ``content``), or None if it has the API's shape."""
    if not isinstance(content, dict):
        return f"content: must be a {FOUND_TYPE} or {ERROR_TYPE} object"
    kind = content.get("type")
    if kind == ERROR_TYPE:
        if content.get("error_code") not in ERROR_CODES:
            return f"content.error_code: must be one of {', '.join(ERROR_CODES)}"
        message = content.get("error_message")
        if message is not None and not isinstance(message, str):
            return "content.error_message: must be a string"
        return None
    if kind != FOUND_TYPE:
        return f"content.type: must be {FOUND_TYPE!r} or {ERROR_TYPE!r}, not {kind!r}"
    references = content.get("tool_references")
    if not isinstance(references, list):
        return "content.tool_references: must be a list of tool_reference blocks"
    for i, ref in enumerate(references):
        if not isinstance(ref, dict) or ref.get("type") != "tool_reference":
            return f'content.tool_references.{i}: must be {{"type": "tool_reference", ...}}'
        name = ref.get("tool_name")
        if not isinstance(name, str) or not name:
            return f"content.tool_references.{i}.tool_name: must be a non-empty string"
    return None


def referenced(content: object) -> list[str]:
    """The tool names a well-formed result ``content`` loads (none for an error)."""
    if not isinstance(content, dict) or content.get("type") != FOUND_TYPE:
        return []
    refs = content.get("tool_references")
    return [
        str(r["tool_name"])
        for r in (refs if isinstance(refs, list) else [])
        if isinstance(r, dict) and isinstance(r.get("tool_name"), str)
    ]
