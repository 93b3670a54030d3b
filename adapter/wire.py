"""ContextQ's wire contract as this project models it: the one home of every assumed detail.

ContextQ is private; its public pages (its docs site) say a little, and three seed
documents say more. Each constant or function below is marked ``[public]`` (stated by the
public pages), ``[seed]`` (stated by a seed) or ``[assumed]`` (decided here). When a real
ContextQ disagrees with an ``[assumed]`` line, this module is the place to correct it;
nothing else in the project spells these details out again.

This module is a leaf: it imports nothing of this project, so the production client
reads it without the fake, and the fake (``fake_contextq``) builds on it. It holds what a
client needs to speak to ContextQ; the service's own rules, which no client runs (how a key
is stored, the audit hash chain, plan quotas), live with the fake in
``fake_contextq.domain`` (``keys``, ``audit``, ``quota``), marked the same way.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

# --- Auth and tenancy -------------------------------------------------------------------------

KEY_PREFIX: Final = "sk_live_"  # [seed]
KEY_HEX_LENGTH: Final = 40  # [seed]
KEY_RE: Final = re.compile(r"sk_live_[0-9a-f]{40}")  # [seed] (lowercase hex: [assumed])
AUTH_SCHEME: Final = "Bearer"  # [seed] ``Authorization: Bearer sk_live_<40 hex>``
READ: Final = "read"  # [seed]
WRITE: Final = "write"  # [seed]
ADMIN: Final = "admin"  # [seed]
SCOPES: Final = (READ, WRITE, ADMIN)  # [seed]
SUBSUMING_SCOPE: Final = ADMIN  # [seed] admin subsumes read and write
DEFAULT_KEY_SCOPES: Final = (READ, WRITE)  # [assumed] what a key gets when none are named

# [public] RFC 6750 §3: a 401 to a Bearer-authenticated request carries
# ``WWW-Authenticate: Bearer realm="…"``, with ``error="invalid_token"`` (and a description)
# when a token was sent and refused, and no error when none was sent (§3.1: a missing header
# or another scheme). [assumed] the realm's name; and no ``resource_metadata`` (RFC 9728):
# ContextQ takes API keys, not OAuth tokens.
AUTH_REALM: Final = "contextq"  # [assumed]
INVALID_TOKEN: Final = "invalid_token"  # [public] RFC 6750 §3.1
# [assumed] An MCP client's request to /mcp (its Accept lists text/event-stream, as the
# streamable HTTP transport requires) refused for its key gets the 401 as a JSON-RPC error
# (id null) whose message is ``mcp_error_text`` of REST's body and whose data is that body:
# MCP clients show a JSON-RPC error's message, where they show no more than the status of any
# other body. Any other request to /mcp gets REST's body itself.
MCP_UNAUTHORIZED_CODE: Final = -32001
# [assumed] ContextQ offers no OAuth: its discovery documents (RFC 9728 protected resource
# metadata, RFC 8414 authorization server metadata, OpenID Connect discovery, at the origin
# root or for a path) and dynamic client registration (RFC 7591, ``POST /register``, where MCP
# clients look for it when no metadata names one) are unknown routes, a 404 (which MCP
# clients read as "no OAuth here"); their body also carries ``error_description`` (RFC 6749
# §5.2), the field OAuth clients show, saying that an API key is needed.
OAUTH_WELL_KNOWN: Final = (
    "oauth-protected-resource",
    "oauth-authorization-server",
    "openid-configuration",
)
OAUTH_REGISTRATION_PATH: Final = "/register"
OAUTH_ERROR_DESCRIPTION: Final = "error_description"


def bearer_challenge(realm: str, error: str | None = None, description: str | None = None) -> str:
    """[public] The ``WWW-Authenticate`` value of a Bearer 401 (RFC 6750 §3): ``realm``, and
    ``error`` with its description when a token was refused. The description keeps to the
    characters §3 allows (no ``"`` or ``\\``, nothing outside printable ASCII)."""
    challenge = f'{AUTH_SCHEME} realm="{_challenge_text(realm)}"'
    if error is not None:
        challenge += f', error="{_challenge_text(error)}"'
        if description:
            challenge += f', error_description="{_challenge_text(description)}"'
    return challenge


def _challenge_text(text: str) -> str:
    return "".join("'" if c == '"' else c if " " <= c <= "~" and c != "\\" else "?" for c in text)


def is_oauth_discovery(path: str) -> bool:
    """[assumed] Whether ``path`` is one an MCP client probes for OAuth (see
    ``OAUTH_WELL_KNOWN``): a well-known document at the root or for a path (RFC 8414 §3.1
    inserts ``/.well-known/<name>`` before the path, OpenID Connect appends it), or
    dynamic client registration."""
    if path == OAUTH_REGISTRATION_PATH:
        return True
    for name in OAUTH_WELL_KNOWN:
        document = "/.well-known/" + name
        if path == document or path.startswith(document + "/") or path.endswith(document):
            return True
    return False


def authorization(key: str) -> str:
    """[seed] The ``Authorization`` header value that carries a key (or any bearer token)."""
    return f"{AUTH_SCHEME} {key}"


def scope_grants(held: Iterable[str], required: str) -> bool:
    """[seed] A key holds a scope directly or through ``admin``."""
    held_set = set(held)
    return required in held_set or SUBSUMING_SCOPE in held_set


# --- Errors ------------------------------------------------------------------------------------


class ErrorCode:
    """[assumed] The ``error`` codes of error bodies, for clients that branch on them."""

    UNAUTHORIZED: Final = "unauthorized"
    SCOPE_DENIED: Final = "scope_denied"  # [seed]
    NOT_FOUND: Final = "not_found"
    VALIDATION_ERROR: Final = "validation_error"
    EXTERNAL_ID_TAKEN: Final = "external_id_taken"
    WORKSPACE_TAKEN: Final = "workspace_taken"
    SEQ_CONFLICT: Final = "seq_conflict"
    WORKSPACE_NOT_EMPTY: Final = "workspace_not_empty"
    QUOTA_EXCEEDED: Final = "quota_exceeded"
    NO_WORKSPACE: Final = "no_workspace"
    EVIDENCE_REQUIRED: Final = "evidence_required"
    LLM_UNAVAILABLE: Final = "llm_unavailable"
    PAYLOAD_TOO_LARGE: Final = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE: Final = "unsupported_media_type"
    INTERNAL_ERROR: Final = "internal_error"
    DATABASE_BUSY: Final = "database_busy"
    SAVED_SEARCH_NAME_TAKEN: Final = "saved_search_name_taken"
    LINK_EXISTS: Final = "link_exists"


# [assumed] error code -> HTTP status. 413/415 are Fastify's own answers, assumed too.
ERROR_STATUS: Final[Mapping[str, int]] = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.SCOPE_DENIED: 403,  # [seed]
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.EXTERNAL_ID_TAKEN: 409,
    ErrorCode.WORKSPACE_TAKEN: 409,
    ErrorCode.SEQ_CONFLICT: 409,
    ErrorCode.WORKSPACE_NOT_EMPTY: 409,
    ErrorCode.QUOTA_EXCEEDED: 402,  # [seed]
    ErrorCode.NO_WORKSPACE: 400,  # [seed]
    ErrorCode.EVIDENCE_REQUIRED: 422,
    ErrorCode.LLM_UNAVAILABLE: 503,  # [seed]
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: 415,
    ErrorCode.INTERNAL_ERROR: 500,
    # [assumed] a lock of the database not free in time: retry later (a 5xx, so clients do)
    ErrorCode.DATABASE_BUSY: 503,
    ErrorCode.SAVED_SEARCH_NAME_TAKEN: 409,  # a saved search's name is unique per tenant
    ErrorCode.LINK_EXISTS: 409,  # [assumed] the same link (both ends, one relation) again
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


# --- Routes --------------------------------------------------------------------------------------


def path_segment(value: str | int) -> str:
    """A value as one percent-encoded path segment; '.' and '..' keep their dots encoded, so
    URL normalisation cannot remove them."""
    if isinstance(value, int):
        return str(value)
    segment = quote(value, safe="")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


@dataclass(frozen=True, slots=True)
class Route:
    """One endpoint: its method, path template, the scope it needs and its success status."""

    name: str
    method: str
    template: str  # ``{name}`` marks a path parameter, sent as one encoded segment
    scope: str
    status: int = 200

    def path(self, **params: str | int) -> str:
        """The path with each parameter encoded as one segment."""
        try:
            return self.template.format_map({k: path_segment(v) for k, v in params.items()})
        except KeyError as missing:
            raise TypeError(f"{self.name}: {self.template} needs {missing}") from None


class Routes:
    """[seed] the endpoints and their scopes; [assumed] parameter names and statuses."""

    CREATE_CONTEXT: Final = Route("create_context", "POST", "/api/contexts", WRITE, 201)
    LIST_CONTEXTS: Final = Route("list_contexts", "GET", "/api/contexts", READ)
    BULK_UPSERT: Final = Route("bulk_upsert", "POST", "/api/contexts/bulk-upsert", WRITE)
    GET_CONTEXT_BY_EXTERNAL: Final = Route(
        "get_context_by_external", "GET", "/api/contexts/by-external/{external_id}", READ
    )
    GET_CONTEXT: Final = Route("get_context", "GET", "/api/contexts/{context_id}", READ)
    UPDATE_CONTEXT: Final = Route("update_context", "PUT", "/api/contexts/{context_id}", WRITE)
    DELETE_CONTEXT: Final = Route(
        "delete_context", "DELETE", "/api/contexts/{context_id}", WRITE, 204
    )
    LIST_WORKSPACES: Final = Route("list_workspaces", "GET", "/api/workspaces", READ)
    CREATE_WORKSPACE: Final = Route("create_workspace", "POST", "/api/workspaces", ADMIN, 201)
    ARCHIVE_WORKSPACE: Final = Route(
        "archive_workspace", "POST", "/api/workspaces/{slug}/archive", ADMIN
    )
    DELETE_WORKSPACE: Final = Route(
        "delete_workspace", "DELETE", "/api/workspaces/{slug}", ADMIN, 204
    )
    SEARCH: Final = Route("search", "POST", "/api/search", READ)
    START_SESSION: Final = Route("start_session", "POST", "/api/agent/sessions", WRITE, 201)
    GET_SESSION: Final = Route("get_session", "GET", "/api/agent/sessions/{session_id}", READ)
    END_SESSION: Final = Route("end_session", "POST", "/api/agent/sessions/{session_id}/end", WRITE)
    CHECKPOINT: Final = Route(
        "checkpoint", "POST", "/api/agent/sessions/{session_id}/checkpoint", WRITE, 201
    )
    RESUME: Final = Route("resume", "GET", "/api/agent/sessions/{session_id}/resume", READ)
    LIST_TASKS: Final = Route("list_tasks", "GET", "/api/agent/sessions/{session_id}/tasks", READ)
    # 201 when the task is new, 200 when an existing one was updated
    UPSERT_TASK: Final = Route("upsert_task", "POST", "/api/agent/tasks", WRITE, 201)
    TICK_TASK: Final = Route("tick_task", "POST", "/api/agent/tasks/{task_id}/tick", WRITE)
    ADD_LESSON: Final = Route("add_lesson", "POST", "/api/agent/lessons", WRITE, 201)
    HANDOFF: Final = Route("handoff", "POST", "/api/agent/handoff", WRITE, 201)
    BOOT: Final = Route("boot", "POST", "/api/agent/boot", READ)
    # [assumed] the REST twins of the public page's ctx_import, ctx_chunks, ctx_mocs and
    # saved-search tools (their names are public; no path is): an import has its own route,
    # as its items need no externalId (a bulk upsert's are keyed by theirs)
    IMPORT_CONTEXTS: Final = Route("import_contexts", "POST", "/api/contexts/import", WRITE)
    CONTEXT_CHUNKS: Final = Route(
        "context_chunks", "GET", "/api/contexts/{context_id}/chunks", READ
    )
    LIST_MOCS: Final = Route("list_mocs", "GET", "/api/mocs", READ)
    LIST_SAVED_SEARCHES: Final = Route("list_saved_searches", "GET", "/api/saved-searches", READ)
    CREATE_SAVED_SEARCH: Final = Route(
        "create_saved_search", "POST", "/api/saved-searches", WRITE, 201
    )
    GET_SAVED_SEARCH: Final = Route(
        "get_saved_search", "GET", "/api/saved-searches/{search_id}", READ
    )
    UPDATE_SAVED_SEARCH: Final = Route(
        "update_saved_search", "PUT", "/api/saved-searches/{search_id}", WRITE
    )
    DELETE_SAVED_SEARCH: Final = Route(
        "delete_saved_search", "DELETE", "/api/saved-searches/{search_id}", WRITE, 204
    )
    # running one reads, as POST /api/search does
    RUN_SAVED_SEARCH: Final = Route(
        "run_saved_search", "POST", "/api/saved-searches/{search_id}/run", READ
    )
    # [assumed] the REST twins of ctx_dream, ctx_evolve and ctx_regenerate_mocs (the public
    # page names the tools only); each needs the server's LLM, as the handoff does
    DREAM: Final = Route("dream", "POST", "/api/dream", WRITE, 201)
    EVOLVE_CONTEXT: Final = Route(
        "evolve_context", "POST", "/api/contexts/{context_id}/evolve", WRITE
    )
    REGENERATE_MOCS: Final = Route("regenerate_mocs", "POST", "/api/mocs/regenerate", WRITE)
    # [assumed] links between contexts (ctx_link, ctx_links): paths, bodies and statuses
    CREATE_LINK: Final = Route(
        "create_link", "POST", "/api/contexts/{context_id}/links", WRITE, 201
    )
    LIST_LINKS: Final = Route("list_links", "GET", "/api/contexts/{context_id}/links", READ)
    # [assumed] ingest as a job (ctx_ingest, ctx_ingest_status): 202, then polled
    INGEST: Final = Route("ingest", "POST", "/api/ingest", WRITE, 202)
    INGEST_STATUS: Final = Route("ingest_status", "GET", "/api/ingest/jobs/{job_id}", READ)


ROUTES: Final[tuple[Route, ...]] = tuple(v for v in vars(Routes).values() if isinstance(v, Route))

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
SEARCH_DEFAULT_LIMIT: Final = 10  # [public] ctx_search's limit defaults to 10
# [public] Search is hybrid: full-text and vector similarity run in parallel and the two
# rankings are fused by Reciprocal Rank Fusion (ContextQ's docs page). [assumed] RRF's
# usual k = 60; the fused ranking covers the full-text side's best SEARCH_HYBRID_POOL
# matches (at least ``limit``), re-ranked by the embedding of title, tags and content; a
# result's ``score`` is its fused score. Clients must not rely on exact order or scores.
SEARCH_RRF_K: Final = 60
SEARCH_HYBRID_POOL: Final = 50
SEARCH_SNIPPET_CHARS: Final = 160  # [assumed]
BULK_MAX_ITEMS: Final = 500  # [assumed]
IMPORT_MAX_ITEMS: Final = BULK_MAX_ITEMS  # [assumed] an import holds as many as a bulk upsert
# [assumed] How a context's content is cut into chunks for embedding (GET .../chunks): its
# paragraphs (text between blank lines), packed in order while a chunk's own text stays
# within CHUNK_MAX_CHARS; a longer paragraph is cut at its last whitespace within the limit
# (at the limit when there is none); each chunk after the first also starts with up to
# CHUNK_OVERLAP_CHARS of the one before (from a word start, never that one's first word).
# Characters are code points.
CHUNK_MAX_CHARS: Final = 1_000
CHUNK_OVERLAP_CHARS: Final = 100
MOC_TYPES: Final = ("moc", "map")  # [seed] the map-of-content types; [assumed] ctx_mocs lists both
MAX_SAVED_SEARCH_NAME_CHARS: Final = 200  # [assumed]
# [assumed] A saved search's body: its name (unique per tenant) and the fields of a
# POST /api/search body it runs with; the answer adds id, createdAt and updatedAt.
SAVED_SEARCH_FIELDS: Final = ("name", "query", "type", "workspace", "tags", "limit")

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
# [assumed] ids are signed 64-bit (Postgres bigint): a path id of up to 19 digits beyond this
# names no row, so it is a 404 exactly as a missing id is (never a 400 or a 500).
MAX_ID: Final = 2**63 - 1


def id_in_range(value: int) -> bool:
    """[assumed] Whether an id can name a row at all (1 .. ``MAX_ID``)."""
    return 1 <= value <= MAX_ID


# [assumed] A Postgres-backed service cannot store NUL (U+0000) in text: any string of a
# request (a body field at any depth, metadata keys and values included, a query
# parameter, a path segment) holding one is a 400 validation_error naming its field.
FORBIDDEN_TEXT_CHARS: Final = "\x00"


def has_forbidden_char(text: str) -> bool:
    """[assumed] Whether ``text`` holds a character no string of a request may hold."""
    # a loop, not any() over a generator: every string of a body comes here, and the
    # generator cost more than the substring tests
    for ch in FORBIDDEN_TEXT_CHARS:  # noqa: SIM110
        if ch in text:
            return True
    return False


# [assumed] Bodies are read as UTF-8, as a JSON.parse server reading its body as UTF-8 text
# does: one leading UTF-8 byte order mark is skipped; UTF-16 and UTF-32 (with or without a
# BOM) and any other byte sequence that is not UTF-8 are a 400 validation_error.
BODY_ENCODING: Final = "utf-8"
BODY_BOM: Final = b"\xef\xbb\xbf"

# [assumed] Text that is not valid Unicode, a lone UTF-16 surrogate (JSON text may carry one
# as the escape "\ud800"), is stored and answered with U+FFFD in its place, one for each; an
# escaped pair of halves is the one character it encodes. A Node service holds the string as
# JavaScript does (UTF-16, the lone half kept), and its Postgres driver encodes text to UTF-8
# with Buffer.from, which writes U+FFFD for a lone surrogate: what it reads back holds
# U+FFFD. The fake replaces them at its edge (every string and key of a body at any depth,
# MCP tool arguments and REST answers, its in-process API), so every store and surface
# holds the same text.
REPLACEMENT_CHAR: Final = "\ufffd"
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """[assumed] ``text`` with each lone surrogate replaced by ``REPLACEMENT_CHAR`` (and a
    pair of halves joined), as JavaScript's ``String.prototype.toWellFormed`` does."""
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def nested_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """[assumed] Whether arrays and objects in ``value`` nest deeper than ``limit``
    (iteratively: any depth is measured without recursion)."""
    if not isinstance(value, Mapping | list | tuple):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, Mapping) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, Mapping | list | tuple))
    return False


