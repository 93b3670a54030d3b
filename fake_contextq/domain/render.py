"""Rendering records as ContextQ's JSON bodies: the fake's side of the wire contract
(``adapter.wire`` holds the field names and formats)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapter.wire import CONTEXT_WIRE_NAMES, WORKSPACE_WIRE_NAMES, timestamp
from fake_contextq.domain import records as r

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
