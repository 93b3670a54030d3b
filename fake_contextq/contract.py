"""ContextQ's wire contract as this project models it: the one home of every assumed detail.

ContextQ is private; ``shared/contextq-wire.md`` distils what the seed documents
state about it. Each constant or function below is marked ``[seed]`` (stated by a
seed) or ``[assumed]`` (decided here). When a real ContextQ disagrees with an
``[assumed]`` line, this module is the place to correct it; nothing else in the
package spells these details out again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from fake_contextq import _msgs, _validate
from fake_contextq import records as r

# --- Auth and tenancy -------------------------------------------------------------------------

KEY_PREFIX: Final = "sk_live_"  # [seed]
KEY_HEX_LENGTH: Final = 40  # [seed]
KEY_RE: Final = re.compile(r"sk_live_[0-9a-f]{40}")  # [seed] (lowercase hex: [assumed])
KEY_DISPLAY_PREFIX_LENGTH: Final = 12  # [assumed]
SCOPES: Final = ("read", "write", "admin")  # [seed]
SUBSUMING_SCOPE: Final = "admin"  # [seed] admin subsumes read and write


def hash_key(plaintext: str) -> str:
    """[assumed] Keys are stored as the sha256 hex of the whole key."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def key_display_prefix(plaintext: str) -> str:
    """[assumed] The first 12 characters are kept for display and the audit log."""
    return plaintext[:KEY_DISPLAY_PREFIX_LENGTH]


def scope_grants(held: Iterable[str], required: str) -> bool:
    """[seed] A key holds a scope directly or through ``admin``."""
    held_set = set(held)
    return required in held_set or SUBSUMING_SCOPE in held_set


# --- Errors ------------------------------------------------------------------------------------

# [assumed] error code -> HTTP status. 413/415 are Fastify's own answers, assumed too.
ERROR_STATUS: Final[Mapping[str, int]] = {
    _msgs.UNAUTHORIZED: 401,
    _msgs.SCOPE_DENIED: 403,
    _msgs.NOT_FOUND: 404,
    _msgs.VALIDATION_ERROR: 400,
    _msgs.EXTERNAL_ID_TAKEN: 409,
    _msgs.WORKSPACE_TAKEN: 409,
    _msgs.SEQ_CONFLICT: 409,
    _msgs.WORKSPACE_NOT_EMPTY: 409,
    _msgs.QUOTA_EXCEEDED: 402,
    _msgs.NO_WORKSPACE: 400,
    _msgs.EVIDENCE_REQUIRED: 422,
    _msgs.LLM_UNAVAILABLE: 503,
    _msgs.PAYLOAD_TOO_LARGE: 413,
    _msgs.UNSUPPORTED_MEDIA_TYPE: 415,
    _msgs.INTERNAL_ERROR: 500,
}

# [assumed] an unknown route, and a known path with another method, answer 404 (Fastify does).
UNKNOWN_ROUTE_STATUS: Final = 404


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """[assumed] ``{"error": code, "message": sentence, ...details}``."""
    body: dict[str, Any] = {"error": code, "message": message}
    if details:
        body.update(details)
    return body


def issue_path(parts: Sequence[str | int]) -> str:
    """[assumed] A validation issue's ``path`` is the zod path joined with dots ('' = root)."""
    return ".".join(str(p) for p in parts)


