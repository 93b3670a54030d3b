"""Server-side context editing as the scripted model applies it: every edit the SDK 2.14
types define (``clear_tool_uses_20250919``, ``clear_thinking_20251015``,
``compact_20260112``).

Documented (platform docs "Context editing", beta ``context-management-2025-06-27``, and
the SDK's ``BetaClearToolUses20250919EditParam``): when the prompt exceeds ``trigger``
(default 100,000 input tokens; or a count of tool uses), the oldest tool results are
replaced with placeholder text, in chronological order, keeping the ``keep`` most recent
tool uses (default 3); ``exclude_tools`` names tools whose uses are never cleared;
``clear_tool_inputs`` (``True``, or a list of tool names) clears the ``tool_use``
parameters too; with ``clear_at_least`` the context is only modified if at least that
many input tokens can be removed. The edit applies to what the model sees only: the
client keeps its full history. The response reports ``context_management.applied_edits``
with ``cleared_tool_uses`` and ``cleared_input_tokens``.

``clear_thinking_20251015`` (``BetaClearThinking20251015EditParam``) removes the thinking
blocks of all but the ``keep`` most recent thinking turns (``{"type": "thinking_turns",
"value": N}``, ``{"type": "all"}`` or ``"all"`` to keep every one); the docs require
thinking to be enabled and the edit to come first among the edits. It reports
``cleared_thinking_turns`` and ``cleared_input_tokens``.

``compact_20260112`` (``BetaCompact20260112EditParam``) compacts the conversation once the
prompt exceeds ``trigger`` (default 150,000 input tokens); this module only decides
whether it fires (``Edited.compact``), the engine compacts (``engine.compaction``). It is not
reported in ``applied_edits`` (the SDK's ``AppliedEdit`` has no compaction member); the
compaction shows as the reply's leading ``compaction`` block. What the docs leave open is
in ``engine.assumptions``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fake_anthropic.engine import assumptions as assumed

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
CLEAR_THINKING = "clear_thinking_20251015"
COMPACT = "compact_20260112"
EDIT_TYPES = (CLEAR_TOOL_USES, CLEAR_THINKING, COMPACT)
DEFAULT_TRIGGER = ("input_tokens", 100_000)
DEFAULT_KEEP = 3

Json = dict[str, Any]
Measure = Callable[[list[Json]], int]


class EditRefused(ValueError):
    """A ``context_management`` value the API would refuse (400 invalid_request_error)."""


@dataclass(frozen=True)
class Edited:
    """What the model sees after the edits, the ``applied_edits`` to report, and the
    ``compact_20260112`` edit if it fired (the engine then compacts)."""

    messages: list[Json]
    applied_edits: list[Json]
    compact: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class _Use:
    message: int
    block: int
    id: str
    name: str
    result_message: int
    result_block: int


def apply(config: object, messages: list[Json], measure: Measure, thinking: str | None) -> Edited:
    """Apply every edit of a request's ``context_management`` to a copy of ``messages``;
    ``thinking`` is the request's ``thinking.type`` (None if absent)."""
    if not isinstance(config, Mapping):
        raise EditRefused("context_management: must be an object")
    edits = config.get("edits", [])
    if not isinstance(edits, list):
        raise EditRefused("context_management.edits: must be a list")
    applied: list[Json] = []
    compact: Mapping[str, Any] | None = None
    for i, edit in enumerate(edits):
        where = f"context_management.edits.{i}"
        if not isinstance(edit, Mapping) or edit.get("type") not in EDIT_TYPES:
            raise EditRefused(f"{where}: must be an object with 'type' one of {list(EDIT_TYPES)}")
        kinds = [e.get("type") for e in edits if isinstance(e, Mapping)]
        if kinds.count(edit["type"]) > 1:
            raise EditRefused(f"{where}: {edit['type']} is given more than once")
        report: Json | None
        if edit["type"] == CLEAR_TOOL_USES:
            messages, report = _clear_tool_uses(edit, where, messages, measure)
        elif edit["type"] == CLEAR_THINKING:
            if i != 0:
                raise EditRefused(
                    f"{where}: {CLEAR_THINKING} must be the first edit in context_management.edits"
                )
            if thinking not in ("enabled", "adaptive"):
                raise EditRefused(f"{where}: {CLEAR_THINKING} requires thinking to be enabled")
            messages, report = _clear_thinking(edit, where, messages, measure)
        else:
            if _compact_fires(edit, where, messages, measure):
                compact = edit
            report = None
        if report is not None:
            applied.append(report)
    return Edited(messages, applied, compact)


def _compact_fires(
    edit: Mapping[str, Any], where: str, messages: list[Json], measure: Measure
) -> bool:
    trigger = _threshold(
        edit.get("trigger"),
        f"{where}.trigger",
        ("input_tokens",),
        ("input_tokens", assumed.COMPACT_EDIT_DEFAULT_TRIGGER),
    )
    assert trigger is not None
    for name in ("instructions",):
        if edit.get(name) is not None and not isinstance(edit[name], str):
            raise EditRefused(f"{where}.{name}: must be a string")
    pause = edit.get("pause_after_compaction")
    if pause is not None and not isinstance(pause, bool):
        raise EditRefused(f"{where}.pause_after_compaction: must be a boolean")
    return _exceeds(measure(messages), trigger[1])


