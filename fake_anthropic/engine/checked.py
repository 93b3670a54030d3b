"""What the API's checks found in a thread's history, so a continue checks only what it adds.

A continue stands for the thread's history plus the messages sent, and the checks read the
whole of it (``validation``, ``mcp.sent_listings``, ``tool_search.check_references``):
at every turn of a tool-runner run, an O(n^2) run. The history is the engine's own and
never changes, and all of it but the reply at its end passed every check of the request
that kept the thread, as a conversation ending there.

When that part holds only plain blocks (``plain``: text, ``tool_use``, a ``tool_result``
of text), checking from its end gives the answer checking the whole gives, the same first
error or none: the pairing checks read a message, its neighbours and the ``tool_use`` ids
before it (kept here, ``use_ids``), and the last message checked before was not an
``assistant`` message with calls, which would have failed as unanswered; every other check
reads only blocks a plain part does not hold (thinking and compaction blocks and their
signatures, tool references, MCP listings), whose outcome may depend on the request. A
part that holds one is checked whole, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]

_PLAIN_BLOCKS = frozenset({"text", "tool_use"})


@dataclass(frozen=True)
class Checked:
    """The first ``length`` messages of a thread's history passed the checks."""

    length: int
    use_ids: frozenset[str]
    """Their ``tool_use`` ids, as the pairing check keeps them."""
    names: Mapping[str, str]
    """Their ``tool_use`` ids' tool names (the engine's ``_tool_names``)."""
    plain: bool
    """Whether they hold plain blocks only: then a continue is checked from ``length``."""


def after(prior: Checked | None) -> int:
    """Where the checks of a continue of a thread whose history passed them as ``prior``
    start: after the part that passed, if it is plain; else at the first message."""
    return prior.length if prior is not None and prior.plain else 0


def _plain_block(block: object) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if kind in _PLAIN_BLOCKS:
        return True
    if kind != "tool_result":
        return False
    content = block.get("content")
    return (
        content is None
        or isinstance(content, str)
        or (
            isinstance(content, list)
            and all(isinstance(b, dict) and b.get("type") == "text" for b in content)
        )
    )


def plain(messages: Iterable[Json]) -> bool:
    """Whether ``messages`` hold plain blocks only (string content is one text block)."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str) and not (
            isinstance(content, list) and all(_plain_block(b) for b in content)
        ):
            return False
    return True
