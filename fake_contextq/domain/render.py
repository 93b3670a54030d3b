"""Rendering records as ContextQ's JSON bodies: the fake's side of the wire contract
(``adapter.wire`` holds the field names and formats).

Every body is built from the fake's own records (``records``), never from the client's
types, so a client that drifts from the wire is caught, not followed:
``tests/test_wire_shapes.py`` parses each body with the client's readers and compares the
field names of both sides."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from adapter.wire import (
    CHUNK_MAX_CHARS,
    CHUNK_OVERLAP_CHARS,
    CONTEXT_WIRE_NAMES,
    WORKSPACE_WIRE_NAMES,
    timestamp,
    well_formed_json,
)
from fake_contextq.domain import records as r
from fake_contextq.domain._fragments import Fragments, to_text

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


def json_body(value: Any) -> bytes:
    """An answer's bytes: ``value`` as compact JSON in UTF-8; a lone surrogate a store
    held from before is sent as U+FFFD, as stored."""
    try:
        return to_text(value).encode()
    except UnicodeEncodeError:
        return to_text(well_formed_json(value)).encode()


def _summary_body(c: r.Context) -> bytes:
    return json_body(context_json(c, with_content=False))


def _context_body(c: r.Context) -> bytes:
    return json_body(context_json(c))


# A page splices its rows' kept bytes; a GET or a create keeps the last contexts asked for
# (their bytes hold the content, so fewer of them). Each is ``json_body`` of its dict, so a
# lone surrogate is U+FFFD in it as in a body rendered whole.
_SUMMARIES: Fragments[r.Context] = Fragments(_summary_body, 20_000)
_CONTEXTS: Fragments[r.Context] = Fragments(_context_body, 512)


def context_body(c: r.Context) -> bytes:
    """``json_body(context_json(c))``, kept while the context lives."""
    return _CONTEXTS.body(c)


def written_context_body(c: r.Context) -> bytes:
    """``json_body(context_json(c))`` of a context just written, not kept: a write's
    answer is sent once, and keeping it costs a create a twentieth of its time; a read of
    the context keeps its bytes then."""
    return _context_body(c)


def page_body(page: r.Page) -> bytes:
    """``json_body(page_json(page))``, spliced from the rows' kept bytes (compact JSON of a
    list is its items' joined by commas)."""
    rest = to_text({"total": page.total, "limit": page.limit, "offset": page.offset})
    items = b",".join(_SUMMARIES.bodies(page.items))
    return b'{"items":[' + items + b"]," + rest[1:].encode()


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


# [assumed] The agent layer's answer fields, in the order they are written: snake_case, each
# the name of the record attribute it renders (a record holds more: tenant ids, workspace
# ids, a lesson's embedding). A lesson also says whether it was ``embedded`` and, when
# recalled by meaning, its ``score``.
SESSION_FIELDS: Final = (
    "id",
    "workspace",
    "parent_session_id",
    "status",
    "summary",
    "metadata",
    "started_at",
    "ended_at",
)
CHECKPOINT_FIELDS: Final = ("id", "session_id", "seq", "state", "summary", "created_at")
TASK_FIELDS: Final = (
    "id",
    "session_id",
    "key",
    "title",
    "status",
    "parent_id",
    "evidence",
    "created_at",
    "updated_at",
)
LESSON_FIELDS: Final = ("id", "text", "workspace", "session_id", "tags", "created_at")
HANDOFF_FIELDS: Final = ("id", "workspace", "session_id", "content", "created_at")


