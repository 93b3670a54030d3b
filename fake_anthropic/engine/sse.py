"""A reply as the Messages API streams it: server-sent events, each with its ``event:`` line.

The sequence is the documented one: ``message_start`` (the message with empty
``content`` and the full usage), a ``ping``, then per block ``content_block_start`` (text
``""``, tool_use, server_tool_use and mcp_tool_use ``input: {}``, thinking ``""`` with an empty
signature, compaction with null content), ``content_block_delta`` pieces (``text_delta``
then one ``citations_delta`` per citation; ``input_json_delta`` starting with an empty
piece, whose pieces join into the input's JSON; ``thinking_delta`` pieces then one
``signature_delta``; one ``compaction_delta`` with the whole summary), ``content_block_stop``
(redacted thinking, server tool results and ``mcp_tool_result`` arrive whole in their
start event); then
``message_delta`` with the stop reason, the cumulative usage and any
``context_management``, and ``message_stop``. The SDK skips an event without an
``event:`` line, so every event has one.
"""

from __future__ import annotations

import json
from typing import Any

from fake_anthropic.engine.errors import utf8
from fake_anthropic.engine.usage import delta_usage

Json = dict[str, Any]

PIECE_CHARS = 12
"""Characters per delta piece: small, so a reply arrives in several pieces, as a real one
does, and a client that mishandles joining them fails."""

START_OUTPUT_TOKENS = 1
"""``usage.output_tokens`` in ``message_start`` (the docs' example shows 1)."""


def pieces(value: str, size: int = PIECE_CHARS) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _opened_and_deltas(block: Json) -> tuple[Json, list[Json]]:
    """A block's ``content_block_start`` payload and its deltas."""
    kind = block["type"]
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        deltas = [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in ["", *pieces(json.dumps(block["input"], ensure_ascii=False))]
        ]
        return {**block, "input": {}}, deltas
    if kind == "text":
        citations = block.get("citations") or []
        opened = {k: v for k, v in block.items() if k != "citations"}
        deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
        deltas += [{"type": "citations_delta", "citation": c} for c in citations]
        return {**opened, "text": ""}, deltas
    if kind == "thinking":
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
        return {**block, "thinking": "", "signature": ""}, deltas
    if kind == "compaction":
        delta = {
            "type": "compaction_delta",
            "content": block.get("content"),
            "encrypted_content": block.get("encrypted_content"),
        }
        return {**block, "content": None, "encrypted_content": None}, [delta]
    # redacted_thinking and server tool results arrive whole in their start event
    return block, []


def events(message: Json) -> list[tuple[str, Json]]:
    """The (event name, data) pairs of ``message`` streamed."""
    usage = message["usage"]
    start = {
        **{k: v for k, v in message.items() if k != "context_management"},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            **{k: v for k, v in usage.items() if k != "iterations"},
            "output_tokens": START_OUTPUT_TOKENS,
        },
    }
    out: list[tuple[str, Json]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        opened, deltas = _opened_and_deltas(block)
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        if index == 0:
            out.append(("ping", {"type": "ping"}))
        out.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if not message["content"]:
        out.append(("ping", {"type": "ping"}))
    delta: Json = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]},
        "usage": delta_usage(usage),
    }
    if "context_management" in message:
        delta["context_management"] = message["context_management"]
    out.append(("message_delta", delta))
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def encode(name: str, data: Json) -> bytes:
    """One event on the wire."""
    return utf8(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n")


def stream(message: Json) -> list[bytes]:
    """``message`` as the byte chunks of its event stream, one event per chunk."""
    return [encode(name, data) for name, data in events(message)]
