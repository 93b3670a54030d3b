"""Tool parameters are camelCase; the agent tools' former snake_case names are accepted as
aliases until fake-contextq 0.2: each renamed parameter works by its new name and by its
old one, both at once is an input validation error naming the one to use, and no input
schema lists an old name."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.mcp import SyncMcpClient, result_text
from fake_contextq.service.operations import MCP_TOOLS
from fake_contextq.service.tool_shapes import MCP_ALIASES_UNTIL

pytestmark = pytest.mark.all_stores

OLD_NAME = {new: old for old, new in wire.MCP_PARAM_NAMES.items()}


@dataclass
class Env:
    """A tenant with workspace ``w`` on a fake with the built-in LLM (the handoff needs
    one), its REST client and an in-memory MCP session."""

    fake: FakeContextQ
    tenant: Tenant
    rest: httpx2.Client
    mcp: SyncMcpClient

    def session(self) -> int:
        made = self.rest.post("/api/agent/sessions", json={"workspace": "w"})
        assert made.status_code == 201, made.text
        ident: int = made.json()["id"]
        return ident

    def task(self, session: int, key: str) -> dict[str, Any]:
        body = {"session_id": session, "key": key, "title": key}
        made = self.rest.post("/api/agent/tasks", json=body)
        assert made.status_code == 201, made.text
        task: dict[str, Any] = made.json()
        return task


@pytest.fixture
def env(llm_fake: FakeContextQ) -> Iterator[Env]:
    tenant = llm_fake.create_tenant()
    llm_fake.create_workspace(tenant, "w")
    key = llm_fake.mint_key(tenant, wire.SCOPES)
    with llm_fake.client(key) as rest, SyncMcpClient(llm_fake.mcp_server(key)) as mcp:
        yield Env(llm_fake, tenant, rest, mcp)


Built = tuple[dict[str, Any], Any]  # the tool's other arguments, the parameter's value


@dataclass(frozen=True)
class Case:
    """A renamed parameter: how to call its tool (``build``) and how to see that the
    value it was given took effect (``took``), not only that the call passed."""

    tool: str
    name: str
    build: Callable[[Env], Built]
    took: Callable[[Env, dict[str, Any], Any], bool]

    def __str__(self) -> str:
        return f"{self.tool}.{self.name}"


def _parent_task(e: Env) -> Built:
    session = e.session()
    e.task(session, "parent")
    return {"sessionId": session, "key": "child", "title": "child"}, "parent"


def _parent_id(e: Env, done: dict[str, Any], key: Any) -> bool:
    tasks = e.rest.get(f"/api/agent/sessions/{done['session_id']}/tasks").json()["items"]
    parent: int = next(t["id"] for t in tasks if t["key"] == key)
    return bool(done["parent_id"] == parent)


CASES = (
    Case(
        "agent_session_start",
        "parentSessionId",
        lambda e: ({"workspace": "w"}, e.session()),
        lambda _e, done, v: done["parent_session_id"] == v,
    ),
    Case(
        "agent_session_end",
        "sessionId",
        lambda e: ({"status": "completed"}, e.session()),
        lambda _e, done, v: (done["id"], done["status"]) == (v, "completed"),
    ),
    Case(
        "agent_checkpoint",
        "sessionId",
        lambda e: ({"seq": 1, "state": {"step": 1}}, e.session()),
        lambda _e, done, v: done["session_id"] == v,
    ),
    Case(
        "agent_resume",
        "sessionId",
        lambda e: ({}, e.session()),
        lambda _e, done, v: done["session"]["id"] == v,
    ),
    Case(
        "agent_task_upsert",
        "sessionId",
        lambda e: ({"key": "k", "title": "t"}, e.session()),
        lambda _e, done, v: done["session_id"] == v,
    ),
    Case("agent_task_upsert", "parentKey", _parent_task, _parent_id),
    Case(
        "agent_task_tick",
        "taskId",
        lambda e: ({"evidence": "tests pass"}, e.task(e.session(), "k")["id"]),
        lambda _e, done, v: (done["id"], done["status"]) == (v, wire.TASK_VERIFIED),
    ),
    Case(
        "agent_lesson_add",
        "sessionId",
        lambda e: ({"text": "Run the tests first."}, e.session()),
        lambda _e, done, v: done["session_id"] == v,
    ),
    Case(
        "agent_handoff",  # no workspace in the body: the session's, so only if it is read
        "sessionId",
        lambda e: ({}, e.session()),
        lambda _e, done, v: (done["session_id"], done["workspace"]) == (v, "w"),
    ),
    Case(
        "agent_boot",
        "tokenBudget",
        lambda _e: ({"goal": "tests", "workspace": "w"}, 1234),
        lambda _e, done, v: done["token_budget"] == v,
    ),
)


def test_every_renamed_parameter_has_a_case_and_every_tool_is_camel_case() -> None:
    renamed = {(t.name, new) for t in MCP_TOOLS for new in t.aliases.values()}
    assert renamed == {(c.tool, c.name) for c in CASES}
    names = {n for t in MCP_TOOLS for n in t.input_schema["properties"]}
    assert [n for n in sorted(names) if "_" in n] == []


def test_no_input_schema_lists_a_former_name() -> None:
    for tool in MCP_TOOLS:
        schema = tool.input_schema
        listed = {*schema["properties"], *schema.get("required", ())}
        assert listed.isdisjoint(wire.MCP_PARAM_NAMES), tool.name


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("spelt", ["new", "old"])
def test_a_renamed_parameter_works_by_its_new_and_its_old_name(
    env: Env, case: Case, spelt: str
) -> None:
    others, value = case.build(env)
    name = case.name if spelt == "new" else OLD_NAME[case.name]
    done = env.mcp.call(case.tool, {**others, name: value})
    assert case.took(env, done, value), done


@pytest.mark.parametrize("case", CASES, ids=str)
def test_both_names_at_once_is_an_error_result_naming_the_one_to_use(env: Env, case: Case) -> None:
    others, value = case.build(env)
    old = OLD_NAME[case.name]
    before = len(env.fake.journal)
    result = env.mcp.call_tool(case.tool, {**others, case.name: value, old: value})
    assert result.is_error
    assert result.structured_content is None
    head = _msgs.MCP_ERROR_OF.format(
        code=-32602, message=_msgs.MCP_BAD_ARGUMENTS.format(name=case.tool, problem="")
    )
    text = result_text(result)
    assert text.startswith(head), text
    message = _msgs.MCP_ALIAS_AND_NAME.format(name=case.name, alias=old, until=MCP_ALIASES_UNTIL)
    assert json.loads(text[len(head) :]) == [{"code": "custom", "path": [old], "message": message}]
    assert f"Give {case.name} only" in message
    assert len(env.fake.journal) == before  # refused before any REST call


def test_an_old_name_of_the_wrong_type_is_refused_under_the_new_name(env: Env) -> None:
    result = env.mcp.call_tool("agent_resume", {"session_id": "abc"})
    assert result.is_error
    assert '"path": [\n      "sessionId"\n    ]' in result_text(result)
