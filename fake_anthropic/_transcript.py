"""Readable, stable text of what the scripted model was sent and answered.

Ids change between runs (message ids always, tool_use ids unless scripted), so calls are
numbered ``#1``, ``#2``... in the order they first appear, and a tool result names the
call it answers by that number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fake_anthropic._records import RecordedRequest, result_text
from fake_anthropic._turns import Text, ToolUse, Turn

Json = dict[str, Any]
SHORT = 160


def _quote(value: str, limit: int | None = None) -> str:
    if limit is not None and len(value) > limit:
        value = value[:limit] + "…"
    return json.dumps(value, ensure_ascii=False)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


class _Calls:
    """Numbers for tool_use ids, in order of first appearance."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def number(self, use_id: object) -> str:
        key = str(use_id)
        if key not in self.numbers:
            self.numbers[key] = len(self.numbers) + 1
        return f"#{self.numbers[key]}"

    def known(self, use_id: object) -> str:
        found = self.numbers.get(str(use_id))
        return f"#{found}" if found is not None else f"#? ({use_id})"


def _block_lines(block: object, calls: _Calls, limit: int | None) -> str:
    if not isinstance(block, dict):
        return _compact(block)
    kind = block.get("type")
    if kind == "text":
        return f"text {_quote(str(block.get('text', '')), limit)}"
    if kind == "tool_use":
        call = calls.number(block.get("id"))
        return f"tool_use {call} {block.get('name')} {_compact(block.get('input'))}"
    if kind == "tool_result":
        status = "error" if block.get("is_error") is True else "ok"
        body = _quote(result_text(block.get("content")), limit)
        return f"tool_result {calls.known(block.get('tool_use_id'))} {status} {body}"
    rest = {k: v for k, v in block.items() if k != "type"}
    return f"{kind} {_compact(rest)}"


def message_lines(
    messages: Sequence[Json], calls: _Calls, indent: str = "  ", limit: int | None = None
) -> list[str]:
    """Each message as a ``role:`` line and one indented line per content block."""
    lines: list[str] = []
    for message in messages:
        lines.append(f"{indent}{message.get('role')}:")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        lines.extend(
            f"{indent}  {_block_lines(b, calls, limit)}"
            for b in (blocks if isinstance(blocks, list) else [blocks])
        )
    return lines


def describe(messages: Sequence[Json], history: Sequence[Json]) -> str:
    """A short account of ``messages`` for an error message, numbering the calls of the
    whole ``history`` they belong to."""
    calls = _Calls()
    for message in history:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls.number(block.get("id"))
    return "\n".join(message_lines(messages, calls, indent="  ", limit=SHORT)) or "  (nothing)"


def describe_item(item: object) -> str:
    """A script item in a few words, for the report of items never played."""
    turn = Turn((item,)) if isinstance(item, Text | ToolUse) else item
    if isinstance(turn, Turn):
        parts = [
            f"text {_quote(b.text, 60)}"
            if isinstance(b, Text)
            else f"tool_use {b.name} {_compact(dict(b.input))[:80]}"
            for b in turn.blocks
        ]
        return "turn: " + ("; ".join(parts) or "(no blocks)")
    name = getattr(item, "__qualname__", None) or type(item).__name__
    return f"function {name}"


def transcript(records: Sequence[RecordedRequest]) -> str:
    """Every request: its header, the messages new in it, any context edits, the answer."""
    calls = _Calls()
    lines: list[str] = []
    for r in records:
        head = [f"request {r.index}"]
        if r.path.split("?")[0] != "/v1/messages":
            head.append(r.path)
        head.append(f"thread {r.thread}" if r.thread is not None else "no thread")
        if r.stream:
            head.append("stream")
        if r.betas:
            head.append("betas " + ",".join(r.betas))
        lines.append(" · ".join(head))
        lines.extend(message_lines(r.new_messages, calls))
        for edit in r.applied_edits:
            lines.append(
                f"  context editing: {edit.get('type')} cleared {edit.get('cleared_tool_uses')} "
                f"tool use(s), {edit.get('cleared_input_tokens')} input tokens"
            )
        if r.error is not None:
            code = f" ({r.error.error_code})" if r.error.error_code else ""
            message = r.error.message.replace("\n", "\n    ")
            lines.append(f"  refused: {r.error.status} {r.error.type}{code}: {message}")
        elif r.response is not None:
            usage = r.response["usage"]
            lines.append(
                f"  assistant ({r.response['stop_reason']}, {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out):"
            )
            lines.extend(f"    {_block_lines(b, calls, None)}" for b in r.response["content"])
    return "\n".join(lines) + ("\n" if lines else "")
