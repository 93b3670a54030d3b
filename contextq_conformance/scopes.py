"""The scope matrix as data: every endpoint of the contract's route table, and the status a
key holding exactly one scope (or none) gets from it. Adding an endpoint to the route table
means adding, in ``CALLS``, how to call it through ``adapter.ContextQClient``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from adapter import ContextQClient, _api, wire

#: The key scopes the matrix is checked for, in column order.
SCOPES: Final = ("none", *wire.SCOPES)

#: Where the call of the matrix does not end in the route's success status: without any
#: workspace, handoff's 400 no_workspace comes before any LLM is needed.
OUTCOME: Final[dict[str, int]] = {
    wire.Routes.HANDOFF.name: 400,
    # the same for a dream and a MOC regeneration (no workspace), and an evolution of a
    # context that does not exist is a 404 before any LLM is needed
    wire.Routes.DREAM.name: 400,
    wire.Routes.REGENERATE_MOCS.name: 400,
    wire.Routes.EVOLVE_CONTEXT.name: 404,
}
#: A context id no tenant holds (the largest a JavaScript client sends exactly).
_MISSING_ID: Final = 2**53 - 1


def _key(route: wire.Route) -> str:
    return f"{route.method} {route.template}"


def _expected(route: wire.Route, scope: str) -> int:
    if scope != "none" and wire.scope_grants((scope,), route.scope):
        return OUTCOME.get(route.name, route.status)
    return 403


#: endpoint (``METHOD /path``): status for a key with no scope, read, write, admin, from the
#: contract's route table ([seed] which scope each endpoint needs; [assumed] the statuses).
MATRIX: Final[dict[str, tuple[int, ...]]] = {
    _key(r): tuple(_expected(r, scope) for scope in SCOPES) for r in wire.ROUTES
}


@dataclass
class Fixtures:
    """What the calls need, made beforehand with an all-scopes key (fresh per call)."""

    context_id: int
    external_id: str
    workspace: str
    session_id: int
    task_id: int
    other_context_id: int
    ingest_job_id: int
    saved_search_id: int


Call = Callable[[ContextQClient, Fixtures], Any]

_NOTE: Final[dict[str, Any]] = {
    "type": "reference",
    "title": "Scope check",
    "content": "Made for the matrix.",
}


def _call_plain(
    client: ContextQClient, route: wire.Route, json: Any = None, **path: str | int
) -> Any:
    """[assumed] routes the client has no method for (the tools' REST twins: import, chunks,
    MOCs, saved searches, links, ingest, dream, evolve, MOC regeneration), called through
    the client's own request plan, so a refusal is the same typed error (a 403 names its
    ``required`` scope) as any method's; a 204 is None."""

    def read(r: Any) -> Any:
        return _api.loads(r.content) if r.content else None

    call = _api.Call(route.method, route.path(**path), read, json=json)
    return client._send(call)


