"""Every strict rule of the fake holds through its MCP surface, word for word as through
REST, on every store: each tool is one REST call, so a refusal is REST's own."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import httpx2
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.mcp import McpToolError, SyncMcpClient, check_arguments, result_text, zod
from fake_contextq.mcp.server import Refused
from fake_contextq.service import MCP_TOOLS
from fake_contextq.service.tool_shapes import MCP_SAVE_DEFAULT_TYPE, McpTool, mcp_save_title
from tests.support.helpers import context_body, fill, ok

pytestmark = pytest.mark.all_stores


@pytest.fixture
def mcp(fake: FakeContextQ, key: str) -> Iterator[SyncMcpClient]:
    with SyncMcpClient(fake.mcp_server(key)) as session:
        yield session


@pytest.fixture
def mcp_as(fake: FakeContextQ, tenant: Tenant) -> Iterator[Callable[..., SyncMcpClient]]:
    opened: list[SyncMcpClient] = []

    def make(scopes: tuple[str, ...]) -> SyncMcpClient:
        opened.append(SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, scopes))).open())
        return opened[-1]

    yield make
    for session in opened:
        session.close()


def refused(session: SyncMcpClient, tool: str, args: dict[str, Any]) -> McpToolError:
    with pytest.raises(McpToolError) as caught:
        session.call(tool, args)
    return caught.value


def input_issues(session: SyncMcpClient, tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The Zod issues of a call the TypeScript SDK's ``McpServer`` refuses before its
    handler: an ``isError`` result, no structured content, the issues as a JSON array."""
    result = session.call_tool(tool, args)
    assert result.is_error
    assert result.structured_content is None
    text = result_text(result)
    head = _msgs.MCP_ERROR_OF.format(
        code=-32602, message=_msgs.MCP_BAD_ARGUMENTS.format(name=tool, problem="")
    )
    assert text.startswith(head), text
    found: list[dict[str, Any]] = json.loads(text[len(head) :])
    return found


