"""What the scripted model records of each exchange, and what a script function is shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Json = dict[str, Any]
ThreadKind = Literal["create", "continue"]


@dataclass(frozen=True)
class ToolResult:
    """One ``tool_result`` block the client sent: ``content`` is its text (the text blocks
    of a list joined), ``is_error`` False unless the client set it, and ``name`` the tool
    whose call it answers (None if that call is not in the conversation)."""

    tool_use_id: str
    content: str
    is_error: bool
    name: str | None = None
    tool_references: tuple[str, ...] = ()
    """The tools its ``tool_reference`` blocks load (a client tool search's result)."""


@dataclass(frozen=True)
class AnsweredError:
    """An error the scripted model answered, as the API's error body names it."""

    status: int
    type: str
    message: str
    error_code: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """One request to the scripted model and its answer.

    ``messages`` is the full conversation the request stands for (a thread's stored
    history plus the messages sent), ``seen_messages`` what the model saw of it after
    context editing, and ``new_messages`` / ``tool_results`` what was new in it. A request
    refused before its history could be rebuilt has the sent messages in all three.
    """

    index: int
    path: str
    body: Json
    betas: list[str]
    thread: ThreadKind | None
    previous_message_id: str | None
    messages: list[Json]
    seen_messages: list[Json]
    new_messages: list[Json]
    tool_results: list[ToolResult]
    stream: bool
    response: Json | None
    error: AnsweredError | None
    applied_edits: list[Json]
    turn: int | None
    """Which script item (1-based) answered, None if none did."""

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Conversation:
    """What a script function is shown: the conversation as the model sees it (after any
    context editing), the tool results of its latest user message, and the request's
    tool definitions."""

    messages: list[Json]
    last_tool_results: list[ToolResult]
    tools: list[Json]
    request_index: int


def result_text(content: object) -> str:
    """A tool result's content as text: a string as is, the text blocks of a list joined,
    each ``tool_reference`` shown as ``[tool_reference NAME]`` (so a failure report shows
    what a client tool search loaded)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        text = "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
        refs = " ".join(f"[tool_reference {n}]" for n in result_references(content))
        return f"{text} {refs}" if text and refs else text or refs
    return ""


def result_references(content: object) -> tuple[str, ...]:
    """The tool names of a tool result's ``tool_reference`` blocks."""
    if not isinstance(content, list):
        return ()
    return tuple(
        str(b.get("tool_name"))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_reference"
    )


def tool_results_of(messages: Sequence[Json], names: Mapping[str, str]) -> list[ToolResult]:
    """The ``tool_result`` blocks of ``messages`` in order, naming each call's tool."""
    out: list[ToolResult] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                use_id = str(block.get("tool_use_id"))
                out.append(
                    ToolResult(
                        use_id,
                        result_text(block.get("content")),
                        block.get("is_error") is True,
                        names.get(use_id),
                        result_references(block.get("content")),
                    )
                )
    return out


def last_user_tool_results(messages: Sequence[Json], names: Mapping[str, str]) -> list[ToolResult]:
    """The tool results of the latest user message (none if it holds none)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return tool_results_of([message], names)
    return []
