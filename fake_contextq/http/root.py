"""The served fake's root page (``GET /``): what this server serves, for whoever opens the
URL it printed. The REST API, ``/mcp``, the OpenAPI document and, with the control
routes on, the dashboard (its path, never the control token); HTML for a browser, JSON
for anything else. It says it is the fake, so nobody takes it for ContextQ's answer.

Only a served fake answers here (its MCP endpoint marks each request, ``SERVED_MCP_KEY``):
in-process, ``/`` stays the 404 ContextQ's router answers. Like the control routes, the
page is neither journaled nor subject to faults.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError
from fake_contextq.http._io import DASHBOARD_PREFIX, SERVED_MCP_KEY, binding, json_response
from fake_contextq.service.service import OPENAPI_PATH

PATH = "/"
METHODS = ("GET", "HEAD")
#: Where the REST routes live: the path every route of the contract's table starts with.
API_PATH = posixpath.commonpath([route.template for route in wire.ROUTES])
#: The page runs no script and loads nothing: it only links.
_HTML_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
_HEADERS = {"vary": "accept", "cache-control": "no-store"}

#: ``GET /`` (and ``HEAD``), in every app of the fake's own routes.
router = APIRouter(include_in_schema=False)


def is_root_page(scope: Mapping[str, Any]) -> bool:
    """Whether the request asks for the root page (a POST to ``/`` is ContextQ's 404)."""
    return scope.get("path") == PATH and scope.get("method") in METHODS


def wants_html(accept: str) -> bool:
    """Whether ``Accept`` names ``text/html`` among its media types, as a browser's does
    when it opens a page; anything else (curl's ``*/*``, no header) gets JSON."""
    return any(r.split(";")[0].strip().lower() == "text/html" for r in accept.split(","))


def served(request: Request) -> dict[str, Any]:
    """What the root page lists: every URL this server serves, absolute."""
    base = str(request.base_url).rstrip("/")
    listed: dict[str, Any] = {
        "server": "fake-contextq",
        "version": request.app.version,
        "fake": True,
        "note": _msgs.ROOT_NOTE.format(version=request.app.version),
        "api": base + API_PATH,
        "mcp": base + request.scope[SERVED_MCP_KEY],
        "openapi": base + OPENAPI_PATH,
    }
    if binding(request).control_token is not None:
        listed["dashboard"] = base + DASHBOARD_PREFIX
    return listed


@router.api_route(PATH, methods=list(METHODS))
async def root(request: Request) -> Response:
    if SERVED_MCP_KEY not in request.scope:  # in-process: no root page, as ContextQ has none
        raise ApiError(
            _msgs.NOT_FOUND, _msgs.ROUTE_NOT_FOUND.format(method=request.method, path=PATH)
        )
    listed = served(request)
    if not wants_html(request.headers.get("accept", "")):
        answer = json_response(200, listed)
        answer.headers.update(_HEADERS)
        return answer
    from fake_contextq.dashboard import page  # Jinja2, only for a browser

    return HTMLResponse(
        page("root.html", base=str(request.base_url).rstrip("/"), **listed),
        headers={**_HEADERS, **_HTML_HEADERS},
    )