def test_a_context_saved_through_mcp_reads_back_identically_through_rest(
    mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    saved = mcp.call("ctx_save", {"content": "Deploys go out on Tuesdays.\nNever Fridays."})
    assert saved["type"] == MCP_SAVE_DEFAULT_TYPE
    assert saved["title"] == "Deploys go out on Tuesdays."
    assert client.get(f"/api/contexts/{saved['id']}").json() == saved
    assert mcp.call("ctx_get", {"id": saved["id"]}) == saved


def test_a_context_saved_through_rest_searches_the_same_through_mcp(
    mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    client.post("/api/contexts", json=context_body(title="Rotation", content="rotate keys"))
    client.post("/api/contexts", json=context_body(title="Other", content="unrelated"))
    body = {"query": "rotate keys", "limit": 5}
    assert mcp.call("ctx_search", body) == client.post("/api/search", json=body).json()


def test_a_read_only_key_cannot_save_through_mcp(
    mcp_as: Callable[..., SyncMcpClient],
) -> None:
    reader = mcp_as((wire.READ,))
    error = refused(reader, "ctx_save", {"content": "x"})
    assert error.code == _msgs.SCOPE_DENIED
    assert error.text.startswith(f"ContextQ 403 {_msgs.SCOPE_DENIED}:")
    assert "'write'" in error.text
    assert reader.call("ctx_list", {})["total"] == 0


def test_a_key_without_read_cannot_search_or_boot_through_mcp(
    mcp_as: Callable[..., SyncMcpClient],
) -> None:
    writer = mcp_as((wire.WRITE,))
    assert refused(writer, "ctx_search", {"query": "x"}).code == _msgs.SCOPE_DENIED
    assert refused(writer, "agent_boot", {"goal": "x"}).code == _msgs.SCOPE_DENIED
    assert writer.call("agent_session_start", {})["status"] == wire.SESSION_STATUS_ACTIVE


def test_the_free_plans_quota_refuses_the_101st_save_with_402(
    fake: FakeContextQ, tenant: Tenant, mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    fill(client, 100)
    error = refused(mcp, "ctx_save", {"content": "one too many"})
    assert error.code == _msgs.QUOTA_EXCEEDED
    assert error.text.startswith(f"ContextQ 402 {_msgs.QUOTA_EXCEEDED}:")
    assert "free plan allows 100 contexts" in error.text
    assert len(fake.contexts(tenant)) == 100


def test_a_taken_external_id_is_refused_and_the_first_context_kept(
    mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    first = mcp.call("ctx_save", {"content": "one", "externalId": "run-1"})
    error = refused(mcp, "ctx_save", {"content": "two", "externalId": "run-1"})
    assert error.code == _msgs.EXTERNAL_ID_TAKEN
    assert mcp.call("ctx_get", {"externalId": "run-1"}) == first
    assert client.get("/api/contexts").json()["total"] == 1


def test_search_refuses_the_three_save_only_types_naming_the_six(mcp: SyncMcpClient) -> None:
    mcp.call("ctx_save", {"content": "a map", "type": "map"})
    for extra in ("synthesis", "map", "moc"):
        [issue] = input_issues(mcp, "ctx_search", {"query": "map", "type": extra})
        assert (issue["code"], issue["path"]) == ("invalid_value", ["type"])
        assert issue["values"] == list(wire.SEARCH_TYPES)
        options = "|".join(f'"{t}"' for t in wire.SEARCH_TYPES)
        assert issue["message"] == _msgs.ZOD_INVALID_OPTION.format(options=options)


def test_save_refuses_a_type_outside_the_nine(mcp: SyncMcpClient) -> None:
    [issue] = input_issues(mcp, "ctx_save", {"content": "x", "type": "handoff"})
    assert (issue["code"], issue["values"]) == ("invalid_value", list(wire.CONTEXT_TYPES))


def test_an_unknown_workspace_is_silently_dropped_on_save(
    fake: FakeContextQ, tenant: Tenant, mcp: SyncMcpClient
) -> None:
    fake.create_workspace(tenant, "real")
    saved = mcp.call("ctx_save", {"content": "x", "workspace": "typo"})
    assert saved["workspace"] is None
    assert mcp.call("ctx_save", {"content": "y", "workspace": "real"})["workspace"] == "real"


def test_a_handoff_after_the_silent_session_fallback_is_no_workspace(
    llm_fake: FakeContextQ,
) -> None:
    tenant = llm_fake.create_tenant("acme")
    with SyncMcpClient(llm_fake.mcp_server(llm_fake.mint_key(tenant, wire.SCOPES))) as mcp:
        session = mcp.call("agent_session_start", {"workspace": "does-not-exist"})
        assert session["workspace"] is None
        error = refused(mcp, "agent_handoff", {"sessionId": session["id"]})
    assert error.code == _msgs.NO_WORKSPACE
    assert error.text.startswith(f"ContextQ 400 {_msgs.NO_WORKSPACE}:")


def test_a_handoff_without_a_server_llm_is_503(
    fake: FakeContextQ, tenant: Tenant, mcp: SyncMcpClient
) -> None:
    fake.create_workspace(tenant, "w")
    session = mcp.call("agent_session_start", {"workspace": "w"})
    assert refused(mcp, "agent_handoff", {"sessionId": session["id"]}).code == (
        _msgs.LLM_UNAVAILABLE
    )


def test_the_agent_tools_run_a_whole_session(
    fake: FakeContextQ, tenant: Tenant, mcp: SyncMcpClient
) -> None:
    fake.create_workspace(tenant, "w")
    session = mcp.call("agent_session_start", {"workspace": "w"})["id"]
    mcp.call("agent_checkpoint", {"sessionId": session, "seq": 1, "state": {"step": 1}})
    stale = refused(mcp, "agent_checkpoint", {"sessionId": session, "seq": 1, "state": {}})
    assert stale.code == _msgs.SEQ_CONFLICT
    task = mcp.call("agent_task_upsert", {"sessionId": session, "key": "t1", "title": "Do"})
    assert refused(mcp, "agent_task_tick", {"taskId": task["id"], "evidence": " "}).code == (
        _msgs.EVIDENCE_REQUIRED
    )
    ticked = mcp.call("agent_task_tick", {"taskId": task["id"], "evidence": "tests pass"})
    assert ticked["status"] == wire.TASK_VERIFIED
    mcp.call("agent_lesson_add", {"text": "Run the tests first.", "workspace": "w"})
    resumed = mcp.call("agent_resume", {"sessionId": session})
    assert resumed["checkpoint"]["seq"] == 1
    ended = mcp.call("agent_session_end", {"sessionId": session, "status": "completed"})
    assert ended["status"] == "completed"
    boot = mcp.call("agent_boot", {"goal": "tests", "workspace": "w"})
    assert [lesson["text"] for lesson in boot["lessons"]] == ["Run the tests first."]


def test_list_with_several_tags_keeps_what_carries_all_and_counts_exactly(
    mcp: SyncMcpClient,
) -> None:
    for i in range(7):
        tags = ["a", "b"] if i % 2 == 0 else ["a"]
        mcp.call("ctx_save", {"content": f"n{i}", "tags": tags})
    page = mcp.call("ctx_list", {"tags": ["a", "b"], "limit": 3, "offset": 1})
    assert page["total"] == 4
    assert len(page["items"]) == 3
    assert all({"a", "b"} <= set(row["tags"]) for row in page["items"])
    assert mcp.call("ctx_list", {"tags": ["a"]})["total"] == 7


def test_stats_count_in_all_and_by_type(mcp: SyncMcpClient) -> None:
    mcp.call("ctx_save", {"content": "x", "type": "lesson"})
    mcp.call("ctx_save", {"content": "y", "type": "lesson"})
    mcp.call("ctx_save", {"content": "z"})
    stats = mcp.call("ctx_stats", {})
    assert stats["total"] == 3
    assert stats["byType"]["lesson"] == 2
    assert stats["byType"][MCP_SAVE_DEFAULT_TYPE] == 1
    assert set(stats["byType"]) == set(wire.CONTEXT_TYPES)


def test_update_bulk_and_delete_through_mcp(mcp: SyncMcpClient, client: httpx2.Client) -> None:
    saved = mcp.call("ctx_save", {"content": "v1", "tags": ["keep"]})
    updated = mcp.call("ctx_update", {"id": saved["id"], "content": "v2"})
    assert (updated["content"], updated["tags"]) == ("v2", ["keep"])
    items = [context_body(externalId="e1"), context_body(externalId="e2")]
    assert mcp.call("ctx_bulk_update", {"contexts": items})["created"] == 2
    assert mcp.call("ctx_delete", {"id": saved["id"]}) == {"deleted": True, "id": saved["id"]}
    assert client.get(f"/api/contexts/{saved['id']}").status_code == 404
    assert refused(mcp, "ctx_delete", {"id": saved["id"]}).code == _msgs.NOT_FOUND


def test_another_tenants_context_is_not_found_through_mcp(
    fake: FakeContextQ, mcp: SyncMcpClient
) -> None:
    other = fake.create_tenant("globex")
    with SyncMcpClient(fake.mcp_server(fake.mint_key(other))) as theirs:
        their_id = theirs.call("ctx_save", {"content": "secret"})["id"]
    assert refused(mcp, "ctx_get", {"id": their_id}).code == _msgs.NOT_FOUND


@pytest.mark.parametrize(
    ("tool", "args", "issue"),
    [
        (
            "ctx_save",
            {},
            {
                "expected": "string",
                "code": "invalid_type",
                "path": ["content"],
                "message": "Invalid input: expected string, received undefined",
            },
        ),
        (
            "ctx_save",
            {"content": 3},
            {
                "expected": "string",
                "code": "invalid_type",
                "path": ["content"],
                "message": "Invalid input: expected string, received number",
            },
        ),
        (
            "ctx_search",
            {"query": "x", "limit": "ten"},
            {
                "expected": "number",
                "code": "invalid_type",
                "path": ["limit"],
                "message": "Invalid input: expected number, received string",
            },
        ),
        (
            "agent_checkpoint",
            {"sessionId": 1, "seq": 1},
            {
                "expected": "object",
                "code": "invalid_type",
                "path": ["state"],
                "message": "Invalid input: expected object, received undefined",
            },
        ),
        (
            "ctx_delete",
            {"id": 1.5},
            {
                "expected": "int",
                "format": "safeint",
                "code": "invalid_type",
                "path": ["id"],
                "message": "Invalid input: expected int, received number",
            },
        ),
        (
            "ctx_bulk_update",
            {"contexts": [{"type": "note", "title": "t"}]},
            {
                "expected": "string",
                "code": "invalid_type",
                "path": ["contexts", 0, "content"],
                "message": "Invalid input: expected string, received undefined",
            },
        ),
        (  # z.number().int().nullable(): a value that is not null is the number's to check
            "ctx_saved_searches_update",
            {"id": 1, "limit": "ten"},
            {
                "expected": "number",
                "code": "invalid_type",
                "path": ["limit"],
                "message": "Invalid input: expected number, received string",
            },
        ),
        (
            "ctx_saved_searches_update",
            {"id": 1, "limit": 0},
            {
                "origin": "number",
                "code": "too_small",
                "minimum": 1,
                "inclusive": True,
                "path": ["limit"],
                "message": "Too small: expected number to be >=1",
            },
        ),
        (
            "ctx_saved_searches_update",
            {"id": 1, "workspace": 7},
            {
                "expected": "string",
                "code": "invalid_type",
                "path": ["workspace"],
                "message": "Invalid input: expected string, received number",
            },
        ),
        (
            "ctx_get",
            {},
            {"code": "custom", "path": [], "message": "Give exactly one of id and externalId."},
        ),
        (
            "ctx_get",
            {"id": 1, "externalId": "e"},
            {"code": "custom", "path": [], "message": "Give exactly one of id and externalId."},
        ),
    ],
)
def test_arguments_the_schema_refuses_are_an_error_result_in_zods_words(
    mcp: SyncMcpClient,
    client: httpx2.Client,
    tool: str,
    args: dict[str, Any],
    issue: dict[str, Any],
) -> None:
    """As the TypeScript SDK's McpServer answers: a result the model reads, not a
    protocol error, and nothing reaches REST."""
    assert issue in input_issues(mcp, tool, args)
    assert client.get("/api/contexts").json()["total"] == 0


def test_null_drops_a_saved_searchs_filter_past_the_schema(
    mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    saved = {"name": "n", "query": "q", "limit": 5, "workspace": None}
    ok(client.post("/api/saved-searches", json=saved), 201)
    updated = mcp.call("ctx_saved_searches_update", {"id": 1, "limit": None, "type": None})
    assert updated["limit"] is None and updated["type"] is None


def test_every_issue_is_listed_with_its_json_path_as_zod_lists_them(mcp: SyncMcpClient) -> None:
    found = input_issues(mcp, "ctx_search", {"query": 1, "limit": 0, "type": "map"})
    assert [(i["code"], i["path"]) for i in found] == [
        ("invalid_type", ["query"]),
        ("too_small", ["limit"]),
        ("invalid_value", ["type"]),
    ]
    assert found[1]["message"] == "Too small: expected number to be >=1"


def test_an_id_past_what_javascript_holds_is_refused_as_zod_refuses_it(mcp: SyncMcpClient) -> None:
    found = input_issues(mcp, "ctx_get", {"id": 2**53})
    assert {(i["code"], i["maximum"]) for i in found} == {("too_big", 2**53 - 1)}
    assert mcp.call_tool("ctx_get", {"id": 2**53 - 1}).is_error  # REST's 404, no refusal
    assert "Input validation" not in result_text(mcp.call_tool("ctx_get", {"id": 2**53 - 1}))


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_arguments_nested_past_the_json_limit_are_refused_before_their_schema() -> None:
    """Up to ``wire.MAX_JSON_DEPTH`` (the arguments' object is the first level) they go on,
    made well-formed; one level more is one custom issue at the root, whatever else is
    wrong (a parser that reads them stops there)."""
    [tool] = [t for t in MCP_TOOLS if t.name == "ctx_update"]
    at_limit = {"id": 1, "title": "a\ud800", "metadata": {"a": _nested(wire.MAX_JSON_DEPTH - 2)}}
    assert check_arguments(tool, at_limit) == {**at_limit, "title": "a\ufffd"}
    past = {"id": "one", "metadata": {"a": _nested(wire.MAX_JSON_DEPTH - 1)}}
    with pytest.raises(Refused) as caught:
        check_arguments(tool, past)
    issue = {
        "code": "custom",
        "path": [],
        "message": _msgs.MCP_TOO_DEEP.format(depth=wire.MAX_JSON_DEPTH),
    }
    problem = json.dumps([issue], indent=2)
    bad = _msgs.MCP_BAD_ARGUMENTS.format(name="ctx_update", problem=problem)
    assert str(caught.value) == _msgs.MCP_ERROR_OF.format(code=-32602, message=bad)


_any_json = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-zod.MAX_SAFE_INTEGER, max_value=zod.MAX_SAFE_INTEGER),
    st.floats(allow_nan=False, min_value=-1e15, max_value=1e15),
    st.text(max_size=3),
    st.just([]),
    st.just({}),
)


def _near(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values for ``schema``: of its shape, around its bounds, or anything else."""
    kind, options = schema.get("type"), [_any_json]
    if isinstance(kind, list):  # [X, "null"]: X's values, null among _any_json's
        kind = next(k for k in kind if k != "null")
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if kind == "string":
        options.append(st.text(max_size=3))
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", -5) - 2, schema.get("maximum", 5) + 2
        options.append(st.integers(min_value=low, max_value=high))
        options.append(st.floats(min_value=max(low, -1e15), max_value=min(high, 1e15)))
    if kind == "array":
        most = min(schema.get("maxItems", 2), 3) + 1
        options.append(st.lists(_near(schema.get("items", {})), max_size=most))
    if kind == "object":
        fields = {n: _near(f) for n, f in schema.get("properties", {}).items()}
        needed = set(schema.get("required", ()))
        options.append(st.fixed_dictionaries({}, optional=fields))
        given = {n: f for n, f in fields.items() if n in needed}
        rest = {n: f for n, f in fields.items() if n not in needed}
        options.append(st.fixed_dictionaries(given, optional=rest))
    return st.one_of(options)


@pytest.mark.parametrize("tool", MCP_TOOLS, ids=lambda t: t.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_zod_finds_an_issue_exactly_where_json_schema_refuses(tool: McpTool, data: Any) -> None:
    """Arguments with no issue pass on unwalked (most do), so whether there is one at all
    is pinned here, against jsonschema reading the same schema."""
    value = data.draw(_near(tool.input_schema))
    refused = not jsonschema.Draft202012Validator(tool.input_schema).is_valid(value)
    assert bool(zod.issues(tool.input_schema, value)) is refused


def test_an_unknown_tool_is_an_error_result_as_mcpserver_answers_it(mcp: SyncMcpClient) -> None:
    result = mcp.call_tool("ctx_no_such_tool", {})
    assert result.is_error
    assert result_text(result) == "MCP error -32602: Tool ctx_no_such_tool not found"


def test_names_the_schema_does_not_list_are_dropped_as_zod_drops_them(
    fake: FakeContextQ, mcp: SyncMcpClient
) -> None:
    """``z.object`` strips keys its shape does not declare, at every depth; a free object
    (``metadata``) is kept whole."""
    mcp.call("ctx_search", {"query": "x", "offset": 3, "stray": True})
    kept = {"type": "reference", "title": "t", "content": "c", "externalId": "e"}
    item = {**kept, "id": 7, "metadata": {"k": 1}}
    mcp.call("ctx_bulk_update", {"contexts": [item], "dryRun": True})
    sent = [json.loads(e.request_body) for e in fake.journal if e.method == "POST"]
    assert sent == [{"query": "x"}, {"contexts": [{**kept, "metadata": {"k": 1}}]}]


_text = st.text(max_size=30)
_save_args = st.fixed_dictionaries(
    {"content": st.one_of(_text, st.integers())},
    optional={
        "title": st.one_of(_text, st.just("")),
        "type": st.sampled_from([*wire.CONTEXT_TYPES, "handoff", ""]),
        "tags": st.lists(st.one_of(_text, st.integers()), max_size=3),
        "externalId": st.sampled_from(["e1", "e2", ""]),
        "workspace": st.sampled_from(["w", "nope", ""]),
        "metadata": st.one_of(st.dictionaries(_text, _text, max_size=2), st.just([])),
    },
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(args=_save_args)
def test_any_save_answers_as_rest_answers_the_same_body(
    fake: FakeContextQ,
    tenant: Tenant,
    mcp: SyncMcpClient,
    client: httpx2.Client,
    args: dict[str, Any],
) -> None:
    """Arguments of the right shape get exactly REST's answer for the body the tool sends
    (the same row or the same refusal); the wrong shape is refused before any REST call."""
    if not fake.workspaces(tenant):
        fake.create_workspace(tenant, "w")
    before = client.get("/api/contexts").json()["total"]
    result = mcp.call_tool("ctx_save", args)
    if result.is_error and "Input validation error" in result_text(result):
        assert result_text(result).startswith("MCP error -32602: Input validation error")
        assert client.get("/api/contexts").json()["total"] == before
        return
    body = dict(args)
    body.setdefault("type", MCP_SAVE_DEFAULT_TYPE)
    body.setdefault("title", mcp_save_title(args["content"]))
    if result.is_error:
        rest = client.post("/api/contexts", json=body)
        assert rest.status_code >= 400
        assert result_text(result) == wire.mcp_error_text(rest.status_code, rest.json())
    else:
        saved = result.structured_content
        assert saved is not None
        assert client.get(f"/api/contexts/{saved['id']}").json() == saved
        assert (saved["title"], saved["type"]) == (body["title"], body["type"])


LIST_CASES = [
    {},
    {"limit": -1},
    {"limit": 0},
    {"limit": 1},
    {"limit": 2},
    {"limit": wire.LIST_MAX_LIMIT},
    {"limit": wire.LIST_MAX_LIMIT + 1},
    {"limit": 10**30},
    {"offset": -2},
    {"offset": -1},
    {"offset": 1},
    {"offset": 2**31},
    {"offset": 10**30},
    {"limit": 2, "offset": 1},
    {"limit": 1, "offset": 3},
    {"limit": -1, "offset": -2},
]


@pytest.mark.parametrize("tags", [[], ["a"], ["a", "b"], ["a", "b", "c"]], ids=len)
def test_list_holds_limit_and_offset_to_rests_rules_whatever_the_number_of_tags(
    mcp: SyncMcpClient, client: httpx2.Client, tags: list[str]
) -> None:
    """REST's answer to the same limit and offset (with the first tag as its filter) is the
    MCP answer: the same 400 word for word, or the same page bounds over the rows that
    carry every tag."""
    for i in range(7):
        mcp.call("ctx_save", {"content": f"n{i}", "tags": ["a", "b", "c"] if i % 2 else ["a"]})
    for case in LIST_CASES:
        params = {name: str(value) for name, value in case.items()}
        if tags:
            params["tag"] = tags[0]
        rest = client.get("/api/contexts", params=params)
        result = mcp.call_tool("ctx_list", {**case, **({"tags": tags} if tags else {})})
        if rest.status_code != 200:
            assert rest.status_code == 400, rest.text
            assert result.is_error, (case, result.structured_content)
            text = result_text(result)
            schema_says = text.startswith("MCP error -32602: Input validation error")
            assert schema_says or text == wire.mcp_error_text(400, rest.json()), case
            continue
        assert not result.is_error, (case, result.structured_content)
        page = result.structured_content
        assert page is not None
        want = rest.json()
        assert (page["limit"], page["offset"]) == (want["limit"], want["offset"]), case
        every = client.get("/api/contexts", params={"limit": "500"}).json()["items"]
        carrying = [row["id"] for row in every if set(tags) <= set(row["tags"])]
        assert page["total"] == len(carrying), case
        start, size = want["offset"], want["limit"]
        assert [row["id"] for row in page["items"]] == carrying[start : start + size], case
