"""JSON Schemas of the wire shapes, for the OpenAPI document the service derives from its table.

The routes parse bodies themselves (so errors have ContextQ's shape); these schemas
only document them, which lets schemathesis fuzz the app from its own document.
"""

from __future__ import annotations

from typing import Any

from adapter import wire

Schema = dict[str, Any]

STRING_LIST: Schema = {
    "type": "array",
    "maxItems": wire.MAX_TAGS,
    "items": {"type": "string", "minLength": 1, "maxLength": wire.MAX_TAG_CHARS},
}
NULLABLE_SLUG: Schema = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": wire.MAX_WORKSPACE_SLUG_CHARS},
        {"type": "null"},
    ]
}


def _context_fields(external_id_required: bool) -> Schema:
    ext: Schema = {"type": "string", "minLength": 1, "maxLength": wire.MAX_EXTERNAL_ID_CHARS}
    return {
        "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
        "title": {"type": "string", "minLength": 1, "maxLength": wire.MAX_TITLE_CHARS},
        "content": {"type": "string"},
        "tags": STRING_LIST,
        "externalId": ext if external_id_required else {"anyOf": [ext, {"type": "null"}]},
        "workspace": NULLABLE_SLUG,
        "metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
    }


CONTEXT_CREATE: Schema = {
    "type": "object",
    "required": list(wire.CONTEXT_REQUIRED_ON_CREATE),
    "properties": _context_fields(False),
}
CONTEXT_UPDATE: Schema = {"type": "object", "properties": _context_fields(False)}
BULK_UPSERT: Schema = {
    "type": "object",
    "required": ["contexts"],
    "properties": {
        "contexts": {
            "type": "array",
            "minItems": 1,
            "maxItems": wire.BULK_MAX_ITEMS,
            "items": {
                "type": "object",
                "required": [*wire.CONTEXT_REQUIRED_ON_CREATE, "externalId"],
                "properties": _context_fields(True),
            },
        }
    },
}
SEARCH: Schema = {
    "type": "object",
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": wire.MAX_QUERY_CHARS},
        "type": {"type": "string", "enum": list(wire.SEARCH_TYPES)},
        "workspace": NULLABLE_SLUG,
        "tags": STRING_LIST,
        "limit": {"type": "integer", "minimum": 1, "maximum": wire.SEARCH_MAX_LIMIT},
    },
}
WORKSPACE_CREATE: Schema = {
    "type": "object",
    "required": ["slug"],
    "properties": {
        "slug": {
            "type": "string",
            "pattern": f"^{wire.WORKSPACE_SLUG_RE.pattern}$",
            "maxLength": wire.MAX_WORKSPACE_SLUG_CHARS,
        },
        "name": {
            "anyOf": [
                {"type": "string", "minLength": 1, "maxLength": wire.MAX_WORKSPACE_NAME_CHARS},
                {"type": "null"},
            ]
        },
    },
}

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


ID_PARAM: Schema = path_param("context_id", {"type": "string", "pattern": "^[0-9]+$"})
SLUG_PARAM: Schema = path_param("slug", {"type": "string"})
EXTERNAL_ID_PARAM: Schema = path_param("external_id", {"type": "string", "minLength": 1})


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

_ID: Schema = {"type": "integer", "minimum": 1}
_NULLABLE_TEXT: Schema = {
    "anyOf": [{"type": "string", "maxLength": wire.MAX_TEXT_CHARS}, {"type": "null"}]
}
SESSION_START: Schema = {
    "type": "object",
    "properties": {
        "workspace": NULLABLE_SLUG,
        "parent_session_id": _ID,
        "metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
    },
}
SESSION_END: Schema = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": list(wire.SESSION_END_STATUSES)},
        "summary": _NULLABLE_TEXT,
    },
}
CHECKPOINT_BODY: Schema = {
    "type": "object",
    "required": ["seq", "state"],
    "properties": {"seq": _ID, "state": {"type": "object"}, "summary": _NULLABLE_TEXT},
}
TASK_BODY: Schema = {
    "type": "object",
    "required": ["session_id", "key", "title"],
    "properties": {
        "session_id": _ID,
        "key": {"type": "string", "minLength": 1, "maxLength": wire.MAX_TASK_KEY_CHARS},
        "title": {"type": "string", "minLength": 1, "maxLength": wire.MAX_TITLE_CHARS},
        "status": {"type": "string", "enum": list(wire.TASK_STATUSES)},
        "parent_key": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
        "evidence": _NULLABLE_TEXT,
    },
}
TICK_BODY: Schema = {"type": "object", "properties": {"evidence": _NULLABLE_TEXT}}
LESSON_BODY: Schema = {
    "type": "object",
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": wire.MAX_TEXT_CHARS},
        "workspace": NULLABLE_SLUG,
        "session_id": _ID,
        "tags": STRING_LIST,
    },
}
HANDOFF_BODY: Schema = {
    "type": "object",
    "properties": {"session_id": _ID, "workspace": NULLABLE_SLUG},
}
BOOT_BODY: Schema = {
    "type": "object",
    "required": ["goal"],
    "properties": {
        "goal": {"type": "string", "minLength": 1, "maxLength": wire.MAX_GOAL_CHARS},
        "workspace": NULLABLE_SLUG,
        "token_budget": {"type": "integer", "minimum": 1, "maximum": wire.MAX_TOKEN_BUDGET},
    },
}


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
SESSION_ID_PARAM: Schema = path_param("session_id", {"type": "string", "pattern": "^[0-9]+$"})
TASK_ID_PARAM: Schema = path_param("task_id", {"type": "string", "pattern": "^[0-9]+$"})

# ----- links and ingest jobs: [assumed] -----

_RELATION: Schema = {
    "type": "string",
    "pattern": f"^{wire.LINK_RELATION_RE.pattern}$",
    "minLength": 1,
    "maxLength": wire.LINK_RELATION_MAX_CHARS,
}
LINK_BODY: Schema = {
    "type": "object",
    "required": ["targetId"],
    "properties": {
        "targetId": {"type": "integer", "minimum": 1, "maximum": wire.MAX_ID},
        "relation": _RELATION,
    },
}
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
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "url": {"type": "string", "minLength": 1, "maxLength": wire.INGEST_MAX_URL_CHARS},
        "title": {
            "anyOf": [
                {"type": "string", "minLength": 1, "maxLength": wire.MAX_TITLE_CHARS},
                {"type": "null"},
            ]
        },
        "type": {"type": "string", "enum": list(wire.CONTEXT_TYPES)},
        "tags": STRING_LIST,
        "workspace": NULLABLE_SLUG,
    },
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