def _thinking_keep(value: object, where: str) -> int | None:
    """How many thinking turns to keep; None keeps all."""
    if value is None:
        return assumed.CLEAR_THINKING_DEFAULT_KEEP
    if value == "all" or (isinstance(value, Mapping) and value.get("type") == "all"):
        return None
    if isinstance(value, Mapping) and value.get("type") == "thinking_turns":
        amount = value.get("value")
        if isinstance(amount, int) and not isinstance(amount, bool) and amount >= 0:
            return amount
        raise EditRefused(f"{where}.value: must be a non-negative integer")
    raise EditRefused(
        f"{where}: must be {{'type': 'thinking_turns', 'value': N}}, {{'type': 'all'}} or 'all'"
    )


def _clear_thinking(
    edit: Mapping[str, Any], where: str, messages: list[Json], measure: Measure
) -> tuple[list[Json], Json | None]:
    keep = _thinking_keep(edit.get("keep"), f"{where}.keep")
    turns = [
        m
        for m, message in enumerate(messages)
        if message.get("role") == "assistant"
        and any(
            isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
            for b in _blocks(message)
        )
    ]
    if keep is None or len(turns) <= keep:
        return messages, None
    targets = turns[: len(turns) - keep]
    edited = copy.deepcopy(messages)
    for m in targets:
        edited[m]["content"] = [
            b
            for b in edited[m]["content"]
            if not (isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking"))
        ]
    cleared = measure(messages) - measure(edited)
    report = {
        "type": CLEAR_THINKING,
        "cleared_thinking_turns": len(targets),
        "cleared_input_tokens": cleared,
    }
    return edited, report


def _threshold(
    value: object, where: str, kinds: Sequence[str], default: tuple[str, int] | None
) -> tuple[str, int] | None:
    if value is None:
        return default
    if not isinstance(value, Mapping) or value.get("type") not in kinds:
        raise EditRefused(f"{where}: must be an object with 'type' one of {list(kinds)}")
    amount = value.get("value")
    if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
        raise EditRefused(f"{where}.value: must be a non-negative integer")
    return str(value["type"]), amount


def _names(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise EditRefused(f"{where}: must be a list of tool names")
    return list(value)


def _exceeds(amount: int, threshold: int) -> bool:
    return amount >= threshold if assumed.TRIGGER_IS_INCLUSIVE else amount > threshold


def _blocks(message: Json) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def tool_uses(messages: Sequence[Json]) -> list[_Use]:
    """Each client tool use that has its result in the next message, oldest first."""
    uses: list[_Use] = []
    for m, message in enumerate(messages):
        if message.get("role") != "assistant" or m + 1 >= len(messages):
            continue
        results = {
            block.get("tool_use_id"): b
            for b, block in enumerate(_blocks(messages[m + 1]))
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }
        for b, block in enumerate(_blocks(message)):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                found = results.get(block.get("id"))
                if found is not None:
                    uses.append(_Use(m, b, str(block["id"]), str(block.get("name")), m + 1, found))
    return uses


def _clear_tool_uses(
    edit: Mapping[str, Any], where: str, messages: list[Json], measure: Measure
) -> tuple[list[Json], Json | None]:
    trigger = _threshold(
        edit.get("trigger"), f"{where}.trigger", ("input_tokens", "tool_uses"), DEFAULT_TRIGGER
    )
    keep = _threshold(
        edit.get("keep"), f"{where}.keep", ("tool_uses",), ("tool_uses", DEFAULT_KEEP)
    )
    at_least = _threshold(
        edit.get("clear_at_least"), f"{where}.clear_at_least", ("input_tokens",), None
    )
    excluded = set(_names(edit.get("exclude_tools"), f"{where}.exclude_tools"))
    clear_inputs = edit.get("clear_tool_inputs")
    if isinstance(clear_inputs, list):
        inputs_of: set[str] | bool = set(_names(clear_inputs, f"{where}.clear_tool_inputs"))
    elif clear_inputs is None or isinstance(clear_inputs, bool):
        inputs_of = bool(clear_inputs)
    else:
        raise EditRefused(f"{where}.clear_tool_inputs: must be a boolean or a list of tool names")
    assert trigger is not None and keep is not None

    uses = tool_uses(messages)
    before = measure(messages)
    if trigger[0] == "input_tokens":
        amount = before
    elif assumed.EXCLUDED_TOOLS_COUNT_TOWARD_TOOL_USES_TRIGGER:
        amount = len(uses)
    else:
        amount = sum(1 for u in uses if u.name not in excluded)
    if not _exceeds(amount, trigger[1]):
        return messages, None

    ranked = (
        uses
        if assumed.EXCLUDED_TOOLS_COUNT_TOWARD_KEEP
        else [u for u in uses if u.name not in excluded]
    )
    kept = {u.id for u in ranked[len(ranked) - keep[1] :]} if keep[1] > 0 else set()
    targets = [u for u in uses if u.id not in kept and u.name not in excluded]

    edited = copy.deepcopy(messages)
    for use in targets:
        result = edited[use.result_message]["content"][use.result_block]
        result["content"] = assumed.CLEARED_TOOL_RESULT_TEXT
        if inputs_of is True or (isinstance(inputs_of, set) and use.name in inputs_of):
            edited[use.message]["content"][use.block]["input"] = dict(assumed.CLEARED_TOOL_INPUT)
    cleared = before - measure(edited)
    if not targets or (at_least is not None and cleared < at_least[1]):
        if assumed.REPORT_EDITS_THAT_CLEARED_NOTHING:
            return messages, _report(0, 0)
        return messages, None
    return edited, _report(len(targets), cleared)


def _report(uses: int, tokens: int) -> Json:
    return {"type": CLEAR_TOOL_USES, "cleared_tool_uses": uses, "cleared_input_tokens": tokens}
