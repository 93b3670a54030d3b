"""JSON Schemas of the wire shapes, for the OpenAPI document the service derives from its
table: the request bodies derived from their declaration in ``domain.shapes``, the answers
written here from ``adapter.wire``.

The routes parse bodies themselves (so errors have ContextQ's shape); these schemas
only document them, which lets schemathesis fuzz the app from its own document.
"""

from __future__ import annotations

from typing import Any

from adapter import wire
from fake_contextq.domain import shapes

Schema = dict[str, Any]

# The request bodies, derived from their one declaration (``domain.shapes``).
CONTEXT_CREATE: Schema = shapes.CONTEXT_CREATE.json_schema()
CONTEXT_UPDATE: Schema = shapes.CONTEXT_UPDATE.json_schema()
BULK_UPSERT: Schema = shapes.BULK_UPSERT.json_schema()
SEARCH: Schema = shapes.SEARCH.json_schema()
WORKSPACE_CREATE: Schema = shapes.WORKSPACE_CREATE.json_schema()
#: The query parameters of ``GET /api/contexts``, as ``query_params`` takes them.
LIST_QUERY_PARAMS: tuple[tuple[str, Schema], ...] = tuple(shapes.LIST_QUERY.properties().items())

_TIMESTAMP: Schema = {"type": "string"}
_SUMMARY_PROPS: Schema = {
    "id": {"type": "integer"},
    "workspace": {"type": ["string", "null"]},
    "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
    "title": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "externalId": {"type": ["string", "null"]},
    "metadata": {"type": "object"},
    "createdAt": _TIMESTAMP,
    "updatedAt": _TIMESTAMP,
}
CONTEXT_SUMMARY: Schema = {
    "type": "object",
    "required": list(_SUMMARY_PROPS),
    "properties": _SUMMARY_PROPS,
    "not": {"required": ["content"]},
}
CONTEXT: Schema = {
    "type": "object",
    "required": [*_SUMMARY_PROPS, "content"],
    "properties": {**_SUMMARY_PROPS, "content": {"type": "string"}},
}
PAGE: Schema = {
    "type": "object",
    "required": ["items", "total", "limit", "offset"],
    "properties": {
        "items": {"type": "array", "maxItems": wire.LIST_MAX_LIMIT, "items": CONTEXT_SUMMARY},
        "total": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
    },
}
BULK_RESULT: Schema = {
    "type": "object",
    "required": ["created", "updated", "items"],
    "properties": {
        "created": {"type": "integer"},
        "updated": {"type": "integer"},
        "items": {"type": "array", "items": CONTEXT},
    },
}
SEARCH_RESULT: Schema = {
    "type": "object",
    "required": ["results"],
    "properties": {
        "results": {
            "type": "array",
            "maxItems": wire.SEARCH_MAX_LIMIT,
            "items": {
                "type": "object",
                "required": ["context", "score", "snippet"],
                "properties": {
                    "context": CONTEXT_SUMMARY,
                    "score": {"type": "number"},
                    "snippet": {"type": "string"},
                },
            },
        }
    },
}
WORKSPACE: Schema = {
    "type": "object",
    "required": ["id", "slug", "name", "archived", "createdAt"],
    "properties": {
        "id": {"type": "integer"},
        "slug": {"type": "string"},
        "name": {"type": "string"},
        "archived": {"type": "boolean"},
        "createdAt": _TIMESTAMP,
    },
}
WORKSPACES: Schema = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "items": WORKSPACE}},
}
ERROR: Schema = {
    "type": "object",
    "required": ["error", "message"],
    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
}


def path_param(name: str, schema: Schema) -> Schema:
    """A documented path parameter; the route reads it from ``request.path_params``."""
    return {"parameters": [{"name": name, "in": "path", "required": True, "schema": schema}]}


