"""Reading the bodies of the LLM-written PKM operations (dream, evolve, MOC regeneration),
as ``parse`` reads the others: zod-like issues, 400 ``validation_error``. Every field and
limit is [assumed] (``adapter.wire``); each body may be absent (all fields optional)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fake_contextq import _msgs
from fake_contextq.domain import shapes
from fake_contextq.domain.errors import ValidationFailed

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


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text.strip())
    except ValueError:
        message = _msgs.NOT_A_DATETIME.format(value=text)
        raise ValidationFailed([{"path": "since", "message": message}]) from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def parse_dream(raw: Body) -> DreamRequest:
    """``{"workspace"?, "since"?, "limit"?}`` (``shapes.DREAM``); ``since`` ISO 8601."""
    values = shapes.DREAM.read(raw)
    return DreamRequest(values["workspace"], _since(values["since"]), values["limit"])


def parse_evolve(raw: Body) -> EvolveRequest:
    """``{"instruction"?, "limit"?}`` (``shapes.EVOLVE``); a blank instruction is none."""
    values = shapes.EVOLVE.read(raw)
    return EvolveRequest((values["instruction"] or "").strip() or None, values["limit"])


def parse_regenerate_mocs(raw: Body) -> str | None:
    """``{"workspace"?}`` (``shapes.REGENERATE_MOCS``): the workspace slug, if given."""
    workspace: str | None = shapes.REGENERATE_MOCS.read(raw)["workspace"]
    return workspace