class ErrorCode:
    """[assumed] The ``error`` codes, for clients that branch on them (see ``_msgs``)."""

    UNAUTHORIZED: Final = _msgs.UNAUTHORIZED
    SCOPE_DENIED: Final = _msgs.SCOPE_DENIED
    NOT_FOUND: Final = _msgs.NOT_FOUND
    VALIDATION_ERROR: Final = _msgs.VALIDATION_ERROR
    EXTERNAL_ID_TAKEN: Final = _msgs.EXTERNAL_ID_TAKEN
    WORKSPACE_TAKEN: Final = _msgs.WORKSPACE_TAKEN
    SEQ_CONFLICT: Final = _msgs.SEQ_CONFLICT
    WORKSPACE_NOT_EMPTY: Final = _msgs.WORKSPACE_NOT_EMPTY
    QUOTA_EXCEEDED: Final = _msgs.QUOTA_EXCEEDED
    NO_WORKSPACE: Final = _msgs.NO_WORKSPACE
    EVIDENCE_REQUIRED: Final = _msgs.EVIDENCE_REQUIRED
    LLM_UNAVAILABLE: Final = _msgs.LLM_UNAVAILABLE
    PAYLOAD_TOO_LARGE: Final = _msgs.PAYLOAD_TOO_LARGE
    UNSUPPORTED_MEDIA_TYPE: Final = _msgs.UNSUPPORTED_MEDIA_TYPE


# --- Plans and quotas ----------------------------------------------------------------------------

# [seed] free = 100 contexts; [assumed] pro and unlimited. ``None`` means no limit.
PLAN_CONTEXT_QUOTAS: Final[Mapping[str, int | None]] = {
    "free": 100,
    "pro": 10_000,
    "unlimited": None,
}
DEFAULT_PLAN: Final = "free"
QUOTA_RESOURCE_CONTEXTS: Final = "contexts"

# --- Contexts ------------------------------------------------------------------------------------

CONTEXT_TYPES: Final = (  # [seed] the 9 types create accepts
    "reference",
    "feedback",
    "project",
    "incident",
    "lesson",
    "user",
    "synthesis",
    "map",
    "moc",
)
SEARCH_TYPES: Final = (  # [seed] the 6 types POST /api/search accepts as a filter
    "reference",
    "feedback",
    "project",
    "incident",
    "lesson",
    "user",
)
LIST_MAX_LIMIT: Final = 500  # [seed] a list page holds at most 500 rows
LIST_DEFAULT_LIMIT: Final = 50  # [assumed]
SEARCH_MAX_LIMIT: Final = 50  # [assumed]
SEARCH_DEFAULT_LIMIT: Final = 10  # [assumed]
SEARCH_SNIPPET_CHARS: Final = 160  # [assumed]
BULK_MAX_ITEMS: Final = 500  # [assumed]

MAX_BODY_BYTES: Final = 8 * 1024 * 1024  # [assumed] whole request body, else 413
MAX_JSON_DEPTH: Final = 256  # [assumed] arrays and objects nested deeper are a 400
MAX_CONTENT_BYTES: Final = 1024 * 1024  # [assumed] one context's content, UTF-8, else 400
MAX_TITLE_CHARS: Final = 500  # [assumed]
MAX_TAGS: Final = 50  # [assumed]
MAX_TAG_CHARS: Final = 100  # [assumed]
MAX_EXTERNAL_ID_CHARS: Final = 512  # [assumed]
MAX_QUERY_CHARS: Final = 1_000  # [assumed]
MAX_WORKSPACE_SLUG_CHARS: Final = 64  # [assumed]
MAX_WORKSPACE_NAME_CHARS: Final = 200  # [assumed]
WORKSPACE_SLUG_RE: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")  # [assumed]
ID_RE: Final = re.compile(r"[1-9][0-9]{0,18}")  # [assumed] path ids are positive integers

# [assumed] Bodies must be JSON; other content types get 415 (Fastify's default).
JSON_MEDIA_TYPE: Final = "application/json"

# [assumed] A create or update naming an unknown workspace slug is stored with workspace null,
# as the seeds report for agent sessions (resolveWorkspaceId returns null). A list or search
# filtered by an unknown slug matches nothing.
UNKNOWN_WORKSPACE_IS_NULL: Final = True

# [assumed] The search tag filter keeps contexts that carry every given tag.
SEARCH_TAGS_MATCH_ALL: Final = True

