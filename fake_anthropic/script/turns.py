"""The pieces of a script: content blocks, turns, and the memory tool's shorthands.

Blocks are plain frozen values; a ``tool_use`` without an id gets a fresh, unique one
each time it is played, so one block (or a function returning new ones) can be played
in several conversations without two calls sharing an id.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from fake_anthropic.script import search_results as searching

if TYPE_CHECKING:
    from fake_anthropic.script.records import Conversation

MEMORY_TOOL = "memory"


@dataclass(frozen=True)
class Text:
    """A ``text`` content block of an assistant turn, with any ``citations`` (API shape)."""

    text: str
    citations: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class ToolUse:
    """A ``tool_use`` content block; ``id`` None means "make a unique one when played"."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Thinking:
    """A ``thinking`` block; ``signature`` None means "sign it when played"."""

    thinking: str
    signature: str | None = None


@dataclass(frozen=True)
class RedactedThinking:
    """A ``redacted_thinking`` block holding opaque ``data``."""

    data: str


@dataclass(frozen=True)
class ServerToolUse:
    """A server tool's call and its result, played as two blocks: ``server_tool_use``
    (``name``, ``input``) and the result block (``result_type``, ``content``)."""

    name: str
    input: Mapping[str, Any]
    result_type: str
    content: object
    id: str | None = None


@dataclass(frozen=True)
class McpToolUse:
    """A call of tool ``name`` on the request's MCP server ``server``, made by the API on
    its side: played as an ``mcp_tool_use`` block and the ``mcp_tool_result`` the server
    answered. ``result`` None means "call the server for real when played"; a recorded
    ``(is_error, content)`` is played as it is, calling nothing."""

    name: str
    input: Mapping[str, Any]
    server: str
    id: str | None = None
    result: tuple[bool, tuple[Mapping[str, Any], ...]] | None = None


Block: TypeAlias = Text | ToolUse | Thinking | RedactedThinking | ServerToolUse | McpToolUse
BLOCK_TYPES = (Text, ToolUse, Thinking, RedactedThinking, ServerToolUse, McpToolUse)

STOP_REASONS = frozenset(
    {
        "end_turn",
        "tool_use",
        "max_tokens",
        "stop_sequence",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)
"""The stop reasons a scripted turn may end with (``compaction`` is the
``compaction()`` item's)."""

USAGE_FIELDS = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "server_tool_use",
        "service_tier",
    }
)


@dataclass(frozen=True)
class Turn:
    """One assistant reply: its blocks and stop reason (None: ``tool_use`` if it calls a
    client tool, else ``end_turn``, as the model ends a turn), the ``stop_sequence`` that
    ended it, and ``usage`` counters that replace the estimated or zero ones."""

    blocks: tuple[Block, ...]
    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: Mapping[str, Any] | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class Compaction:
    """The summary a compaction request (the ``compaction`` field, or a
    ``compact_20260112`` edit that fires) answers with."""

    summary: str


@dataclass(frozen=True)
class ApiError:
    """An error the API answers instead of a turn: HTTP ``status``, error ``type`` and
    ``message``, and a ``retry-after`` header (seconds) when ``retry_after`` is set."""

    status: int
    type: str
    message: str
    retry_after: float | None = None


ScriptItem: TypeAlias = (
    "Turn | Block | Compaction | ApiError | Callable[[Conversation], Turn | Block]"
)


