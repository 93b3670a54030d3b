"""The HTTP face of the fake: FastAPI routes that translate requests to model calls.

Routes hold no rules. Each one authenticates, hands the raw input to the model, and
renders what comes back through ``domain.render``; errors become ContextQ's error bodies.
On a database store that work runs on the store's threads (``run_model``), so a request
waiting on the database leaves the event loop free for every other request.
Paths, methods and success statuses come from the contract's route table (``wire.Routes``).
A pure-ASGI middleware around everything records the journal and plays faults.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException

from adapter import wire
from adapter.errors import redact
from fake_contextq import _msgs
from fake_contextq.domain import records as r
from fake_contextq.domain import render
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import ApiError, ValidationFailed
from fake_contextq.http import openapi as oa
from fake_contextq.http._io import (
    CONTROL_PREFIX,
    DASHBOARD_PREFIX,
    SCOPE_KEY,
    SERVED_MCP_KEY,
    ASGIApp,
    Binding,
    Message,
    Receive,
    Scope,
    Send,
    binding,
    error_response,
    json_response,
    query_params,
    receive_body,
    store_executor,
)
from fake_contextq.http.control import mount_control
from fake_contextq.http.faults import ConnectionDropped, Faults
from fake_contextq.http.journal import BODY_KEPT, Journal, JournalEntry
from fake_contextq.http.root import is_root_page, mount_root

Handler = TypeVar("Handler", bound=Callable[..., Any])
R = TypeVar("R")
T = TypeVar("T")

BY_EXTERNAL_PREFIX = wire.Routes.GET_CONTEXT_BY_EXTERNAL.template.partition("{")[0]
_JSON_HEADERS = [(b"content-type", b"application/json")]


class _AnyText(PathConvertor):
    """Like ``path``, but also across newlines: an external id may hold any character."""

    regex = r"[\s\S]*"


register_url_convertor("anytext", _AnyText())


def route(api: FastAPI, endpoint: wire.Route, **options: Any) -> Callable[[Handler], Handler]:
    """Register a handler for one endpoint of the contract's route table."""
    path = endpoint.template
    if endpoint is wire.Routes.GET_CONTEXT_BY_EXTERNAL:
        path = path.replace("{external_id}", "{external_id:anytext}")
    decorate: Callable[[Handler], Handler] = api.api_route(
        path, methods=[endpoint.method], status_code=endpoint.status, **options
    )
    return decorate


def _url_text(raw: str, field: str) -> str:
    """One raw path segment percent-decoded as UTF-8, or a 400 naming ``field`` when it is
    not UTF-8 (``wire.URL_TEXT_ENCODING``): never U+FFFD in place of what was sent."""
    try:
        return unquote(raw, encoding=wire.URL_TEXT_ENCODING, errors="strict")
    except UnicodeDecodeError:
        raise ValidationFailed(
            [{"path": field, "message": _msgs.NOT_UTF8}], _msgs.INVALID_PATH
        ) from None


def _raw_path(request: Request) -> str | None:
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes | bytearray):  # no raw path: only the decoded one to go by
        return None
    return raw.decode("latin-1").split("?", 1)[0]


def external_id_from(request: Request) -> str:
    """The external id exactly as sent: taken from the raw path, so ``%2F`` stays a slash
    inside the id instead of being decoded before routing."""
    raw_path = _raw_path(request)
    if raw_path is not None and raw_path.startswith(BY_EXTERNAL_PREFIX):
        return _url_text(raw_path[len(BY_EXTERNAL_PREFIX) :], "externalId")
    path: str = request.scope["path"]
    return path[len(BY_EXTERNAL_PREFIX) :]


def path_text(request: Request, name: str, field: str = "id") -> str:
    """The path parameter ``name`` as sent, decoded from the raw path as the by-external
    id is (a 400 naming ``field`` when it is not UTF-8); the router's own decoding, which
    puts U+FFFD in place of such bytes, only when the raw path does not line up with the
    route's template."""
    decoded: str = request.path_params[name]
    template = getattr(request.scope.get("route"), "path", None)
    raw_path = _raw_path(request)
    if not isinstance(template, str) or raw_path is None:
        return decoded
    parts, segments = template.split("/"), raw_path.split("/")
    marker = "{" + name + "}"
    if marker not in parts or len(parts) != len(segments):
        return decoded
    return _url_text(segments[parts.index(marker)], field)


