"""The wire contract's rules that a conformance test can observe, each with its source.

``public`` rules are stated by ContextQ's public pages (its docs site); ``seed`` rules by the
documents this project was made from; ``assumed`` rules
are decided here where they are silent (and live in ``fake_contextq/wire.py``). Every
conformance test names the rules it checks with ``@pytest.mark.contract("id", ...)``; the
run's summary says, per rule, whether it held on the target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Source = Literal["public", "seed", "assumed"]


@dataclass(frozen=True)
class Rule:
    id: str
    source: Source
    text: str


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES: Final[dict[str, Rule]] = _rules(
    # auth and tenancy
    Rule(
        "auth.bearer-key", "seed", "A `Bearer sk_live_<40 hex>` key binds a request to its tenant"
    ),
    Rule("auth.unknown-key-401", "assumed", "An unknown or revoked key gets 401 `unauthorized`"),
    Rule("auth.scope-denied-403", "seed", "A key lacking a scope gets 403 `scope_denied`"),
    Rule(
        "auth.scope-per-endpoint",
        "seed",
        "Read endpoints need `read`, write endpoints `write`, workspace writes `admin`; "
        "`admin` subsumes both",
    ),
    Rule("auth.scope-denied-required", "assumed", "A 403 names the `required` scope"),
    Rule("auth.cross-tenant-404", "assumed", "Another tenant's row is 404 `not_found`, never 403"),
    Rule(
        "auth.401-challenge",
        "assumed",
        "A 401 on `/mcp` and on a REST route carries `WWW-Authenticate: Bearer realm=...`, "
        'with `error="invalid_token"` when a key was sent (RFC 6750 §3)',
    ),
    Rule(
        "auth.no-oauth",
        "assumed",
        "No OAuth: `/.well-known/oauth-protected-resource` (and for `/mcp`), "
        "`/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration` and "
        "`POST /register` at the MCP endpoint's origin are 404, which MCP clients read as "
        '"no OAuth here"',
    ),
    # errors
    Rule(
        "errors.validation-400",
        "assumed",
        "A bad field is 400 `validation_error` with `issues` of `{path, message}`",
    ),
    # contexts
    Rule("contexts.types", "seed", "Create accepts exactly the 9 context types"),
    Rule("contexts.create-201", "assumed", "Create answers 201 with the context's JSON"),
    Rule(
        "contexts.json-shape",
        "assumed",
        "A context's JSON carries id, workspace, type, "
        "title, content, tags, externalId, metadata, createdAt, updatedAt",
    ),
    Rule(
        "contexts.external-id-unique",
        "seed",
        "`external_id` is unique per tenant, not per workspace",
    ),
    Rule("contexts.external-id-409", "assumed", "A taken `externalId` is 409 `external_id_taken`"),
    Rule(
        "contexts.by-external",
        "seed",
        "`GET /api/contexts/by-external/:externalId` finds "
        "a context by its external id, URL-encoded as one segment",
    ),
    Rule("contexts.summary-no-content", "seed", "List rows never carry `content`"),
    Rule("contexts.list-max-500", "seed", "A list page holds at most 500 rows"),
    Rule(
        "contexts.list-shape",
        "assumed",
        "A list answers `{items, total, limit, offset}`, ordered by id, 50 rows by default",
    ),
    Rule("contexts.list-filters", "seed", "Lists filter by `workspace` and `tag`"),
    Rule(
        "contexts.unknown-workspace-null",
        "assumed",
        "An unknown workspace slug on create is stored as no workspace",
    ),
    Rule("contexts.put-partial", "assumed", "PUT replaces the fields given and keeps the others"),
    Rule(
        "contexts.last-writer-wins",
        "seed",
        "Updates have no conflict detection: the last writer wins",
    ),
    Rule("contexts.delete-204", "assumed", "Delete answers 204; the context is then 404"),
    Rule("contexts.bulk-upsert", "seed", "Bulk upsert is idempotent on `externalId`"),
    Rule(
        "contexts.bulk-shape",
        "assumed",
        "Bulk upsert answers `{created, updated, items}` and is all or nothing",
    ),
    # quota
    Rule("quota.free-100", "seed", "A free tenant with 100 contexts gets 402 on the next create"),
    Rule(
        "quota.402-details",
        "assumed",
        "The 402 is `quota_exceeded` with `resource`, `limit` and `plan`",
    ),
    Rule(
        "quota.bulk-whole",
        "assumed",
        "A bulk upsert that would cross the quota is rejected whole; updates do not count",
    ),
    # workspaces
    Rule("workspaces.crud", "seed", "Workspaces are listed, created, archived and deleted"),
    Rule("workspaces.slug-409", "assumed", "A taken slug is 409"),
    Rule(
        "workspaces.not-empty-409",
        "assumed",
        "Deleting a workspace that holds contexts is 409 `workspace_not_empty`",
    ),
    # search
    Rule(
        "search.type-enum",
        "seed",
        "Search's `type` filter accepts only reference, "
        "feedback, project, incident, lesson, user; any other is 400",
    ),
    Rule(
        "search.shape",
        "assumed",
        "Search answers `{results: [{context, score, snippet}]}`, "
        "best first, summaries without content",
    ),
    Rule(
        "search.hybrid",
        "public",
        "Search is hybrid (full text and vector similarity fused by RRF): every keyword "
        "match is found and an exact-title match ranks first; exact order and scores are "
        "not part of the contract",
    ),
    Rule("search.limit-50", "assumed", "Search's `limit` is at most 50"),
    # agent memory layer
    Rule(
        "agent.session-unknown-workspace",
        "seed",
        "An unknown workspace slug on a session silently becomes no workspace",
    ),
    Rule(
        "agent.session-parent",
        "seed",
        "`parent_session_id` links a session to its parent; `metadata` is free JSON",
    ),
    Rule(
        "agent.checkpoint-seq",
        "assumed",
        "A checkpoint's `seq` must be exactly last + 1, else 409 `seq_conflict` with `expected`",
    ),
    Rule("agent.resume", "seed", "Resume gives the latest checkpoint and the open tasks"),
    Rule("agent.task-upsert-key", "assumed", "Tasks are upserted by (`session_id`, `key`)"),
    Rule("agent.tick-evidence", "assumed", "A tick without evidence is 422 `evidence_required`"),
    Rule("agent.lesson-201", "assumed", "A lesson is stored with 201"),
    Rule(
        "agent.handoff-no-workspace",
        "seed",
        "Handoff without a workspace in the body or the session is 400 `no_workspace`",
    ),
    Rule("agent.handoff-no-llm", "seed", "Handoff is 503 when no LLM provider is configured"),
    Rule("agent.boot-pack", "seed", "Boot assembles resume, handoff, lessons and facts"),
    # the MCP surface
    Rule(
        "mcp.tools",
        "public",
        "The MCP server lists the Core CRUD tools ctx_save, ctx_search, ctx_list, ctx_get, "
        "ctx_update, ctx_delete, ctx_bulk_update, and ctx_stats",
    ),
    Rule(
        "mcp.agent-tools",
        "seed",
        "It lists the agent tools agent_boot, agent_resume, agent_session_start, "
        "agent_session_end, agent_checkpoint, agent_task_upsert, agent_task_tick, "
        "agent_lesson_add, agent_handoff",
    ),
    Rule(
        "mcp.required-params",
        "public",
        "ctx_save requires `content` (with `tags`, `metadata`); ctx_search requires `query` "
        "(with `tags`, `limit` defaulting to 10)",
    ),
    Rule(
        "mcp.param-names",
        "assumed",
        "Tool parameters are camelCase: the agent tools take `sessionId`, `parentSessionId`, "
        "`parentKey`, `taskId`, `tokenBudget` where their REST bodies say `session_id`, ...",
    ),
    Rule("mcp.save-types", "seed", "ctx_save advertises the same 9 types as create"),
    Rule(
        "mcp.search-types",
        "seed",
        "ctx_search refuses synthesis, map and moc, as POST /api/search does",
    ),
    Rule(
        "mcp.tool-error",
        "assumed",
        "A ContextQ refusal is a tool result with `isError` whose text names the status, "
        "code and message",
    ),
    Rule("mcp.scope-denied", "seed", "A key without `write` cannot save through MCP"),
    Rule("mcp.quota", "seed", "The free plan's 101st context is refused through MCP too"),
    Rule(
        "mcp.same-record",
        "assumed",
        "A tool's result is the REST answer's JSON (text and `structuredContent`): a record "
        "reads the same through MCP and REST",
    ),
    Rule("mcp.unknown-key-401", "assumed", "The MCP endpoint refuses an unknown key with 401"),
    Rule(
        "mcp.unknown-tool",
        "assumed",
        "An unknown tool is a tool result with `isError` (`MCP error -32602: Tool <name> not "
        "found`), not a JSON-RPC error, as the TypeScript SDK's McpServer answers",
    ),
    Rule(
        "mcp.bad-arguments",
        "assumed",
        "An argument of the wrong JSON type or a missing required one is an `isError` result "
        "whose text starts `MCP error -32602: Input validation error`, and nothing is written",
    ),
    Rule(
        "mcp.output-schemas",
        "assumed",
        "Every listed tool declares an `outputSchema`; ctx_save, ctx_get and ctx_list's "
        "`structuredContent` validates against it",
    ),
    Rule(
        "mcp.cors-preflight",
        "assumed",
        "A CORS preflight on `/mcp` from a browser page is a 204 allowing its origin (or `*`), "
        "`POST` and the headers asked for, exposing `WWW-Authenticate` and "
        "`Mcp-Protocol-Version`; the 401 to that page carries the same allowance",
    ),
    Rule(
        "mcp.protocol-versions",
        "assumed",
        "`initialize` asking for `2025-11-25` (the TypeScript SDK's newest) is answered with "
        "it; asking for an unknown version is answered with the server's latest, not an error",
    ),
    Rule(
        "mcp.import",
        "assumed",
        "ctx_import (`contexts`: items as ctx_save's) lands every item, an `externalId` with "
        "it, and answers `created`, `updated` and the `ids` the items landed as, in order",
    ),
    Rule(
        "mcp.chunks",
        "assumed",
        "ctx_chunks (`id`) answers `chunks` of `{index, start, end, text}` in order, each the "
        "content between its offsets, that leave out nothing but whitespace",
    ),
    Rule("mcp.mocs", "assumed", "ctx_mocs lists a `moc` context and no context of another type"),
    Rule(
        "mcp.saved-searches",
        "assumed",
        "ctx_saved_searches_create (`name`, `query`, ctx_search's filters) saves a search that "
        "ctx_saved_searches_run and ctx_run_saved_search (`id`) answer as ctx_search does; "
        "once ctx_saved_searches_delete'd, running it is 404 `not_found`",
    ),
    Rule(
        "mcp.llm-tools-no-workspace",
        "assumed",
        "ctx_dream and ctx_regenerate_mocs without a workspace, and ctx_evolve of a context "
        "with none, are 400 `no_workspace` tool errors, before any LLM check",
    ),
    Rule(
        "mcp.llm-tools-no-llm",
        "assumed",
        "Without an LLM provider, ctx_dream, ctx_evolve and ctx_regenerate_mocs are 503 "
        "`llm_unavailable` tool errors (not checked on a server that has one, as the fake "
        "has none)",
    ),
    Rule(
        "mcp.links",
        "assumed",
        "ctx_link links a context to another (`id`, `targetId`, `relation`); ctx_links lists "
        "a context's links both ways with the other end's summary; a deleted context's links go",
    ),
    Rule(
        "mcp.ingest",
        "assumed",
        "ctx_ingest takes markdown `text` as a job (`queued`) that ctx_ingest_status (`jobId`) "
        "polls to `done`, with one context per top-level heading",
    ),
    # audit
    Rule(
        "audit.one-row-per-write",
        "assumed",
        "Every successful write appends one audit row; reads append none",
    ),
)