def turn(
    *blocks: Block,
    stop_reason: str | None = None,
    stop_sequence: str | None = None,
    usage: Mapping[str, Any] | None = None,
) -> Turn:
    """An assistant turn of ``blocks``; see ``Turn`` for the default stop reason.
    ``stop_sequence`` goes with ``stop_reason="stop_sequence"`` (and must be one of the
    request's ``stop_sequences``); ``usage`` sets any of the API's usage counters."""
    for block in blocks:
        if not isinstance(block, BLOCK_TYPES):
            raise TypeError(
                "a turn holds text(), tool_use(), thinking(), redacted_thinking(), "
                f"server_tool_use() and mcp_tool_use() blocks, not {block!r}"
            )
    if stop_reason is not None and stop_reason not in STOP_REASONS:
        raise ValueError(f"stop_reason must be one of {sorted(STOP_REASONS)}, not {stop_reason!r}")
    if (stop_reason == "stop_sequence") != (stop_sequence is not None):
        raise ValueError('a stop_sequence goes with stop_reason="stop_sequence", and only with it')
    if usage is not None:
        unknown = set(usage) - USAGE_FIELDS
        if unknown:
            raise ValueError(
                f"usage: unknown counter(s) {sorted(unknown)}; known: {sorted(USAGE_FIELDS)}"
            )
    return Turn(
        tuple(blocks), stop_reason, stop_sequence, dict(usage) if usage is not None else None
    )


def text(value: str, *, citations: Sequence[Mapping[str, Any]] | None = None) -> Text:
    """A text block, with ``citations`` in the API's shape (e.g.
    ``web_search_result_location``) if given."""
    if not isinstance(value, str):
        raise TypeError(f"text() takes a str, not {type(value).__name__}")
    return Text(value, tuple(copy.deepcopy(dict(c)) for c in citations or ()))


def tool_use(name: str, input: Mapping[str, Any], id: str | None = None) -> ToolUse:
    """A call of tool ``name`` with ``input`` (copied, so later edits of it do not leak in)."""
    if not isinstance(input, Mapping):
        raise TypeError(f"tool_use() input must be a mapping, not {type(input).__name__}")
    return ToolUse(name, copy.deepcopy(dict(input)), id)


def thinking(value: str, *, signature: str | None = None) -> Thinking:
    """A thinking block; without ``signature`` one is generated when it is played."""
    if not isinstance(value, str):
        raise TypeError(f"thinking() takes a str, not {type(value).__name__}")
    return Thinking(value, signature)


def redacted_thinking(data: str) -> RedactedThinking:
    """A redacted thinking block with opaque ``data``."""
    if not isinstance(data, str) or not data:
        raise TypeError("redacted_thinking() takes a non-empty str")
    return RedactedThinking(data)


SERVER_TOOL_RESULT_TYPES: dict[str, str] = {
    "web_search": "web_search_tool_result",
    "web_fetch": "web_fetch_tool_result",
    "code_execution": "code_execution_tool_result",
    "bash_code_execution": "bash_code_execution_tool_result",
    "text_editor_code_execution": "text_editor_code_execution_tool_result",
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
    "advisor": "advisor_tool_result",
}
"""The result block type of each server tool (SDK 2.14 ``BetaContentBlock``)."""


def server_tool_use(
    name: str, input: Mapping[str, Any], result: object, *, id: str | None = None
) -> ServerToolUse:
    """A server tool's call (``server_tool_use``) with its result block's ``content``, in
    the API's shape (e.g. a list of ``web_search_result`` objects)."""
    if name not in SERVER_TOOL_RESULT_TYPES:
        raise ValueError(f"server_tool_use(): unknown server tool {name!r}")
    if not isinstance(input, Mapping):
        raise TypeError(f"server_tool_use() input must be a mapping, not {type(input).__name__}")
    if SERVER_TOOL_RESULT_TYPES[name] == searching.RESULT_TYPE:
        fault = searching.result_fault(result)
        if fault is not None:
            raise ValueError(f"server_tool_use({name!r}) result {fault}")
    return ServerToolUse(
        name, copy.deepcopy(dict(input)), SERVER_TOOL_RESULT_TYPES[name], copy.deepcopy(result), id
    )


