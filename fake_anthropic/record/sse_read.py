"""Reading a Messages API event stream back into the message it delivers.

The recording proxy keeps the final message of a streamed reply, not its events, so a
recording is readable and replays as either JSON or a stream. The accumulation follows the
SDK's stream helper (2.14 ``lib/streaming/_beta_messages.py``): ``message_start`` gives
the message, ``content_block_start`` each block, the deltas fill them in
(``input_json_delta`` pieces join into the input's JSON), ``message_delta`` sets the stop
reason and merges the cumulative usage and any ``context_management``; an ``error``
event is the stream's error.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


def parse_events(data: bytes) -> list[tuple[str | None, Json]]:
    """The (event name, JSON data) pairs of a complete event stream; frames without JSON
    data (comments, keep-alives) are skipped."""
    out: list[tuple[str | None, Json]] = []
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    for frame in text.split("\n\n"):
        name: str | None = None
        lines: list[str] = []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if not lines:
            continue
        try:
            payload = json.loads("\n".join(lines))
        except (ValueError, RecursionError):
            continue
        if isinstance(payload, dict):
            out.append((name, payload))
    return out


@dataclass
class Accumulated:
    """What a stream delivered: the message (None if it never started), whether it reached
    ``message_stop``, and the ``error`` event's body if one came."""

    message: Json | None = None
    complete: bool = False
    error: Json | None = None
    _json: dict[int, str] = field(default_factory=dict)


def _delta(block: Json, delta: Json, index: int, state: Accumulated) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = str(block.get("text") or "") + str(delta.get("text", ""))
    elif kind == "input_json_delta":
        state._json[index] = state._json.get(index, "") + str(delta.get("partial_json", ""))
    elif kind == "thinking_delta":
        block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking", ""))
    elif kind == "signature_delta":
        block["signature"] = delta.get("signature")
    elif kind == "citations_delta":
        cited = block.get("citations") or []
        block["citations"] = [*cited, delta.get("citation")]
    elif kind == "compaction_delta":
        block["content"] = delta.get("content")
        if "encrypted_content" in delta:
            block["encrypted_content"] = delta.get("encrypted_content")


def _input(piece: str) -> object:
    """A tool use's input from its joined ``partial_json``; the text itself if it is not
    JSON (what loading the recording then names)."""
    try:
        return json.loads(piece) if piece.strip() else {}
    except (ValueError, RecursionError):
        return piece


def accumulate(events: list[tuple[str | None, Json]]) -> Accumulated:
    """The message the events deliver, built as the SDK's stream helper builds it."""
    state = Accumulated()
    for name, data in events:
        kind = data.get("type", name)
        if kind == "error":
            state.error = copy.deepcopy(data)
            continue
        if kind == "message_start" and isinstance(data.get("message"), dict):
            state.message = copy.deepcopy(data["message"])
            state.message["content"] = []
            continue
        message = state.message
        if message is None:
            continue
        content: list[Json] = message["content"]
        index = data.get("index")
        if kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            content.append(copy.deepcopy(data["content_block"]))
        elif kind == "content_block_delta" and isinstance(index, int) and index < len(content):
            _delta(content[index], data.get("delta") or {}, index, state)
        elif kind == "content_block_stop" and isinstance(index, int) and index < len(content):
            piece = state._json.pop(index, None)
            if piece is not None:
                content[index]["input"] = _input(piece)
        elif kind == "message_delta":
            for key, value in (data.get("delta") or {}).items():
                message[key] = copy.deepcopy(value)
            usage = message.setdefault("usage", {})
            usage.update(copy.deepcopy(data.get("usage") or {}))
            if "context_management" in data:
                message["context_management"] = copy.deepcopy(data["context_management"])
        elif kind == "message_stop":
            state.complete = True
    return state
