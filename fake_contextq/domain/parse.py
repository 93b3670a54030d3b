"""Reading request bodies, query strings and path ids into records, as zod would: the
fake's side of the wire contract (``adapter.wire`` holds the names and limits)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from adapter.wire import (
    BULK_MAX_ITEMS,
    CONTEXT_FIELDS,
    CONTEXT_TYPES,
    DEFAULT_TOKEN_BUDGET,
    ID_RE,
    LIST_DEFAULT_LIMIT,
    LIST_MAX_LIMIT,
    MAX_CONTENT_BYTES,
    MAX_EXTERNAL_ID_CHARS,
    MAX_GOAL_CHARS,
    MAX_ID,
    MAX_METADATA_BYTES,
    MAX_QUERY_CHARS,
    MAX_STATE_BYTES,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_TASK_KEY_CHARS,
    MAX_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOKEN_BUDGET,
    MAX_WORKSPACE_NAME_CHARS,
    MAX_WORKSPACE_SLUG_CHARS,
    SEARCH_DEFAULT_LIMIT,
    SEARCH_MAX_LIMIT,
    SEARCH_TYPES,
    SESSION_END_STATUSES,
    TASK_STATUSES,
    WORKSPACE_SLUG_RE,
    canonical_json,
    has_forbidden_char,
    well_formed,
)
from fake_contextq import _msgs
from fake_contextq.domain import _validate
from fake_contextq.domain import records as r

_CONTEXT_FIELD_SET = frozenset(CONTEXT_FIELDS)


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
    given = _CONTEXT_FIELD_SET.intersection(reader.obj)
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
    obj = _validate.body_json(raw)
    issues = _validate.Issues()
    result = _read_context_fields(
        _validate.Reader(obj, issues), create=create, require_external_id=False
    )
    issues.check()
    return result


def parse_bulk_body(
    raw: bytes | Mapping[str, Any], *, external_id_required: bool = True
) -> list[r.ContextInput]:
    """[assumed] ``{"contexts": [...]}``, 1..500 items, each a create body with ``externalId``
    (an import's may leave it out: ``external_id_required=False``)."""
    obj = _validate.body_json(raw)
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
                    require_external_id=external_id_required,
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
    params = {name: well_formed(value) for name, value in params.items()}
    type_ = params.get("type")
    if type_ is not None and type_ not in CONTEXT_TYPES:
        issues.add(
            ("type",),
            _msgs.INVALID_ENUM.format(
                options=" | ".join(repr(o) for o in CONTEXT_TYPES), received=type_
            ),
        )
    for name in ("workspace", "tag"):
        given = params.get(name)
        if given is not None and has_forbidden_char(given):
            issues.add((name,), _msgs.HAS_NUL)
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
    obj = _validate.body_json(raw)
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
    obj = _validate.body_json(raw)
    issues = _validate.Issues()
    reader = _validate.Reader(obj, issues)
    slug = reader.string("slug", required=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS)
    if slug is not None and not WORKSPACE_SLUG_RE.fullmatch(slug):
        issues.add(("slug",), _msgs.BAD_SLUG.format(max=MAX_WORKSPACE_SLUG_CHARS))
    name = reader.string("name", nullable=True, min_len=1, max_len=MAX_WORKSPACE_NAME_CHARS)
    issues.check()
    assert slug is not None
    return slug, name or slug


def parse_path_text(raw: str, name: str, max_len: int) -> str:
    """[assumed] a text path parameter (an external id, a slug): 1..``max_len`` characters
    without NUL, else a 400 naming it; a lone surrogate is U+FFFD (``wire.well_formed``)."""
    raw = well_formed(raw)
    issues = _validate.Issues(_msgs.INVALID_PATH)
    if not raw:
        issues.add((name,), _msgs.TOO_SHORT.format(min=1))
    elif len(raw) > max_len:
        issues.add((name,), _msgs.TOO_LONG.format(max=max_len))
    elif has_forbidden_char(raw):
        issues.add((name,), _msgs.HAS_NUL)
    issues.check()
    return raw


def is_slug(text: str) -> bool:
    """Whether ``text`` could name a workspace. A string that cannot (an odd character, a
    lone surrogate, upper case) names none, and is never looked up: not every store could
    even hold it in a query."""
    return len(text) <= MAX_WORKSPACE_SLUG_CHARS and WORKSPACE_SLUG_RE.fullmatch(text) is not None


def parse_id(raw: str, name: str = "id") -> int:
    """[assumed] a path id that is not a positive integer is a 400, not a 404; one of up
    to 19 digits beyond ``wire.MAX_ID`` is left to the lookup, which finds nothing (404)."""
    if not ID_RE.fullmatch(raw):
        issues = _validate.Issues(_msgs.INVALID_PATH)
        issues.add((name,), _msgs.NOT_AN_ID.format(value=raw))
        issues.check()
    return int(raw)


def _json_size(value: Any) -> int:
    return len(canonical_json(value).encode("utf-8", "surrogatepass"))


def _decode(raw: bytes | Mapping[str, Any]) -> Any:
    return _validate.body_json(raw)


def parse_session_start(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"workspace"?, "parent_session_id"?, "metadata"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw), issues)
    workspace = reader.string(
        "workspace", nullable=True, min_len=1, max_len=MAX_WORKSPACE_SLUG_CHARS
    )
    parent = reader.integer("parent_session_id", minimum=1, maximum=MAX_ID)
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
    session_id = reader.integer("session_id", minimum=1, maximum=MAX_ID)
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
    session_id = reader.integer("session_id", minimum=1, maximum=MAX_ID)
    tags = reader.string_list("tags", max_items=MAX_TAGS, max_item_len=MAX_TAG_CHARS)
    issues.check()
    return {"text": text, "workspace": workspace, "session_id": session_id, "tags": tags or ()}


def parse_handoff(raw: bytes | Mapping[str, Any]) -> dict[str, Any]:
    """[assumed] ``{"session_id"?, "workspace"?}``."""
    issues = _validate.Issues()
    reader = _validate.Reader(_decode(raw) if raw else {}, issues)
    session_id = reader.integer("session_id", minimum=1, maximum=MAX_ID)
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
