"""A script in JSON (``fake-anthropic serve SCRIPT.json``, ``ScriptedModel.from_json``):
every item kind the Python API has, in the API's own shapes where it has one.

A script is a list of items:

- a turn: a list of content blocks, or ``{"content": [...], "stop_reason": ...,
  "stop_sequence": ..., "usage": {...}}`` (the fields of a reply message, so a recorded
  reply's ``content`` and ``stop_reason`` can be pasted in as a turn);
- ``{"type": "compaction", "summary": "..."}``: ``compaction(summary)``;
- ``{"type": "api_error", "status": 429, "error": {"type": "rate_limit_error",
  "message": "..."}, "retry_after": 1}``: ``api_error(...)`` (``error`` as in the API's
  error body).

Blocks are the reply's: ``text`` (with ``citations``), ``tool_use`` (``id`` optional),
``thinking`` (``signature`` optional), ``redacted_thinking``, and a ``server_tool_use``
followed by its result block (``web_search_tool_result``...), as a reply holds them (a
tool search's ``tool_search_tool_result`` is checked at load: its ``content`` must be a
``tool_search_tool_search_result`` of ``tool_reference`` blocks or a
``tool_search_tool_result_error``); an
``mcp_tool_use`` (``name``, ``input``, ``server_name``, ``id`` optional) calls that MCP
server when played, unless its ``mcp_tool_result`` follows it, as a recorded reply holds
it: then the result is played as it is.
"""

from __future__ import annotations

from typing import Any

from fake_anthropic.script import search_results as searching
from fake_anthropic.script.turns import (
    SERVER_TOOL_RESULT_TYPES,
    ApiError,
    Block,
    Compaction,
    McpToolUse,
    RedactedThinking,
    ServerToolUse,
    Text,
    Thinking,
    ToolUse,
    Turn,
    api_error,
    compaction,
    turn,
)

Json = dict[str, Any]
TURN_FIELDS = frozenset({"content", "stop_reason", "stop_sequence", "usage"})
BLOCK_KINDS = (
    "text, tool_use, thinking, redacted_thinking, server_tool_use followed by its result, "
    "and mcp_tool_use (with its mcp_tool_result, if recorded)"
)


def items_from_json(data: object) -> list[Turn | Compaction | ApiError]:
    """The script items of a JSON script; ``ValueError`` names the item at fault."""
    if not isinstance(data, list):
        raise ValueError("a JSON script is a list of items (turns, compactions, api errors)")
    return [_item(item, i) for i, item in enumerate(data)]


def _item(item: object, i: int) -> Turn | Compaction | ApiError:
    where = f"item {i}"
    if isinstance(item, dict) and item.get("type") == "compaction":
        if set(item) != {"type", "summary"}:
            raise ValueError(f'{where}: a compaction is {{"type": "compaction", "summary": ...}}')
        try:
            return compaction(item["summary"])
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None
    if isinstance(item, dict) and item.get("type") == "api_error":
        return _api_error(item, where)
    return _turn(item, f"turn {i}")


def _api_error(item: Json, where: str) -> ApiError:
    error = item.get("error")
    unknown = set(item) - {"type", "status", "error", "retry_after"}
    if (
        unknown
        or not isinstance(error, dict)
        or not isinstance(error.get("type"), str)
        or not isinstance(error.get("message"), str)
    ):
        raise ValueError(
            f'{where}: an api error is {{"type": "api_error", "status": ..., "error": '
            '{"type": ..., "message": ...}, "retry_after": ...}'
        )
    retry_after = item.get("retry_after")
    if retry_after is not None and not isinstance(retry_after, int | float):
        raise ValueError(f"{where}: retry_after must be a number of seconds")
    status = item.get("status")
    if not isinstance(status, int) or isinstance(status, bool):
        raise ValueError(f"{where}: status must be an integer")
    return api_error(status, error["type"], error["message"], retry_after=retry_after)


