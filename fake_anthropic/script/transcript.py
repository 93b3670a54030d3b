"""Readable, stable text of what the scripted model was sent and answered.

Ids change between runs (message ids always, tool_use ids unless scripted), so calls are
numbered ``#1``, ``#2``... in the order they first appear, and a tool result names the
call it answers by that number.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fake_anthropic.script.records import RecordedRequest
from fake_anthropic.script.turns import (
    BLOCK_TYPES,
    ApiError,
    Compaction,
    McpToolUse,
    RedactedThinking,
    ServerToolUse,
    Text,
    Thinking,
    ToolUse,
    Turn,
)

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


def _result_body(content: object, limit: int | None) -> str:
    """A tool result's content: its text quoted, and any non-text blocks named."""
    if isinstance(content, str) or content is None:
        return _quote(content or "", limit)
    if not isinstance(content, list):
        return _compact(content)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(_compact(block))
        elif block.get("type") == "text":
            parts.append(_quote(str(block.get("text", "")), limit))
        elif block.get("type") == "tool_reference":
            parts.append(f"[tool_reference {block.get('tool_name')}]")
        else:
            parts.append(f"[{block.get('type')}]")
    return " ".join(parts) if parts else '""'


def _block_lines(block: object, calls: _Calls, limit: int | None) -> str:
    if not isinstance(block, dict):
        return _compact(block)
    kind = block.get("type")
    if kind == "text":
        cited = block.get("citations") or []
        note = f" ({len(cited)} citation(s))" if cited else ""
        return f"text {_quote(str(block.get('text', '')), limit)}{note}"
    if kind == "tool_use":
        call = calls.number(block.get("id"))
        return f"tool_use {call} {block.get('name')} {_compact(block.get('input'))}"
    if kind == "tool_result":
        status = "error" if block.get("is_error") is True else "ok"
        body = _result_body(block.get("content"), limit)
        return f"tool_result {calls.known(block.get('tool_use_id'))} {status} {body}"
    if kind == "thinking":
        return f"thinking {_quote(str(block.get('thinking', '')), limit)}"
    if kind == "redacted_thinking":
        return f"redacted_thinking ({len(str(block.get('data', '')))} chars)"
    if kind == "compaction":
        content = block.get("content")
        summary = _quote(str(content), limit) if content is not None else "(failed: no summary)"
        return f"compaction {summary}"
    if kind == "server_tool_use":
        call = calls.number(block.get("id"))
        return f"server_tool_use {call} {block.get('name')} {_compact(block.get('input'))}"
    if kind == "mcp_tool_listing":
        tools = block.get("tools")
        names = (
            [t.get("name") for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
        )
        return f"mcp_tool_listing {block.get('mcp_server_name')} ({len(names)} tools)"
    if kind == "mcp_tool_use":
        call = calls.number(block.get("id"))
        tool = f"{block.get('server_name')}.{block.get('name')}"
        return f"mcp_tool_use {call} {tool} {_compact(block.get('input'))}"
    if kind == "mcp_tool_result":
        status = "error" if block.get("is_error") is True else "ok"
        body = _result_body(block.get("content"), limit)
        return f"mcp_tool_result {calls.known(block.get('tool_use_id'))} {status} {body}"
    if kind == "tool_search_tool_result":
        found = block.get("content")
        if isinstance(found, dict) and found.get("type") == "tool_search_tool_search_result":
            refs = found.get("tool_references")
            body = _result_body(refs if isinstance(refs, list) else [], limit)
        else:
            body = _compact(found)
        return f"{kind} {calls.known(block.get('tool_use_id'))} {body}"
    if isinstance(kind, str) and kind.endswith("_tool_result") and "tool_use_id" in block:
        content = block.get("content")
        size = f"{len(content)} result(s)" if isinstance(content, list) else _compact(content)
        return f"{kind} {calls.known(block.get('tool_use_id'))} {size}"
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


def _describe_block(block: object) -> str:
    if isinstance(block, Text):
        return f"text {_quote(block.text, 60)}"
    if isinstance(block, ToolUse):
        return f"tool_use {block.name} {_compact(dict(block.input))[:80]}"
    if isinstance(block, Thinking):
        return f"thinking {_quote(block.thinking, 60)}"
    if isinstance(block, RedactedThinking):
        return "redacted_thinking"
    if isinstance(block, ServerToolUse):
        return f"server_tool_use {block.name} {_compact(dict(block.input))[:80]}"
    if isinstance(block, McpToolUse):
        return f"mcp_tool_use {block.server}.{block.name} {_compact(dict(block.input))[:80]}"
    return repr(block)


def describe_item(item: object) -> str:
    """A script item in a few words, for the report of items never played."""
    if isinstance(item, Compaction):
        return f"compaction {_quote(item.summary, 60)}"
    if isinstance(item, ApiError):
        return f"api_error {item.status} {item.type}: {_quote(item.message, 60)}"
    turn = Turn((item,)) if isinstance(item, BLOCK_TYPES) else item
    if isinstance(turn, Turn):
        parts = [_describe_block(b) for b in turn.blocks]
        return "turn: " + ("; ".join(parts) or "(no blocks)")
    name = getattr(item, "__qualname__", None) or type(item).__name__
    return f"function {name}"


def _edit_line(edit: Json) -> str:
    kind = edit.get("type")
    if kind == "clear_thinking_20251015":
        what = f"{edit.get('cleared_thinking_turns')} thinking turn(s)"
    else:
        what = f"{edit.get('cleared_tool_uses')} tool use(s)"
    return (
        f"  context editing: {kind} cleared {what}, {edit.get('cleared_input_tokens')} input tokens"
    )


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
        lines.extend(_edit_line(edit) for edit in r.applied_edits)
        if r.error is not None:
            code = f" ({r.error.error_code})" if r.error.error_code else ""
            message = r.error.message.replace("\n", "\n    ")
            label = "scripted error" if r.turn is not None else "refused"
            lines.append(f"  {label}: {r.error.status} {r.error.type}{code}: {message}")
        elif r.response is not None and "usage" not in r.response:
            lines.append(f"  counted {r.response.get('input_tokens')} input tokens")
        elif r.response is not None:
            usage = r.response["usage"]
            cache = [
                f"{usage[key]} {name}"
                for key, name in (
                    ("cache_read_input_tokens", "cache read"),
                    ("cache_creation_input_tokens", "cache written"),
                )
                if usage.get(key)
            ]
            stop = r.response["stop_reason"]
            if r.response.get("stop_sequence") is not None:
                stop += f" {_quote(r.response['stop_sequence'])}"
            lines.append(
                f"  assistant ({stop}, {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out{''.join(', ' + c for c in cache)}):"
            )
            lines.extend(f"    {_block_lines(b, calls, None)}" for b in r.response["content"])
    return "\n".join(lines) + ("\n" if lines else "")