def merged(*parts: Schema) -> Schema:
    out: Schema = {}
    for part in parts:
        for key, value in part.items():
            out[key] = out.get(key, []) + value if isinstance(value, list) else value
    return out


def json_body(schema: Schema) -> Schema:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def query_params(*params: tuple[str, Schema]) -> Schema:
    return {
        "parameters": [
            {"name": n, "in": "query", "required": False, "schema": s} for n, s in params
        ]
    }


def responses(
    ok_status: int, ok_schema: Schema | None, *error_statuses: int
) -> dict[int | str, Any]:
    """The documented answers of one route: its success and every error it can give."""
    out: dict[int | str, Any] = {}
    if ok_schema is None:
        out[ok_status] = {"description": "Done, no body."}
    else:
        out[ok_status] = {
            "description": "Success.",
            "content": {"application/json": {"schema": ok_schema}},
        }
    for status in sorted({401, 413, 415, *error_statuses}):
        out[status] = {"description": "Error.", "content": {"application/json": {"schema": ERROR}}}
    return out


# ----- Agent Memory Layer -----

SESSION_START: Schema = shapes.SESSION_START.json_schema()
SESSION_END: Schema = shapes.SESSION_END.json_schema()
CHECKPOINT_BODY: Schema = shapes.CHECKPOINT.json_schema()
TASK_BODY: Schema = shapes.TASK.json_schema()
TICK_BODY: Schema = shapes.TICK.json_schema()
LESSON_BODY: Schema = shapes.LESSON.json_schema()
HANDOFF_BODY: Schema = shapes.HANDOFF.json_schema()
BOOT_BODY: Schema = shapes.BOOT.json_schema()


def _object(*required: str) -> Schema:
    return {"type": "object", "required": list(required)}


SESSION: Schema = _object(
    "id", "workspace", "parent_session_id", "status", "metadata", "started_at", "ended_at"
)
CHECKPOINT: Schema = _object("id", "session_id", "seq", "state", "created_at")
TASK: Schema = _object("id", "session_id", "key", "title", "status", "parent_id", "evidence")
TASKS: Schema = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "items": TASK}},
}
RESUME: Schema = _object("session", "checkpoint", "open_tasks")
LESSON: Schema = _object("id", "text", "workspace", "session_id", "tags", "embedded")
HANDOFF: Schema = _object("id", "workspace", "session_id", "content", "created_at")
BOOT: Schema = _object(
    "goal", "resume", "handoff", "lessons", "facts", "token_budget", "tokens_used", "truncated"
)


# ----- import, chunks, saved searches ([assumed] all) -----

IMPORT: Schema = shapes.IMPORT.json_schema()
SAVED_SEARCH_CREATE: Schema = shapes.SAVED_SEARCH_CREATE.json_schema()
SAVED_SEARCH_UPDATE: Schema = shapes.SAVED_SEARCH_UPDATE.json_schema()
SAVED_SEARCH: Schema = {
    "type": "object",
    "required": [*wire.SAVED_SEARCH_FIELDS, "id", "createdAt", "updatedAt"],
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "query": {"type": "string"},
        "type": {"type": ["string", "null"], "enum": [*wire.SEARCH_TYPES, None]},
        "workspace": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "limit": {"type": ["integer", "null"]},
        "createdAt": _TIMESTAMP,
        "updatedAt": _TIMESTAMP,
    },
}

# ----- links and ingest jobs: [assumed] -----

