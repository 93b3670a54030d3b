"""The drift guard: every beta, request field, tool type and content-block type the scripted
model knows, each classified once as *modelled* (the engine plays or enforces it),
*ignored* (accepted, and why playing it unchanged is faithful) or *refused* (the fake does
not model it, and says so).

The names are those of the installed ``anthropic`` SDK (``AnthropicBetaParam``, the
create-params keys, the tool and content-block unions;
``tests/fake_anthropic/test_api_surface.py`` fails, naming each, when a new SDK knows one
this module does not classify) and those real clients send beyond it. Claude Code
2.1.332's first request with its default model sends eight: ``claude-code-20250219``,
``interleaved-thinking-2025-05-14``,
``context-management-2025-06-27``, ``advanced-tool-use-2025-11-20``, ``effort-2025-11-24``,
``per-turn-control-2026-07-01``, ``mid-conversation-tool-changes-2026-07-01`` and
``thinking-token-count-2026-05-13``; the last three are refused here, so playing Claude
Code takes ``--ignore-beta`` for each (``examples/claude-code``).
A request that uses a refused or unclassified name is a script problem naming it
(``errors.not_modelled``), not a silent drift; a beta can be played anyway with
``ScriptedModel(ignore_betas=...)`` or ``fake-anthropic serve --ignore-beta``.

The check is one frozenset lookup per name, so the ordinary path stays fast; the docs'
table is generated from here (``engine.surface_docs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from fake_anthropic.engine import errors

Json = dict[str, Any]
Status = Literal["modelled", "ignored", "refused"]
Kind = Literal["beta", "field", "tool", "block"]


@dataclass(frozen=True)
class Entry:
    status: Status
    why: str


def _m(why: str) -> Entry:
    return Entry("modelled", why)


def _i(why: str) -> Entry:
    return Entry("ignored", why)


def _r(why: str) -> Entry:
    return Entry("refused", why)


_OTHER_ENDPOINTS = _i(
    "a beta of other API endpoints (admin, billing, analytics, batches); it changes nothing a "
    "Messages request does [assumed]"
)
_SERVER_TOOL = _m(
    "a server tool: the script plays its call and result (`server_tool_use`, "
    "`web_search`); the fake fetches and runs nothing, and refuses a call of one not declared"
)
_CLIENT_TOOL = _m(
    "a client tool with a fixed schema: the script calls it by name and the client runs it, "
    "as for the memory tool"
)
_SERVER_RESULT = _m("a server tool's result: played from the script, counted when sent back")
_TOOL_SEARCH = _m("tool search: deferred tools found by the search the script plays")
_PROFILE = _i("attributes the request to a user profile: billing, not replies")
_READ_BY_MODEL = _i(
    "content the real model reads; the fake counts its JSON toward `input_tokens` and the "
    "script decides the reply"
)

BETAS: Final[Mapping[str, Entry]] = {
    # modelled
    "context-management-2025-06-27": _m("context editing (`context_management` edits)"),
    "compact-2026-01-12": _m("the `compact_20260112` context-management edit"),
    "compact-2026-09-04": _m("the `compaction` request field"),
    "message-threads-2026-08-12": _m("server-held threads (`thread`)"),
    "mcp-client-2026-09-15": _m(
        "the MCP connector with `mcp_toolset` tools, a pinned `tools` listing and the "
        "`mcp_tool_listing` a reply carries"
    ),
    "mcp-client-2025-11-20": _m("the MCP connector with `mcp_toolset` tools"),
    "mcp-client-2025-04-04": _m("the MCP connector with `tool_configuration` (older form)"),
    "structured-outputs-2025-11-13": _m("`output_config.format` and `strict` tools"),
    "token-counting-2024-11-01": _m("`POST /v1/messages/count_tokens`"),
    "advanced-tool-use-2025-11-20": _TOOL_SEARCH,
    "model-context-window-exceeded-2025-08-26": _m(
        "the `model_context_window_exceeded` stop reason a scripted turn may give"
    ),
    # accepted and ignored
    "prompt-caching-2024-07-31": _i(
        "caching changes cost and latency, not replies; cache counters are 0 unless scripted"
    ),
    "extended-cache-ttl-2025-04-11": _i("a cache's lifetime: cost, not replies"),
    "token-efficient-tools-2025-02-19": _i(
        "the tokens a tool definition costs; the fake's token estimate is its own"
    ),
    "fine-grained-tool-streaming-2025-05-14": _i(
        "how tool input is chunked in a stream; the fake's `input_json_delta` events build "
        "the same input"
    ),
    "interleaved-thinking-2025-05-14": _i(
        "thinking between tool calls: a scripted turn may hold thinking blocks anywhere, and "
        "the fake does not refuse them without this beta"
    ),
    "dev-full-thinking-2025-05-14": _i(
        "full rather than summarized thinking: the scripted thinking text is played as written"
    ),
    "context-1m-2025-08-07": _i("a larger context window; the fake enforces no context window"),
    "fast-mode-2026-02-01": _i("`speed: fast` changes latency, not replies"),
    "computer-use-2024-10-22": _CLIENT_TOOL,
    "computer-use-2025-01-24": _CLIENT_TOOL,
    "computer-use-2025-11-24": _CLIENT_TOOL,
    "code-execution-2025-05-22": _SERVER_TOOL,
    "pdfs-2024-09-25": _READ_BY_MODEL,
    "files-api-2025-04-14": _i(
        "blocks may name a `file_id`; the fake reads no file (it counts the reference) and "
        "serves no `/v1/files`"
    ),
    "fallback-credit-2026-06-01": _i("billing of a fallback's cost; the fake bills nothing"),
    "fallback-credit-2026-07-01": _i("billing of a fallback's cost; the fake bills nothing"),
    "user-profiles-2026-03-24": _i(
        "attributes the request to a user profile: billing, not replies"
    ),
    "user-profiles-2026-08-18": _i(
        "attributes the request to a user profile: billing, not replies"
    ),
    "user-profiles-2026-09-04": _i(
        "attributes the request to a user profile: billing, not replies"
    ),
    "user-profiles-billing-2026-10-01": _i("billing of user profiles"),
    "oauth-2025-04-20": _i("OAuth credentials: the fake takes any credentials"),
    "oidc-federation-2026-04-01": _i("federated credentials: the fake takes any credentials"),
    "claude-code-20250219": _i("names Claude Code as the client; changes no reply [assumed]"),
    "effort-2025-11-24": _i(
        "`output_config.effort`: how much the model spends on a reply; a script plays fixed turns"
    ),
    "message-batches-2024-09-24": _OTHER_ENDPOINTS,
    "webhooks-2026-10-07": _OTHER_ENDPOINTS,
    "admin-user-sign-out-2026-10-08": _OTHER_ENDPOINTS,
    "analytics-usage-cost-2026-08-24": _OTHER_ENDPOINTS,
    "spend-limit-reads-2026-09-26": _OTHER_ENDPOINTS,
    "telemetry-destinations-2026-08-11": _OTHER_ENDPOINTS,
    "ce-user-management-2026-07-13": _OTHER_ENDPOINTS,
    "ce-claude-code-managed-settings-2026-10-06": _OTHER_ENDPOINTS,
    "ce-plugins-2026-09-01": _OTHER_ENDPOINTS,
    # refused
    "output-128k-2025-02-19": _r(
        "raises a model's `max_tokens` limit, which the fake's limit table does not"
    ),
    "output-300k-2026-03-24": _r(
        "raises a model's `max_tokens` limit, which the fake's limit table does not"
    ),
    "per-turn-control-2026-07-01": _r("what it changes in a reply is not known here"),
    "skills-2025-10-02": _r("skills run in a `container`, which the fake does not model"),
    "advisor-tool-2026-03-01": _r("the advisor tool and its result blocks are not modelled"),
    "managed-agents-2026-04-01": _r("managed agents (sessions) are not modelled"),
    "dreaming-2026-04-21": _r("not modelled"),
    "agent-memory-2026-07-22": _r("the API's agent memory is not modelled"),
    "thinking-token-count-2026-05-13": _r("the thinking token counts it adds are not modelled"),
    "thinking-display-updates-2026-08-18": _r("its changes to thinking blocks are not modelled"),
    "thinking-binding-controls-2026-08-01": _r("its thinking controls are not modelled"),
    "server-side-fallback-2026-06-01": _r("falling back to another model is not modelled"),
    "server-side-fallback-2026-07-01": _r("falling back to another model is not modelled"),
    "mid-conversation-tool-changes-2026-07-01": _r(
        "`tool_addition` / `tool_removal` blocks are not modelled"
    ),
    "mid-conversation-output-config-2026-07-01": _r("not modelled"),
    "mid-conversation-system-clear-at-2026-08-21": _r("not modelled"),
    "task-budgets-2026-03-13": _r("task budgets are not modelled"),
    "inline-tools-2026-09-15": _r("not modelled"),
    "mcp-tunnels-2026-06-22": _r("MCP tunnels are not modelled"),
    "cache-diagnosis-2026-04-07": _r("`diagnostics` are not modelled"),
    "experimental-claude-tag-2026-10-21": _r("not modelled"),
    "efs-2026-10-01": _r("not modelled"),
    "google-managed-data-controls-2026-09-01": _r("not modelled"),
}
"""Every beta the installed SDK names, and those real clients send beyond it."""

_HEADER = "sent as a header by the SDK, not in the body"

FIELDS: Final[Mapping[str, Entry]] = {
    "model": _m("echoed; `max_tokens` checked against its limit"),
    "max_tokens": _m("required and checked"),
    "messages": _m("checked as the API checks them and shown to the script"),
    "system": _m("counted, kept by a thread"),
    "stream": _m("answers the API's event stream"),
    "tools": _m("a scripted call must name a declared tool"),
    "tool_choice": _m("checked, and a turn must keep to it"),
    "thinking": _m("checked; thinking blocks need it"),
    "stop_sequences": _m("a scripted `stop_sequence` must be one of them"),
    "thread": _m("server-held threads"),
    "context_management": _m("context editing"),
    "compaction": _m("compaction"),
    "mcp_servers": _m("the MCP connector"),
    "output_config": _m("`format` is enforced on scripted text; `effort` is ignored"),
    "metadata": _i("a per-run user id; no reply depends on it"),
    "cache_control": _i(
        "prompt caching changes cost, not replies (a thread refuses it, as the API does)"
    ),
    "service_tier": _i("capacity, not replies; replies say `standard`"),
    "speed": _i("latency, not replies"),
    "inference_geo": _i("where the model runs, not what it says"),
    "billing_policy": _i("billing; the fake bills nothing"),
    "fallback_credit_token": _i("billing of a fallback; the fake bills nothing"),
    "temperature": _i("sampling: a script plays fixed turns (older SDKs and clients send it)"),
    "top_p": _i("sampling: a script plays fixed turns (older SDKs and clients send it)"),
    "top_k": _i("sampling: a script plays fixed turns (older SDKs and clients send it)"),
    "container": _r("code-execution containers and skills are not modelled"),
    "diagnostics": _r("diagnostics are not modelled"),
    "fallbacks": _r(
        "falling back to another model is not modelled (a thread refuses it, as the API does)"
    ),
    "betas": _m(f"the `anthropic-beta` header; {_HEADER}"),
    "user_profile_id": _i(f"`anthropic-user-profile-id`, attribution; {_HEADER}"),
    "workspace_id": _i(f"`anthropic-workspace-id`, workspace selection; {_HEADER}"),
}
"""Every create-params key the installed SDK names (beta and not, and ``count_tokens``)."""

HEADER_FIELDS: Final = frozenset({"betas", "user_profile_id", "workspace_id"})
"""SDK parameters sent as headers: in a body they are unknown fields, as for the API."""

TOOLS: Final[Mapping[str, Entry]] = {
    "custom": _m("a client tool (also a tool with no `type`)"),
    "memory_20250818": _m("the memory tool: a client tool the script calls by name"),
    "mcp_toolset": _m("the MCP connector's tools"),
    "tool_search_tool_regex_20251119": _TOOL_SEARCH,
    "tool_search_tool_bm25_20251119": _TOOL_SEARCH,
    "tool_search_tool_regex": _TOOL_SEARCH,
    "tool_search_tool_bm25": _TOOL_SEARCH,
    "bash_20241022": _CLIENT_TOOL,
    "bash_20250124": _CLIENT_TOOL,
    "text_editor_20241022": _CLIENT_TOOL,
    "text_editor_20250124": _CLIENT_TOOL,
    "text_editor_20250429": _CLIENT_TOOL,
    "text_editor_20250728": _CLIENT_TOOL,
    "computer_20241022": _CLIENT_TOOL,
    "computer_20250124": _CLIENT_TOOL,
    "computer_20251124": _CLIENT_TOOL,
    "web_search_20250305": _SERVER_TOOL,
    "web_search_20260209": _SERVER_TOOL,
    "web_search_20260318": _SERVER_TOOL,
    "web_fetch_20250910": _SERVER_TOOL,
    "web_fetch_20260209": _SERVER_TOOL,
    "web_fetch_20260309": _SERVER_TOOL,
    "web_fetch_20260318": _SERVER_TOOL,
    "code_execution_20250522": _SERVER_TOOL,
    "code_execution_20250825": _SERVER_TOOL,
    "code_execution_20260120": _SERVER_TOOL,
    "code_execution_20260521": _SERVER_TOOL,
    "advisor_20260301": _r("the advisor tool (another model's advice) is not modelled"),
    "computer_toolset_20260801": _r("toolsets of computer use are not modelled"),
    "browser_toolset_20260801": _r("the browser toolset is not modelled"),
}
"""Every tool ``type`` of the SDK's tool union."""

