"""What test modules import by name: request bodies and the HTTP calls the suites share.

``conftest.py`` holds only fixtures and hooks; a helper here is a plain function, so a module
that uses one says where it comes from.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx2

from fake_contextq import FakeContextQ

if TYPE_CHECKING:
    from fake_anthropic import ScriptedModel


#: A fixture that makes a context through REST and gives its JSON (``make_context``).
MakeContext = Callable[..., dict[str, Any]]
#: The fields of a context's summary (a list or search row: no ``content``), as the tests
#: expect them, apart from the fake's renderer.
SUMMARY_KEYS = frozenset(
    {"id", "workspace", "type", "title", "tags", "externalId", "metadata", "createdAt", "updatedAt"}
)


@functools.cache
def pytest_help() -> str:
    """``pytest -p contextq_fixtures --help`` as a user sees it: once a process, 1.5 s each."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "contextq_fixtures", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # pytest's and ours
    ).stdout


def ok(response: httpx2.Response, status: int = 200) -> Any:
    """Assert ``status`` (showing the body when it differs) and return the decoded JSON."""
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def context_body(**overrides: Any) -> dict[str, Any]:
    """A valid create-context body; ``overrides`` replace or add fields."""
    body: dict[str, Any] = {"type": "reference", "title": "A note", "content": "Some text."}
    body.update(overrides)
    return body


def fill(client: httpx2.Client, count: int, prefix: str = "e") -> None:
    """Create ``count`` contexts in one bulk upsert (external ids ``{prefix}0`` ...)."""
    items = [context_body(externalId=f"{prefix}{i}") for i in range(count)]
    ok(client.post("/api/contexts/bulk-upsert", json={"contexts": items}))


# ----- the agent layer's calls and the contract's error body -----------------------------------


def error(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """Assert a contract error body (``{"error", "message", ...}``) and return it."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["error"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    if code == "validation_error":
        assert isinstance(body["issues"], list) and body["issues"]
        for issue in body["issues"]:
            assert set(issue) == {"path", "message"}
    return body


def issue_paths(body: dict[str, Any]) -> set[str]:
    return {i["path"] for i in body["issues"]}


def start(client: httpx2.Client, **body: Any) -> dict[str, Any]:
    created: dict[str, Any] = ok(client.post("/api/agent/sessions", json=body), 201)
    return created


def checkpoint(
    client: httpx2.Client, sid: int, seq: Any, state: Any = None, **extra: Any
) -> httpx2.Response:
    body: dict[str, Any] = {"seq": seq, "state": {"seq": seq} if state is None else state}
    body.update(extra)
    return client.post(f"/api/agent/sessions/{sid}/checkpoint", json=body)


def upsert(client: httpx2.Client, sid: int, key: str, **extra: Any) -> httpx2.Response:
    body: dict[str, Any] = {"session_id": sid, "key": key, "title": extra.pop("title", key)}
    body.update(extra)
    return client.post("/api/agent/tasks", json=body)


def tick(client: httpx2.Client, tid: int, evidence: Any = None, **kwargs: Any) -> httpx2.Response:
    """Tick task ``tid``; raw request ``kwargs`` (``content=``, ``json=``) replace the body."""
    if kwargs:
        return client.post(f"/api/agent/tasks/{tid}/tick", **kwargs)
    return client.post(f"/api/agent/tasks/{tid}/tick", json={"evidence": evidence})


def resume(client: httpx2.Client, sid: int) -> dict[str, Any]:
    found: dict[str, Any] = ok(client.get(f"/api/agent/sessions/{sid}/resume"))
    return found


def lesson(client: httpx2.Client, text: str, **extra: Any) -> dict[str, Any]:
    added: dict[str, Any] = ok(client.post("/api/agent/lessons", json={"text": text, **extra}), 201)
    return added


def boot(client: httpx2.Client, goal: str, **extra: Any) -> dict[str, Any]:
    pack: dict[str, Any] = ok(client.post("/api/agent/boot", json={"goal": goal, **extra}))
    return pack


def actions(fake: FakeContextQ) -> list[str]:
    """The audit log's actions, oldest first."""
    return [row.action for row in fake.audit_log()]


#: The memory run both recording tests replay: what Claude says, and the last of it.
MEMORY_PROMPT: Any = [{"role": "user", "content": "Remember that I prefer TypeScript."}]
MEMORY_FINAL = "Noted: TypeScript and Rust."


def memory_upstream() -> ScriptedModel:
    """A scripted model standing in for the real API: view, create, str_replace, done."""
    from fake_anthropic import ScriptedModel, memory, text

    model = ScriptedModel()
    model.script(
        memory.view("/memories"),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        memory.str_replace("/memories/prefs.md", "TypeScript", "TypeScript and Rust"),
        text(MEMORY_FINAL),
    )
    return model
