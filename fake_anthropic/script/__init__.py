"""The script: the turns a test scripts (and their builders), what the scripted model
records of each exchange, JSON scripts, and the transcript. The bottom layer: it imports
nothing else of ``fake_anthropic``."""

from fake_anthropic.script.json_script import items_from_json
from fake_anthropic.script.records import AnsweredError, Conversation, RecordedRequest, ToolResult
from fake_anthropic.script.transcript import transcript
from fake_anthropic.script.turns import (
    MEMORY_TOOL,
    ApiError,
    Block,
    Compaction,
    MemoryCommands,
    RedactedThinking,
    ScriptItem,
    ServerToolUse,
    Text,
    Thinking,
    ToolUse,
    Turn,
    api_error,
    check_item,
    compaction,
    memory,
    redacted_thinking,
    server_tool_use,
    text,
    thinking,
    tool_use,
    turn,
    web_search,
)

__all__ = [
    "MEMORY_TOOL",
    "AnsweredError",
    "ApiError",
    "Block",
    "Compaction",
    "Conversation",
    "MemoryCommands",
    "RecordedRequest",
    "RedactedThinking",
    "ScriptItem",
    "ServerToolUse",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Turn",
    "api_error",
    "check_item",
    "compaction",
    "items_from_json",
    "memory",
    "redacted_thinking",
    "server_tool_use",
    "text",
    "thinking",
    "tool_use",
    "transcript",
    "turn",
    "web_search",
]