# [assumed] Fields that a create and a bulk-upsert item may carry; a PUT may carry any of them.
# Unknown fields are ignored (zod's default).
CONTEXT_FIELDS: Final = ("type", "title", "content", "tags", "externalId", "workspace", "metadata")
CONTEXT_REQUIRED_ON_CREATE: Final = ("type", "title", "content")


# [assumed] Python attribute -> JSON field, for contexts and workspaces (camelCase on the wire).
CONTEXT_WIRE_NAMES: Final[Mapping[str, str]] = {
    "id": "id",
    "workspace": "workspace",
    "type": "type",
    "title": "title",
    "content": "content",
    "tags": "tags",
    "external_id": "externalId",
    "metadata": "metadata",
    "created_at": "createdAt",
    "updated_at": "updatedAt",
}
WORKSPACE_WIRE_NAMES: Final[Mapping[str, str]] = {
    "id": "id",
    "slug": "slug",
    "name": "name",
    "archived": "archived",
    "created_at": "createdAt",
}


def parse_timestamp(text: str) -> datetime:
    """The inverse of ``timestamp``: an aware UTC datetime."""
    return datetime.fromisoformat(text)


@functools.lru_cache(maxsize=65_536)  # a pure function; listings render each row's twice
def timestamp(at: datetime) -> str:
    """[assumed] ISO-8601 UTC with milliseconds and ``Z``, as JavaScript's toISOString."""
    if at.tzinfo is not UTC:
        at = at.astimezone(UTC)
    return at.isoformat(timespec="milliseconds")[:-6] + "Z"


# --- Audit log ---------------------------------------------------------------------------------

AUDIT_HASHED_FIELDS: Final = (  # [assumed] the fields covered by a row's hash
    "id",
    "tenant_id",
    "actor_key_prefix",
    "action",
    "entity",
    "entity_id",
    "at",
)