BLOCKS: Final[Mapping[str, Entry]] = {
    "text": _m("played and counted"),
    "thinking": _m("signed when played, checked when sent back"),
    "redacted_thinking": _m("played, checked when sent back"),
    "tool_use": _m("played; must be answered by a `tool_result`"),
    "tool_result": _m("recorded in `tool_results`; must answer a `tool_use`"),
    "compaction": _m("played, signed, and checked when sent back"),
    "server_tool_use": _SERVER_RESULT,
    "web_search_tool_result": _SERVER_RESULT,
    "web_fetch_tool_result": _SERVER_RESULT,
    "code_execution_tool_result": _SERVER_RESULT,
    "bash_code_execution_tool_result": _SERVER_RESULT,
    "text_editor_code_execution_tool_result": _SERVER_RESULT,
    "mcp_tool_use": _m("played by calling the MCP server (or from the script)"),
    "mcp_tool_result": _m("the MCP server's answer"),
    "mcp_tool_listing": _m(
        "the MCP server's listing: in a reply that listed the server, and used instead of "
        "listing it again when sent back"
    ),
    "tool_search_tool_result": _TOOL_SEARCH,
    "tool_reference": _TOOL_SEARCH,
    "image": _READ_BY_MODEL,
    "document": _READ_BY_MODEL,
    "search_result": _READ_BY_MODEL,
    "container_upload": _r("code-execution containers are not modelled"),
    "advisor_tool_result": _r("the advisor tool is not modelled"),
    "tool_addition": _r("mid-conversation tool changes are not modelled"),
    "tool_removal": _r("mid-conversation tool changes are not modelled"),
    "fallback": _r("falling back to another model is not modelled"),
    "browser_state": _r("the browser toolset is not modelled"),
}
"""Every content-block ``type`` of the SDK's block unions (request and reply) and of a
``tool_result``'s content."""