_RELATION: Schema = {
    "type": "string",
    "pattern": f"^{wire.LINK_RELATION_RE.pattern}$",
    "minLength": 1,
    "maxLength": wire.LINK_RELATION_MAX_CHARS,
}
LINK_BODY: Schema = shapes.LINK.json_schema()
LINK: Schema = {
    "type": "object",
    "required": ["id", "sourceId", "targetId", "relation", "createdAt"],
    "properties": {
        "id": {"type": "integer"},
        "sourceId": {"type": "integer"},
        "targetId": {"type": "integer"},
        "relation": {"type": "string"},
        "createdAt": _TIMESTAMP,
    },
}
_LINKED: Schema = {
    "type": "object",
    "required": ["id", "relation", "createdAt", "context"],
    "properties": {
        "id": {"type": "integer"},
        "relation": {"type": "string"},
        "createdAt": _TIMESTAMP,
        "context": CONTEXT_SUMMARY,
    },
}
LINKS: Schema = {
    "type": "object",
    "required": ["context", "outgoing", "incoming"],
    "properties": {
        "context": CONTEXT_SUMMARY,
        "outgoing": {"type": "array", "items": _LINKED},
        "incoming": {"type": "array", "items": _LINKED},
    },
}
INGEST_BODY: Schema = {
    **shapes.INGEST.json_schema(),
    "oneOf": [{"required": ["text"]}, {"required": ["url"]}],
}
INGEST_JOB: Schema = {
    "type": "object",
    "required": [
        "id",
        "status",
        "source",
        "mediaType",
        "type",
        "tags",
        "workspace",
        "parts",
        "contextIds",
        "contexts",
        "failure",
        "createdAt",
        "updatedAt",
    ],
    "properties": {
        "id": {"type": "integer"},
        "status": {"type": "string", "enum": list(wire.INGEST_STATUSES)},
        "source": {"type": "string", "enum": ["text", "data"]},
        "mediaType": {"type": "string", "enum": list(wire.INGEST_MEDIA_TYPES)},
        "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
        "tags": {"type": "array", "items": {"type": "string"}},
        "workspace": {"type": ["string", "null"]},
        "parts": {"type": "integer", "minimum": 1, "maximum": wire.INGEST_MAX_PARTS},
        "contextIds": {"type": "array", "items": {"type": "integer"}},
        "contexts": {"type": "array", "items": CONTEXT_SUMMARY},
        "failure": {
            "anyOf": [
                {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                },
                {"type": "null"},
            ]
        },
        "createdAt": _TIMESTAMP,
        "updatedAt": _TIMESTAMP,
    },
}
SAVED_SEARCHES: Schema = {
    "type": "object",
    "required": ["items", "total", "limit", "offset"],
    "properties": {
        "items": {"type": "array", "maxItems": wire.LIST_MAX_LIMIT, "items": SAVED_SEARCH},
        "total": {"type": "integer", "minimum": 0},
        "limit": {"type": "integer"},
        "offset": {"type": "integer"},
    },
}
CHUNKS: Schema = {
    "type": "object",
    "required": ["contextId", "chunkSize", "overlap", "total", "chunks"],
    "properties": {
        "contextId": {"type": "integer"},
        "chunkSize": {"type": "integer"},
        "overlap": {"type": "integer"},
        "total": {"type": "integer", "minimum": 0},
        "chunks": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "start", "end", "text"],
                "properties": {
                    "index": {"type": "integer", "minimum": 0},
                    "start": {"type": "integer", "minimum": 0},
                    "end": {"type": "integer", "minimum": 0},
                    "text": {"type": "string"},
                },
            },
        },
    },
}

# ----- the LLM-written PKM operations (all [assumed]) -----

DREAM_BODY: Schema = shapes.DREAM.json_schema()
EVOLVE_BODY: Schema = shapes.EVOLVE.json_schema()
REGENERATE_MOCS_BODY: Schema = shapes.REGENERATE_MOCS.json_schema()
_SUMMARIES: Schema = {"type": "array", "items": CONTEXT_SUMMARY}
MOC_REGENERATION: Schema = {
    "type": "object",
    "required": ["workspace", "created", "updated", "unchanged", "removed"],
    "properties": {
        "workspace": {"type": "string"},
        "created": _SUMMARIES,
        "updated": _SUMMARIES,
        "unchanged": _SUMMARIES,
        "removed": {"type": "array", "items": {"type": "integer"}},
    },
}