def _one_segment(request: Request) -> bool:
    """Whether the by-external parameter is one path segment as sent (``%2F`` is a '/' of
    the id; a bare '/' would be another path, which a ``:externalId`` router never
    matches)."""
    raw_path = _raw_path(request)
    if raw_path is None:
        return True
    return wire.PATH_SEPARATOR not in raw_path[len(BY_EXTERNAL_PREFIX) :]


def _route_not_found(request: Request) -> ApiError:
    return ApiError(
        _msgs.NOT_FOUND,
        _msgs.ROUTE_NOT_FOUND.format(method=request.method, path=request.url.path),
    )


def create_app(
    backend: ContextQBackend,
    journal: Journal,
    faults: Faults,
    *,
    control_token: str | None = None,
) -> ASGIApp:
    """An ASGI app serving ``backend``; with a control token, the ``/_fake/`` routes too.

    The FastAPI routing is built once per process and holds no state: each app made
    here binds its own backend, journal and faults into every request's scope, so a
    fresh fake costs microseconds, not a FastAPI build.
    """
    api = _routes(control=control_token is not None)
    store = backend.store
    bound = Binding(
        backend, journal, faults, control_token, store_executor(store), not store.reads_wait
    )
    return Observed(api, bound)


async def run_model(
    request: Request,
    work: Callable[[r.Principal, ContextQBackend], R],
    show: Callable[[R], T],
    *,
    lone_read: bool = False,
) -> T:
    """Authenticate the caller and ``work(principal, backend)``, both in one store
    transaction unless the operation is a ``lone_read`` (which takes no lock); then
    ``show`` the result, once the transaction has ended.

    On the store's threads when it has them (a database store) and the loop serves
    anything else; in place for the in-memory store, for a lone read on a store whose
    reads never wait (a SQLite file), and for a request alone on its loop (the sync
    in-process client's own loop), which nothing else waits on: the thread hop would be
    pure cost."""
    bound = binding(request)
    backend, executor = bound.backend, bound.executor
    authorization = request.headers.get("authorization")
    state = request.state

    def call() -> R:
        p = backend.authenticate(authorization)
        state.tenant_id = p.tenant_id
        return work(p, backend)

    def run() -> T:
        if lone_read:
            return show(call())
        try:
            with backend.request_transaction():
                result = call()
        except ApiError as exc:
            if exc.code != _msgs.DATABASE_BUSY:
                raise
            raise backend.busy_answer(authorization, exc) from exc
        return show(result)

    if executor is None or (lone_read and bound.reads_in_place) or len(asyncio.all_tasks()) == 1:
        return run()
    return await asyncio.get_running_loop().run_in_executor(executor, run)