def web_search(
    query: str, results: Sequence[tuple[str, str]], *, id: str | None = None
) -> ServerToolUse:
    """A ``web_search`` call for ``query`` finding ``results``, (url, title) pairs."""
    found = [
        {
            "type": "web_search_result",
            "url": url,
            "title": title,
            "encrypted_content": f"scripted:{url}",
            "page_age": None,
        }
        for url, title in results
    ]
    return server_tool_use("web_search", {"query": query}, found, id=id)


def tool_search(
    query: str, tools: Sequence[str], *, variant: str = "regex", id: str | None = None
) -> ServerToolUse:
    """The server tool search (``tool_search_tool_regex``, or ``_bm25`` with
    ``variant="bm25"``) called with ``query`` and finding ``tools``: its result holds a
    ``tool_reference`` to each, which loads those deferred tools for the rest of the reply
    and the conversation. The request must declare the search tool and each of ``tools``
    with ``defer_loading: true``."""
    if variant not in searching.SEARCH_TOOLS:
        raise ValueError(f"tool_search(): variant must be 'regex' or 'bm25', not {variant!r}")
    if not isinstance(query, str):
        raise TypeError(f"tool_search() query must be a str, not {type(query).__name__}")
    if isinstance(tools, str) or not all(isinstance(t, str) and t for t in tools):
        raise TypeError("tool_search() tools must be a list of tool names (non-empty strs)")
    name = searching.SEARCH_TOOLS[variant]
    return server_tool_use(name, {"query": query}, searching.found(list(tools)), id=id)


def mcp_tool_use(
    name: str, input: Mapping[str, Any], *, server: str, id: str | None = None
) -> McpToolUse:
    """A call of MCP tool ``name`` with ``input`` on the request's ``mcp_servers`` entry
    named ``server``. When played, the scripted model connects to that server with the
    entry's ``authorization_token``, checks the tool is listed and enabled, calls it, and
    answers ``mcp_tool_use`` plus ``mcp_tool_result`` in the same reply, as the API does."""
    if not isinstance(name, str) or not name:
        raise TypeError("mcp_tool_use() takes the tool's name, a non-empty str")
    if not isinstance(server, str) or not server:
        raise TypeError("mcp_tool_use() takes server=, the name of an mcp_servers entry")
    if not isinstance(input, Mapping):
        raise TypeError(f"mcp_tool_use() input must be a mapping, not {type(input).__name__}")
    return McpToolUse(name, copy.deepcopy(dict(input)), server, id)


def compaction(summary: str) -> Compaction:
    """The summary the next compaction request answers with (consumed only by one)."""
    if not isinstance(summary, str) or not summary:
        raise TypeError("compaction() takes a non-empty summary")
    return Compaction(summary)


def api_error(
    status: int, type: str, message: str, *, retry_after: float | None = None
) -> ApiError:
    """An API error answering the next request instead of a turn, e.g. ``api_error(429,
    "rate_limit_error", "slow down", retry_after=1)`` or ``api_error(529,
    "overloaded_error", "Overloaded")``; the SDK's retries then reach the next item."""
    if not isinstance(status, int) or not 400 <= status <= 599:
        raise ValueError(f"api_error(): status must be an HTTP error status, not {status!r}")
    if retry_after is not None and retry_after < 0:
        raise ValueError("api_error(): retry_after must be at least 0")
    return ApiError(status, type, message, retry_after)


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
    if isinstance(item, (Turn, Compaction, ApiError, *BLOCK_TYPES)) or callable(item):
        return
    raise TypeError(
        "script() takes turn(...), blocks (text, tool_use / memory.*, thinking, "
        "redacted_thinking, server_tool_use, mcp_tool_use), compaction(...), api_error(...), "
        "or a function "
        f"of the conversation returning a turn or a block; got {item!r}"
    )


def as_turn(value: object) -> Turn | None:
    """A script function's result as a turn, or None if it is neither a turn nor a block."""
    if isinstance(value, Turn):
        return value
    if isinstance(value, BLOCK_TYPES):
        return Turn((value,))
    return None
