"""Server-side context editing (``clear_tool_uses_20250919``) as the scripted model applies it.

Documented (platform docs "Context editing", beta ``context-management-2025-06-27``, and
the SDK's ``BetaClearToolUses20250919EditParam``): when the prompt exceeds ``trigger``
(default 100,000 input tokens; or a count of tool uses), the oldest tool results are
replaced with placeholder text, in chronological order, keeping the ``keep`` most recent
tool uses (default 3); ``exclude_tools`` names tools whose uses are never cleared;
``clear_tool_inputs`` (``True``, or a list of tool names) clears the ``tool_use``
parameters too; with ``clear_at_least`` the context is only modified if at least that
many input tokens can be removed. The edit applies to what the model sees only: the
client keeps its full history. The response reports ``context_management.applied_edits``
with ``cleared_tool_uses`` and ``cleared_input_tokens``. What the docs leave open is in
``_assumptions``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fake_anthropic import _assumptions as assumed

CLEAR_TOOL_USES = "clear_tool_uses_20250919"
DEFAULT_TRIGGER = ("input_tokens", 100_000)
DEFAULT_KEEP = 3

Json = dict[str, Any]
Measure = Callable[[list[Json]], int]


class EditRefused(ValueError):
    """A ``context_management`` value the API would refuse (400 invalid_request_error)."""


class EditUnsupported(ValueError):
    """A valid edit the scripted model does not implement (it would answer wrongly)."""


@dataclass(frozen=True)
class Edited:
    """What the model sees after the edits, and the ``applied_edits`` to report."""

    messages: list[Json]
    applied_edits: list[Json]


@dataclass(frozen=True)
class _Use:
    message: int
    block: int
    id: str
    name: str
    result_message: int
    result_block: int


def apply(config: object, messages: list[Json], measure: Measure) -> Edited:
    """Apply every edit of a request's ``context_management`` to a copy of ``messages``."""
    if not isinstance(config, Mapping):
        raise EditRefused("context_management: must be an object")
    edits = config.get("edits", [])
    if not isinstance(edits, list):
        raise EditRefused("context_management.edits: must be a list")
    applied: list[Json] = []
    for i, edit in enumerate(edits):
        where = f"context_management.edits.{i}"
        if not isinstance(edit, Mapping) or not isinstance(edit.get("type"), str):
            raise EditRefused(f"{where}: must be an object with a 'type'")
        if edit["type"] != CLEAR_TOOL_USES:
            raise EditUnsupported(
                f"{where}: the scripted model implements only {CLEAR_TOOL_USES}, "
                f"not {edit['type']!r}"
            )
        messages, report = _clear_tool_uses(edit, where, messages, measure)
        if report is not None:
            applied.append(report)
    return Edited(messages, applied)


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
