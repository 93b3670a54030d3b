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

# --- structured outputs and strict tools ---------------------------------------------

UNCONSTRAINED_STOP_REASONS: Final = ("max_tokens", "refusal", "model_context_window_exceeded")
"""Stop reasons of a turn whose text need not be valid under ``output_config.format``: the
docs except a refusal and a reply cut by ``max_tokens`` from the guarantee; a full context
window cuts a reply the same way. Structured output is checked on a turn that calls no
tool (its text blocks joined); a turn that calls tools is checked only for strict tools."""

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

REQUIRED_EDIT_BETAS: Final[dict[str, str]] = {
    "compact_20260112": "compact-2026-01-12",
}
"""A context-management edit the API takes only under its own beta besides
``context-management-2025-06-27`` (the beta names are the SDK's; the refusal is assumed)."""

COMPACTION_BETA: Final = "compact-2026-09-04"
"""The beta the request field ``compaction`` needs (the SDK's runner says so); a request
without it is refused like the other beta-gated fields."""

# --- models ---------------------------------------------------------------------------

MODEL_MAX_OUTPUT_TOKENS: Final[dict[str, int]] = {
    "claude-opus-4-6": 128_000,
    "claude-opus-4-5": 64_000,
    "claude-opus-4-1": 32_000,
    "claude-opus-4-0": 32_000,
    "claude-opus-4-2025": 32_000,
    "claude-sonnet-4-6": 64_000,
    "claude-sonnet-4-5": 64_000,
    "claude-sonnet-4-0": 64_000,
    "claude-sonnet-4-2025": 64_000,
    "claude-haiku-4-5": 64_000,
    "claude-3-7-sonnet": 64_000,
    "claude-3-5-haiku": 8_192,
    "claude-3-haiku": 4_096,
}
"""The most output tokens (``max_tokens``) each model takes, by model-id prefix (the
longest matching prefix wins; dated ids such as ``claude-sonnet-4-5-20250929`` match their
alias). The values are the models overview's as this project knew them, so they are
assumed; a model no prefix matches (a newer one, or a test's ``"m"``) is not checked, and
betas that raise a model's limit (``output-128k-2025-02-19``) are not modelled."""

# --- thinking -------------------------------------------------------------------------

THINKING_ON: Final = ("enabled", "adaptive")
"""``thinking.type`` values under which the thinking rules of a tool-use continuation
apply (a final assistant turn must send back its thinking)."""

MIN_THINKING_BUDGET: Final = 1024
"""``thinking.budget_tokens`` must be at least this, and below ``max_tokens`` (documented
in the SDK's ``BetaThinkingConfigEnabledParam``)."""

SIGNATURES_ARE_CHECKED_WITH_THINKING_OFF: Final = True
"""Whether a ``thinking`` block sent back is checked against its signature even when the
request does not enable thinking. The docs say to pass blocks back unchanged; the API is
assumed to check them always."""

# --- clear_thinking_20251015 ------------------------------------------------------------

CLEAR_THINKING_DEFAULT_KEEP: Final = 1
"""Thinking turns ``clear_thinking_20251015`` keeps when ``keep`` is not given (the docs:
the last assistant turn's thinking)."""

THINKING_TURN_IS_AN_ASSISTANT_MESSAGE: Final = True
"""What ``clear_thinking_20251015`` counts as a thinking turn: each assistant message
holding thinking blocks (a tool loop's messages count one each)."""

# --- compaction -----------------------------------------------------------------------

COMPACT_EDIT_DEFAULT_TRIGGER: Final = 150_000
"""``compact_20260112`` fires when the prompt exceeds this many input tokens (the SDK's
param docs: "Defaults to 150000 input tokens"); ``TRIGGER_IS_INCLUSIVE`` applies."""

COMPACTION_BLOCK_PLACEMENT: Final = "first block of an assistant message"
"""Where a ``compaction`` block with content may stand. The SDK's error type says "not the
first block of the conversation, or in a system message"; a ``compact_20260112`` reply,
though, starts an assistant message that follows the conversation it summarizes. So the
fake refuses (``compaction_block_misplaced``) a compaction block in a user message or not
first in its message, and the model sees the conversation from that block on (earlier
messages dropped, as the compaction docs describe)."""

DEFAULT_SUMMARY_CHARS: Final = 80
"""How much of each message the default summary (no scripted ``compaction()`` next)
quotes: "Summary of N message(s): user: …; assistant: …"."""

SIGNATURE_PREFIX: Final = "scripted-sig-"
"""Generated thinking and compaction signatures start with this; the fake remembers each
one it issued with its text, and refuses a block whose signature it never issued or whose
text changed (the API verifies signatures; its messages are assumed)."""

# --- recordings -------------------------------------------------------------------------

RECORDING_IGNORED_FIELDS: Final = ("metadata", "stream")
"""Request fields strict replay does not compare (besides ids, ``cache_control`` and key
order): ``metadata`` carries per-run values such as a user id, and ``stream`` is how the
answer travels, not what is asked (a replay answers JSON or a stream as each request
asks). Assumed here: that no other field legitimately changes between two runs of the
same agent."""

STREAM_ERROR_STATUSES: Final[dict[str, int]] = {"overloaded_error": 529}
"""The HTTP status of a recorded stream ``error`` event replayed to a request that asks
for JSON (a stream's error comes with status 200; the docs give no JSON equivalent): the
error type's usual status, 500 for a type not listed."""

# --- the MCP connector (mcp_servers, mcp_toolset) ----------------------------------------

