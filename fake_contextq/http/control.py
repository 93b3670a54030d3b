"""Control routes under ``/_fake/``: what a Python test does on the object, over HTTP.

They exist only on a served fake started with a control token, and answer only to
that token; an API key is refused here, so ordinary clients can never reach them.
"""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, render
from fake_contextq.domain._validate import Issues, Reader, decode_json
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import AuditChainError, Unauthorized
from fake_contextq.domain.keys import key_display_prefix
from fake_contextq.domain.quota import DEFAULT_PLAN
from fake_contextq.http._io import Binding, binding, json_response, read_body
from fake_contextq.service.faults import Fault, Faults


def new_control_token() -> str:
    return "fkc_" + secrets.token_hex(16)


def _tenant_json(backend: ContextQBackend, tenant_id: int) -> dict[str, Any]:
    t = backend.tenant(tenant_id)
    return {
        "id": t.id,
        "name": t.name,
        "plan": t.plan,
        "createdAt": wire.timestamp(t.created_at),
    }


async def _object(request: Request) -> Reader:
    raw = await read_body(request)
    issues = Issues()
    return Reader(decode_json(raw) if raw else {}, issues)


#: The realm of the control routes' 401 challenge: the fake's own routes, not ContextQ's,
#: answer to the control token, not to an API key.
CONTROL_REALM = "fake-contextq-control"


def token_matches(given: str, token: str) -> bool:
    """Whether ``given`` (from a header or a URL) is the control token, in constant time.
    Compared as bytes: compare_digest refuses str holding anything but ASCII, and a header
    may hold any byte (Starlette reads it as latin-1)."""
    return secrets.compare_digest(given.strip().encode("latin-1", "replace"), token.encode())


def inject(faults: Faults, body: Reader) -> Fault:
    """Inject the fault ``body`` describes (``POST /_fake/faults``, the dashboard's form),
    or raise ``ValidationFailed`` naming every field that makes no sense."""
    method = body.string("method", required=True, min_len=1)
    path = body.string("path", required=True, min_len=1)
    status = body.integer("status", minimum=200, maximum=599)
    delay = body.obj.get("delay")
    if delay is not None and (isinstance(delay, bool) or not isinstance(delay, int | float)):
        body.issues.add(
            ("delay",), _msgs.EXPECTED.format(expected="number", received=type(delay).__name__)
        )
    drop = body.obj.get("drop", False)
    if not isinstance(drop, bool):
        body.issues.add(
            ("drop",), _msgs.EXPECTED.format(expected="boolean", received=type(drop).__name__)
        )
    times = body.obj.get("times", 1)
    if times is not None and (isinstance(times, bool) or not isinstance(times, int)):
        body.issues.add(
            ("times",),
            _msgs.EXPECTED.format(expected="integer or null", received=type(times).__name__),
        )
    body.issues.check()
    assert method is not None and path is not None
    try:
        return faults.inject(method, path, status=status, delay=delay, drop=drop, times=times)
    except ValueError as exc:
        body.issues.add(("",), str(exc))
        body.issues.check()
        raise


