"""The fake's own routes, none of them ContextQ's: the served root page and, with a
control token, the control routes and the dashboard under ``/_fake/``, each a router.

A FastAPI app, built once per process: the routes find the fake they serve in the
request's scope (``_io.Binding``). ContextQ's own API is not here; the service answers
it (``fake_contextq.service``)."""

from __future__ import annotations

import functools

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError
from fake_contextq.http import control as control_routes
from fake_contextq.http import root
from fake_contextq.http._io import DASHBOARD_PREFIX, error_response, json_response
from fake_contextq.service.openapi import DESCRIPTION, TITLE, VERSION

__all__ = ["own_routes"]


@functools.cache
def own_routes(*, control: bool) -> FastAPI:
    """The app of the fake's own routes; ``control``: with the control routes and the
    dashboard (each still checks the bound control token)."""
    api = FastAPI(
        title=TITLE,
        version=VERSION,
        description=DESCRIPTION,
        docs_url=None,
        openapi_url=None,  # the service serves the table's document
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

    api.include_router(root.router)
    if control:
        # imported here: the dashboard's templates and the adapter's path rules (which
        # import the Anthropic SDK) cost a second of start-up no fake without it pays
        from fake_contextq.http import dashboard

        api.include_router(control_routes.router)
        api.include_router(dashboard.router)
        api.add_exception_handler(dashboard.Denied, dashboard.denied_page)
    return api