def canonical_json(value: Any) -> str:
    """[assumed] Sorted keys, no whitespace, UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def audit_hash(prev_hash: str | None, fields: Mapping[str, Any]) -> str:
    """[assumed] ``sha256(prev_hash + canonical JSON of the other fields)``; null counts as ''."""
    payload = (prev_hash or "") + canonical_json({k: fields[k] for k in AUDIT_HASHED_FIELDS})
    # surrogatepass: a lone surrogate (legal in JSON text) must not make a write fail late
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class AuditAction:
    """[assumed] The ``action`` names written to the audit log, one per write endpoint."""

    CONTEXT_CREATE: Final = "context.create"
    CONTEXT_UPDATE: Final = "context.update"
    CONTEXT_DELETE: Final = "context.delete"
    CONTEXT_BULK_UPSERT: Final = "context.bulk_upsert"
    WORKSPACE_CREATE: Final = "workspace.create"
    WORKSPACE_ARCHIVE: Final = "workspace.archive"
    WORKSPACE_DELETE: Final = "workspace.delete"


# --- Request bodies and query strings ----------------------------------------------------------


def _read_context_fields(
    reader: _validate.Reader, *, create: bool, require_external_id: bool
) -> r.ContextInput:
    """[assumed] field names and limits of a context body (camelCase on the wire)."""
    type_ = reader.enum("type", CONTEXT_TYPES, required=create)
    title = reader.string("title", required=create, min_len=1, max_len=MAX_TITLE_CHARS)
    content = reader.string("content", required=create, max_bytes=MAX_CONTENT_BYTES)
    tags = reader.string_list("tags", max_items=MAX_TAGS, max_item_len=MAX_TAG_CHARS)
    external_id = reader.string(
        "externalId",
        required=require_external_id,
        nullable=not require_external_id,
        min_len=1,
        max_len=MAX_EXTERNAL_ID_CHARS,
    )
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    metadata = reader.mapping("metadata", nullable=True)
    given = frozenset(name for name in CONTEXT_FIELDS if reader.has(name))
    return r.ContextInput(
        type=type_,
        title=title,
        content=content,
        tags=tags,
        external_id=external_id,
        workspace=workspace,
        metadata=metadata,
        given=given,
    )


def parse_context_body(raw: bytes | Mapping[str, Any], *, create: bool) -> r.ContextInput:
    """The body of ``POST /api/contexts`` (create) or ``PUT /api/contexts/:id``."""
    obj = _validate.decode_json(raw) if isinstance(raw, bytes | str) else raw
    issues = _validate.Issues()
    result = _read_context_fields(
        _validate.Reader(obj, issues), create=create, require_external_id=False
    )
    issues.check()
    return result


def parse_bulk_body(raw: bytes | Mapping[str, Any]) -> list[r.ContextInput]:
    """[assumed] ``{"contexts": [...]}``, 1..500 items, each a create body with ``externalId``."""
    obj = _validate.decode_json(raw) if isinstance(raw, bytes | str) else raw
    issues = _validate.Issues()
    reader = _validate.Reader(obj, issues)
    items: list[r.ContextInput] = []
    value = reader.obj.get("contexts") if reader.ok else None
    if reader.ok and "contexts" not in reader.obj:
        issues.add(("contexts",), _msgs.REQUIRED)
    elif reader.ok and not isinstance(value, list):
        issues.add(
            ("contexts",),
            _msgs.EXPECTED.format(expected="array", received=_validate.json_type_name(value)),
        )
    elif isinstance(value, list):
        if not value:
            issues.add(("contexts",), _msgs.TOO_FEW_ITEMS.format(min=1))
        elif len(value) > BULK_MAX_ITEMS:
            issues.add(("contexts",), _msgs.TOO_MANY_ITEMS.format(max=BULK_MAX_ITEMS))
        else:
            seen: set[str] = set()
            for i, item in enumerate(value):
                parsed = _read_context_fields(
                    _validate.Reader(item, issues, ("contexts", i)),
                    create=True,
                    require_external_id=True,
                )
                if parsed.external_id is not None:
                    if parsed.external_id in seen:
                        issues.add(
                            ("contexts", i, "externalId"),
                            _msgs.DUPLICATE_IN_BATCH.format(external_id=parsed.external_id),
                        )
                    seen.add(parsed.external_id)
                items.append(parsed)
    issues.check()
    return items


def _query_int(
    params: Mapping[str, str],
    name: str,
    default: int,
    minimum: int,
    maximum: int,
    issues: _validate.Issues,
) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if not re.fullmatch(r"-?[0-9]{1,19}", raw.strip()):
        issues.add((name,), _msgs.EXPECTED.format(expected="integer", received=repr(raw)))
        return default
    value = int(raw)
    if not minimum <= value <= maximum:
        issues.add((name,), _msgs.OUT_OF_RANGE.format(min=minimum, max=maximum))
        return default
    return value


def parse_list_query(params: Mapping[str, str]) -> r.ListQuery:
    """[seed] filters ``workspace`` and ``tag``; [assumed] ``type``, ``limit``, ``offset``."""
    issues = _validate.Issues(_msgs.INVALID_QUERY)
    type_ = params.get("type")
    if type_ is not None and type_ not in CONTEXT_TYPES:
        issues.add(
            ("type",),
            _msgs.INVALID_ENUM.format(
                options=" | ".join(repr(o) for o in CONTEXT_TYPES), received=type_
            ),
        )
    limit = _query_int(params, "limit", LIST_DEFAULT_LIMIT, 1, LIST_MAX_LIMIT, issues)
    offset = _query_int(params, "offset", 0, 0, 2**31 - 1, issues)
    issues.check()
    return r.ListQuery(
        workspace=params.get("workspace"),
        tag=params.get("tag"),
        type=type_,
        limit=limit,
        offset=offset,
    )


def parse_search_body(raw: bytes | Mapping[str, Any]) -> r.SearchQuery:
    """[seed] the 6-type enum on ``type``; [assumed] the other fields and limits."""
    obj = _validate.decode_json(raw) if isinstance(raw, bytes | str) else raw
    issues = _validate.Issues()
    reader = _validate.Reader(obj, issues)
    query = reader.string("query", required=True, min_len=1, max_len=MAX_QUERY_CHARS)
    type_ = reader.enum("type", SEARCH_TYPES)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    tags = reader.string_list("tags", max_items=MAX_TAGS, max_item_len=MAX_TAG_CHARS)
    limit = reader.integer("limit", minimum=1, maximum=SEARCH_MAX_LIMIT)
    issues.check()
    assert query is not None
    return r.SearchQuery(
        query=query,
        type=type_,
        workspace=workspace,
        tags=tags or (),
        limit=SEARCH_DEFAULT_LIMIT if limit is None else limit,
    )


def parse_workspace_body(raw: bytes | Mapping[str, Any]) -> tuple[str, str]:
    """[assumed] ``{"slug", "name"?}``; the name defaults to the slug."""
    obj = _validate.decode_json(raw) if isinstance(raw, bytes | str) else raw
    issues = _validate.Issues()
    reader = _validate.Reader(obj, issues)
    slug = reader.string("slug", required=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS)
    if slug is not None and not WORKSPACE_SLUG_RE.fullmatch(slug):
        issues.add(("slug",), _msgs.BAD_SLUG.format(max=MAX_WORKSPACE_SLUG_CHARS))
    name = reader.string("name", nullable=True, min_len=1, max_len=MAX_WORKSPACE_NAME_CHARS)
    issues.check()
    assert slug is not None
    return slug, name or slug


def parse_id(raw: str, name: str = "id") -> int:
    """[assumed] a path id that is not a positive integer is a 400, not a 404."""
    if not ID_RE.fullmatch(raw):
        issues = _validate.Issues(_msgs.INVALID_PATH)
        issues.add((name,), _msgs.NOT_AN_ID.format(value=raw))
        issues.check()
    return int(raw)


# --- Response bodies -------------------------------------------------------------------------


_K = CONTEXT_WIRE_NAMES  # hoisted: rendering a page of 500 rows must stay cheap


def context_json(c: r.Context, *, with_content: bool = True) -> dict[str, Any]:
    """[assumed] the JSON of a context; [seed] a summary never carries ``content``."""
    out: dict[str, Any] = {
        _K["id"]: c.id,
        _K["workspace"]: c.workspace,
        _K["type"]: c.type,
        _K["title"]: c.title,
    }
    if with_content:
        out[_K["content"]] = c.content
    out[_K["tags"]] = list(c.tags)
    out[_K["external_id"]] = c.external_id
    out[_K["metadata"]] = c.metadata
    out[_K["created_at"]] = timestamp(c.created_at)
    out[_K["updated_at"]] = timestamp(c.updated_at)
    return out


def page_json(page: r.Page) -> dict[str, Any]:
    return {
        "items": [context_json(c, with_content=False) for c in page.items],
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
    }


def bulk_json(result: r.BulkResult) -> dict[str, Any]:
    return {
        "created": result.created,
        "updated": result.updated,
        "items": [context_json(c) for c in result.items],
    }


def search_json(hits: Sequence[r.SearchHit]) -> dict[str, Any]:
    return {
        "results": [
            {
                "context": context_json(h.context, with_content=False),
                "score": round(h.score, 6),
                "snippet": h.snippet,
            }
            for h in hits
        ]
    }


def workspace_json(w: r.Workspace) -> dict[str, Any]:
    out: dict[str, Any] = {wire: getattr(w, attr) for attr, wire in WORKSPACE_WIRE_NAMES.items()}
    out[WORKSPACE_WIRE_NAMES["created_at"]] = timestamp(w.created_at)
    return out


def workspaces_json(items: Sequence[r.Workspace]) -> dict[str, Any]:
    return {"items": [workspace_json(w) for w in items]}


# --- Agent Memory Layer ----------------------------------------------------------------------
# Bodies are snake_case, as the seeds name their fields.

EMBEDDING_DIMENSIONS: Final = 768  # [seed] vector(768), despite the type's name vector384
SESSION_STATUS_ACTIVE: Final = "active"  # [assumed]
SESSION_END_STATUSES: Final = ("completed", "failed", "cancelled")  # [assumed]
TASK_STATUSES: Final = ("pending", "in_progress", "blocked", "verified")  # [assumed]
TASK_OPEN_STATUSES: Final = ("pending", "in_progress", "blocked")  # [assumed] open = unverified
TASK_VERIFIED: Final = "verified"  # [assumed] what a tick sets; needs evidence
MAX_STATE_BYTES: Final = 256 * 1024  # [assumed] a checkpoint's state, as compact JSON
MAX_METADATA_BYTES: Final = 64 * 1024  # [assumed] a session's metadata, as compact JSON
MAX_TEXT_CHARS: Final = 10_000  # [assumed] lesson text, evidence, summaries
MAX_TASK_KEY_CHARS: Final = 200  # [assumed]
MAX_GOAL_CHARS: Final = 2_000  # [assumed]
DEFAULT_TOKEN_BUDGET: Final = 4_000  # [assumed]
MAX_TOKEN_BUDGET: Final = 200_000  # [assumed]
BOOT_LESSONS: Final = 5  # [assumed] lessons recalled into a Boot Pack
BOOT_FACTS: Final = 5  # [assumed] search hits of the goal in a Boot Pack


def estimate_tokens(value: Any) -> int:
    """[assumed] ~4 characters of compact JSON per token, rounded up."""
    return -(-len(canonical_json(value)) // 4)


class AgentAction:
    """[assumed] audit ``action`` names of the agent layer's writes."""

    SESSION_START: Final = "agent.session.start"
    SESSION_END: Final = "agent.session.end"
    CHECKPOINT: Final = "agent.checkpoint"
    TASK_UPSERT: Final = "agent.task.upsert"
    TASK_TICK: Final = "agent.task.tick"
    LESSON_ADD: Final = "agent.lesson.add"
    HANDOFF: Final = "agent.handoff"