def _snake(record: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """An agent-layer record as JSON: the named attributes (the agent layer's wire names are
    its attribute names), timestamps as the contract writes them."""
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(record, name)
        if isinstance(value, datetime):
            value = timestamp(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[name] = value
    return out


def session_json(s: r.AgentSession) -> dict[str, Any]:
    return _snake(s, SESSION_FIELDS)


def checkpoint_json(c: r.Checkpoint) -> dict[str, Any]:
    return _snake(c, CHECKPOINT_FIELDS)


def task_json(t: r.AgentTask) -> dict[str, Any]:
    return _snake(t, TASK_FIELDS)


def lesson_json(lesson: r.Lesson, score: float | None = None) -> dict[str, Any]:
    out = _snake(lesson, LESSON_FIELDS)
    out["embedded"] = lesson.embedding is not None
    if score is not None:
        out["score"] = round(score, 6)
    return out


def handoff_json(h: r.Handoff) -> dict[str, Any]:
    return _snake(h, HANDOFF_FIELDS)


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


# ----- the ctx_import, ctx_chunks and saved-search answers ([assumed]: camelCase, as a
# context's) -----


def saved_search_json(s: r.SavedSearch) -> dict[str, Any]:
    return {
        "id": s.id,
        "name": s.name,
        "query": s.query,
        "type": s.type,
        "workspace": s.workspace,
        "tags": list(s.tags),
        "limit": s.limit,
        "createdAt": timestamp(s.created_at),
        "updatedAt": timestamp(s.updated_at),
    }


def saved_searches_json(page: r.SavedSearchPage) -> dict[str, Any]:
    return {
        "items": [saved_search_json(s) for s in page.items],
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
    }


def chunks_json(found: tuple[r.Context, Sequence[r.Chunk]]) -> dict[str, Any]:
    context, chunks = found
    return {
        "contextId": context.id,
        "chunkSize": CHUNK_MAX_CHARS,
        "overlap": CHUNK_OVERLAP_CHARS,
        "total": len(chunks),
        "chunks": [
            {"index": c.index, "start": c.start, "end": c.end, "text": c.text} for c in chunks
        ],
    }


def moc_regeneration_json(done: r.MocRegeneration) -> dict[str, Any]:
    """[assumed] What a MOC regeneration did: the MOCs it created, updated and left as
    they were (summaries, no content), and the ids of those it removed."""
    return {
        "workspace": done.workspace,
        "created": [context_json(c, with_content=False) for c in done.created],
        "updated": [context_json(c, with_content=False) for c in done.updated],
        "unchanged": [context_json(c, with_content=False) for c in done.unchanged],
        "removed": list(done.removed),
    }


# ----- links and ingest jobs: [assumed] camelCase, as the contexts' -----


def link_json(link: r.ContextLink) -> dict[str, Any]:
    return {
        "id": link.id,
        "sourceId": link.source_id,
        "targetId": link.target_id,
        "relation": link.relation,
        "createdAt": timestamp(link.created_at),
    }


def _linked(link: r.ContextLink, other: r.Context) -> dict[str, Any]:
    return {
        "id": link.id,
        "relation": link.relation,
        "createdAt": timestamp(link.created_at),
        "context": context_json(other, with_content=False),
    }


def links_json(links: r.Links) -> dict[str, Any]:
    """A context's links: ``outgoing`` (it is the source) and ``incoming`` (the target),
    each with the summary of the context at the other end."""
    return {
        "context": context_json(links.context, with_content=False),
        "outgoing": [_linked(link, other) for link, other in links.outgoing],
        "incoming": [_linked(link, other) for link, other in links.incoming],
    }


def ingest_job_json(done: tuple[r.IngestJob, Sequence[r.Context]]) -> dict[str, Any]:
    """A job and the summaries of the contexts it made that still exist (``contextIds``
    lists every one it made)."""
    job, made = done
    failure = (
        None
        if job.failure_code is None
        else {"code": job.failure_code, "message": job.failure_message}
    )
    return {
        "id": job.id,
        "status": job.status,
        "source": job.source,
        "mediaType": job.media_type,
        "type": job.type,
        "tags": list(job.tags),
        "workspace": job.workspace,
        "parts": len(job.titles),
        "contextIds": list(job.context_ids),
        "contexts": [context_json(c, with_content=False) for c in made],
        "failure": failure,
        "createdAt": timestamp(job.created_at),
        "updatedAt": timestamp(job.updated_at),
    }