def mount_control(api: FastAPI) -> None:
    """Add the control routes to ``api``; each checks the bound control token first."""

    def guard(request: Request) -> Binding:
        bound = binding(request)
        token = bound.control_token
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        sent = scheme.lower() == wire.AUTH_SCHEME.lower() and bool(given.strip())
        if token is None or not sent or not token_matches(given, token):
            raise Unauthorized(_msgs.CONTROL_TOKEN_REQUIRED, token_sent=sent, realm=CONTROL_REALM)
        return bound

    def tenant_id(raw: str) -> int:
        return parse.parse_id(raw, "tenant_id")

    opts: dict[str, Any] = {"tags": ["control"], "include_in_schema": False}

    @api.get("/_fake/health", **opts)
    async def health() -> Response:
        return json_response(200, {"ok": True})

    @api.get("/_fake/tenants", **opts)
    async def list_tenants(request: Request) -> Response:
        bound = guard(request)
        return json_response(
            200, {"items": [_tenant_json(bound.backend, t.id) for t in bound.backend.tenants()]}
        )

    @api.post("/_fake/tenants", **opts)
    async def create_tenant(request: Request) -> Response:
        bound = guard(request)
        body = await _object(request)
        name = body.string("name", nullable=True, min_len=1, max_len=200)
        plan = body.string("plan", nullable=True) or DEFAULT_PLAN
        body.issues.check()
        tenant = bound.backend.create_tenant(name, plan)
        return json_response(201, _tenant_json(bound.backend, tenant.id))

    @api.put("/_fake/tenants/{tid}/plan", **opts)
    async def set_plan(request: Request, tid: str) -> Response:
        bound = guard(request)
        body = await _object(request)
        plan = body.string("plan", required=True)
        body.issues.check()
        assert plan is not None
        bound.backend.set_plan(tenant_id(tid), plan)
        return json_response(200, _tenant_json(bound.backend, tenant_id(tid)))

    @api.post("/_fake/tenants/{tid}/keys", **opts)
    async def mint_key(request: Request, tid: str) -> Response:
        bound = guard(request)
        body = await _object(request)
        scopes = body.string_list("scopes", max_items=3, max_item_len=10)
        body.issues.check()
        held = wire.DEFAULT_KEY_SCOPES if scopes is None else scopes
        key = bound.backend.mint_key(tenant_id(tid), held)
        return json_response(
            201,
            {
                "key": key,
                "prefix": key_display_prefix(key),
                "scopes": list(held),
            },
        )

    @api.post("/_fake/tenants/{tid}/workspaces", **opts)
    async def create_workspace(request: Request, tid: str) -> Response:
        bound = guard(request)
        body = await _object(request)
        slug = body.string("slug", required=True)
        name = body.string("name", nullable=True)
        body.issues.check()
        assert slug is not None
        ws = bound.backend.add_workspace(tenant_id(tid), slug, name)
        return json_response(201, render.workspace_json(ws))

    @api.get("/_fake/tenants/{tid}/contexts", **opts)
    async def tenant_contexts(request: Request, tid: str) -> Response:
        bound = guard(request)
        rows = bound.backend.contexts(tenant_id(tid))
        return json_response(200, {"items": [render.context_json(c) for c in rows]})

    @api.get("/_fake/tenants/{tid}/workspaces", **opts)
    async def tenant_workspaces(request: Request, tid: str) -> Response:
        bound = guard(request)
        return json_response(200, render.workspaces_json(bound.backend.workspaces(tenant_id(tid))))

    @api.post("/_fake/reset", **opts)
    async def reset(request: Request) -> Response:
        bound = guard(request)
        bound.reset()
        return Response(status_code=204)

    @api.get("/_fake/journal", **opts)
    async def journal(request: Request) -> Response:
        bound = guard(request)
        return json_response(200, {"entries": [e.as_dict() for e in bound.journal]})

    @api.delete("/_fake/journal", **opts)
    async def clear_journal(request: Request) -> Response:
        bound = guard(request)
        bound.journal.clear()
        return Response(status_code=204)

    @api.get("/_fake/faults", **opts)
    async def list_faults(request: Request) -> Response:
        bound = guard(request)
        return json_response(200, {"items": [f.as_dict() for f in bound.faults.active()]})

    @api.post("/_fake/faults", **opts)
    async def inject_fault(request: Request) -> Response:
        bound = guard(request)
        body = await _object(request)
        fault = inject(bound.faults, body)
        return json_response(201, fault.as_dict())

    @api.delete("/_fake/faults", **opts)
    async def clear_faults(request: Request) -> Response:
        bound = guard(request)
        bound.faults.clear()
        return Response(status_code=204)

    @api.get("/_fake/audit", **opts)
    async def audit_log(request: Request) -> Response:
        bound = guard(request)
        rows = [
            {**row.hashed_fields(), "prev_hash": row.prev_hash, "hash": row.hash}
            for row in bound.backend.audit_rows()
        ]
        return json_response(200, {"items": rows})

    @api.post("/_fake/audit/verify", **opts)
    async def verify(request: Request) -> Response:
        bound = guard(request)
        try:
            rows = bound.backend.verify_audit_chain()
        except AuditChainError as exc:
            return json_response(
                409,
                {
                    "ok": False,
                    "error": "audit_chain_broken",
                    "rowId": exc.row_id,
                    "message": exc.reason,
                },
            )
        return json_response(200, {"ok": True, "rows": rows})