def well_formed_json(value: Any) -> Any:
    """[assumed] ``value`` (JSON data) with every string, keys included, at any depth
    ``well_formed``. For JSON already held to ``MAX_JSON_DEPTH``: the recursion is bounded
    (``well_formed_within``'s walk, with no limit of its own)."""
    return _well_formed_to(value, sys.maxsize)


class _TooDeep(Exception):
    """Arrays and objects nest past the limit (``well_formed_within``)."""


#: Types whose values ``well_formed_json`` hands back as they are (JSON's other scalars).
_PLAIN_SCALARS: Final = frozenset({int, float, bool, type(None)})


def well_formed_within(value: Any, limit: int = MAX_JSON_DEPTH) -> tuple[bool, Any]:
    """``(True, well_formed_json(value))``, or ``(False, None)`` when ``nested_too_deep``:
    one walk for both (an MCP tool's arguments need both on every call), which stops at
    ``limit`` (so its recursion is bounded whatever the depth)."""
    try:
        return True, _well_formed_to(value, limit)
    except _TooDeep:
        return False, None


def _well_formed_to(value: Any, room: int) -> Any:
    """``well_formed_json(value)`` where at most ``room`` levels of arrays and objects may
    still open (``_TooDeep`` past them); builtin types are told apart by ``type`` first, as
    most JSON data is nothing else."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if isinstance(value, str):
        return well_formed(value)
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        if room <= 0:
            raise _TooDeep
        return {
            well_formed(k if type(k) is str else str(k)): _well_formed_to(v, room - 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        if room <= 0:
            raise _TooDeep
        return [_well_formed_to(v, room - 1) for v in value]
    return value


# [assumed] A path parameter or a query parameter's value that is not UTF-8 once
# percent-decoded (``%FF``, or ``%ED%A0%80``, a surrogate's bytes) is a 400
# validation_error naming the parameter: Node's decodeURIComponent throws on it, and
# Fastify answers a path it cannot decode with a 400. (Not U+FFFD: a URL is the caller's
# own text, and a lookup by a replaced id would find another row than the one named.)
URL_TEXT_ENCODING: Final = "utf-8"

# [assumed] A path parameter is one path segment, as a router's ``:param`` is: an unencoded
# '/' inside it makes another path, which no route has (404); '%2F' is a '/' in the value.
PATH_SEPARATOR: Final = "/"

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

# --- The LLM-written PKM contexts (dream, evolve, maps of content) ----------------------------
# [public] the tools ctx_dream, ctx_evolve, ctx_regenerate_mocs; [seed] the types synthesis,
# map and moc. [assumed] everything below. Each needs a workspace where the handoff does
# (dream and MOCs: the body's; evolve: its context's, once the context is found; none is
# 400 no_workspace, checked first) and the server's LLM (503 llm_unavailable, checked
# next); sources are then gathered, and none is a 400.
PKM_DERIVED_TYPES: Final = ("synthesis", "map", "moc")  # never a dream's or a MOC's source
DREAM_TYPE: Final = "synthesis"  # what a dream creates
DREAM_TAG: Final = "dream"  # the one tag a dream's synthesis carries
DREAM_DEFAULT_SOURCES: Final = 20  # the workspace's newest contexts a dream reads ...
DREAM_MAX_SOURCES: Final = 100  # ... at most (``limit``)
MAX_SINCE_CHARS: Final = 64  # ``since``: an ISO 8601 date-time (no zone: UTC)
EVOLVE_DEFAULT_SOURCES: Final = 10  # newer related contexts an evolution reads ...
EVOLVE_MAX_SOURCES: Final = 50  # ... at most (``limit``)
MOC_TYPE: Final = "moc"  # what MOC regeneration writes, one per tag of the workspace ...
MOC_MIN_CONTEXTS: Final = 2  # ... carried by at least this many of its contexts ...
MOC_MAX_GROUPS: Final = 100  # ... the most carried tags first (then by tag) ...
MOC_MAX_ENTRIES: Final = 200  # ... each listing at most this many, in title order
# A generated MOC is the context whose externalId is ``moc:<workspace>:<tag>`` and whose
# metadata marks it generated; regeneration updates it in place, removes it when its tag
# no longer makes a group, and refuses (409) when a context not generated holds the id.
MOC_EXTERNAL_ID_PREFIX: Final = "moc:"
# What dream and MOC regeneration write in ``metadata`` (``{"by": "dream"|"moc",
# "sources": [ids], ...}``), and an evolution adds (``{"sources": [ids], "instruction"}``).
GENERATED_KEY: Final = "generated"
EVOLVED_KEY: Final = "evolved"


def moc_external_id(workspace: str, tag: str) -> str:
    """[assumed] The externalId of a workspace's generated MOC of ``tag``."""
    return f"{MOC_EXTERNAL_ID_PREFIX}{workspace}:{tag}"


