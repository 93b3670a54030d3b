"""Whether a request matches the recorded one, and a readable account of how it differs.

``strict`` compares the endpoint, the betas (as a set) and the body after normalising what
legitimately changes between runs:

- ids: each ``tool_use`` / ``server_tool_use`` / ``mcp_tool_use`` id and each
  ``tool_use_id`` is renamed by order of first appearance in the request (``<tool use 1>``,
  ...); a thread's ``previous_message_id`` becomes the exchange whose reply it names
  (``<reply of exchange 3>``);
- ``cache_control`` anywhere, and the request's ``metadata``, are dropped;
- ``stream`` is dropped (the replay answers in the form each request asks for);
- a field named like a credential (an MCP server's ``authorization_token``...) compares
  as ``[redacted]``, as the recording holds it;
- string ``content`` (and a string ``system``) is the one text block it stands for;
- JSON key order never matters (bodies are compared parsed).

Everything else must be equal: model, max_tokens, system, tools, tool_choice, thinking,
context_management, compaction, and every message and block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.redact import REDACTED, is_credential_field

Json = dict[str, Any]
MatchMode = Literal["strict", "order"]
MATCH_MODES: Final = ("strict", "order")

DROPPED_FIELDS: Final = assumed.RECORDING_IGNORED_FIELDS
ID_BLOCKS: Final = ("tool_use", "server_tool_use", "mcp_tool_use")
MAX_DIFFERENCES: Final = 12
SHORT: Final = 100


class _Ids:
    def __init__(self, replies: Mapping[str, int]) -> None:
        self.replies = replies
        self.tools: dict[str, str] = {}

    def tool(self, value: object) -> object:
        if not isinstance(value, str):
            return value
        if value not in self.tools:
            self.tools[value] = f"<tool use {len(self.tools) + 1}>"
        return self.tools[value]

    def reply(self, value: object) -> object:
        if not isinstance(value, str):
            return value
        found = self.replies.get(value)
        return f"<reply of exchange {found}>" if found is not None else "<an unknown message id>"


def _as_blocks(content: object) -> object:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _walk(value: object, ids: _Ids) -> object:
    if isinstance(value, list):
        return [_walk(v, ids) for v in value]
    if not isinstance(value, dict):
        return value
    out: Json = {}
    for key, item in value.items():
        if key == "cache_control":
            continue
        if (key == "id" and value.get("type") in ID_BLOCKS) or key == "tool_use_id":
            out[key] = ids.tool(item)
        elif is_credential_field(str(key)) and item is not None:
            out[key] = REDACTED  # the recording holds it redacted; the live request never
        elif key == "content" and "role" in value:
            out[key] = _walk(_as_blocks(item), ids)
        else:
            out[key] = _walk(item, ids)
    return out


def normalise(body: object, replies: Mapping[str, int]) -> object:
    """A request body as strict matching compares it."""
    if not isinstance(body, dict):
        return body
    ids = _Ids(replies)
    trimmed = {k: v for k, v in body.items() if k not in DROPPED_FIELDS}
    if isinstance(trimmed.get("system"), str):
        trimmed["system"] = _as_blocks(trimmed["system"])
    thread = trimmed.get("thread")
    if isinstance(thread, dict) and "previous_message_id" in thread:
        trimmed["thread"] = {
            **thread,
            "previous_message_id": ids.reply(thread["previous_message_id"]),
        }
    # messages first, so tool-use ids are numbered in conversation order
    ordered = {"messages": trimmed.pop("messages")} if "messages" in trimmed else {}
    ordered.update(trimmed)
    walked = _walk(ordered, ids)
    assert isinstance(walked, dict)
    return walked


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHORT else text[:SHORT] + "…"


def _label(path: str, key: object, recorded: object, sent: object) -> str:
    """A path step; a message names its role, a block its type."""
    if isinstance(key, int):
        step = f"{path}[{key}]"
        for side in (recorded, sent):
            if isinstance(side, dict) and isinstance(side.get("role"), str):
                return f"{step} ({side['role']})"
            if isinstance(side, dict) and isinstance(side.get("type"), str):
                return f"{step} ({side['type']})"
        return step
    return f"{path}.{key}" if path else str(key)


def _diff(path: str, recorded: object, sent: object, out: list[str]) -> None:
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent)):
            where = _label(path, key, None, None)
            if key not in sent:
                out.append(f"{where}: recorded {_short(recorded[key])}, not sent")
            elif key not in recorded:
                out.append(f"{where}: sent {_short(sent[key])}, not recorded")
            else:
                _diff(where, recorded[key], sent[key], out)
        return
    if isinstance(recorded, list) and isinstance(sent, list):
        for i in range(max(len(recorded), len(sent))):
            r = recorded[i] if i < len(recorded) else None
            s = sent[i] if i < len(sent) else None
            where = _label(path, i, r, s)
            if i >= len(sent):
                out.append(f"{where}: recorded {_short(r)}, not sent")
            elif i >= len(recorded):
                out.append(f"{where}: sent {_short(s)}, not recorded")
            else:
                _diff(where, r, s, out)
        if len(recorded) != len(sent):
            out.append(f"{path or 'body'}: recorded {len(recorded)} item(s), sent {len(sent)}")
        return
    if recorded != sent or type(recorded) is not type(sent):
        out.append(f"{path or 'body'}: recorded {_short(recorded)}, sent {_short(sent)}")


def differences(
    recorded: tuple[str, list[str], object], sent: tuple[str, list[str], object]
) -> list[str]:
    """How a request (endpoint, betas, normalised body) differs from the recorded one, one
    line per field, at most ``MAX_DIFFERENCES`` lines."""
    out: list[str] = []
    if recorded[0] != sent[0]:
        out.append(f"endpoint: recorded {recorded[0]}, sent {sent[0]}")
    missing = sorted(set(recorded[1]) - set(sent[1]))
    extra = sorted(set(sent[1]) - set(recorded[1]))
    if missing:
        out.append(f"anthropic-beta: recorded {', '.join(missing)}, not sent")
    if extra:
        out.append(f"anthropic-beta: sent {', '.join(extra)}, not recorded")
    _diff("", recorded[2], sent[2], out)
    if len(out) > MAX_DIFFERENCES:
        out = [*out[:MAX_DIFFERENCES], f"... and {len(out) - MAX_DIFFERENCES} more"]
    return out
