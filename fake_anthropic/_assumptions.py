"""What the scripted model assumes where the Messages API's documents and SDK are silent.

Every behaviour of ``fake_anthropic`` that neither the API documentation nor the
source of the ``anthropic`` SDK (2.14.0) states is decided here, once, so that a real API
that disagrees is corrected in one place. The documented facts (beta names, defaults of
``clear_tool_uses_20250919``, error classes) live beside the code that uses them.
"""

from __future__ import annotations

from typing import Final

# --- context editing (clear_tool_uses_20250919) ---------------------------------------

CLEARED_TOOL_RESULT_TEXT: Final = "[cleared]"
"""The text a cleared tool result holds in what the model sees. The docs say only that the
API puts "placeholder text" there to let Claude know the result was removed; this is
LangChain's placeholder for its mirror of the strategy. The block keeps its
``tool_use_id`` and ``is_error``; only ``content`` is replaced."""

CLEARED_TOOL_INPUT: Final[dict[str, object]] = {}
"""The ``input`` of a ``tool_use`` whose parameters ``clear_tool_inputs`` clears (an empty
object, as LangChain's mirror does; the docs only say the parameters are cleared)."""

TRIGGER_IS_INCLUSIVE: Final = False
"""Whether a trigger fires at exactly its value. The docs say clearing begins once the
prompt *exceeds* the threshold, so ``>``; set True for ``>=``."""

EXCLUDED_TOOLS_COUNT_TOWARD_KEEP: Final = True
"""Whether uses of ``exclude_tools`` tools count among the ``keep`` most recent tool uses.
True: ``keep`` keeps the N most recent uses of any tool (as LangChain's mirror does), so
an excluded use can take one of the N places. False: only clearable uses count."""

EXCLUDED_TOOLS_COUNT_TOWARD_TOOL_USES_TRIGGER: Final = True
"""Whether a ``{"type": "tool_uses"}`` trigger counts uses of excluded tools too."""

REPORT_EDITS_THAT_CLEARED_NOTHING: Final = False
"""Whether an edit that fired but cleared nothing (all old uses excluded, or fewer tokens
than ``clear_at_least``) still appears in ``applied_edits`` (with zeros). False: it is
left out, so ``applied_edits`` lists only edits that changed what the model saw."""

# --- requests the API refuses ---------------------------------------------------------

REQUIRED_BETAS: Final[dict[str, str]] = {
    "thread": "message-threads-2026-08-12",
    "context_management": "context-management-2025-06-27",
}
"""A request field the API takes only under a beta: sent without that ``anthropic-beta``
value it is refused with 400 ``invalid_request_error`` (the beta names are the SDK's and
the docs'; the refusal is assumed)."""

THREAD_UNSUPPORTED_FIELDS: Final = ("cache_control", "context_management", "fallbacks", "thinking")
"""Request fields refused together with ``thread`` (400 ``thread_unsupported_request``,
``details.unsupported`` naming them). These are the request-field names of the SDK's
``ThreadUnsupportedFeatureName``; which of them a real API refuses, and when, is assumed:
here any of them present at all. The SDK's tool runner then stops threading and sends the
full history, so context editing always runs unthreaded."""
