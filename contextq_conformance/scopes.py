"""The scope matrix as data: every endpoint, and the status a key holding exactly one scope
(or none) gets from it. Adding an endpoint means adding a row here and, in ``CALLS``, how
to call it through ``adapter.ContextQClient``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from adapter import ContextQClient

#: The key scopes the matrix is checked for, in column order.
SCOPES: Final = ("none", "read", "write", "admin")

#: endpoint: status for a key with no scope, read, write, admin. [seed] which scope each
#: endpoint needs; [assumed] the success statuses.
MATRIX: Final[dict[str, tuple[int, int, int, int]]] = {
    "GET /api/contexts": (403, 200, 403, 200),
    "POST /api/contexts": (403, 403, 201, 201),
    "GET /api/contexts/:id": (403, 200, 403, 200),
    "GET /api/contexts/by-external/:externalId": (403, 200, 403, 200),
    "PUT /api/contexts/:id": (403, 403, 200, 200),
    "DELETE /api/contexts/:id": (403, 403, 204, 204),
    "POST /api/contexts/bulk-upsert": (403, 403, 200, 200),
    "GET /api/workspaces": (403, 200, 403, 200),
    "POST /api/workspaces": (403, 403, 403, 201),
    "POST /api/workspaces/:slug/archive": (403, 403, 403, 200),
    "DELETE /api/workspaces/:slug": (403, 403, 403, 204),
    "POST /api/search": (403, 200, 403, 200),
    "POST /api/agent/boot": (403, 200, 403, 200),
    "POST /api/agent/sessions": (403, 403, 201, 201),
    "GET /api/agent/sessions/:id": (403, 200, 403, 200),
    "POST /api/agent/sessions/:id/end": (403, 403, 200, 200),
    "POST /api/agent/sessions/:id/checkpoint": (403, 403, 201, 201),
    "GET /api/agent/sessions/:id/resume": (403, 200, 403, 200),
    "POST /api/agent/tasks": (403, 403, 201, 201),
    "POST /api/agent/tasks/:id/tick": (403, 403, 200, 200),
    "GET /api/agent/sessions/:id/tasks": (403, 200, 403, 200),
    "POST /api/agent/lessons": (403, 403, 201, 201),
    # without any workspace, handoff's 400 no_workspace comes before any LLM is needed
    "POST /api/agent/handoff": (403, 403, 400, 400),
}


@dataclass
class Fixtures:
    """What the calls need, made beforehand with an all-scopes key (fresh per call)."""

    context_id: int
    external_id: str
    workspace: str
    session_id: int
    task_id: int


Call = Callable[[ContextQClient, Fixtures], Any]

_NOTE: Final[dict[str, Any]] = {
    "type": "reference",
    "title": "Scope check",
    "content": "Made for the matrix.",
}

#: How each endpoint of the matrix is called.
CALLS: Final[dict[str, Call]] = {
    "GET /api/contexts": lambda c, _: c.list_contexts(),
    "POST /api/contexts": lambda c, _: c.create_context(**_NOTE),
    "GET /api/contexts/:id": lambda c, f: c.get_context(f.context_id),
    "GET /api/contexts/by-external/:externalId": lambda c, f: c.get_context_by_external_id(
        f.external_id
    ),
    "PUT /api/contexts/:id": lambda c, f: c.update_context(f.context_id, title="Updated"),
    "DELETE /api/contexts/:id": lambda c, f: c.delete_context(f.context_id),
    "POST /api/contexts/bulk-upsert": lambda c, f: c.bulk_upsert(
        [{**_NOTE, "external_id": f.external_id + "-bulk"}]
    ),
    "GET /api/workspaces": lambda c, _: c.list_workspaces(),
    "POST /api/workspaces": lambda c, f: c.create_workspace(f.workspace + "-new"),
    "POST /api/workspaces/:slug/archive": lambda c, f: c.archive_workspace(f.workspace),
    "DELETE /api/workspaces/:slug": lambda c, f: c.delete_workspace(f.workspace),
    "POST /api/search": lambda c, _: c.search("scope"),
    "POST /api/agent/boot": lambda c, _: c.boot("check the scopes"),
    "POST /api/agent/sessions": lambda c, _: c.start_session(),
    "GET /api/agent/sessions/:id": lambda c, f: c.get_session(f.session_id),
    "POST /api/agent/sessions/:id/end": lambda c, f: c.end_session(f.session_id, "completed"),
    "POST /api/agent/sessions/:id/checkpoint": lambda c, f: c.checkpoint(
        f.session_id, 1, {"step": 1}
    ),
    "GET /api/agent/sessions/:id/resume": lambda c, f: c.resume(f.session_id),
    "POST /api/agent/tasks": lambda c, f: c.upsert_task(f.session_id, "new-task", "A task"),
    "POST /api/agent/tasks/:id/tick": lambda c, f: c.tick_task(f.task_id, "the tests pass"),
    "GET /api/agent/sessions/:id/tasks": lambda c, f: c.list_tasks(f.session_id),
    "POST /api/agent/lessons": lambda c, _: c.add_lesson("Scopes are checked per endpoint."),
    "POST /api/agent/handoff": lambda c, _: c.handoff(),
}


def make_fixtures(admin: ContextQClient, n: int) -> Fixtures:
    """A context (in no workspace), an empty workspace, a session and a task of it."""
    external_id = f"scope-matrix-{n}"
    context = admin.create_context(**_NOTE, external_id=external_id)
    workspace = f"scope-ws-{n}"
    admin.create_workspace(workspace)
    session = admin.start_session()
    task = admin.upsert_task(session.id, "task", "A task")
    return Fixtures(context.id, external_id, workspace, session.id, task.id)
