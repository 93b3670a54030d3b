"""Control routes under ``/_fake/``: what a Python test does on the object, over HTTP.

They exist only on a served fake started with a control token, and answer only to
that token; an API key is refused here, so ordinary clients can never reach them.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, render
from fake_contextq.domain._validate import Issues, Reader, decode_json
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.errors import AuditChainError, Unauthorized
from fake_contextq.domain.keys import key_display_prefix
from fake_contextq.domain.quota import DEFAULT_PLAN
from fake_contextq.http._io import CONTROL_PREFIX, Binding, binding, json_response, read_body
from fake_contextq.service.faults import Fault, Faults

__all__ = ["inject", "new_control_token", "router", "token_matches"]

#: The control routes, in a control app only (``own_routes``); all but ``/health`` check
#: the bound control token.
router = APIRouter(
    prefix=CONTROL_PREFIX.removesuffix("/"), tags=["control"], include_in_schema=False
)


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


async def _guard(request: Request) -> Binding:
    """The bound fake, if the request holds the control token (``Authorization: Bearer``);
    else a 401. Async so FastAPI runs it on the loop, not in a worker thread."""
    bound = binding(request)
    token = bound.control_token
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    sent = scheme.lower() == wire.AUTH_SCHEME.lower() and bool(given.strip())
    if token is None or not sent or not token_matches(given, token):
        raise Unauthorized(_msgs.CONTROL_TOKEN_REQUIRED, token_sent=sent, realm=CONTROL_REALM)
    return bound


#: A handler's fake, once the control token let the request in.
Controlled = Annotated[Binding, Depends(_guard)]


def _tenant_id(raw: str) -> int:
    return parse.parse_id(raw, "tenant_id")


@router.get("/health")
async def health() -> Response:
    return json_response(200, {"ok": True})


@router.get("/tenants")
async def list_tenants(bound: Controlled) -> Response:
    return json_response(
        200, {"items": [_tenant_json(bound.backend, t.id) for t in bound.backend.tenants()]}
    )


@router.post("/tenants")
async def create_tenant(request: Request, bound: Controlled) -> Response:
    body = await _object(request)
    name = body.string("name", nullable=True, min_len=1, max_len=200)
    plan = body.string("plan", nullable=True) or DEFAULT_PLAN
    body.issues.check()
    tenant = bound.backend.create_tenant(name, plan)
    return json_response(201, _tenant_json(bound.backend, tenant.id))


@router.put("/tenants/{tid}/plan")
async def set_plan(request: Request, tid: str, bound: Controlled) -> Response:
    body = await _object(request)
    plan = body.string("plan", required=True)
    body.issues.check()
    assert plan is not None
    bound.backend.set_plan(_tenant_id(tid), plan)
    return json_response(200, _tenant_json(bound.backend, _tenant_id(tid)))


@router.post("/tenants/{tid}/keys")
async def mint_key(request: Request, tid: str, bound: Controlled) -> Response:
    body = await _object(request)
    scopes = body.string_list("scopes", max_items=3, max_item_len=10)
    body.issues.check()
    held = wire.DEFAULT_KEY_SCOPES if scopes is None else scopes
    key = bound.backend.mint_key(_tenant_id(tid), held)
    return json_response(
        201,
        {
            "key": key,
            "prefix": key_display_prefix(key),
            "scopes": list(held),
        },
    )


@router.post("/tenants/{tid}/workspaces")
async def create_workspace(request: Request, tid: str, bound: Controlled) -> Response:
    body = await _object(request)
    slug = body.string("slug", required=True)
    name = body.string("name", nullable=True)
    body.issues.check()
    assert slug is not None
    ws = bound.backend.add_workspace(_tenant_id(tid), slug, name)
    return json_response(201, render.workspace_json(ws))


@router.get("/tenants/{tid}/contexts")
async def tenant_contexts(tid: str, bound: Controlled) -> Response:
    rows = bound.backend.contexts(_tenant_id(tid))
    return json_response(200, {"items": [render.context_json(c) for c in rows]})


@router.get("/tenants/{tid}/workspaces")
async def tenant_workspaces(tid: str, bound: Controlled) -> Response:
    return json_response(200, render.workspaces_json(bound.backend.workspaces(_tenant_id(tid))))


@router.post("/reset")
async def reset(bound: Controlled) -> Response:
    bound.reset()
    return Response(status_code=204)


@router.get("/journal")
async def journal(bound: Controlled) -> Response:
    return json_response(200, {"entries": [e.as_dict() for e in bound.journal]})


@router.delete("/journal")
async def clear_journal(bound: Controlled) -> Response:
    bound.journal.clear()
    return Response(status_code=204)


@router.get("/faults")
async def list_faults(bound: Controlled) -> Response:
    return json_response(200, {"items": [f.as_dict() for f in bound.faults.active()]})


@router.post("/faults")
async def inject_fault(request: Request, bound: Controlled) -> Response:
    body = await _object(request)
    fault = inject(bound.faults, body)
    return json_response(201, fault.as_dict())


@router.delete("/faults")
async def clear_faults(bound: Controlled) -> Response:
    bound.faults.clear()
    return Response(status_code=204)


@router.get("/audit")
async def audit_log(bound: Controlled) -> Response:
    rows = [
        {**row.hashed_fields(), "prev_hash": row.prev_hash, "hash": row.hash}
        for row in bound.backend.audit_rows()
    ]
    return json_response(200, {"items": rows})


@router.post("/audit/verify")
async def verify(bound: Controlled) -> Response:
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