def _turn(item: object, where: str) -> Turn:
    fields: Json = {}
    if isinstance(item, dict):
        unknown = set(item) - TURN_FIELDS
        if unknown or "content" not in item:
            raise ValueError(
                f"{where}: an object turn has 'content' and optionally 'stop_reason', "
                f"'stop_sequence', 'usage' (unknown: {sorted(unknown)})"
            )
        blocks, fields = item["content"], {k: v for k, v in item.items() if k != "content"}
    else:
        blocks = item
    if not isinstance(blocks, list):
        raise ValueError(f"{where}: content must be a list of blocks")
    for name in ("stop_reason", "stop_sequence"):
        if fields.get(name) is not None and not isinstance(fields[name], str):
            raise ValueError(f"{where}: {name} must be a string")
    if fields.get("usage") is not None and not isinstance(fields["usage"], dict):
        raise ValueError(f"{where}: usage must be an object")
    played = _blocks(blocks, where)  # its errors name the block already
    try:
        return turn(
            *played,
            stop_reason=fields.get("stop_reason"),
            stop_sequence=fields.get("stop_sequence"),
            usage=fields.get("usage"),
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from None


def _blocks(blocks: list[object], where: str) -> list[Block]:
    out: list[Block] = []
    j = 0
    while j < len(blocks):
        block = blocks[j]
        at = f"{where}, block {j}"
        if not isinstance(block, dict):
            raise ValueError(f"{at}: a block is an object")
        if block.get("type") == "server_tool_use":
            result = blocks[j + 1] if j + 1 < len(blocks) else None
            out.append(_server_tool(block, result, at))
            j += 2
            continue
        if block.get("type") == "mcp_tool_use":
            after = blocks[j + 1] if j + 1 < len(blocks) else None
            result = (
                after
                if isinstance(after, dict) and after.get("type") == "mcp_tool_result"
                else None
            )
            out.append(_mcp_tool(block, result, at))
            j += 1 if result is None else 2
            continue
        out.append(_block(block, at))
        j += 1
    return out


def _optional_str(block: Json, key: str, at: str) -> str | None:
    value = block.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{at}: {key} must be a string")
    return value


def _block(block: Json, at: str) -> Block:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        citations = block.get("citations") or []
        if not isinstance(citations, list) or not all(isinstance(c, dict) for c in citations):
            raise ValueError(f"{at}: citations must be a list of objects")
        return Text(block["text"], tuple(citations))
    if kind == "tool_use" and isinstance(block.get("name"), str):
        given = block.get("input", {})
        if not isinstance(given, dict):
            raise ValueError(f"{at}: tool_use input must be an object")
        return ToolUse(block["name"], given, _optional_str(block, "id", at))
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return Thinking(block["thinking"], _optional_str(block, "signature", at))
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return RedactedThinking(block["data"])
    raise ValueError(f"{at}: the scripted model plays {BLOCK_KINDS} blocks; got {block!r}")


def _server_tool(block: Json, result: object, at: str) -> ServerToolUse:
    name, given = block.get("name"), block.get("input", {})
    if name not in SERVER_TOOL_RESULT_TYPES or not isinstance(given, dict):
        raise ValueError(
            f"{at}: server_tool_use needs a known server tool name "
            f"({', '.join(sorted(SERVER_TOOL_RESULT_TYPES))}) and an input object"
        )
    expected = SERVER_TOOL_RESULT_TYPES[str(name)]
    if not isinstance(result, dict) or result.get("type") != expected:
        raise ValueError(f"{at}: a server_tool_use of {name} is followed by its {expected} block")
    use_id = _optional_str(block, "id", at)
    if result.get("tool_use_id") not in (None, use_id):
        raise ValueError(f"{at}: the {expected} block answers another tool use id")
    if expected == searching.RESULT_TYPE:
        fault = searching.result_fault(result.get("content"))
        if fault is not None:
            raise ValueError(f"{at}: the {expected} block's {fault}")
        query = given.get("query")
        if not isinstance(query, str):
            raise ValueError(f"{at}: the {name} call's input.query must be a string")
    return ServerToolUse(str(name), given, expected, result.get("content"), use_id)


def _mcp_tool(block: Json, result: Json | None, at: str) -> McpToolUse:
    """An ``mcp_tool_use`` block (``name``, ``input``, ``server_name``): called for real when
    played, or, followed by its ``mcp_tool_result`` block, played as recorded."""
    name, given, server = block.get("name"), block.get("input", {}), block.get("server_name")
    if not isinstance(name, str) or not isinstance(server, str) or not isinstance(given, dict):
        raise ValueError(f"{at}: mcp_tool_use needs a name, a server_name and an input object")
    use_id = _optional_str(block, "id", at)
    if result is None:
        return McpToolUse(name, given, server, use_id)
    if result.get("tool_use_id") not in (None, use_id):
        raise ValueError(f"{at}: the mcp_tool_result block answers another tool use id")
    content = result.get("content", [])
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
        raise ValueError(f"{at}: mcp_tool_result content must be a string or a list of blocks")
    is_error = result.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ValueError(f"{at}: mcp_tool_result is_error must be a boolean")
    return McpToolUse(name, given, server, use_id, (is_error, tuple(content)))
