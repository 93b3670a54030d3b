"""Bad input on every agent route gets a contract error, never a 500, and writes nothing;
another tenant's ids are 404 on every route."""

from __future__ import annotations

from typing import Any

import pytest

from adapter import wire
from fake_contextq import FakeContextQ
from tests.support.helpers import boot, checkpoint, error, ok, resume, start, tick, upsert

pytestmark = pytest.mark.all_stores


J = {"content-type": "application/json"}
BAD_INPUT: list[tuple[str, str, dict[str, Any], int, str]] = [
    # malformed JSON on every route with a body
    ("POST", "/api/agent/sessions", {"content": b"{", "headers": J}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/{sid}/end",
        {"content": b"nope", "headers": J},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/sessions/{sid}/checkpoint",
        {"content": b'{"seq": 1,', "headers": J},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/tasks", {"content": b"[", "headers": J}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"content": b"{evidence}", "headers": J},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/lessons",
        {"content": b'{"text": "\xc3\x28"}', "headers": J},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/handoff", {"content": b"{,}", "headers": J}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"content": b"", "headers": J}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"content": b"null", "headers": J}, 400, "validation_error"),
    # bodies that are not objects
    ("POST", "/api/agent/sessions", {"json": []}, 400, "validation_error"),
    ("POST", "/api/agent/sessions/{sid}/end", {"json": "completed"}, 400, "validation_error"),
    ("POST", "/api/agent/sessions/{sid}/checkpoint", {"json": 1}, 400, "validation_error"),
    ("POST", "/api/agent/tasks/{tid}/tick", {"json": ["proof"]}, 400, "validation_error"),
    ("POST", "/api/agent/lessons", {"json": "a lesson"}, 400, "validation_error"),
    ("POST", "/api/agent/handoff", {"json": []}, 400, "validation_error"),
    ("POST", "/api/agent/boot", {"json": ["goal"]}, 400, "validation_error"),
    # wrong types
    ("POST", "/api/agent/sessions", {"json": {"workspace": 5}}, 400, "validation_error"),
    ("POST", "/api/agent/sessions", {"json": {"workspace": ""}}, 400, "validation_error"),
    ("POST", "/api/agent/tasks/{tid}/tick", {"json": {"evidence": 5}}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"json": {"evidence": "e" * (wire.MAX_TEXT_CHARS + 1)}},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/handoff", {"json": {"session_id": "1"}}, 400, "validation_error"),
    ("POST", "/api/agent/handoff", {"json": {"workspace": 1}}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/{sid}/checkpoint",
        {"json": {"seq": 1, "state": {}, "summary": 1}},
        400,
        "validation_error",
    ),
    # not JSON at all
    (
        "POST",
        "/api/agent/sessions",
        {
            "content": b"workspace=x",
            "headers": {"content-type": "application/x-www-form-urlencoded"},
        },
        415,
        "unsupported_media_type",
    ),
    (
        "POST",
        "/api/agent/tasks/{tid}/tick",
        {"content": b"proof", "headers": {"content-type": "text/plain"}},
        415,
        "unsupported_media_type",
    ),
    # bad ids in the path
    ("GET", "/api/agent/sessions/abc", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/0", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/-1", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/1.5", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/01", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/99999999999999999999", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/%20", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/abc/resume", {}, 400, "validation_error"),
    ("GET", "/api/agent/sessions/abc/tasks", {}, 400, "validation_error"),
    (
        "POST",
        "/api/agent/sessions/abc/end",
        {"json": {"status": "completed"}},
        400,
        "validation_error",
    ),
    (
        "POST",
        "/api/agent/sessions/x/checkpoint",
        {"json": {"seq": 1, "state": {}}},
        400,
        "validation_error",
    ),
    ("POST", "/api/agent/tasks/x/tick", {"json": {"evidence": "e"}}, 400, "validation_error"),
    # unknown ids
    ("GET", "/api/agent/sessions/9223372036854775807", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999/resume", {}, 404, "not_found"),
    ("GET", "/api/agent/sessions/999999/tasks", {}, 404, "not_found"),
    ("POST", "/api/agent/sessions/999999/end", {"json": {"status": "failed"}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/sessions/999999/checkpoint",
        {"json": {"seq": 1, "state": {}}},
        404,
        "not_found",
    ),
    ("POST", "/api/agent/tasks/999999/tick", {"json": {"evidence": "e"}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/tasks",
        {"json": {"session_id": 999999, "key": "k", "title": "t"}},
        404,
        "not_found",
    ),
    ("POST", "/api/agent/lessons", {"json": {"text": "t", "session_id": 999999}}, 404, "not_found"),
    (
        "POST",
        "/api/agent/handoff",
        {"json": {"session_id": 999999, "workspace": "ws"}},
        404,
        "not_found",
    ),
    # unknown routes and methods
    ("GET", "/api/agent/nope", {}, 404, "not_found"),
    ("DELETE", "/api/agent/sessions/{sid}", {}, 404, "not_found"),
    ("PUT", "/api/agent/tasks/{tid}/tick", {"json": {"evidence": "e"}}, 404, "not_found"),
    ("GET", "/api/agent/boot", {}, 404, "not_found"),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    BAD_INPUT,
    ids=[f"{m} {p} #{i}" for i, (m, p, *_rest) in enumerate(BAD_INPUT)],
)
def test_bad_input_gets_a_contract_error_never_a_500(
    llm_fake: FakeContextQ,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    code: str,
) -> None:
    tenant = llm_fake.create_tenant()
    llm_fake.create_workspace(tenant, "ws")
    with llm_fake.client(llm_fake.mint_key(tenant, wire.SCOPES)) as c:
        sid = start(c, workspace="ws")["id"]
        tid = ok(upsert(c, sid, "k"), 201)["id"]
        before = len(llm_fake.audit_log())
        response = c.request(method, path.format(sid=sid, tid=tid), **kwargs)
        error(response, status, code)
    assert len(llm_fake.audit_log()) == before


def test_another_tenants_ids_are_404_on_every_agent_route(
    llm_fake: FakeContextQ,
) -> None:
    mine, theirs = llm_fake.create_tenant(), llm_fake.create_tenant()
    llm_fake.create_workspace(mine, "ws")
    with (
        llm_fake.client(llm_fake.mint_key(mine, wire.SCOPES)) as c,
        llm_fake.client(llm_fake.mint_key(theirs, wire.SCOPES)) as t,
    ):
        sid = start(c, workspace="ws", metadata={"secret": True})["id"]
        ok(checkpoint(c, sid, 1, {"secret": "launch code"}), 201)
        tid = ok(upsert(c, sid, "k"), 201)["id"]
        before = len(llm_fake.audit_log())
        for response in (
            t.get(f"/api/agent/sessions/{sid}"),
            t.get(f"/api/agent/sessions/{sid}/resume"),
            t.get(f"/api/agent/sessions/{sid}/tasks"),
            t.post(f"/api/agent/sessions/{sid}/end", json={"status": "cancelled"}),
            checkpoint(t, sid, 2),
            checkpoint(t, sid, 1),
            upsert(t, sid, "k", title="pwned"),
            tick(t, tid, "pwned"),
            t.post("/api/agent/lessons", json={"text": "x", "session_id": sid}),
            t.post("/api/agent/handoff", json={"session_id": sid}),
            t.post("/api/agent/sessions", json={"parent_session_id": sid}),
        ):
            body = error(response, 404, "not_found")
            assert "launch code" not in response.text and "expected" not in body
        assert len(llm_fake.audit_log()) == before
        assert boot(t, "launch code")["resume"] is None
        found = resume(c, sid)
        assert found["session"]["status"] == "active"
        assert found["checkpoint"]["seq"] == 1
        assert found["open_tasks"][0]["title"] == "k"
