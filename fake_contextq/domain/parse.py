"""Reading request bodies, query strings and path ids into records, as zod would: the
fake's side of the wire contract (``adapter.wire`` holds the names and limits, and
``domain.shapes`` declares each body once, for reading it and for its JSON Schema)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapter.wire import (
    ID_RE,
    MAX_WORKSPACE_SLUG_CHARS,
    WORKSPACE_SLUG_RE,
    has_forbidden_char,
    well_formed,
)
from fake_contextq import _msgs
from fake_contextq.domain import _validate, shapes
from fake_contextq.domain import records as r

Body = bytes | Mapping[str, Any]


def _context_input(values: shapes.Values) -> r.ContextInput:
    return r.ContextInput(
        type=values["type"],
        title=values["title"],
        content=values["content"],
        tags=values["tags"],
        external_id=values["externalId"],
        workspace=values["workspace"],
        metadata=values["metadata"],
        given=values.given,
    )


def parse_context_body(raw: Body, *, create: bool) -> r.ContextInput:
    """The body of ``POST /api/contexts`` (create) or ``PUT /api/contexts/:id``."""
    shape = shapes.CONTEXT_CREATE if create else shapes.CONTEXT_UPDATE
    return _context_input(shape.read(raw))


def parse_bulk_body(raw: Body, *, external_id_required: bool = True) -> list[r.ContextInput]:
    """``{"contexts": [...]}``, 1..500 items, each a create body with ``externalId`` (an
    import's may leave it out: ``external_id_required=False``)."""
    shape = shapes.BULK_UPSERT if external_id_required else shapes.IMPORT
    return [_context_input(item) for item in shape.read(raw)["contexts"]]


def parse_list_query(params: Mapping[str, str]) -> r.ListQuery:
    """The filters and page of ``GET /api/contexts``."""
    return r.ListQuery(**shapes.LIST_QUERY.read_query(params))


def parse_search_body(raw: Body) -> r.SearchQuery:
    """The body of ``POST /api/search``."""
    return r.SearchQuery(**shapes.SEARCH.read(raw))


def parse_workspace_body(raw: Body) -> tuple[str, str]:
    """The slug and name of a new workspace; the name defaults to the slug."""
    values = shapes.WORKSPACE_CREATE.read(raw)
    return values["slug"], values["name"] or values["slug"]


def parse_path_text(raw: str, name: str, max_len: int) -> str:
    """[assumed] a text path parameter (an external id, a slug): 1..``max_len`` characters
    without NUL, else a 400 naming it; a lone surrogate is U+FFFD (``wire.well_formed``)."""
    raw = well_formed(raw)
    if not raw:
        problem = _msgs.TOO_SHORT.format(min=1)
    elif len(raw) > max_len:
        problem = _msgs.TOO_LONG.format(max=max_len)
    elif has_forbidden_char(raw):
        problem = _msgs.HAS_NUL
    else:
        return raw
    issues = _validate.Issues(_msgs.INVALID_PATH)
    issues.add((name,), problem)
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


def parse_session_start(raw: Body) -> dict[str, Any]:
    """``{"workspace", "parent_session_id", "metadata"}``, metadata ``{}`` when not given."""
    return shapes.SESSION_START.read(raw)


def parse_session_end(raw: Body) -> dict[str, Any]:
    """``{"status", "summary"}``."""
    return shapes.SESSION_END.read(raw)


def parse_checkpoint(raw: Body) -> dict[str, Any]:
    """``{"seq", "state", "summary"}``."""
    return shapes.CHECKPOINT.read(raw)


def parse_task(raw: Body) -> dict[str, Any]:
    """``{"session_id", "key", "title", "status", "parent_key", "evidence"}``."""
    return shapes.TASK.read(raw)


def parse_tick(raw: Body) -> str | None:
    """A tick's ``evidence``; a missing or blank one is left to the 422 check."""
    evidence: str | None = shapes.TICK.read(raw)["evidence"]
    return evidence


def parse_lesson(raw: Body) -> dict[str, Any]:
    """``{"text", "workspace", "session_id", "tags"}``."""
    return shapes.LESSON.read(raw)


def parse_handoff(raw: Body) -> dict[str, Any]:
    """``{"session_id", "workspace"}``."""
    return shapes.HANDOFF.read(raw)


def parse_boot(raw: Body) -> dict[str, Any]:
    """``{"goal", "workspace", "token_budget"}``, the budget defaulted."""
    return shapes.BOOT.read(raw)
