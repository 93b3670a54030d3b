"""The requests the Messages API refuses with 400 ``invalid_request_error``, each in one
function: malformed fields, ``max_tokens`` over the model's limit, thinking settings,
``tool_choice`` naming no tool, and the conversation mistakes agents make (a
``tool_result`` answering no ``tool_use`` of the turn before, a ``tool_use`` left
unanswered, a conversation that does not start with a user turn, thinking blocks dropped
or altered on a tool-use continuation, a misplaced or altered ``compaction`` block).

Messages follow the API's where they are known (the tool pairing and thinking texts are
the API's own); the others name the field and the fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import coded, invalid
from fake_anthropic.engine.signatures import Signatures

Json = dict[str, Any]
ROLES = ("user", "assistant")
THINKING_TYPES = ("enabled", "disabled", "adaptive")


def blocks_of(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _is(block: object, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_fields(body: Json, *, max_tokens_required: bool = True) -> list[Json]:
    """The request's required fields and their types; returns ``messages``."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise invalid("model: Field required")
    if max_tokens_required:
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            raise invalid("max_tokens: Field required")
        if not _int(max_tokens) or max_tokens < 0:
            raise invalid("max_tokens: must be a non-negative integer")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise invalid("messages: Field required")
    for i, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str | list)
        ):
            raise invalid(f"messages.{i}: a message is an object with a 'role' and 'content'")
        if message["role"] not in ROLES:
            raise invalid(
                f"messages.{i}.role: Input should be 'user' or 'assistant', not "
                f"{message['role']!r} (the system prompt is the top-level `system` field)"
            )
    if "stream" in body and not isinstance(body["stream"], bool):
        raise invalid("stream: must be a boolean")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise invalid("tools: must be a list of tool definitions")
    stops = body.get("stop_sequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) and s for s in stops)
    ):
        raise invalid("stop_sequences: must be a list of non-empty strings")
    return messages


def model_limit(model: str) -> int | None:
    """The model's most output tokens from the assumed table, None if no prefix matches."""
    matches = [p for p in assumed.MODEL_MAX_OUTPUT_TOKENS if model.startswith(p)]
    return assumed.MODEL_MAX_OUTPUT_TOKENS[max(matches, key=len)] if matches else None


def check_max_tokens(body: Json) -> None:
    """``max_tokens`` within the model's limit."""
    limit = model_limit(body["model"])
    if limit is not None and body["max_tokens"] > limit:
        raise invalid(
            f"max_tokens: {body['max_tokens']} > {limit}, which is the maximum allowed number "
            f"of output tokens for {body['model']}"
        )


def thinking_type(body: Json) -> str | None:
    """The request's ``thinking.type`` once the setting passes the API's checks (None if
    absent)."""
    config = body.get("thinking")
    if config is None:
        return None
    if not isinstance(config, dict) or config.get("type") not in THINKING_TYPES:
        raise invalid(f"thinking.type: must be one of {list(THINKING_TYPES)}")
    kind = str(config["type"])
    if kind == "enabled":
        budget = config.get("budget_tokens")
        if not _int(budget):
            raise invalid("thinking.enabled.budget_tokens: Field required")
        assert isinstance(budget, int)
        if budget < assumed.MIN_THINKING_BUDGET:
            raise invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to "
                f"{assumed.MIN_THINKING_BUDGET}"
            )
        max_tokens = body.get("max_tokens")
        if _int(max_tokens) and isinstance(max_tokens, int) and max_tokens <= budget:
            raise invalid(
                f"`max_tokens` must be greater than `thinking.budget_tokens` ({max_tokens} <= "
                f"{budget}). Please consult our documentation at "
                "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
            )
    return kind


def check_tool_choice(body: Json, tools: Sequence[Json] | None, thinking: str | None) -> None:
    """A ``tool_choice`` the request's tools can satisfy, and no forced tool use with
    thinking."""
    choice = body.get("tool_choice")
    if choice is None:
        return
    kinds = ("auto", "any", "tool", "none")
    if not isinstance(choice, dict) or choice.get("type") not in kinds:
        raise invalid(f"tool_choice.type: must be one of {list(kinds)}")
    names = [t.get("name") for t in tools or [] if isinstance(t.get("name"), str)]
    if choice["type"] in ("any", "tool") and not tools:
        raise invalid(f"tool_choice: type {choice['type']!r} needs `tools`, and none were given")
    if choice["type"] == "tool":
        name = choice.get("name")
        if not isinstance(name, str):
            raise invalid("tool_choice.name: Field required")
        if name not in names:
            raise invalid(
                f"tool_choice.name: tool {name!r} not found in `tools` (the tools: {names})"
            )
    if choice["type"] in ("any", "tool") and thinking in assumed.THINKING_ON:
        raise invalid(
            "Thinking may not be enabled when tool_choice forces tool use "
            f"(tool_choice.type {choice['type']!r}); use 'auto' or 'none', or disable thinking."
        )