#: How each endpoint of the matrix is called.
CALLS: Final[dict[str, Call]] = {
    _key(wire.Routes.LIST_CONTEXTS): lambda c, _: c.list_contexts(),
    _key(wire.Routes.CREATE_CONTEXT): lambda c, _: c.create_context(**_NOTE),
    _key(wire.Routes.GET_CONTEXT): lambda c, f: c.get_context(f.context_id),
    _key(wire.Routes.GET_CONTEXT_BY_EXTERNAL): lambda c, f: c.get_context_by_external_id(
        f.external_id
    ),
    _key(wire.Routes.UPDATE_CONTEXT): lambda c, f: c.update_context(f.context_id, title="Updated"),
    _key(wire.Routes.DELETE_CONTEXT): lambda c, f: c.delete_context(f.context_id),
    _key(wire.Routes.BULK_UPSERT): lambda c, f: c.bulk_upsert(
        [{**_NOTE, "external_id": f.external_id + "-bulk"}]
    ),
    _key(wire.Routes.LIST_WORKSPACES): lambda c, _: c.list_workspaces(),
    _key(wire.Routes.CREATE_WORKSPACE): lambda c, f: c.create_workspace(f.workspace + "-new"),
    _key(wire.Routes.ARCHIVE_WORKSPACE): lambda c, f: c.archive_workspace(f.workspace),
    _key(wire.Routes.DELETE_WORKSPACE): lambda c, f: c.delete_workspace(f.workspace),
    _key(wire.Routes.SEARCH): lambda c, _: c.search("scope"),
    _key(wire.Routes.BOOT): lambda c, _: c.boot("check the scopes"),
    _key(wire.Routes.START_SESSION): lambda c, _: c.start_session(),
    _key(wire.Routes.GET_SESSION): lambda c, f: c.get_session(f.session_id),
    _key(wire.Routes.END_SESSION): lambda c, f: c.end_session(f.session_id, "completed"),
    _key(wire.Routes.CHECKPOINT): lambda c, f: c.checkpoint(f.session_id, 1, {"step": 1}),
    _key(wire.Routes.RESUME): lambda c, f: c.resume(f.session_id),
    _key(wire.Routes.UPSERT_TASK): lambda c, f: c.upsert_task(f.session_id, "new-task", "A task"),
    _key(wire.Routes.TICK_TASK): lambda c, f: c.tick_task(f.task_id, "the tests pass"),
    _key(wire.Routes.LIST_TASKS): lambda c, f: c.list_tasks(f.session_id),
    _key(wire.Routes.ADD_LESSON): lambda c, _: c.add_lesson("Scopes are checked per endpoint."),
    _key(wire.Routes.HANDOFF): lambda c, _: c.handoff(),
    _key(wire.Routes.DREAM): lambda c, _: _call_plain(c, wire.Routes.DREAM, {}),
    _key(wire.Routes.REGENERATE_MOCS): lambda c, _: _call_plain(c, wire.Routes.REGENERATE_MOCS, {}),
    _key(wire.Routes.EVOLVE_CONTEXT): lambda c, _: _call_plain(
        c, wire.Routes.EVOLVE_CONTEXT, {"instruction": "x"}, context_id=_MISSING_ID
    ),
    _key(wire.Routes.CREATE_LINK): lambda c, f: _call_plain(
        c, wire.Routes.CREATE_LINK, {"targetId": f.other_context_id}, context_id=f.context_id
    ),
    _key(wire.Routes.LIST_LINKS): lambda c, f: _call_plain(
        c, wire.Routes.LIST_LINKS, context_id=f.context_id
    ),
    _key(wire.Routes.INGEST): lambda c, _: _call_plain(
        c, wire.Routes.INGEST, {"text": "# Scope check\nMade for the matrix."}
    ),
    _key(wire.Routes.INGEST_STATUS): lambda c, f: _call_plain(
        c, wire.Routes.INGEST_STATUS, job_id=f.ingest_job_id
    ),
    _key(wire.Routes.IMPORT_CONTEXTS): lambda c, _: _call_plain(
        c, wire.Routes.IMPORT_CONTEXTS, {"contexts": [_NOTE]}
    ),
    _key(wire.Routes.CONTEXT_CHUNKS): lambda c, f: _call_plain(
        c, wire.Routes.CONTEXT_CHUNKS, context_id=f.context_id
    ),
    _key(wire.Routes.LIST_MOCS): lambda c, _: _call_plain(c, wire.Routes.LIST_MOCS),
    _key(wire.Routes.LIST_SAVED_SEARCHES): lambda c, _: _call_plain(
        c, wire.Routes.LIST_SAVED_SEARCHES
    ),
    _key(wire.Routes.CREATE_SAVED_SEARCH): lambda c, f: _call_plain(
        c, wire.Routes.CREATE_SAVED_SEARCH, {"name": f"new-{f.workspace}", "query": "scope"}
    ),
    _key(wire.Routes.GET_SAVED_SEARCH): lambda c, f: _call_plain(
        c, wire.Routes.GET_SAVED_SEARCH, search_id=f.saved_search_id
    ),
    _key(wire.Routes.UPDATE_SAVED_SEARCH): lambda c, f: _call_plain(
        c, wire.Routes.UPDATE_SAVED_SEARCH, {"query": "again"}, search_id=f.saved_search_id
    ),
    _key(wire.Routes.DELETE_SAVED_SEARCH): lambda c, f: _call_plain(
        c, wire.Routes.DELETE_SAVED_SEARCH, search_id=f.saved_search_id
    ),
    _key(wire.Routes.RUN_SAVED_SEARCH): lambda c, f: _call_plain(
        c, wire.Routes.RUN_SAVED_SEARCH, search_id=f.saved_search_id
    ),
}


def make_fixtures(admin: ContextQClient, n: int) -> Fixtures:
    """A context (in no workspace) and another to link it to, an empty workspace, a session
    and a task of it, an ingest job, a saved search."""
    external_id = f"scope-matrix-{n}"
    context = admin.create_context(**_NOTE, external_id=external_id)
    workspace = f"scope-ws-{n}"
    admin.create_workspace(workspace)
    session = admin.start_session()
    task = admin.upsert_task(session.id, "task", "A task")
    other = admin.create_context(**_NOTE)
    job = _call_plain(admin, wire.Routes.INGEST, {"text": "Made for the matrix."})
    saved = _call_plain(
        admin, wire.Routes.CREATE_SAVED_SEARCH, {"name": f"scope-{n}", "query": "scope"}
    )
    return Fixtures(
        context.id,
        external_id,
        workspace,
        session.id,
        task.id,
        other.id,
        int(job["id"]),
        int(saved["id"]),
    )