MCP_BETA_2026: Final = "mcp-client-2026-09-15"
MCP_BETA: Final = "mcp-client-2025-11-20"
MCP_BETA_LEGACY: Final = "mcp-client-2025-04-04"
"""The connector's betas (the SDK's names): the two newer ones configure tools with
``mcp_toolset`` entries of ``tools``; the oldest with ``tool_configuration`` on the server
definition. ``mcp_servers`` without any is refused as the other beta-gated fields are; the
messages of every connector refusal are assumed. With several sent, the newest applies
[assumed: the API's choice among them is not documented]."""

MCP_PINNED_AND_LISTING_NEED_2026: Final = True
"""[assumed] A toolset's pinned ``tools`` and an ``mcp_tool_listing`` block sent back are
accepted only under ``mcp-client-2026-09-15`` (a 400 naming that beta under the older
ones): the SDK's types share ``BetaMCPToolsetParam`` between the betas and say nothing of
which beta brought the listing, but the listing block appears in the SDK with that beta."""

MCP_LISTING_CHECKS: Final = True
"""[assumed] An ``mcp_tool_listing`` block sent back must stand in an assistant message
(the API makes it) and name a server of the request's ``mcp_servers`` (the SDK's
docstring: "as ``mcp_servers`` declares it"); a pinned listing or a listing sent back
must hold each tool name once (a server lists a name once; two would be ambiguous). Each
breach is a 400. A pinned listing may be empty (a toolset with no tools), and ``configs``
may name tools the listing lacks (the API is silent; the fake ignores them, as it cannot
know an unpinned server's tools before listing them)."""

MCP_LISTING_BEFORE_SAMPLING: Final = True
"""[assumed] Under ``mcp-client-2026-09-15`` the fake lists an unpinned server's tools
before it plays the turn, unless the conversation sent back an ``mcp_tool_listing`` of
that server (the latest one applies), and the reply then carries that listing first in
its content, one block per server listed, in ``mcp_servers`` order (the SDK's docstring:
"the tool listing the server fetched ... while producing this response"; the position is
not documented). A server that cannot be listed is the 400 before any turn is played.
Under the two older betas, which have no listing block, the fake reaches a server only
when a scripted turn calls one of its tools (so scripts and recorded results play without
a server), and a failure there also puts the turn back: the API would have refused the
request before sampling."""

MCP_LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")
"""The API connects to an MCP server from Anthropic's side and requires an https URL. The
fake connects from the test's machine, so it also accepts ``http://`` for these hosts,
where a served fake listens; any other ``http://`` URL is refused as the API refuses it."""

MCP_TOOL_USE_ID_PREFIX: Final = "mcptoolu_"
"""The prefix of a generated ``mcp_tool_use`` id (the API's ids look like this)."""

MCP_UNREACHABLE_STATUS: Final = 400
"""An MCP server that cannot be reached, refuses the token or fails to list its tools:
the API answers 400 ``invalid_request_error`` naming the server (assumed; the docs say
only that the request fails)."""

MCP_PROTOCOL_ERROR_IS_TOOL_ERROR: Final = True
"""A JSON-RPC error from ``tools/call`` (an unknown tool, arguments of the wrong shape)
becomes an ``mcp_tool_result`` with ``is_error: true`` holding the error's message, as a
tool's own error does, so the model can read it and try again."""

# --- tool search (defer_loading, tool_reference) -----------------------------------------

ALL_TOOLS_DEFERRED_MESSAGE: Final = (
    "All tools have defer_loading set. At least one tool must be non-deferred."
)
"""The 400 of a request whose every tool is deferred. The rule is the tool search docs';
the wording is theirs as this project knew it, so assumed. A server tool search tool, a
client tool without ``defer_loading`` and an ``mcp_toolset`` that leaves any tool
undeferred each count as non-deferred."""

TOOL_SEARCH_NEEDS_NO_BETA: Final = True
"""The docs introduced tool search under the beta ``advanced-tool-use-2025-11-20``, but the
SDK (2.14) carries the search tools, ``defer_loading`` and ``tool_reference`` in the
non-beta ``messages`` types too, and its beta enum has no such name: so no beta is
required (a request with or without it is answered the same)."""

SEARCH_TOOL_CANNOT_BE_DEFERRED: Final = True
"""The docs say the tool search tool itself must never be deferred (it is what loads the
others); the fake refuses ``defer_loading: true`` on it with a 400 naming the field."""

DEFERRED_TOOLS_UNCOUNTED_UNTIL_LOADED: Final = True
"""The token estimate (replies' ``input_tokens`` and ``count_tokens``) leaves out the
definition of a deferred tool until a ``tool_reference`` in the conversation loads it, and
counts it whole from then on: the docs say deferred tools are not in the prompt until
search returns them, and that a reference expands into the full definition. Deferred MCP
tools are not counted at all (the fake measures the toolset entry, not the listing)."""

TOOL_REFERENCE_NAMES_CHECKED: Final = "declared tools; any name under a deferring mcp_toolset"
"""A ``tool_reference`` sent back (in a search result or a client ``tool_result``) naming
no tool of the request is the API's 400 (the docs' "no corresponding tool definition").
A name under an ``mcp_toolset`` that defers tools (by default or by a ``configs`` entry)
is accepted unlisted: the fake does not ask the MCP server for its tools to check it. A
client ``tool_result`` may reference a tool that is not deferred (harmless, accepted); a
*scripted* search result that does is a script problem, since the API searches only
deferred tools."""

CLIENT_SEARCH_TOOL_WORD: Final = "search"
"""A client tool whose name contains this (any case), such as Claude Code's
``ToolSearch``, is taken for a client-side tool search: a scripted call of a tool the
request does not declare then says the tool is probably behind it."""