def check_history(
    messages: Sequence[Json],
    *,
    opens_with_compaction: bool,
    start: int = 0,
    seen: frozenset[str] = frozenset(),
) -> set[str]:
    """The conversation's shape: it opens with a user turn (or a compaction block), every
    ``tool_use`` is answered by a ``tool_result`` in the next message and every
    ``tool_result`` answers a ``tool_use`` of the message before, ids are unique. Returns
    the ``tool_use`` ids of its assistant messages.

    From ``start`` on only (``engine.checked``): the messages before it passed these
    checks, as a conversation ending there, and ``seen`` are their ``tool_use`` ids."""
    if messages and messages[0].get("role") != "user" and not opens_with_compaction:
        raise invalid(
            "messages.0.role: the first message must use the 'user' role (or open with the "
            "`compaction` block a compaction returned)"
        )
    seen_ids = set(seen)
    for i in range(start, len(messages)):
        message = messages[i]
        role = message.get("role")
        uses = [str(b.get("id")) for b in blocks_of(message) if _is(b, "tool_use")]
        if role == "assistant":
            for j, block in enumerate(blocks_of(message)):
                if _is(block, "tool_result"):
                    raise invalid(
                        f"messages.{i}.content.{j}: `tool_result` blocks belong in a `user` "
                        "message, right after the `assistant` message with their `tool_use`"
                    )
            for use_id in uses:
                if use_id in seen_ids:
                    raise invalid(f"messages.{i}: `tool_use` ids must be unique ({use_id})")
                seen_ids.add(use_id)
        if role == "assistant" and uses:
            nxt = messages[i + 1] if i + 1 < len(messages) else {}
            answered = {b.get("tool_use_id") for b in blocks_of(nxt) if _is(b, "tool_result")}
            missing = [u for u in uses if nxt.get("role") != "user" or u not in answered]
            if missing:
                raise invalid(
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message."
                )
        if role == "user":
            before = messages[i - 1] if i > 0 else {}
            offered = {
                b.get("id")
                for b in blocks_of(before)
                if before.get("role") == "assistant" and _is(b, "tool_use")
            }
            for j, block in enumerate(blocks_of(message)):
                if _is(block, "tool_result") and block.get("tool_use_id") not in offered:
                    raise invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message."
                    )
    return seen_ids


def compaction_start(
    messages: Sequence[Json], signatures: Signatures, start: int = 0
) -> int | None:
    """Check the ``compaction`` blocks sent back; return the index of the message holding
    the one with content (the model sees the conversation from there on), None if none.
    From ``start`` on only: the messages before it hold no ``compaction`` block."""
    found: list[int] = []
    for i in range(start, len(messages)):
        message = messages[i]
        for j, block in enumerate(blocks_of(message)):
            if not _is(block, "compaction") or block.get("content") is None:
                continue
            where = f"messages.{i}.content.{j}"
            if message.get("role") != "assistant" or j != 0:
                raise coded(
                    f"{where}: a `compaction` block must be the first block of an `assistant` "
                    "message, in place of the messages it summarizes",
                    "compaction_block_misplaced",
                )
            if block["content"] == "":
                raise invalid(
                    f"{where}.content: must not be empty (null marks a failed compaction)"
                )
            fault = signatures.compaction_fault(block.get("signature"), block["content"])
            if fault == "compaction_signature_invalid":
                raise coded(f"{where}.signature: does not verify", fault)
            if fault is not None:
                raise coded(
                    f"{where}.content: differs from the text its `signature` recorded", fault
                )
            found.append(i)
    if len(found) > 1:
        raise coded(
            f"messages: {len(found)} `compaction` blocks with content (messages "
            f"{', '.join(map(str, found))}); send only the block the conversation returned last",
            "compaction_block_ambiguous",
        )
    return found[0] if found else None


def check_thinking_blocks(
    messages: Sequence[Json],
    signatures: Signatures,
    thinking: str | None,
    replies_with_thinking: Mapping[str, bool],
    start: int = 0,
) -> None:
    """Thinking blocks sent back unaltered, and, with thinking on, the final assistant turn
    of a tool-use continuation starting with its thinking. The blocks from ``start`` on
    only: the messages before it hold no thinking block."""
    check = thinking in assumed.THINKING_ON or assumed.SIGNATURES_ARE_CHECKED_WITH_THINKING_OFF
    for i in range(start, len(messages)):
        message = messages[i]
        for j, block in enumerate(blocks_of(message)):
            where = f"messages.{i}.content.{j}"
            if (
                check
                and _is(block, "thinking")
                and not signatures.thinking_ok(block.get("signature"), block.get("thinking"))
            ):
                raise invalid(f"{where}: Invalid `signature` in `thinking` block")
            if (
                check
                and _is(block, "redacted_thinking")
                and not signatures.redacted_ok(block.get("data"))
            ):
                raise invalid(f"{where}: Invalid `data` in `redacted_thinking` block")
    if thinking not in assumed.THINKING_ON or len(messages) < 2:
        return
    last, before = messages[-1], messages[-2]
    if last.get("role") != "user" or not any(_is(b, "tool_result") for b in blocks_of(last)):
        return
    if before.get("role") != "assistant":
        return
    uses = [str(b.get("id")) for b in blocks_of(before) if _is(b, "tool_use")]
    known = [replies_with_thinking[u] for u in uses if u in replies_with_thinking]
    required = any(known) if known else thinking == "enabled"
    first = blocks_of(before)[0] if blocks_of(before) else {"type": "text"}
    if required and not (_is(first, "thinking") or _is(first, "redacted_thinking")):
        kind = first.get("type") if isinstance(first, dict) else type(first).__name__
        raise invalid(
            f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or "
            f"`redacted_thinking`, but found `{kind}`. When `thinking` is enabled, a final "
            "`assistant` message must start with a thinking block (preceeding the lastmost set "
            "of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
            "from previous turns. To avoid this requirement, disable `thinking`."
        )
