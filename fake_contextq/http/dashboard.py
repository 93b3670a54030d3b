"""The dashboard's routes under ``/_fake/ui``: HTML pages of what the fake holds and serves.

They exist where the control routes do (a served fake started with a control token) and
answer only to that token: once in the URL (``?token=``), which puts a cookie scoped to
this path in its place and redirects to the same page without it, then from the cookie;
``Authorization: Bearer <token>`` works too, for scripts. Anything else is a 401 page.
The forms change state through the same functions as the control routes.

The cookie is ``SameSite=Strict``, but a browser counts every port of one host as one
site: a page served from another port of 127.0.0.1 would send it along with a form it
posts here. So a change (every POST) is refused with a 403 page saying why unless it
comes from the dashboard's own origin (``Origin``, or ``Sec-Fetch-Site`` where a browser
sent none or ``null``), and, when the cookie authenticates it, unless the form carries the
form token its pages hold (``form_token``: keyed by the control token, bound to the
cookie, compared in constant time). A request with neither header (curl holding the
cookie) needs the form token all the same; one authenticated by the ``Authorization``
header needs none, as no browser attaches that header to another page's form.

The pages read the state through ``fake_contextq.dashboard``; the journal page follows
new requests live over server-sent events, pushed by the journal as it records them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, NamedTuple, TypeVar
from urllib.parse import urlencode, urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from adapter import wire
from fake_contextq import _msgs, dashboard
from fake_contextq.domain import parse
from fake_contextq.domain._validate import Issues, Reader
from fake_contextq.domain.errors import WWW_AUTHENTICATE, ApiError, ValidationFailed
from fake_contextq.http._io import DASHBOARD_PREFIX, Binding, binding
from fake_contextq.http.control import CONTROL_REALM, inject, token_matches
from fake_contextq.service.journal import JournalEntry

__all__ = [
    "COOKIE",
    "FORM_TOKEN_FIELD",
    "LIVE_TICK",
    "PREFIX",
    "SHOWN",
    "Denied",
    "cookie_value",
    "dashboard_url",
    "denied_page",
    "error_page",
    "form_token",
    "router",
]

PREFIX = DASHBOARD_PREFIX
COOKIE = "fake_contextq_ui"
#: The hidden field of every form that changes state: the form token (``form_token``).
FORM_TOKEN_FIELD = "form_token"
#: What ``Sec-Fetch-Site`` says of a request the dashboard's own pages (or the user) made.
_OWN_FETCH_SITES = ("same-origin", "none")
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Rows a page shows at most (the newest, or the first by the chosen order).
SHOWN = 500
#: How often a live stream looks whether the server is shutting down (seconds).
LIVE_TICK = 0.5
#: Pages run no inline script and load nothing from elsewhere: even a value that escaped
#: escaping could not run.
_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_COLUMNS = (
    ("id", "id"),
    ("title", "title"),
    ("type", "type"),
    ("workspace", "workspace"),
    ("external_id", "external id"),
    ("updated", "updated"),
)
T = TypeVar("T")

#: The dashboard's pages and forms, in a control app only (``own_routes``, which installs
#: ``denied_page`` for the ``Denied`` they raise: a router holds no exception handlers).
router = APIRouter(prefix=PREFIX, include_in_schema=False)


class Denied(Exception):
    """A request the dashboard does not answer (401): ``denied_page`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Refused(Denied):
    """A change refused (403): it did not come from the dashboard's own pages."""


def cookie_value(token: str) -> str:
    """What the cookie holds: derived from the control token, not the token itself, so a
    cookie read off a browser does not open the control API."""
    return hashlib.sha256(b"fake-contextq dashboard\0" + token.encode()).hexdigest()


def form_token(token: str, cookie: str | None = None) -> str:
    """The token the forms carry: an HMAC of the session cookie's value (``cookie``, by
    default the one ``token`` gives) keyed by the control token. A page of another
    origin can neither read it off a dashboard page nor work it out."""
    bound_to = cookie_value(token) if cookie is None else cookie
    message = b"fake-contextq dashboard form\0" + bound_to.encode("utf-8", "replace")
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def dashboard_url(base_url: str, token: str) -> str:
    """The URL that opens the dashboard once, carrying the token."""
    return f"{base_url}{PREFIX}?{urlencode({'token': token})}"


def _authenticated(request: Request) -> tuple[Binding, bool]:
    """The request's binding, and whether the cookie (not the header) let it in."""
    bound = binding(request)
    token = bound.control_token
    if token is None:  # not mounted without a token; kept for safety
        raise Denied(_msgs.DASHBOARD_TOKEN_REQUIRED)
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() == wire.AUTH_SCHEME.lower() and token_matches(given, token):
        return bound, False
    cookie = request.cookies.get(COOKIE)
    if cookie is not None and secrets.compare_digest(
        cookie.encode("latin-1", "replace"), cookie_value(token).encode()
    ):
        return bound, True
    raise Denied(_msgs.DASHBOARD_TOKEN_REQUIRED)


async def _viewer(request: Request) -> Binding:
    """The bound fake, if the token (header or cookie) let the request in. Async so
    FastAPI runs it on the loop, not in a worker thread."""
    return _authenticated(request)[0]


#: A page's fake, once the token let the request in.
Viewer = Annotated[Binding, Depends(_viewer)]


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """``url``'s origin (scheme, host, port), or None when it names none (``null``)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if not scheme or not parts.hostname:
        return None
    return scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS.get(scheme)


def _from_own_page(request: Request) -> None:
    """Refuse a change another page sent: by its ``Origin``, or by ``Sec-Fetch-Site``
    where the browser sent none, or sent ``null`` (as it does for the pages' own forms:
    they are served with ``Referrer-Policy: no-referrer``). A request with neither header
    (a script) passes here."""
    own = str(request.base_url).rstrip("/")
    origin = request.headers.get("origin")
    site = request.headers.get("sec-fetch-site")
    if origin is not None and origin.strip() != "null":
        if _origin(origin) is None or _origin(origin) != _origin(own):
            raise _Refused(_msgs.DASHBOARD_CROSS_ORIGIN.format(origin=origin, expected=own))
    elif site is not None:
        if site.strip().lower() not in _OWN_FETCH_SITES:
            raise _Refused(_msgs.DASHBOARD_CROSS_SITE.format(site=site))
    elif origin is not None:  # null, and no word from the browser on where it came from
        raise _Refused(_msgs.DASHBOARD_CROSS_ORIGIN.format(origin=origin, expected=own))


class _Change(NamedTuple):
    bound: Binding
    form: dict[str, str]


async def _guard_change(request: Request) -> _Change:
    """Let a change (a form's POST) through only from the dashboard's own pages, or from a
    script holding the token in its header; the binding and the form's text fields."""
    _from_own_page(request)
    bound, by_cookie = _authenticated(request)
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    if by_cookie:
        given = form.get(FORM_TOKEN_FIELD)
        if given is None:
            raise _Refused(_msgs.DASHBOARD_NO_FORM_TOKEN.format(field=FORM_TOKEN_FIELD))
        assert bound.control_token is not None  # _authenticated refused the request else
        expected = form_token(bound.control_token, request.cookies[COOKIE])
        if not secrets.compare_digest(given.encode("utf-8", "replace"), expected.encode()):
            raise _Refused(_msgs.DASHBOARD_WRONG_FORM_TOKEN.format(field=FORM_TOKEN_FIELD))
    return _Change(bound, form)


#: A form's change, once ``_guard_change`` let it through.
Change = Annotated[_Change, Depends(_guard_change)]


def _html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=_HEADERS)


async def _read(bound: Binding, work: Callable[[], T]) -> T:
    """Run ``work`` (which reads the store) where the store's work runs."""
    if bound.executor is None:
        return work()
    return await asyncio.get_running_loop().run_in_executor(bound.executor, work)


def _page(request: Request, template: str, nav: str, **values: Any) -> HTMLResponse:
    values.setdefault("notice", request.query_params.get("done"))
    values.setdefault("problems", [])
    token = binding(request).control_token
    return _html(
        dashboard.page(
            template,
            base=PREFIX,
            nav=nav,
            served=str(request.base_url).rstrip("/"),
            form_token_field=FORM_TOKEN_FIELD,
            form_token="" if token is None else form_token(token),
            **values,
        )
    )


def _tenant_id(raw: str) -> int:
    return parse.parse_id(raw, "tenant_id")


def _to_done(path: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"{PREFIX}{path}?{urlencode({'done': message})}", status_code=303)


def _fault_form(form: dict[str, str]) -> tuple[Reader, dict[str, Any]]:
    """The fault form's text fields as the JSON ``POST /_fake/faults`` takes, where each
    text reads as one; what does not read stays text, and the shared check names it."""
    body: dict[str, Any] = {"method": form.get("method", "").strip().upper()}
    body["path"] = form.get("path", "").strip()
    for name, kind in (("status", int), ("delay", float), ("times", int)):
        raw = form.get(name, "").strip()
        if raw:
            try:
                body[name] = kind(raw)
            except ValueError:
                body[name] = raw
        elif name == "times":
            body[name] = None  # empty: until cleared
    body["drop"] = form.get("drop") == "true"
    return Reader(body, Issues()), body


def error_page(request: Request, exc: ApiError) -> HTMLResponse:
    """A refusal inside the dashboard (an unknown tenant, a bad id) as a page."""
    page = _page(
        request,
        "error.html",
        "",
        status=exc.status,
        code=exc.code,
        message=str(exc) if isinstance(exc, ValidationFailed) else exc.message,
    )
    page.status_code = exc.status
    return page


async def denied_page(_: Request, exc: Exception) -> Response:
    """A request refused before any page: a 401 (no token) or a 403 (a change from
    elsewhere) page saying why."""
    assert isinstance(exc, Denied)
    if isinstance(exc, _Refused):
        return _html(dashboard.page("refused.html", reason=exc.reason), 403)
    denied = _html(dashboard.page("denied.html", reason=exc.reason), 401)
    denied.headers[WWW_AUTHENTICATE] = wire.bearer_challenge(CONTROL_REALM)
    return denied


@router.get("")
async def home(request: Request) -> Response:
    given = request.query_params.get("token")
    if given is not None:
        token = binding(request).control_token
        if token is None or not token_matches(given, token):
            raise Denied(_msgs.DASHBOARD_TOKEN_WRONG)
        # the token leaves the URL (history, a screenshot, a Referer) for the cookie
        moved = RedirectResponse(PREFIX, status_code=303, headers=_HEADERS)
        moved.set_cookie(
            COOKIE,
            cookie_value(token),
            path=PREFIX,
            httponly=True,
            samesite="strict",
        )
        return moved
    bound = await _viewer(request)

    def read() -> tuple[list[dashboard.TenantRow], dashboard.AuditStatus]:
        return dashboard.tenant_rows(bound.backend), dashboard.audit_status(bound.backend)

    rows, audit = await _read(bound, read)
    return _page(
        request, "tenants.html", "tenants", rows=rows, audit=audit, requests=bound.journal.served
    )


@router.get("/static/{name}", dependencies=[Depends(_viewer)])
async def static(name: str) -> Response:
    media = dashboard.STATIC.get(name)
    if media is None:
        raise ApiError(_msgs.NOT_FOUND, _msgs.DASHBOARD_NO_FILE.format(name=name))
    return Response(dashboard.static(name), media_type=media, headers=_HEADERS)


@router.get("/tenants/{tid}")
async def tenant(request: Request, tid: str, bound: Viewer) -> Response:
    tenant_id = _tenant_id(tid)
    query = request.query_params.get("q", "")
    sort = request.query_params.get("sort", "id")
    order: dashboard.Order = "desc" if request.query_params.get("order") == "desc" else "asc"
    workspace = request.query_params.get("workspace") or None

    def read() -> dict[str, Any]:
        row = dashboard.tenant_row(bound.backend, tenant_id)
        every = bound.backend.contexts(tenant_id)
        per_workspace: dict[str, int] = {}
        for c in every:
            if c.workspace is not None:
                per_workspace[c.workspace] = per_workspace.get(c.workspace, 0) + 1
        return {
            "row": row,
            "contexts": dashboard.find_contexts(every, query, sort, order, workspace)[:SHOWN],
            "workspaces": bound.backend.workspaces(tenant_id),
            "per_workspace": per_workspace,
            "keys": bound.backend.keys(tenant_id),
        }

    values = await _read(bound, read)
    links = {}
    for field, _ in _COLUMNS:
        flip = "desc" if field == sort and order == "asc" else "asc"
        params = {"q": query, "sort": field, "order": flip}
        if workspace:
            params["workspace"] = workspace
        links[field] = urlencode({k: v for k, v in params.items() if v})
    return _page(
        request,
        "tenant.html",
        "tenants",
        tab="contexts",
        query=query,
        sort=sort,
        order=order,
        workspace=workspace,
        columns=_COLUMNS,
        sort_links=links,
        **values,
    )


@router.get("/tenants/{tid}/contexts/{cid}")
async def context(request: Request, tid: str, cid: str, bound: Viewer) -> Response:
    tenant_id, context_id = _tenant_id(tid), parse.parse_id(cid, "id")

    def read() -> dict[str, Any]:
        row = dashboard.tenant_row(bound.backend, tenant_id)
        found = [c for c in bound.backend.contexts(tenant_id) if c.id == context_id]
        if not found:
            raise ApiError(_msgs.NOT_FOUND, _msgs.CONTEXT_NOT_FOUND.format(id=context_id))
        return {"row": row, "context": found[0]}

    values = await _read(bound, read)
    shown = values["context"]
    return _page(
        request,
        "context.html",
        "tenants",
        tab="contexts",
        size=f"{dashboard.text_bytes(shown.content)} bytes",
        metadata=dashboard.shown_json(shown.metadata),
        **values,
    )


@router.get("/tenants/{tid}/memory")
async def memory(request: Request, tid: str, bound: Viewer) -> Response:
    tenant_id = _tenant_id(tid)
    raw_open = request.query_params.get("open")
    opened = None if not raw_open else parse.parse_id(raw_open, "open")

    def read() -> dict[str, Any]:
        every = bound.backend.contexts(tenant_id)
        trees = dashboard.memory_trees(every)
        shown = next((c for c in every if c.id == opened), None)
        path = None
        for t in trees:
            for e in t.entries:
                if shown is not None and e.context_id == shown.id:
                    path = f"{t.workspace}: {e.path}"
        return {
            "row": dashboard.tenant_row(bound.backend, tenant_id),
            "trees": trees,
            "open": shown if path is not None else None,
            "open_path": path,
        }

    values = await _read(bound, read)
    return _page(request, "memory.html", "tenants", tab="memory", **values)


@router.get("/tenants/{tid}/agent")
async def agent(request: Request, tid: str, bound: Viewer) -> Response:
    tenant_id = _tenant_id(tid)

    def read() -> dict[str, Any]:
        return {
            "row": dashboard.tenant_row(bound.backend, tenant_id),
            "state": bound.backend.agent.state(tenant_id),
        }

    values = await _read(bound, read)
    children: dict[int, list[int]] = {}
    task_keys: dict[int, str] = {}
    for s in values["state"].sessions:
        if s.session.parent_session_id is not None:
            children.setdefault(s.session.parent_session_id, []).append(s.session.id)
        task_keys.update({t.id: t.key for t in s.tasks})
    return _page(
        request,
        "agent.html",
        "tenants",
        tab="agent",
        children=children,
        task_keys=task_keys,
        **values,
    )


def _wanted_of(request: Request) -> dashboard.JournalFilter:
    q = request.query_params
    return dashboard.JournalFilter(q.get("status", ""), q.get("route", ""), q.get("tenant", ""))


@router.get("/journal")
async def journal(request: Request, bound: Viewer) -> Response:
    wanted = _wanted_of(request)
    entries = dashboard.recent(list(bound.journal), wanted, SHOWN)
    params = {k: v for k, v in request.query_params.items() if k in ("status", "route", "tenant")}
    events = f"{PREFIX}/journal/events" + (f"?{urlencode(params)}" if params else "")
    return _page(
        request,
        "journal.html",
        "journal",
        wanted=wanted,
        entries=entries,
        total=len(bound.journal),
        requests_served=bound.journal.served,
        limit=SHOWN,
        limit_hit=len(entries) == SHOWN,
        events_url=events,
    )


@router.get("/journal/events", response_class=EventSourceResponse)
async def journal_events(request: Request, bound: Viewer) -> AsyncIterator[ServerSentEvent]:
    # the token is checked before the stream starts: inside it, a refusal came after
    # the 200 had gone out, and ended the stream with an error instead of a 401 page
    wanted = _wanted_of(request)
    loop = asyncio.get_running_loop()
    arrived: asyncio.Queue[JournalEntry] = asyncio.Queue()

    def push(entry: JournalEntry) -> None:  # on whichever thread recorded it
        with contextlib.suppress(RuntimeError):  # the loop has closed: the page is gone
            loop.call_soon_threadsafe(arrived.put_nowait, entry)

    stop = bound.journal.subscribe(push)
    try:
        yield ServerSentEvent(comment="following the journal", retry=1000)
        while not bound.closing.is_set():
            try:
                entry = await asyncio.wait_for(arrived.get(), LIVE_TICK)
            except TimeoutError:
                continue
            if wanted.matches(entry):
                yield ServerSentEvent(
                    event="request", id=str(entry.number), data=dashboard.entry_json(entry)
                )
    finally:
        stop()


@router.get("/journal/{number}")
async def request_page(request: Request, number: str, bound: Viewer) -> Response:
    entry = bound.journal.find(parse.parse_id(number, "number"))
    if entry is None:
        raise ApiError(_msgs.NOT_FOUND, _msgs.DASHBOARD_NO_REQUEST.format(number=number))
    return _page(
        request,
        "request.html",
        "journal",
        entry=entry,
        request_body=dashboard.shown_body(entry.request_body),
        response_body=dashboard.shown_body(entry.response_body),
    )


@router.get("/audit")
async def audit(request: Request, bound: Viewer) -> Response:
    def read() -> dict[str, Any]:
        rows = bound.backend.audit_rows()
        return {"audit": dashboard.audit_status(bound.backend), "rows": rows[::-1][:SHOWN]}

    return _page(request, "audit.html", "audit", **(await _read(bound, read)))


def _faults_page(request: Request, bound: Binding, **values: Any) -> HTMLResponse:
    values.setdefault(
        "form",
        {"method": "*", "path": "", "status": "503", "delay": "", "drop": False, "times": "1"},
    )
    return _page(request, "faults.html", "faults", faults=bound.faults.active(), **values)


@router.get("/faults")
async def faults(request: Request, bound: Viewer) -> Response:
    return _faults_page(request, bound)


@router.post("/faults")
async def inject_fault(request: Request, change: Change) -> Response:
    reader, body = _fault_form(change.form)
    try:
        fault = inject(change.bound.faults, reader)
    except ValidationFailed as exc:
        problems = [
            f"{i['path']}: {i['message']}" if i["path"] else i["message"] for i in exc.issues
        ]
        blank = dict.fromkeys(("method", "path", "status", "delay", "times"), "")
        shown = {**blank, **change.form, "drop": body["drop"]}
        page = _faults_page(request, change.bound, problems=problems, form=shown, notice=None)
        page.status_code = 400
        return page
    return _to_done("/faults", f"fault injected: {fault.method} {fault.path}")


@router.post("/faults/clear")
async def clear_faults(change: Change) -> Response:
    change.bound.faults.clear()
    return _to_done("/faults", "every fault cleared")


@router.post("/reset")
async def reset(change: Change) -> Response:
    await _read(change.bound, change.bound.reset)
    return _to_done("", "everything forgotten: no tenant, key, context, request or fault")