TABLES: Final[Mapping[Kind, Mapping[str, Entry]]] = {
    "beta": BETAS,
    "field": FIELDS,
    "tool": TOOLS,
    "block": BLOCKS,
}


def _accepted(table: Mapping[str, Entry], drop: Iterable[str] = ()) -> frozenset[str]:
    return frozenset(n for n, e in table.items() if e.status != "refused") - frozenset(drop)


_BETAS_OK: Final = _accepted(BETAS)
_FIELDS_OK: Final = _accepted(FIELDS, HEADER_FIELDS)
_TOOLS_OK: Final = _accepted(TOOLS)
_BLOCKS_OK: Final = _accepted(BLOCKS)


def check_ignored_betas(names: Iterable[str]) -> frozenset[str]:
    """The betas a model or ``serve`` is told to ignore: names as the header carries them."""
    found = frozenset(names)
    for name in found:
        if not isinstance(name, str) or not name or name != name.strip() or "," in name:
            raise ValueError(errors.bad_ignored_beta(name))
    return found


def _blocks(messages: Sequence[object]) -> Iterable[object]:
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            yield block
            inner = block.get("content") if isinstance(block, dict) else None
            if isinstance(inner, list) and block.get("type") == "tool_result":
                yield from inner


def _why(table: Mapping[str, Entry], name: str) -> str | None:
    entry = table.get(name)
    return entry.why if entry is not None else None


def check(body: Json, betas: Sequence[str], ignored: frozenset[str]) -> None:
    """Refuse (a script problem) the first beta, field, tool type or block type of the
    request that is refused or unclassified here, unless it is a beta in ``ignored``."""
    for beta in betas:
        if beta not in _BETAS_OK and beta not in ignored:
            raise errors.not_modelled("beta", beta, _why(BETAS, beta), None)
    for name in body:
        if name not in _FIELDS_OK:
            if name in HEADER_FIELDS:
                raise errors.header_in_body(name)
            raise errors.not_modelled("field", name, _why(FIELDS, name), None)
    tools = body.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else ()):
        kind = tool.get("type", "custom") if isinstance(tool, dict) else "custom"
        if kind is None:
            kind = "custom"
        if kind not in _TOOLS_OK:
            raise errors.not_modelled("tool", str(kind), _why(TOOLS, str(kind)), f"tools.{i}")
    messages = body.get("messages")
    for block in _blocks(messages if isinstance(messages, list) else ()):
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str) and kind not in _BLOCKS_OK:
            raise errors.not_modelled("block", kind, _why(BLOCKS, kind), None)