def _json_size(value: Any) -> int:
    return len(canonical_json(value).encode("utf-8", "surrogatepass"))


def _decode(raw: bytes | Mapping[str, Any]) -> Any:
    return _validate.decode_json(raw) if isinstance(raw, bytes | str) else raw


def parse_session_start(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"workspace"?, "parent_session_id"?, "metadata"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    parent = reader.integer("parent_session_id", minimum=1, maximum=2**63 - 1)
    metadata = reader.mapping("metadata", nullable=True) or {}
    if _json_size(metadata) > MAX_METADATA_BYTES:
        issues.add(
            ("metadata",),
            _msgs.TOO_MANY_BYTES.format(max=MAX_METADATA_BYTES, got=_json_size(metadata)),
        )
    issues.check()
    return {"workspace": workspace, "parent_session_id": parent, "metadata": metadata}


def parse_session_end(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"status": completed|failed|cancelled, "summary"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    status = reader.enum("status", SESSION_END_STATUSES, required=True)
    summary = reader.string("summary", nullable=True, max_len=MAX_TEXT_CHARS)
    issues.check()
    return {"status": status, "summary": summary}


def parse_checkpoint(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"seq": int >= 1, "state": object, "summary"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    seq = reader.integer("seq", minimum=1, maximum=2**31 - 1)
    if seq is None and reader.ok and "seq" not in reader.obj:
        issues.add(("seq",), _msgs.REQUIRED)
    state = reader.mapping("state")
    if state is None and reader.ok and "state" not in reader.obj:
        issues.add(("state",), _msgs.REQUIRED)
    if state is not None and _json_size(state) > MAX_STATE_BYTES:
        issues.add(
            ("state",), _msgs.TOO_MANY_BYTES.format(max=MAX_STATE_BYTES, got=_json_size(state))
        )
    summary = reader.string("summary", nullable=True, max_len=MAX_TEXT_CHARS)
    issues.check()
    return {"seq": seq, "state": state, "summary": summary}


def parse_task(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"session_id", "key", "title", "status"?, "parent_key"?, "evidence"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    session_id = reader.integer("session_id", minimum=1, maximum=2**63 - 1)
    if session_id is None and reader.ok and "session_id" not in reader.obj:
        issues.add(("session_id",), _msgs.REQUIRED)
    key = reader.string("key", required=True, min_len=1, max_len=MAX_TASK_KEY_CHARS)
    title = reader.string("title", required=True, min_len=1, max_len=MAX_TITLE_CHARS)
    status = reader.enum("status", TASK_STATUSES)  # None: pending when new, else unchanged
    parent_key = reader.string("parent_key", nullable=True, min_len=1, max_len=MAX_TASK_KEY_CHARS)
    evidence = reader.string("evidence", nullable=True, max_len=MAX_TEXT_CHARS)
    issues.check()
    return {
        "session_id": session_id,
        "key": key,
        "title": title,
        "status": status,
        "parent_key": parent_key,
        "evidence": evidence,
    }


def parse_tick(raw: bytes | Mapping[str, Any]) -> str | None:
    """[assumed] ``{"evidence": str}``; a missing or blank one is left to the 422 check."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw) if raw else {}, issues)
    evidence = reader.string("evidence", nullable=True, max_len=MAX_TEXT_CHARS)
    issues.check()
    return evidence


def parse_lesson(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"text", "workspace"?, "session_id"?, "tags"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    text = reader.string("text", required=True, min_len=1, max_len=MAX_TEXT_CHARS)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    session_id = reader.integer("session_id", minimum=1, maximum=2**63 - 1)
    tags = reader.string_list("tags", max_items=MAX_TAGS, max_item_len=MAX_TAG_CHARS)
    issues.check()
    return {"text": text, "workspace": workspace, "session_id": session_id, "tags": tags or ()}


def parse_handoff(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"session_id"?, "workspace"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw) if raw else {}, issues)
    session_id = reader.integer("session_id", minimum=1, maximum=2**63 - 1)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    issues.check()
    return {"session_id": session_id, "workspace": workspace}


def parse_boot(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[seed] ``goal``, ``workspace``, ``token_budget``; [assumed] limits and default."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    goal = reader.string("goal", required=True, min_len=1, max_len=MAX_GOAL_CHARS)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    budget = reader.integer("token_budget", minimum=1, maximum=MAX_TOKEN_BUDGET)
    issues.check()
    return {
        "goal": goal,
        "workspace": workspace,
        "token_budget": DEFAULT_TOKEN_BUDGET if budget is None else budget,
    }


def session_json(s: r.AgentSession) -> dict[str, Any]:
    return {
        "id": s.id,
        "workspace": s.workspace,
        "parent_session_id": s.parent_session_id,
        "status": s.status,
        "summary": s.summary,
        "metadata": s.metadata,
        "started_at": timestamp(s.started_at),
        "ended_at": None if s.ended_at is None else timestamp(s.ended_at),
    }


def checkpoint_json(c: r.Checkpoint) -> dict[str, Any]:
    return {
        "id": c.id,
        "session_id": c.session_id,
        "seq": c.seq,
        "state": c.state,
        "summary": c.summary,
        "created_at": timestamp(c.created_at),
    }


def task_json(t: r.AgentTask) -> dict[str, Any]:
    return {
        "id": t.id,
        "session_id": t.session_id,
        "key": t.key,
        "title": t.title,
        "status": t.status,
        "parent_id": t.parent_id,
        "evidence": t.evidence,
        "created_at": timestamp(t.created_at),
        "updated_at": timestamp(t.updated_at),
    }


def lesson_json(lesson: r.Lesson, score: float | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": lesson.id,
        "text": lesson.text,
        "workspace": lesson.workspace,
        "session_id": lesson.session_id,
        "tags": list(lesson.tags),
        "embedded": lesson.embedding is not None,
        "created_at": timestamp(lesson.created_at),
    }
    if score is not None:
        out["score"] = round(score, 6)
    return out


def handoff_json(h: r.Handoff) -> dict[str, Any]:
    return {
        "id": h.id,
        "workspace": h.workspace,
        "session_id": h.session_id,
        "content": h.content,
        "created_at": timestamp(h.created_at),
    }


def resume_json(res: r.Resume) -> dict[str, Any]:
    return {
        "session": session_json(res.session),
        "checkpoint": None if res.checkpoint is None else checkpoint_json(res.checkpoint),
        "open_tasks": [task_json(t) for t in res.open_tasks],
    }


def fact_json(hit: r.SearchHit) -> dict[str, Any]:
    return {
        "context": context_json(hit.context, with_content=False),
        "score": round(hit.score, 6),
        "snippet": hit.snippet,
    }


def boot_json(pack: r.BootPack) -> dict[str, Any]:
    return {
        "goal": pack.goal,
        "workspace": pack.workspace,
        "resume": None if pack.resume is None else resume_json(pack.resume),
        "handoff": None if pack.handoff is None else handoff_json(pack.handoff),
        "lessons": [lesson_json(x, pack.lesson_scores.get(x.id)) for x in pack.lessons],
        "facts": [fact_json(h) for h in pack.facts],
        "token_budget": pack.token_budget,
        "tokens_used": pack.tokens_used,
        "truncated": pack.truncated,
    }


# --- The client's side of the same shapes (adapter builds and reads through these) --------


def list_params(
    *,
    workspace: str | None,
    tag: str | None,
    type: str | None,
    limit: int | None,
    offset: int | None,
) -> dict[str, Any]:
    """Query parameters of ``GET /api/contexts`` (those given)."""
    given = {"workspace": workspace, "tag": tag, "type": type, "limit": limit, "offset": offset}
    return {k: v for k, v in given.items() if v is not None}


def search_body(
    query: str,
    *,
    type: str | None,
    workspace: str | None,
    tags: Sequence[str] | None,
    limit: int | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"query": query}
    for name, value in (("type", type), ("workspace", workspace), ("limit", limit)):
        if value is not None:
            body[name] = value
    if tags:
        body["tags"] = list(tags)
    return body


def workspace_body(slug: str, name: str | None) -> dict[str, Any]:
    return {"slug": slug} if name is None else {"slug": slug, "name": name}


def bulk_body(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"contexts": list(items)}


def read_page(obj: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int, int, int]:
    """(rows, total, limit, offset) of a list answer."""
    return list(obj["items"]), int(obj["total"]), int(obj["limit"]), int(obj["offset"])


def read_items(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(obj["items"])


def read_hit(hit: Mapping[str, Any]) -> tuple[Mapping[str, Any], float, str]:
    """(summary, score, snippet) of one search result or Boot Pack fact."""
    return hit["context"], float(hit["score"]), str(hit.get("snippet", ""))


def read_search(obj: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], float, str]]:
    """The results of a search answer, best first."""
    return [read_hit(h) for h in obj["results"]]


def read_bulk(obj: Mapping[str, Any]) -> tuple[int, int, list[Mapping[str, Any]]]:
    return int(obj["created"]), int(obj["updated"]), list(obj["items"])


def read_keys(obj: Mapping[str, Any]) -> tuple[list[tuple[int, str | None, Any]], int]:
    """(id, externalId, metadata) of each row of a list answer, and the total: what a
    listing-heavy client needs, without building whole rows."""
    ident, ext, meta = _K["id"], _K["external_id"], _K["metadata"]
    rows = [(int(row[ident]), row.get(ext), row.get(meta)) for row in obj["items"]]
    return rows, int(obj["total"])
