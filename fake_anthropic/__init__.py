"""A scripted fake of the Anthropic Messages API, strict the way the real API is, so agent
loops run offline: script the assistant's turns, point the SDK at the fake, and assert on
what it was sent. ``fake-anthropic serve SCRIPT.json`` serves a script over HTTP;
``fake-anthropic record`` records a real run, and ``ScriptedModel.from_recording`` replays
it offline."""

from fake_anthropic.engine import estimate_tokens
from fake_anthropic.model import API_KEY, BASE_URL, ScriptedModel
from fake_anthropic.record import Exchange, RecordingProxy
from fake_anthropic.record import load as load_recording
from fake_anthropic.script import (
    MEMORY_TOOL,
    AnsweredError,
    ApiError,
    Block,
    Compaction,
    Conversation,
    McpToolUse,
    MemoryCommands,
    RecordedRequest,
    RedactedThinking,
    ScriptItem,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Turn,
    api_error,
    compaction,
    mcp_tool_use,
    memory,
    redacted_thinking,
    server_tool_use,
    text,
    thinking,
    tool_search,
    tool_use,
    turn,
    web_search,
)

__version__ = "0.1.0"

__all__ = [
    "API_KEY",
    "BASE_URL",
    "MEMORY_TOOL",
    "AnsweredError",
    "ApiError",
    "Block",
    "Compaction",
    "Conversation",
    "Exchange",
    "McpToolUse",
    "MemoryCommands",
    "RecordedRequest",
    "RecordingProxy",
    "RedactedThinking",
    "ScriptItem",
    "ScriptedModel",
    "ServerToolUse",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Turn",
    "__version__",
    "api_error",
    "compaction",
    "estimate_tokens",
    "load_recording",
    "mcp_tool_use",
    "memory",
    "redacted_thinking",
    "server_tool_use",
    "text",
    "thinking",
    "tool_search",
    "tool_use",
    "turn",
    "web_search",
]