@functools.cache
def _routes(*, control: bool) -> FastAPI:
    api = FastAPI(
        title="fake-contextq",
        version="0.1.0",
        description="A strict fake of ContextQ's HTTP API.",
        docs_url=None,
        redirect_slashes=False,  # Fastify does not redirect '/x/' to '/x': it is a 404
        redoc_url=None,
        # a fake emits no telemetry into the OpenTelemetry set-up of the process it runs in
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )

    @api.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if control and request.url.path.startswith(DASHBOARD_PREFIX):
            from fake_contextq.http.dashboard import error_page

            return error_page(request, exc)
        return error_response(exc)

    @api.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> Response:
        issues = [
            {
                "path": wire.issue_path([str(p) for p in e.get("loc", ())[1:]]),
                "message": str(e.get("msg", "")),
            }
            for e in exc.errors()
        ]
        return json_response(
            400,
            wire.error_body(_msgs.VALIDATION_ERROR, _msgs.INVALID_QUERY, {"issues": issues}),
        )

    @api.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        if exc.status_code in (404, 405):
            return json_response(
                wire.UNKNOWN_ROUTE_STATUS,
                wire.error_body(
                    _msgs.NOT_FOUND,
                    _msgs.ROUTE_NOT_FOUND.format(method=request.method, path=request.url.path),
                ),
            )
        return json_response(
            exc.status_code,
            wire.error_body(
                _msgs.INTERNAL_ERROR if exc.status_code >= 500 else _msgs.VALIDATION_ERROR,
                str(exc.detail),
            ),
        )

    @api.exception_handler(Exception)
    async def _crash(_: Request, exc: Exception) -> Response:
        return json_response(
            500,
            wire.error_body(
                _msgs.INTERNAL_ERROR, _msgs.INTERNAL_ERROR_MSG.format(detail=type(exc).__name__)
            ),
        )

    # ----- contexts -----

    @route(
        api,
        wire.Routes.CREATE_CONTEXT,
        tags=["contexts"],
        openapi_extra=oa.json_body(oa.CONTEXT_CREATE),
        responses=oa.responses(201, oa.CONTEXT, 400, 402, 403, 409),
    )
    async def create_context(request: Request) -> Response:
        body = await receive_body(request)
        made = await run_model(
            request, lambda p, b: b.create_context(p, body.checked()), render.context_json
        )
        return json_response(wire.Routes.CREATE_CONTEXT.status, made)

    @route(
        api,
        wire.Routes.LIST_CONTEXTS,
        tags=["contexts"],
        openapi_extra=oa.query_params(
            ("workspace", {"type": "string"}),
            ("tag", {"type": "string"}),
            ("type", {"type": "string", "enum": list(wire.CONTEXT_TYPES)}),
            ("limit", {"type": "integer", "minimum": 1, "maximum": wire.LIST_MAX_LIMIT}),
            ("offset", {"type": "integer", "minimum": 0}),
        ),
        responses=oa.responses(200, oa.PAGE, 400, 403),
    )
    async def list_contexts(request: Request) -> Response:
        page = await run_model(
            request, lambda p, b: b.list_contexts(p, query_params(request)), render.page_json
        )
        return json_response(wire.Routes.LIST_CONTEXTS.status, page)

    @route(
        api,
        wire.Routes.BULK_UPSERT,
        tags=["contexts"],
        openapi_extra=oa.json_body(oa.BULK_UPSERT),
        responses=oa.responses(200, oa.BULK_RESULT, 400, 402, 403),
    )
    async def bulk_upsert(request: Request) -> Response:
        body = await receive_body(request)
        done = await run_model(
            request, lambda p, b: b.bulk_upsert(p, body.checked()), render.bulk_json
        )
        return json_response(wire.Routes.BULK_UPSERT.status, done)

    @route(
        api,
        wire.Routes.GET_CONTEXT_BY_EXTERNAL,
        tags=["contexts"],
        openapi_extra=oa.EXTERNAL_ID_PARAM,
        responses=oa.responses(200, oa.CONTEXT, 400, 403, 404),
    )
    async def get_by_external(request: Request) -> Response:
        if not _one_segment(request):  # wire.PATH_SEPARATOR: another path, no route has it
            raise _route_not_found(request)
        found = await run_model(
            request,
            lambda p, b: b.get_context_by_external(p, external_id_from(request)),
            render.context_json,
            lone_read=True,
        )
        return json_response(wire.Routes.GET_CONTEXT_BY_EXTERNAL.status, found)

    @route(
        api,
        wire.Routes.GET_CONTEXT,
        tags=["contexts"],
        openapi_extra=oa.ID_PARAM,
        responses=oa.responses(200, oa.CONTEXT, 400, 403, 404),
    )
    async def get_context(request: Request) -> Response:
        found = await run_model(
            request,
            lambda p, b: b.get_context(p, path_text(request, "context_id")),
            render.context_json,
            lone_read=True,
        )
        return json_response(wire.Routes.GET_CONTEXT.status, found)

    @route(
        api,
        wire.Routes.UPDATE_CONTEXT,
        tags=["contexts"],
        openapi_extra=oa.merged(oa.ID_PARAM, oa.json_body(oa.CONTEXT_UPDATE)),
        responses=oa.responses(200, oa.CONTEXT, 400, 403, 404, 409),
    )
    async def update_context(request: Request) -> Response:
        body = await receive_body(request)

        changed = await run_model(
            request,
            lambda p, b: b.update_context(p, path_text(request, "context_id"), body.checked()),
            render.context_json,
        )
        return json_response(wire.Routes.UPDATE_CONTEXT.status, changed)

    @route(
        api,
        wire.Routes.DELETE_CONTEXT,
        tags=["contexts"],
        openapi_extra=oa.ID_PARAM,
        responses=oa.responses(204, None, 400, 403, 404),
    )
    async def delete_context(request: Request) -> Response:
        await run_model(
            request, lambda p, b: b.delete_context(p, path_text(request, "context_id")), _nothing
        )
        return Response(status_code=wire.Routes.DELETE_CONTEXT.status)

    # ----- workspaces -----

    @route(
        api,
        wire.Routes.LIST_WORKSPACES,
        tags=["workspaces"],
        responses=oa.responses(200, oa.WORKSPACES, 403),
    )
    async def list_workspaces(request: Request) -> Response:
        found = await run_model(request, lambda p, b: b.list_workspaces(p), render.workspaces_json)
        return json_response(wire.Routes.LIST_WORKSPACES.status, found)

    @route(
        api,
        wire.Routes.CREATE_WORKSPACE,
        tags=["workspaces"],
        openapi_extra=oa.json_body(oa.WORKSPACE_CREATE),
        responses=oa.responses(201, oa.WORKSPACE, 400, 403, 409),
    )
    async def create_workspace(request: Request) -> Response:
        body = await receive_body(request)

        made = await run_model(
            request, lambda p, b: b.create_workspace(p, body.checked()), render.workspace_json
        )
        return json_response(wire.Routes.CREATE_WORKSPACE.status, made)

    @route(
        api,
        wire.Routes.ARCHIVE_WORKSPACE,
        tags=["workspaces"],
        openapi_extra=oa.SLUG_PARAM,
        responses=oa.responses(200, oa.WORKSPACE, 400, 403, 404),
    )
    async def archive_workspace(request: Request) -> Response:
        archived = await run_model(
            request,
            lambda p, b: b.archive_workspace(p, path_text(request, "slug", "slug")),
            render.workspace_json,
        )
        return json_response(wire.Routes.ARCHIVE_WORKSPACE.status, archived)

    @route(
        api,
        wire.Routes.DELETE_WORKSPACE,
        tags=["workspaces"],
        openapi_extra=oa.SLUG_PARAM,
        responses=oa.responses(204, None, 400, 403, 404, 409),
    )
    async def delete_workspace(request: Request) -> Response:
        await run_model(
            request,
            lambda p, b: b.delete_workspace(p, path_text(request, "slug", "slug")),
            _nothing,
        )
        return Response(status_code=wire.Routes.DELETE_WORKSPACE.status)

    # ----- search -----

    @route(
        api,
        wire.Routes.SEARCH,
        tags=["search"],
        openapi_extra=oa.json_body(oa.SEARCH),
        responses=oa.responses(200, oa.SEARCH_RESULT, 400, 403),
    )
    async def search(request: Request) -> Response:
        body = await receive_body(request)
        hits = await run_model(
            request, lambda p, b: b.search(p, body.checked()), render.search_json
        )
        return json_response(wire.Routes.SEARCH.status, hits)

    # ----- Agent Memory Layer -----

    @route(
        api,
        wire.Routes.START_SESSION,
        tags=["agent"],
        openapi_extra=oa.json_body(oa.SESSION_START),
        responses=oa.responses(201, oa.SESSION, 400, 403, 404),
    )
    async def start_session(request: Request) -> Response:
        body = await receive_body(request)

        session = await run_model(
            request, lambda p, b: b.agent.start_session(p, body.checked()), render.session_json
        )
        return json_response(wire.Routes.START_SESSION.status, session)

    @route(
        api,
        wire.Routes.GET_SESSION,
        tags=["agent"],
        openapi_extra=oa.SESSION_ID_PARAM,
        responses=oa.responses(200, oa.SESSION, 400, 403, 404),
    )
    async def get_session(request: Request) -> Response:
        session = await run_model(
            request,
            lambda p, b: b.agent.get_session(p, path_text(request, "session_id")),
            render.session_json,
        )
        return json_response(wire.Routes.GET_SESSION.status, session)

    @route(
        api,
        wire.Routes.END_SESSION,
        tags=["agent"],
        openapi_extra=oa.merged(oa.SESSION_ID_PARAM, oa.json_body(oa.SESSION_END)),
        responses=oa.responses(200, oa.SESSION, 400, 403, 404),
    )
    async def end_session(request: Request) -> Response:
        body = await receive_body(request)

        session = await run_model(
            request,
            lambda p, b: b.agent.end_session(p, path_text(request, "session_id"), body.checked()),
            render.session_json,
        )
        return json_response(wire.Routes.END_SESSION.status, session)

    @route(
        api,
        wire.Routes.CHECKPOINT,
        tags=["agent"],
        openapi_extra=oa.merged(oa.SESSION_ID_PARAM, oa.json_body(oa.CHECKPOINT_BODY)),
        responses=oa.responses(201, oa.CHECKPOINT, 400, 403, 404, 409),
    )
    async def checkpoint(request: Request) -> Response:
        body = await receive_body(request)

        cp = await run_model(
            request,
            lambda p, b: b.agent.checkpoint(p, path_text(request, "session_id"), body.checked()),
            render.checkpoint_json,
        )
        return json_response(wire.Routes.CHECKPOINT.status, cp)

    @route(
        api,
        wire.Routes.RESUME,
        tags=["agent"],
        openapi_extra=oa.SESSION_ID_PARAM,
        responses=oa.responses(200, oa.RESUME, 400, 403, 404),
    )
    async def resume(request: Request) -> Response:
        found = await run_model(
            request,
            lambda p, b: b.agent.resume(p, path_text(request, "session_id")),
            render.resume_json,
        )
        return json_response(wire.Routes.RESUME.status, found)

    @route(
        api,
        wire.Routes.LIST_TASKS,
        tags=["agent"],
        openapi_extra=oa.SESSION_ID_PARAM,
        responses=oa.responses(200, oa.TASKS, 400, 403, 404),
    )
    async def list_tasks(request: Request) -> Response:

        def show(tasks: list[r.AgentTask]) -> dict[str, Any]:
            return {"items": [render.task_json(t) for t in tasks]}

        listed = await run_model(
            request, lambda p, b: b.agent.list_tasks(p, path_text(request, "session_id")), show
        )
        return json_response(wire.Routes.LIST_TASKS.status, listed)

    @route(
        api,
        wire.Routes.UPSERT_TASK,
        tags=["agent"],
        openapi_extra=oa.json_body(oa.TASK_BODY),
        responses={**oa.responses(201, oa.TASK, 400, 403, 404, 422), **oa.responses(200, oa.TASK)},
    )
    async def upsert_task(request: Request) -> Response:
        body = await receive_body(request)

        def show(done: tuple[r.AgentTask, bool]) -> tuple[dict[str, Any], bool]:
            return render.task_json(done[0]), done[1]

        task, created = await run_model(
            request, lambda p, b: b.agent.upsert_task(p, body.checked()), show
        )
        return json_response(wire.Routes.UPSERT_TASK.status if created else 200, task)

    @route(
        api,
        wire.Routes.TICK_TASK,
        tags=["agent"],
        openapi_extra=oa.merged(oa.TASK_ID_PARAM, oa.json_body(oa.TICK_BODY)),
        responses=oa.responses(200, oa.TASK, 400, 403, 404, 422),
    )
    async def tick_task(request: Request) -> Response:
        body = await receive_body(request)

        task = await run_model(
            request,
            lambda p, b: b.agent.tick_task(p, path_text(request, "task_id"), body.checked()),
            render.task_json,
        )
        return json_response(wire.Routes.TICK_TASK.status, task)

    @route(
        api,
        wire.Routes.ADD_LESSON,
        tags=["agent"],
        openapi_extra=oa.json_body(oa.LESSON_BODY),
        responses=oa.responses(201, oa.LESSON, 400, 403, 404),
    )
    async def add_lesson(request: Request) -> Response:
        body = await receive_body(request)

        lesson = await run_model(
            request, lambda p, b: b.agent.add_lesson(p, body.checked()), render.lesson_json
        )
        return json_response(wire.Routes.ADD_LESSON.status, lesson)

    @route(
        api,
        wire.Routes.HANDOFF,
        tags=["agent"],
        openapi_extra=oa.json_body(oa.HANDOFF_BODY),
        responses=oa.responses(201, oa.HANDOFF, 400, 403, 404, 503),
    )
    async def handoff(request: Request) -> Response:
        body = await receive_body(request)

        written = await run_model(
            request, lambda p, b: b.agent.handoff(p, body.checked()), render.handoff_json
        )
        return json_response(wire.Routes.HANDOFF.status, written)

    @route(
        api,
        wire.Routes.BOOT,
        tags=["agent"],
        openapi_extra=oa.json_body(oa.BOOT_BODY),
        responses=oa.responses(200, oa.BOOT, 400, 403),
    )
    async def boot(request: Request) -> Response:
        body = await receive_body(request)

        pack = await run_model(
            request, lambda p, b: b.agent.boot(p, body.checked()), render.boot_json
        )
        return json_response(wire.Routes.BOOT.status, pack)

    mount_root(api)
    if control:
        # imported here: the dashboard's templates and the adapter's path rules (which
        # import the Anthropic SDK) cost a second of start-up no fake without it pays
        from fake_contextq.http.dashboard import mount_dashboard

        mount_control(api)
        mount_dashboard(api)
    return api