# --- Links and ingest (PKM and ingest tools) ---------------------------------------------
# Bodies are camelCase, as the contexts' are.

#: [assumed] A link's relation: free text of lowercase letters, digits, '_' and '-',
#: starting with a letter, at most LINK_RELATION_MAX_CHARS; "related" when none is given.
LINK_RELATION_RE: Final = re.compile(r"[a-z][a-z0-9_-]*")
LINK_RELATION_MAX_CHARS: Final = 64
LINK_DEFAULT_RELATION: Final = "related"
#: [assumed] The states of an ingest job, in order; "failed" ends it instead of "done".
INGEST_QUEUED: Final = "queued"
INGEST_RUNNING: Final = "running"
INGEST_DONE: Final = "done"
INGEST_FAILED: Final = "failed"
INGEST_STATUSES: Final = (INGEST_QUEUED, INGEST_RUNNING, INGEST_DONE, INGEST_FAILED)
#: [assumed] The media types a ``data:`` URL may carry (RFC 2397; none named is text/plain).
INGEST_MEDIA_TYPES: Final = ("text/plain", "text/markdown")
INGEST_MAX_TEXT_BYTES: Final = MAX_CONTENT_BYTES  # [assumed] the text (decoded), UTF-8
INGEST_MAX_URL_CHARS: Final = 2 * 1024 * 1024  # [assumed] a data: URL, base64 included
INGEST_MAX_PARTS: Final = 100  # [assumed] contexts one ingest may make
INGEST_DEFAULT_TYPE: Final = "reference"  # [assumed] the type of what an ingest makes


