"""The table of ContextQ's REST operations: each declared once.

An entry names its route (method, path and scope, from the client's contract
``wire.Routes``), what it reads (path parameters, query, body and the body's schema), the
domain call, the renderer, and what the OpenAPI document says of it. Routing, the OpenAPI
document and the service's order of checks are all derived from here, so a new operation
is one entry plus its domain method and renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapter import wire
from fake_contextq.domain import records as r
from fake_contextq.domain import render
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.service import llm_tool_shapes as lts
from fake_contextq.service import schemas as oa
from fake_contextq.service import tool_shapes as ts

__all__ = ["MCP_TOOLS", "OPERATIONS", "Inputs", "Operation", "mcp_tool", "mcp_tools", "operation"]


@dataclass(frozen=True, slots=True)
class Inputs:
    """What an operation reads of its request, already decoded: each path parameter (as
    sent, percent-decoded as UTF-8), the query's parameters and the raw body (checked
    against the body limits and media type)."""

    path: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes
    head: bool = False  # a HEAD: the caller sees no body, so nothing may move unseen


Call = Callable[[ContextQBackend, r.Principal, Inputs], Any]


@dataclass(frozen=True, slots=True)
class Operation:
    """One REST operation of ContextQ, as the fake serves it.

    ``path_fields`` names the field a path parameter's 400 blames (``id`` unless said);
    ``lone_read`` operations take no store lock; ``render`` None answers no body;
    ``status_of`` picks the success status from the domain's result when it varies."""

    route: wire.Route
    tag: str
    call: Call
    render: Callable[[Any], Any] | None  # a JSON value, or its bytes already rendered
    answer_schema: oa.Schema | None
    errors: tuple[int, ...]
    body_schema: oa.Schema | None = None
    query: tuple[tuple[str, oa.Schema], ...] = ()
    path_fields: Mapping[str, str] = field(default_factory=dict)
    lone_read: bool = False
    status_of: Callable[[Any], int] | None = None
    other_statuses: tuple[int, ...] = ()
    mcp: tuple[ts.Exposure, ...] = ()  # the MCP tools it is exposed as, if any

    @property
    def name(self) -> str:
        return self.route.name

    @property
    def scope(self) -> str:
        return self.route.scope

    @property
    def reads_body(self) -> bool:
        return self.body_schema is not None

    @property
    def path_names(self) -> tuple[str, ...]:
        return tuple(part.split("}")[0] for part in self.route.template.split("{")[1:])

    def field_of(self, name: str) -> str:
        return self.path_fields.get(name, "id")


def _items(tasks: list[r.AgentTask]) -> dict[str, Any]:
    return {"items": [render.task_json(t) for t in tasks]}


def _task(done: tuple[r.AgentTask, bool]) -> dict[str, Any]:
    return render.task_json(done[0])


def _task_status(done: tuple[r.AgentTask, bool]) -> int:
    return wire.Routes.UPSERT_TASK.status if done[1] else 200


