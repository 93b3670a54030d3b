"""Compaction: a request with the ``compaction`` field (beta ``compact-2026-09-04``, the SDK
runner's ``compact_before_next_turn()``), or a ``compact_20260112`` edit that fires.

Documented (SDK 2.14 ``BetaCompactionConfigParam``, ``MessageCreateParams.compaction``,
``BetaCompactionBlock``, the ``compaction_*`` error details): a compaction request
summarizes the whole conversation and answers only a signed ``compaction`` block
(``stop_reason`` ``"compaction"``), which later requests send back first, in place of the
messages it summarizes; it cannot be combined with ``context_management``; it is refused
when ``messages`` hold nothing to summarize (``compaction_nothing_to_summarize``) or end on
an unfinished assistant turn (``compaction_incomplete_turn``). The summary is the scripted
``compaction(summary)`` item when one is next in the script, otherwise a default one built
from the conversation; no other kind of item is consumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import coded, invalid
from fake_anthropic.engine.signatures import Signatures
from fake_anthropic.engine.validation import blocks_of
from fake_anthropic.script.records import result_text

Json = dict[str, Any]
KINDS = ("summarize",)


def check_config(body: Json) -> None:
    """The ``compaction`` field's shape, and the fields it cannot go with."""
    config = body["compaction"]
    if not isinstance(config, Mapping) or config.get("type") not in KINDS:
        raise invalid(f"compaction.type: must be one of {list(KINDS)}")
    instructions = config.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise invalid("compaction.instructions: must be a string")
    if body.get("context_management") is not None:
        raise invalid("compaction: cannot be combined with `context_management`")


def _has_content(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(isinstance(b, dict) for b in blocks_of(message))


def check_conversation(messages: Sequence[Json]) -> None:
    """A conversation a compaction request can summarize."""
    if not any(_has_content(m) for m in messages):
        raise coded(
            "messages: no `user` or `assistant` content to summarize",
            "compaction_nothing_to_summarize",
        )
    last = messages[-1]
    tail = blocks_of(last)
    if (
        last.get("role") == "assistant"
        and tail
        and isinstance(tail[-1], dict)
        and tail[-1].get("type") in ("tool_use", "server_tool_use")
    ):
        raise coded(
            f"messages.{len(messages) - 1}: the conversation ends on an `assistant` turn "
            f"that is not finished (a `{tail[-1]['type']}` without its result); compact "
            "after the turn is complete",
            "compaction_incomplete_turn",
        )


def _block_text(block: object) -> str:
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"[called {block.get('name')}]"
    if kind == "tool_result":
        return f"[result: {result_text(block.get('content'))}]"
    if kind == "compaction":
        return f"[summary: {block.get('content')}]"
    return ""


def default_summary(messages: Sequence[Json]) -> str:
    """A summary of ``messages`` when the script gives none: each message's role and the
    start of its text."""
    limit = assumed.DEFAULT_SUMMARY_CHARS
    parts = []
    for message in messages:
        content = message.get("content")
        said = (
            content
            if isinstance(content, str)
            else " ".join(t for t in (_block_text(b) for b in blocks_of(message)) if t)
        )
        said = " ".join(said.split())
        parts.append(f"{message.get('role')}: {said[:limit]}{'…' if len(said) > limit else ''}")
    return f"Summary of {len(messages)} message(s): " + "; ".join(parts)


def block(summary: str, signatures: Signatures) -> Json:
    """The ``compaction`` block of a reply, signed."""
    return {
        "type": "compaction",
        "content": summary,
        "encrypted_content": None,
        "signature": signatures.sign_compaction(summary),
    }