def canonical_json(value: Any) -> str:
    """[assumed] Compact JSON (sorted keys, no whitespace, UTF-8 kept as is): what the byte
    limits of a state or metadata object and the token estimate measure."""
    return _CANONICAL.encode(value)


# what json.dumps(value, sort_keys=True, ...) builds on each call, built once
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(value: Any) -> int:
    """[assumed] ~4 characters of compact JSON per token, rounded up."""
    return -(-len(canonical_json(value)) // 4)


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
    names = CONTEXT_WIRE_NAMES
    ident, ext, meta = names["id"], names["external_id"], names["metadata"]
    rows = [(int(row[ident]), row.get(ext), row.get(meta)) for row in obj["items"]]
    return rows, int(obj["total"])


# --- The MCP surface --------------------------------------------------------------------------
# [public] ContextQ is an HTTP-based MCP server first: coding agents connect to it as an MCP
# tool and discover its tools. [seed] Each tool maps onto one REST call (mcp/src/tools.ts),
# configured by CONTEXT_API_URL / CONTEXT_API_KEY, so every REST rule (scopes, the quota, the
# unique external id, the search type enum, the silent workspace fallback) holds through it.

MCP_PATH: Final = "/mcp"  # [assumed] streamable HTTP at this path of the API's origin
MCP_SERVER_NAME: Final = "contextq"  # [assumed] the name the server reports and clients use
MCP_API_URL_ENV: Final = "CONTEXT_API_URL"  # [seed]
MCP_API_KEY_ENV: Final = "CONTEXT_API_KEY"  # [seed]
MCP_DEFAULT_API_URL: Final = "http://localhost:38200"  # [assumed] the dev stack's API port
# [assumed] a stateless server that answers each POST with one JSON body (no SSE stream),
# as an API-key-authenticated TypeScript server built on the SDK's transport usually is.
MCP_STATELESS: Final = True


# [assumed] MCP tool parameters are camelCase. The public page's (``ctx_save``:
# ``content``, ``tags``, ``metadata``; ``ctx_search``: ``query``, ``tags``, ``limit``) are
# one word each and so say nothing either way; the context tools' one compound name is
# ``externalId``, as on REST ([seed] ``by-external/:externalId``, the upsert key), their
# answers are camelCase (``createdAt``), and a TypeScript server's Zod shapes are spelt so.
# The agent tools' REST bodies and paths are snake_case ([seed] ``token_budget`` for boot,
# ``parent_session_id``; [assumed] the rest), so these parameters are renamed between a
# tool and its REST call, here and only here. The seeds name the REST fields, not the
# tools' parameters: a real server may keep the snake names on its agent tools
# (conformance rule ``mcp.param-names`` says). REST field -> MCP parameter:
MCP_PARAM_NAMES: Final[Mapping[str, str]] = {
    "session_id": "sessionId",
    "parent_session_id": "parentSessionId",
    "parent_key": "parentKey",
    "task_id": "taskId",
    "token_budget": "tokenBudget",
}
_REST_FIELD_NAMES: Final[Mapping[str, str]] = {v: k for k, v in MCP_PARAM_NAMES.items()}


def mcp_arguments(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A REST body's (or path's) fields as an MCP tool's arguments (``MCP_PARAM_NAMES``)."""
    return {MCP_PARAM_NAMES.get(k, k): v for k, v in fields.items()}


def rest_fields(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """An MCP tool's arguments as its REST call's fields: ``mcp_arguments`` undone."""
    return {_REST_FIELD_NAMES.get(k, k): v for k, v in arguments.items()}


MCP_ERROR_PREFIX: Final = "ContextQ"  # [assumed] a tool error's text opens with it
_MCP_ERROR_STATUS: Final = re.compile(rf"{MCP_ERROR_PREFIX} (\d{{3}}) ")


_MCP_ERROR_CODE: Final = re.compile(rf"{MCP_ERROR_PREFIX} \d{{3}} ([a-z][a-z0-9_]*):")


def mcp_error_status(text: str) -> int | None:
    """The REST status a tool error's text names (``mcp_error_text``'s), or None."""
    found = _MCP_ERROR_STATUS.match(text)
    return int(found.group(1)) if found else None


def mcp_error_code(text: str) -> str | None:
    """The error code a tool error's text names (``mcp_error_text``'s), or None: what a
    client reads when the result carries no structured error body."""
    found = _MCP_ERROR_CODE.match(text)
    return found.group(1) if found else None


def mcp_error_text(status: int, body: Mapping[str, Any]) -> str:
    """[assumed] The text of a tool error: the REST status, code, message and each
    validation issue, so a model (and a person reading a transcript) sees exactly what
    ContextQ refused and why."""
    text = f"{MCP_ERROR_PREFIX} {status} {body.get('error', 'error')}: {body.get('message', '')}"
    text = text.rstrip()
    issues = body.get("issues")
    if isinstance(issues, list) and issues:
        shown = [
            f"{i.get('path') or '(body)'}: {i.get('message', '')}"
            for i in issues
            if isinstance(i, Mapping)
        ]
        text += " (" + "; ".join(shown) + ")"
    return text