W = wire.Routes
OPERATIONS: tuple[Operation, ...] = (
    # ----- contexts -----
    Operation(
        W.CREATE_CONTEXT,
        "contexts",
        lambda b, p, i: b.create_context(p, i.body),
        render.written_context_body,
        oa.CONTEXT,
        (400, 402, 403, 409),
        body_schema=oa.CONTEXT_CREATE,
        mcp=(ts.CTX_SAVE,),
    ),
    Operation(
        W.LIST_CONTEXTS,
        "contexts",
        lambda b, p, i: b.list_contexts(p, i.query),
        render.page_body,
        oa.PAGE,
        (400, 403),
        query=oa.LIST_QUERY_PARAMS,
        mcp=(
            ts.CTX_LIST,
            ts.CTX_STATS,
        ),
    ),
    Operation(
        W.BULK_UPSERT,
        "contexts",
        lambda b, p, i: b.bulk_upsert(p, i.body),
        render.bulk_json,
        oa.BULK_RESULT,
        (400, 402, 403),
        body_schema=oa.BULK_UPSERT,
        mcp=(ts.CTX_BULK_UPDATE,),
    ),
    Operation(
        W.GET_CONTEXT_BY_EXTERNAL,
        "contexts",
        lambda b, p, i: b.get_context_by_external(p, i.path["external_id"]),
        render.context_body,
        oa.CONTEXT,
        (400, 403, 404),
        path_fields={"external_id": "externalId"},
        lone_read=True,
    ),
    Operation(
        W.GET_CONTEXT,
        "contexts",
        lambda b, p, i: b.get_context(p, i.path["context_id"]),
        render.context_body,
        oa.CONTEXT,
        (400, 403, 404),
        lone_read=True,
        mcp=(ts.CTX_GET,),
    ),
    Operation(
        W.UPDATE_CONTEXT,
        "contexts",
        lambda b, p, i: b.update_context(p, i.path["context_id"], i.body),
        render.written_context_body,
        oa.CONTEXT,
        (400, 403, 404, 409),
        body_schema=oa.CONTEXT_UPDATE,
        mcp=(ts.CTX_UPDATE,),
    ),
    Operation(
        W.DELETE_CONTEXT,
        "contexts",
        lambda b, p, i: b.delete_context(p, i.path["context_id"]),
        None,
        None,
        (400, 403, 404),
        mcp=(ts.CTX_DELETE,),
    ),
    Operation(
        W.IMPORT_CONTEXTS,
        "contexts",
        lambda b, p, i: b.import_contexts(p, i.body),
        render.bulk_json,
        oa.BULK_RESULT,
        (400, 402, 403),
        body_schema=oa.IMPORT,
        mcp=(ts.CTX_IMPORT,),
    ),
    Operation(
        W.CONTEXT_CHUNKS,
        "contexts",
        lambda b, p, i: b.context_chunks(p, i.path["context_id"]),
        render.chunks_json,
        oa.CHUNKS,
        (400, 403, 404),
        lone_read=True,
        mcp=(ts.CTX_CHUNKS,),
    ),
    Operation(
        W.LIST_MOCS,
        "contexts",
        lambda b, p, i: b.list_mocs(p, i.query),
        render.page_body,
        oa.PAGE,
        (400, 403),
        query=tuple(q for q in oa.LIST_QUERY_PARAMS if q[0] != "type"),
        mcp=(ts.CTX_MOCS,),
    ),
    # ----- workspaces -----
    Operation(
        W.LIST_WORKSPACES,
        "workspaces",
        lambda b, p, _: b.list_workspaces(p),
        render.workspaces_json,
        oa.WORKSPACES,
        (403,),
    ),
    Operation(
        W.CREATE_WORKSPACE,
        "workspaces",
        lambda b, p, i: b.create_workspace(p, i.body),
        render.workspace_json,
        oa.WORKSPACE,
        (400, 403, 409),
        body_schema=oa.WORKSPACE_CREATE,
    ),
    Operation(
        W.ARCHIVE_WORKSPACE,
        "workspaces",
        lambda b, p, i: b.archive_workspace(p, i.path["slug"]),
        render.workspace_json,
        oa.WORKSPACE,
        (400, 403, 404),
        path_fields={"slug": "slug"},
    ),
    Operation(
        W.DELETE_WORKSPACE,
        "workspaces",
        lambda b, p, i: b.delete_workspace(p, i.path["slug"]),
        None,
        None,
        (400, 403, 404, 409),
        path_fields={"slug": "slug"},
    ),
    # ----- search -----
    Operation(
        W.SEARCH,
        "search",
        lambda b, p, i: b.search(p, i.body),
        render.search_json,
        oa.SEARCH_RESULT,
        (400, 403),
        body_schema=oa.SEARCH,
        mcp=(ts.CTX_SEARCH,),
    ),
    # ----- saved searches -----
    Operation(
        W.LIST_SAVED_SEARCHES,
        "saved-searches",
        lambda b, p, i: b.saved_searches.listing(p, i.query),
        render.saved_searches_json,
        oa.SAVED_SEARCHES,
        (400, 403),
        query=tuple(q for q in oa.LIST_QUERY_PARAMS if q[0] in ("limit", "offset")),
        mcp=(ts.CTX_SAVED_SEARCHES_LIST,),
    ),
    Operation(
        W.CREATE_SAVED_SEARCH,
        "saved-searches",
        lambda b, p, i: b.saved_searches.create(p, i.body),
        render.saved_search_json,
        oa.SAVED_SEARCH,
        (400, 403, 409),
        body_schema=oa.SAVED_SEARCH_CREATE,
        mcp=(ts.CTX_SAVED_SEARCHES_CREATE,),
    ),
    Operation(
        W.GET_SAVED_SEARCH,
        "saved-searches",
        lambda b, p, i: b.saved_searches.get(p, i.path["search_id"]),
        render.saved_search_json,
        oa.SAVED_SEARCH,
        (400, 403, 404),
        lone_read=True,
        mcp=(ts.CTX_SAVED_SEARCHES_GET,),
    ),
    Operation(
        W.UPDATE_SAVED_SEARCH,
        "saved-searches",
        lambda b, p, i: b.saved_searches.update(p, i.path["search_id"], i.body),
        render.saved_search_json,
        oa.SAVED_SEARCH,
        (400, 403, 404, 409),
        body_schema=oa.SAVED_SEARCH_UPDATE,
        mcp=(ts.CTX_SAVED_SEARCHES_UPDATE,),
    ),
    Operation(
        W.DELETE_SAVED_SEARCH,
        "saved-searches",
        lambda b, p, i: b.saved_searches.delete(p, i.path["search_id"]),
        None,
        None,
        (400, 403, 404),
        mcp=(ts.CTX_SAVED_SEARCHES_DELETE,),
    ),
    Operation(
        W.RUN_SAVED_SEARCH,
        "saved-searches",
        lambda b, p, i: b.saved_searches.run(p, i.path["search_id"]),
        render.search_json,
        oa.SEARCH_RESULT,
        (400, 403, 404),
        mcp=(ts.CTX_SAVED_SEARCHES_RUN, ts.CTX_RUN_SAVED_SEARCH),
    ),
    # ----- links and ingest [assumed] -----
    Operation(
        W.CREATE_LINK,
        "links",
        lambda b, p, i: b.links.link(p, i.path["context_id"], i.body),
        render.link_json,
        oa.LINK,
        (400, 403, 404, 409),
        body_schema=oa.LINK_BODY,
        mcp=(ts.CTX_LINK,),
    ),
    Operation(
        W.LIST_LINKS,
        "links",
        lambda b, p, i: b.links.links(p, i.path["context_id"]),
        render.links_json,
        oa.LINKS,
        (400, 403, 404),
        mcp=(ts.CTX_LINKS,),
    ),
    Operation(
        W.INGEST,
        "ingest",
        lambda b, p, i: b.ingest.submit(p, i.body),
        render.ingest_job_json,
        oa.INGEST_JOB,
        (400, 403, 501),
        body_schema=oa.INGEST_BODY,
        mcp=(ts.CTX_INGEST,),
    ),
    Operation(
        W.INGEST_STATUS,
        "ingest",
        lambda b, p, i: b.ingest.status(p, i.path["job_id"], advance=not i.head),
        render.ingest_job_json,
        oa.INGEST_JOB,
        (400, 403, 404),
        path_fields={"job_id": "jobId"},
        mcp=(ts.CTX_INGEST_STATUS,),
    ),
    # ----- Agent Memory Layer -----
    Operation(
        W.START_SESSION,
        "agent",
        lambda b, p, i: b.agent.start_session(p, i.body),
        render.session_json,
        oa.SESSION,
        (400, 403, 404),
        body_schema=oa.SESSION_START,
        mcp=(ts.AGENT_SESSION_START,),
    ),
    Operation(
        W.GET_SESSION,
        "agent",
        lambda b, p, i: b.agent.get_session(p, i.path["session_id"]),
        render.session_json,
        oa.SESSION,
        (400, 403, 404),
    ),
    Operation(
        W.END_SESSION,
        "agent",
        lambda b, p, i: b.agent.end_session(p, i.path["session_id"], i.body),
        render.session_json,
        oa.SESSION,
        (400, 403, 404),
        body_schema=oa.SESSION_END,
        mcp=(ts.AGENT_SESSION_END,),
    ),
    Operation(
        W.CHECKPOINT,
        "agent",
        lambda b, p, i: b.agent.checkpoint(p, i.path["session_id"], i.body),
        render.checkpoint_json,
        oa.CHECKPOINT,
        (400, 403, 404, 409),
        body_schema=oa.CHECKPOINT_BODY,
        mcp=(ts.AGENT_CHECKPOINT,),
    ),
    Operation(
        W.RESUME,
        "agent",
        lambda b, p, i: b.agent.resume(p, i.path["session_id"]),
        render.resume_json,
        oa.RESUME,
        (400, 403, 404),
        mcp=(ts.AGENT_RESUME,),
    ),
    Operation(
        W.LIST_TASKS,
        "agent",
        lambda b, p, i: b.agent.list_tasks(p, i.path["session_id"]),
        _items,
        oa.TASKS,
        (400, 403, 404),
    ),
    Operation(
        W.UPSERT_TASK,
        "agent",
        lambda b, p, i: b.agent.upsert_task(p, i.body),
        _task,
        oa.TASK,
        (400, 403, 404, 422),
        body_schema=oa.TASK_BODY,
        status_of=_task_status,
        other_statuses=(200,),
        mcp=(ts.AGENT_TASK_UPSERT,),
    ),
    Operation(
        W.TICK_TASK,
        "agent",
        lambda b, p, i: b.agent.tick_task(p, i.path["task_id"], i.body),
        render.task_json,
        oa.TASK,
        (400, 403, 404, 422),
        body_schema=oa.TICK_BODY,
        mcp=(ts.AGENT_TASK_TICK,),
    ),
    Operation(
        W.ADD_LESSON,
        "agent",
        lambda b, p, i: b.agent.add_lesson(p, i.body),
        render.lesson_json,
        oa.LESSON,
        (400, 403, 404),
        body_schema=oa.LESSON_BODY,
        mcp=(ts.AGENT_LESSON_ADD,),
    ),
    Operation(
        W.HANDOFF,
        "agent",
        lambda b, p, i: b.agent.handoff(p, i.body),
        render.handoff_json,
        oa.HANDOFF,
        (400, 403, 404, 503),
        body_schema=oa.HANDOFF_BODY,
        mcp=(ts.AGENT_HANDOFF,),
    ),
    Operation(
        W.BOOT,
        "agent",
        lambda b, p, i: b.agent.boot(p, i.body),
        render.boot_json,
        oa.BOOT,
        (400, 403),
        body_schema=oa.BOOT_BODY,
        mcp=(ts.AGENT_BOOT,),
    ),
    # ----- PKM, written by the server's LLM -----
    Operation(
        W.DREAM,
        "pkm",
        lambda b, p, i: b.pkm.dream(p, i.body),
        render.written_context_body,
        oa.CONTEXT,
        (400, 402, 403, 503),
        body_schema=oa.DREAM_BODY,
        mcp=(lts.CTX_DREAM,),
    ),
    Operation(
        W.EVOLVE_CONTEXT,
        "pkm",
        lambda b, p, i: b.pkm.evolve(p, i.path["context_id"], i.body),
        render.written_context_body,
        oa.CONTEXT,
        (400, 403, 404, 503),
        body_schema=oa.EVOLVE_BODY,
        mcp=(lts.CTX_EVOLVE,),
    ),
    Operation(
        W.REGENERATE_MOCS,
        "pkm",
        lambda b, p, i: b.pkm.regenerate_mocs(p, i.body),
        render.moc_regeneration_json,
        oa.MOC_REGENERATION,
        (400, 402, 403, 409, 503),
        body_schema=oa.REGENERATE_MOCS_BODY,
        mcp=(lts.CTX_REGENERATE_MOCS,),
    ),
)


def operation(name: str) -> Operation:
    """The operation of that route name; KeyError naming it when there is none."""
    for op in OPERATIONS:
        if op.name == name:
            return op
    raise KeyError(f"no operation named {name!r}")


def mcp_tools(operations: tuple[Operation, ...]) -> tuple[ts.McpTool, ...]:
    """The MCP tools ``operations`` are exposed as, in table order."""
    return tuple(ts.McpTool.of(e, op.route, op.answer_schema) for op in operations for e in op.mcp)


#: ContextQ's MCP tools as the fake serves them.
MCP_TOOLS: tuple[ts.McpTool, ...] = mcp_tools(OPERATIONS)


def mcp_tool(name: str) -> ts.McpTool | None:
    """The tool of that name, or None."""
    return next((t for t in MCP_TOOLS if t.name == name), None)
