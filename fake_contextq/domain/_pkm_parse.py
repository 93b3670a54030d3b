"""Reading the bodies of the LLM-written PKM operations (dream, evolve, MOC regeneration),
as ``parse`` reads the others: zod-like issues, 400 ``validation_error``. Every field and
limit is [assumed] (``adapter.wire``); each body may be absent (all fields optional)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import _validate

Body = bytes | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DreamRequest:
    workspace: str | None
    since: datetime | None
    limit: int


@dataclass(frozen=True, slots=True)
class EvolveRequest:
    instruction: str | None
    limit: int


def _reader(raw: Body, issues: _validate.Issues) -> _validate.Reader:
    return _validate.Reader(_validate.body_json(raw) if raw else {}, issues)


def _workspace(reader: _validate.Reader) -> str | None:
    return reader.string(
        "workspace", nullable=True, min_len=1, max_len=wire.MAX_WORKSPACE_SLUG_CHARS
    )


def _since(reader: _validate.Reader, issues: _validate.Issues) -> datetime | None:
    text = reader.string("since", nullable=True, min_len=1, max_len=wire.MAX_SINCE_CHARS)
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        issues.add(("since",), _msgs.NOT_A_DATETIME.format(value=text))
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def parse_dream(raw: Body) -> DreamRequest:
    """``{"workspace"?, "since"?, "limit"?}``."""
    issues = _validate.Issues()
    reader = _reader(raw, issues)
    workspace = _workspace(reader)
    since = _since(reader, issues)
    limit = reader.integer("limit", minimum=1, maximum=wire.DREAM_MAX_SOURCES)
    issues.check()
    return DreamRequest(workspace, since, wire.DREAM_DEFAULT_SOURCES if limit is None else limit)


def parse_evolve(raw: Body) -> EvolveRequest:
    """``{"instruction"?, "limit"?}``; a blank instruction is none."""
    issues = _validate.Issues()
    reader = _reader(raw, issues)
    instruction = reader.string("instruction", nullable=True, max_len=wire.MAX_TEXT_CHARS)
    limit = reader.integer("limit", minimum=1, maximum=wire.EVOLVE_MAX_SOURCES)
    issues.check()
    return EvolveRequest(
        (instruction or "").strip() or None,
        wire.EVOLVE_DEFAULT_SOURCES if limit is None else limit,
    )


def parse_regenerate_mocs(raw: Body) -> str | None:
    """``{"workspace"?}``: the workspace slug, if given."""
    issues = _validate.Issues()
    workspace = _workspace(_reader(raw, issues))
    issues.check()
    return workspace