class Observed:
    """Pure-ASGI wrapper: records each ContextQ request in the journal and plays faults.

    Control routes (``/_fake/``) and a served fake's root page are neither journaled nor
    subject to faults: they are the fake's own, not ContextQ's.
    """

    def __init__(self, app: ASGIApp, bound: Binding) -> None:
        self.app = app
        self.bound = bound
        self.journal = bound.journal
        self.faults = bound.faults
        self._delays: set[asyncio.Future[None]] = set()

    def shutting_down(self) -> None:
        """The server is shutting down: end the dashboard's live streams and cut short the
        injected delays, which would otherwise keep it waiting for them (a delay may be
        minutes long). Called on the server's event loop."""
        self.bound.closing.set()
        for delay in self._delays:
            delay.cancel()

    async def _delay(self, seconds: float) -> None:
        """Wait out a fault's delay, or until the server shuts down, then answer as usual."""
        sleeping = asyncio.ensure_future(self.faults.sleep(seconds))
        self._delays.add(sleeping)
        try:
            await sleeping
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the request itself was cancelled, not only its delay
        finally:
            self._delays.discard(sleeping)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[SCOPE_KEY] = self.bound
        path: str = scope.get("path", "")
        if (
            scope["type"] != "http"
            or path.startswith(CONTROL_PREFIX)
            or (is_root_page(scope) and SERVED_MCP_KEY in scope)
        ):
            await self.app(scope, receive, send)
            return
        await self.observe(scope, receive, send, self.app)

    async def observe(self, scope: Scope, receive: Receive, send: Send, inner: ASGIApp) -> None:
        """Serve the request with ``inner``, journaled and subject to faults (``/mcp`` is
        served by the MCP endpoint through here)."""
        path: str = scope.get("path", "")
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        method: str = scope["method"]
        status: int | None = None
        recorded = False
        fault = self.faults.take(method, path)
        number = self.journal.next_number()
        at = time.time()
        asked: list[bytes] = []
        answered: list[bytes] = []
        kept = [0, 0, False]  # request bytes, answer bytes kept; whether any were cut

        def keep(into: list[bytes], which: int, chunk: bytes) -> None:
            room = BODY_KEPT - kept[which]
            if len(chunk) > room:
                kept[2] = True
                chunk = chunk[:room]
            if chunk:
                into.append(chunk)
                kept[which] += len(chunk)

        async def received() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                keep(asked, 0, message.get("body", b""))
            return message

        def record() -> None:
            # Recorded before the last byte leaves, so a client that has its answer (or its
            # dropped connection) always finds the request in the journal.
            nonlocal recorded
            if recorded:
                return
            recorded = True
            query = scope.get("query_string", b"")
            text = query.decode("latin-1") if isinstance(query, bytes) else str(query)
            self.journal.record(
                JournalEntry(
                    method=method,
                    path=path,
                    # a credential-named value (?token=, &api_key=) shown as ***, as anywhere
                    query=redact("?" + text)[1:] if text else text,
                    status=status,
                    tenant_id=state.get("tenant_id"),
                    duration=time.perf_counter() - started,
                    fault=fault is not None,
                    number=number,
                    at=at,
                    request_body=b"".join(asked),
                    response_body=b"".join(answered),
                    body_cut=bool(kept[2]),
                )
            )

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                keep(answered, 1, message.get("body", b""))
                if not message.get("more_body"):
                    record()
            await send(message)

        try:
            if fault is not None:
                if fault.delay:
                    await self._delay(fault.delay)
                if fault.drop:
                    record()
                    await _drop_connection(send)
                    return
                if fault.status is not None:
                    body = wire.error_body(
                        _msgs.INJECTED_FAULT,
                        _msgs.INJECTED_FAULT_MSG.format(method=method, path=path),
                    )
                    await observe(
                        {
                            "type": "http.response.start",
                            "status": fault.status,
                            "headers": _JSON_HEADERS,
                        }
                    )
                    await observe({"type": "http.response.body", "body": json.dumps(body).encode()})
                    return
            await inner(scope, received, observe)
        finally:
            record()


def _nothing(_: object) -> None:
    return None


async def _drop_connection(send: Send) -> None:
    """Close the client's connection without an answer.

    Under uvicorn, ``send`` is bound to the request cycle that owns the socket; closing
    it is what a crashed server looks like to the client. In-process there is no socket,
    so the transport is told through ``ConnectionDropped``.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise ConnectionDropped()
    transport.close()
    await asyncio.sleep(0)  # let the server see the connection is gone before it answers
