"""The pieces of a script: content blocks, turns, and the memory tool's shorthands.

Blocks are plain frozen values; a ``tool_use`` without an id gets a fresh, unique one
each time it is played, so one block (or a function returning new ones) can be played
in several conversations without two calls sharing an id.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from fake_anthropic._records import Conversation

MEMORY_TOOL = "memory"


@dataclass(frozen=True)
class Text:
    """A ``text`` content block of an assistant turn."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block; ``id`` None means "make a unique one when played"."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


Block: TypeAlias = Text | ToolUse


@dataclass(frozen=True)
class Turn:
    """One assistant reply: its blocks and stop reason (None: ``tool_use`` if it calls a
    tool, else ``end_turn``, as the model ends a turn)."""

    blocks: tuple[Block, ...]
    stop_reason: str | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


ScriptItem: TypeAlias = "Turn | Block | Callable[[Conversation], Turn | Block]"


def turn(*blocks: Block, stop_reason: str | None = None) -> Turn:
    """An assistant turn of ``blocks``; see ``Turn`` for the default stop reason."""
    for block in blocks:
        if not isinstance(block, Text | ToolUse):
            raise TypeError(f"a turn holds text() and tool_use() blocks, not {block!r}")
    return Turn(tuple(blocks), stop_reason)


def text(value: str) -> Text:
    """A text block."""
    if not isinstance(value, str):
        raise TypeError(f"text() takes a str, not {type(value).__name__}")
    return Text(value)


def tool_use(name: str, input: Mapping[str, Any], id: str | None = None) -> ToolUse:
    """A call of tool ``name`` with ``input`` (copied, so later edits of it do not leak in)."""
    if not isinstance(input, Mapping):
        raise TypeError(f"tool_use() input must be a mapping, not {type(input).__name__}")
    return ToolUse(name, copy.deepcopy(dict(input)), id)


class MemoryCommands:
    """Shorthands for the memory tool's commands (``memory_20250818``, tool name "memory"),
    with the inputs in the shape the model sends them."""

    def view(
        self,
        path: str,
        view_range: tuple[int, int] | list[int] | None = None,
        *,
        id: str | None = None,
    ) -> ToolUse:
        command: dict[str, Any] = {"command": "view", "path": path}
        if view_range is not None:
            command["view_range"] = list(view_range)
        return ToolUse(MEMORY_TOOL, command, id)

    def create(self, path: str, file_text: str, *, id: str | None = None) -> ToolUse:
        return ToolUse(MEMORY_TOOL, {"command": "create", "path": path, "file_text": file_text}, id)

    def str_replace(
        self, path: str, old_str: str, new_str: str, *, id: str | None = None
    ) -> ToolUse:
        command = {"command": "str_replace", "path": path, "old_str": old_str, "new_str": new_str}
        return ToolUse(MEMORY_TOOL, command, id)

    def insert(
        self, path: str, insert_line: int, insert_text: str, *, id: str | None = None
    ) -> ToolUse:
        command = {
            "command": "insert",
            "path": path,
            "insert_line": insert_line,
            "insert_text": insert_text,
        }
        return ToolUse(MEMORY_TOOL, command, id)

    def delete(self, path: str, *, id: str | None = None) -> ToolUse:
        return ToolUse(MEMORY_TOOL, {"command": "delete", "path": path}, id)

    def rename(self, old_path: str, new_path: str, *, id: str | None = None) -> ToolUse:
        command = {"command": "rename", "old_path": old_path, "new_path": new_path}
        return ToolUse(MEMORY_TOOL, command, id)


memory = MemoryCommands()


def check_item(item: object) -> None:
    """Refuse, when it is scripted, what can never be played."""
    if isinstance(item, Turn | Text | ToolUse) or callable(item):
        return
    raise TypeError(
        "script() takes turn(...), text(...), tool_use(...) / memory.* blocks, or a function "
        f"of the conversation returning one of those; got {item!r}"
    )


def as_turn(value: object) -> Turn | None:
    """A script function's result as a turn, or None if it is neither a turn nor a block."""
    if isinstance(value, Turn):
        return value
    if isinstance(value, Text | ToolUse):
        return Turn((value,))
    return None


def turns_from_json(data: object) -> list[Turn]:
    """Turns from the JSON form: a list of turns, each a list of content blocks in the API's
    shape or ``{"content": [...], "stop_reason": ...}``."""
    if not isinstance(data, list):
        raise ValueError("a JSON script is a list of turns")
    return [_turn_from_json(item, i) for i, item in enumerate(data)]


def _turn_from_json(item: object, i: int) -> Turn:
    stop_reason: object = None
    if isinstance(item, dict):
        unknown = set(item) - {"content", "stop_reason"}
        if unknown or "content" not in item:
            raise ValueError(f"turn {i}: an object turn has 'content' and optionally 'stop_reason'")
        blocks, stop_reason = item["content"], item.get("stop_reason")
    else:
        blocks = item
    if not isinstance(blocks, list):
        raise ValueError(f"turn {i}: content must be a list of blocks")
    if stop_reason is not None and not isinstance(stop_reason, str):
        raise ValueError(f"turn {i}: stop_reason must be a string")
    return Turn(tuple(_block_from_json(b, i, j) for j, b in enumerate(blocks)), stop_reason)


def _block_from_json(block: object, i: int, j: int) -> Block:
    where = f"turn {i}, block {j}"
    if not isinstance(block, dict):
        raise ValueError(f"{where}: a block is an object")
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return Text(block["text"])
    if kind == "tool_use" and isinstance(block.get("name"), str):
        given = block.get("input", {})
        block_id = block.get("id")
        if not isinstance(given, dict) or not (block_id is None or isinstance(block_id, str)):
            raise ValueError(f"{where}: tool_use input must be an object and id a string")
        return ToolUse(block["name"], given, block_id)
    raise ValueError(
        f"{where}: the scripted model plays text blocks ({{'type': 'text', 'text': ...}}) "
        f"and tool_use blocks ({{'type': 'tool_use', 'name': ..., 'input': ...}}); got {block!r}"
    )
