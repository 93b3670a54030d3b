"""What a recorded answer's body must be for replay to serve it as the API would.

Replay answers a ``POST /v1/messages`` with the recorded message, as JSON or as its event
stream, whichever the request asks for (``engine.sse``); a body that is no message (an
int, a list, an object without ``content`` or ``usage``) would stream as nothing the SDK
can read. So a recording is checked when it loads, and the proxy records only what would
load: a success of a Messages endpoint is a Messages response object (the ``count_tokens``
one an object with ``input_tokens``), an error status the API's error envelope (or text:
an answer that was not JSON, as a gateway in front of the API may give). Other endpoints'
bodies are replayed as recorded, unchecked. ``recording.schema.json`` says the same.
"""

from __future__ import annotations

from typing import Final

MESSAGES: Final = "/v1/messages"
COUNT_TOKENS: Final = "/v1/messages/count_tokens"
TOOL_USE_BLOCKS: Final = ("tool_use", "server_tool_use", "mcp_tool_use")
_BLOCK_STRINGS: Final[dict[str, tuple[str, ...]]] = {
    "text": ("text",),
    "thinking": ("thinking", "signature"),
    **dict.fromkeys(TOOL_USE_BLOCKS, ("id", "name")),
}
"""The string fields a content block of each type must have (its event stream reads them)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _envelope_problem(body: object, at: str) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(body, dict) or body.get("type") != "error" or not isinstance(error, dict):
        return (
            f'{at} must be the API\'s error envelope ({{"type": "error", "error": '
            '{"type": ..., "message": ...}})'
        )
    for key in ("type", "message"):
        if not isinstance(error.get(key), str):
            return f"{at}.error.{key} must be a string"
    return None


def _block_problem(block: object, at: str) -> str | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f'{at} must be a content block (an object with a string "type")'
    kind = block["type"]
    for key in _BLOCK_STRINGS.get(kind, ()):
        if not isinstance(block.get(key), str):
            return f"{at}.{key} must be a string (a {kind} block)"
    if kind in TOOL_USE_BLOCKS and not isinstance(block.get("input"), dict):
        return f"{at}.input must be an object (a {kind} block)"
    return None


def message_problem(body: object, at: str = "response.body") -> str | None:
    """What keeps ``body`` from being a Messages response object, or None."""
    if not isinstance(body, dict) or body.get("type") != "message":
        return f'{at} must be a Messages response (an object with "type": "message")'
    for key in ("id", "model"):
        if not isinstance(body.get(key), str):
            return f"{at}.{key} must be a string"
    if body.get("role") != "assistant":
        return f'{at}.role must be "assistant"'
    content = body.get("content")
    if not isinstance(content, list):
        return f"{at}.content must be a list of content blocks"
    for i, block in enumerate(content):
        found = _block_problem(block, f"{at}.content[{i}]")
        if found is not None:
            return found
    for key in ("stop_reason", "stop_sequence"):
        if key not in body or not isinstance(body[key], str | None):
            return f"{at}.{key} must be a string or null"
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return f"{at}.usage must be an object"
    for key in ("input_tokens", "output_tokens"):
        if not _is_int(usage.get(key)):
            return f"{at}.usage.{key} must be an integer"
    return None


def answer_problem(method: str, path: str, status: int, stream: bool, body: object) -> str | None:
    """What keeps ``body`` from being an answer replay can serve for this request, or None."""
    if stream and status == 200 and isinstance(body, dict) and body.get("type") == "error":
        return _envelope_problem(body, "response.body")  # the error event a stream ended with
    endpoint = path.partition("?")[0]
    if method != "POST" or endpoint not in (MESSAGES, COUNT_TOKENS):
        return message_problem(body) if stream and status == 200 else None
    if status >= 400:
        return None if isinstance(body, str) else _envelope_problem(body, "response.body")
    if status != 200:
        return (
            f"response.status {status}: the Messages API answers 200, or an error status (400-599)"
        )
    if endpoint == COUNT_TOKENS and not stream:
        if not isinstance(body, dict) or not _is_int(body.get("input_tokens")):
            return "response.body must be a count_tokens result (an integer input_tokens)"
        return None
    return message_problem(body)
