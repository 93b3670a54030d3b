"""ContextQ's MCP server through its three transports: in-process, streamable HTTP at
``/mcp`` on every served fake (same keys as REST), and stdio bridged to REST."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx2
import pytest
from mcp import StdioServerParameters

from adapter import wire
from fake_contextq import FakeContextQ, ServedFake, Tenant, _msgs
from fake_contextq.http.transport import AsyncInProcessTransport
from fake_contextq.mcp import McpToolError, Rest, SyncMcpClient, bound_server
from fake_contextq.service import MCP_TOOLS, MCP_TOOLS_NOT_FAKED


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve() as running:
        yield running


def listed_dialect() -> str:
    return "http://json-schema.org/draft-07/schema#"


def test_an_output_schema_closes_each_declared_object_as_zod_output_does(
    fake: FakeContextQ, key: str
) -> None:
    """Zod 4 lists an output schema with every object it declares closed, an input schema
    open (unknown input keys are stripped, not refused); a free-form object stays open."""
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        tools = {t.name: t for t in mcp.list_tools()}
    bulk = tools["ctx_bulk_update"].output_schema
    assert bulk is not None and bulk["additionalProperties"] is False
    item = bulk["properties"]["items"]["items"]
    assert item["additionalProperties"] is False
    assert "additionalProperties" not in item["properties"]["metadata"]
    assert "additionalProperties" not in tools["ctx_import"].input_schema


def test_the_tools_are_the_contracts_and_nothing_unmodelled_is_advertised(
    fake: FakeContextQ, key: str
) -> None:
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        tools = {t.name: t for t in mcp.list_tools()}
    assert list(tools) == [t.name for t in MCP_TOOLS]
    for contract in MCP_TOOLS:
        listed = dict(tools[contract.name].input_schema)
        # the dialect Zod 4's toJSONSchema names, then the contract's schema as it is
        assert listed.pop("$schema") == listed_dialect()
        assert listed == contract.input_schema
        output = tools[contract.name].output_schema
        assert output is not None and output["$schema"] == listed_dialect()
        assert tools[contract.name].description == contract.description
    assert not set(tools) & set(MCP_TOOLS_NOT_FAKED)
    save = tools["ctx_save"].input_schema
    assert save["required"] == ["content"]
    assert save["properties"]["type"]["enum"] == list(wire.CONTEXT_TYPES)
    search = tools["ctx_search"].input_schema
    assert search["properties"]["type"]["enum"] == list(wire.SEARCH_TYPES)
    assert search["properties"]["limit"]["default"] == 10
    get, delete = tools["ctx_get"].annotations, tools["ctx_delete"].annotations
    assert get is not None and get.read_only_hint is True
    assert delete is not None and delete.destructive_hint is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_streamable_http_lists_and_calls_with_the_same_answers_as_rest(
    fake: FakeContextQ, served: ServedFake, key: str, mode: str
) -> None:
    with SyncMcpClient(served.mcp_url, api_key=key, mode=mode) as mcp:
        assert len(mcp.list_tools()) == len(MCP_TOOLS)
        saved = mcp.call("ctx_save", {"content": "over http", "tags": ["net"]})
        assert mcp.call("ctx_get", {"id": saved["id"]}) == saved
    with httpx2.Client(
        base_url=served.url, headers={"Authorization": wire.authorization(key)}
    ) as c:
        assert c.get(f"/api/contexts/{saved['id']}").json() == saved


def test_each_tool_call_is_a_journaled_rest_request_of_the_keys_tenant(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    with SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        mcp.call("ctx_save", {"content": "x"})
        with pytest.raises(McpToolError):
            mcp.call("ctx_get", {"id": 999})
    rest = [(e.method, e.path, e.status, e.tenant_id) for e in fake.journal if e.path != "/mcp"]
    assert rest == [
        ("POST", "/api/contexts", 201, tenant.id),
        ("GET", "/api/contexts/999", 404, tenant.id),
    ]


def test_each_mcp_request_is_journaled_too_with_its_call_and_the_keys_tenant(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant, key: str
) -> None:
    """The journal (and the dashboard, and failure pages) shows the MCP calls themselves,
    each after the REST requests it made."""
    with SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        mcp.call("ctx_save", {"content": "x"})
    entries = list(fake.journal)
    calls = [
        (i, json.loads(e.request_body))
        for i, e in enumerate(entries)
        if e.path == "/mcp" and json.loads(e.request_body).get("method") == "tools/call"
    ]
    [(at, call)] = calls
    assert call["params"]["name"] == "ctx_save"
    assert (entries[at].method, entries[at].status, entries[at].tenant_id) == (
        "POST",
        200,
        tenant.id,
    )
    assert type(entries[at].status) is int  # as JSON shows it, not the SDK's HTTPStatus
    assert "structuredContent" in entries[at].response_body.decode()
    [save] = [i for i, e in enumerate(entries) if e.path == "/api/contexts"]
    assert save < at  # recorded when it answered, inside the MCP call


#: Tool calls whose REST requests carry what an encoding could get wrong (a path segment, a
#: query and a body with spaces, reserved characters, non-ASCII text and a lone surrogate),
#: and meet a dropped connection, an injected status and a delay past the read timeout.
_ODD = "a b/é%.?#&=+"
_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("ctx_save", {"content": "naïve \ud800 100%", "externalId": _ODD, "tags": [_ODD, "t"]}),
    ("ctx_get", {"externalId": _ODD}),
    ("ctx_get", {"id": 1}),  # dropped
    ("ctx_list", {"tags": [_ODD], "type": "reference", "limit": 5}),
    ("ctx_list", {"tags": [_ODD, "t"], "workspace": _ODD, "offset": 1}),
    ("ctx_mocs", {"tag": _ODD, "offset": 0}),
    ("ctx_search", {"query": _ODD, "limit": 3}),
    ("ctx_import", {"contexts": [{"content": "x", "externalId": _ODD}]}),  # a 503
    ("ctx_import", {"contexts": [{"content": "é", "externalId": _ODD}]}),
    ("ctx_update", {"id": 1, "title": _ODD}),
    ("ctx_get", {"id": 2}),  # past the read timeout
    ("ctx_delete", {"id": 1}),
    ("ctx_get", {"id": 1}),
]

#: What a journal entry says of a request and its answer (not when, nor how long it took).
_JOURNALED = (
    "method",
    "path",
    "query",
    "status",
    "tenant_id",
    "fault",
    "request_body",
    "response_body",
    "body_cut",
)


def _calls_made(fake: FakeContextQ, *, linked: bool) -> tuple[list[Any], list[Any]]:
    """The answers to ``_CALLS`` and the journal they leave, the tools' REST calls made by
    the transport straight (``Rest.link``) or through the httpx2 client on it."""
    tenant = fake.create_tenant("acme")
    key = fake.mint_key(tenant, wire.SCOPES)
    transport = AsyncInProcessTransport(fake.service)
    client = httpx2.AsyncClient(transport=transport, base_url=fake.base_url, timeout=0.05)
    rest = Rest(client, wire.authorization(key), link=transport if linked else None)
    fake.faults.inject("GET", "/api/contexts/1", drop=True)
    fake.faults.inject("POST", "/api/contexts/import", status=503)
    fake.faults.inject("GET", "/api/contexts/2", delay=0.5)
    with SyncMcpClient(bound_server(rest)) as mcp:
        results = [mcp.call_tool(name, args) for name, args in _CALLS]
    answers = [(r.is_error, r.content, r.structured_content) for r in results]
    journal = [[getattr(e, name) for name in _JOURNALED] for e in fake.journal]
    return answers, journal


def test_a_tool_reaches_rest_straight_as_its_http_client_would(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    """A tool's REST call handed to the fake's transport straight (``Rest.link``, as the
    in-process and served MCP servers hand it) skips building an httpx2 request and response
    but sends what they carried: the same journal, answers and tool errors."""
    clock = lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)  # noqa: E731
    straight = _calls_made(make_fake(clock=clock), linked=True)
    through = _calls_made(make_fake(clock=clock), linked=False)
    assert straight == through
    answers, journal = straight
    assert [is_error for is_error, _, _ in answers].count(True) == 4
    assert len(journal) == len(_CALLS) + 1  # two tags: ctx_list also walks the first's pages


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
@pytest.mark.parametrize("where", ["metadata", "limit"])
def test_a_number_json_cannot_carry_is_a_tool_error_and_nothing_reaches_rest(
    fake: FakeContextQ, served: ServedFake, key: str, number: str, where: str
) -> None:
    """The SDK's JSON-RPC parser takes ``NaN``, ``Infinity`` and ``1e400`` (infinite as a
    float) where no REST body can carry them: the call was a JSON-RPC error with code 0
    (``ValueError`` encoding the REST body, the SDK's traceback logged). Now a tool error
    naming them (or, in a field Zod checks, Zod's refusal), and nothing reaches REST, a
    nullable filter (``limit``) included, which must not be sent as the null that drops it."""
    with fake.client(key) as rest:
        saved = rest.post("/api/saved-searches", json={"name": "s", "query": "q", "limit": 5})
    assert saved.status_code == 201, saved.text
    if where == "metadata":
        call = f'"name": "ctx_save", "arguments": {{"content": "x", "metadata": {{"n": {number}}}}}'
    else:
        arguments = f'{{"id": {saved.json()["id"]}, "limit": {number}}}'
        call = f'"name": "ctx_saved_searches_update", "arguments": {arguments}'
    # written out: the number is none that Python's json module writes
    body = f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{{call}}}}}'
    headers = {
        "Authorization": wire.authorization(key),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    before = len(fake.journal)
    with httpx2.Client(headers=headers) as c:
        answer = c.post(served.mcp_url, content=body)
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    if where == "metadata":  # a free object: no schema of Zod's looks inside
        assert text.startswith(_msgs.MCP_NOT_JSON_NUMBER.split("{")[0])
    else:  # z.number() refuses it: the input validation error of Zod 4's words
        got = "NaN" if number == "NaN" else "Infinity"
        named = "NaN" if number == "NaN" else "number"  # Zod's parsedType: Infinity is one
        issue = {
            "expected": "number",
            "code": "invalid_type",
            "received": got,
            "path": ["limit"],
            "message": f"Invalid input: expected number, received {named}",
        }
        assert text.startswith("MCP error -32602: Input validation error")
        assert json.loads(text[text.index("[") :]) == [issue]
    assert [e.path for e in fake.journal][before:] == ["/mcp"]
    with fake.client(key) as rest:
        assert rest.get(f"/api/saved-searches/{saved.json()['id']}").json()["limit"] == 5


def test_a_fault_on_the_mcp_endpoint_reaches_the_mcp_client(
    fake: FakeContextQ, served: ServedFake, key: str
) -> None:
    fake.faults.inject("POST", "/mcp", status=503, times=None)
    with httpx2.Client() as c:
        answer = c.post(served.mcp_url, json={}, headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 503 and answer.json()["error"] == _msgs.INJECTED_FAULT
    assert fake.journal.last.fault


def test_an_injected_fault_on_the_rest_route_reaches_the_mcp_caller(
    fake: FakeContextQ, served: ServedFake, key: str
) -> None:
    fake.faults.inject("POST", "/api/contexts", status=503)
    with SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_save", {"content": "x"})
        assert caught.value.code == _msgs.INJECTED_FAULT
        assert caught.value.text.startswith("ContextQ 503 ")
        assert mcp.call("ctx_save", {"content": "x"})["id"] == 1


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        (None, _msgs.MISSING_AUTH),
        ("Basic abc", _msgs.NOT_BEARER),
        ("Bearer sk_live_" + "0" * 40, _msgs.UNKNOWN_KEY),
    ],
)
def test_mcp_without_a_valid_key_is_the_same_401_as_rest(
    served: ServedFake, authorization: str | None, message: str
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx2.Client(headers=headers) as c:
        mcp = c.post(served.mcp_url, json=request)
        rest = c.get(served.url + "/api/contexts")
    assert mcp.status_code == rest.status_code == 401
    assert mcp.json() == rest.json() == wire.error_body(_msgs.UNAUTHORIZED, message)


def test_a_revoked_key_is_refused_at_once(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant
) -> None:
    key = fake.mint_key(tenant)
    with SyncMcpClient(served.mcp_url, api_key=key) as mcp:
        mcp.call("ctx_list", {})
    fake.revoke_key(key)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    with httpx2.Client(headers={"Authorization": wire.authorization(key)}) as c:
        answer = c.post(served.mcp_url, json=request)
    assert answer.status_code == 401
    assert answer.json()["message"] == _msgs.REVOKED_KEY


def test_a_foreign_host_header_is_refused_on_loopback(served: ServedFake, key: str) -> None:
    """DNS rebinding: a page served from another name must not reach the fake's tools."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": wire.authorization(key), "Host": "evil.example:80"}
    with httpx2.Client() as c:
        answer = c.post(served.mcp_url, json=request, headers=headers)
    assert answer.status_code == 421


def test_the_fake_can_be_served_twice_in_turn(fake: FakeContextQ, key: str) -> None:
    for _ in range(2):
        with fake.serve() as running, SyncMcpClient(running.mcp_url, api_key=key) as mcp:
            assert mcp.call("ctx_list", {})["total"] == 0


def _stdio(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "fake_contextq.cli", "mcp"], env=env
    )


@pytest.mark.slow  # a subprocess: not in --quick
def test_stdio_bridges_to_a_served_fakes_rest_api(
    fake: FakeContextQ, served: ServedFake, tenant: Tenant
) -> None:
    key = fake.mint_key(tenant, (wire.READ,))
    env = {**os.environ, wire.MCP_API_URL_ENV: served.url, wire.MCP_API_KEY_ENV: key}
    fake.create_workspace(tenant, "w")
    with SyncMcpClient(_stdio(env)) as mcp:
        assert len(mcp.list_tools()) == len(MCP_TOOLS)
        assert mcp.call("ctx_list", {})["total"] == 0
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_save", {"content": "x"})
    assert caught.value.code == _msgs.SCOPE_DENIED
    assert [e.path for e in fake.journal] == ["/api/contexts", "/api/contexts"]


@pytest.mark.slow  # a subprocess: not in --quick
def test_stdio_against_nothing_listening_is_a_tool_error_naming_the_url() -> None:
    url = "http://127.0.0.1:9"  # discard port: nothing answers
    env = {**os.environ, wire.MCP_API_URL_ENV: url, wire.MCP_API_KEY_ENV: "sk_live_" + "a" * 40}
    with SyncMcpClient(_stdio(env)) as mcp, pytest.raises(McpToolError) as caught:
        mcp.call("ctx_list", {})
    assert caught.value.text.startswith(f"ContextQ could not be reached at {url}")


@pytest.mark.slow  # a subprocess: not in --quick
def test_stdio_without_a_key_says_what_to_set() -> None:
    env = {k: v for k, v in os.environ.items() if k != wire.MCP_API_KEY_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "fake_contextq.cli", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "set CONTEXT_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # a subprocess: not in --quick
def test_serve_prints_the_mcp_url_and_ready_to_paste_client_config() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_contextq.cli", "serve", "--memory", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(7)]
    finally:
        process.terminate()
        process.wait(timeout=30)
    values = dict(line.strip().split("=", 1) for line in lines if line.startswith("CONTEXT_"))
    url, key = values["CONTEXT_API_URL"], values["CONTEXT_API_KEY"]
    mcp_url = url + wire.MCP_PATH
    assert f"MCP (streamable HTTP): {mcp_url}\n" in lines
    auth = wire.authorization(key)
    claude = f'claude mcp add --transport http contextq {mcp_url} --header "Authorization: {auth}"'
    assert any(line.strip() == claude for line in lines)
    config_line = next(line for line in lines if "MCP client config:" in line)
    config = json.loads(config_line.split("MCP client config:", 1)[1])
    server = config["mcpServers"]["contextq"]
    assert server == {"type": "http", "url": mcp_url, "headers": {"Authorization": auth}}


@pytest.mark.slow  # a subprocess: not in --quick
def test_a_served_fake_loads_the_mcp_sdk_only_with_the_first_mcp_request() -> None:
    """Most served fakes never see an MCP request; the SDK costs half a second to import."""
    code = (
        "import sys, httpx2\n"
        "from fake_contextq import FakeContextQ\n"
        "fake = FakeContextQ(); tenant = fake.create_tenant(); key = fake.mint_key(tenant)\n"
        "with fake.serve() as served:\n"
        "    httpx2.get(served.url + '/api/contexts', headers={'Authorization': 'Bearer ' + key})\n"
        "    print('mcp' in sys.modules)\n"
        "    from fake_contextq.mcp import SyncMcpClient\n"
        "    with SyncMcpClient(served.mcp_url, api_key=key) as mcp:\n"
        "        print(len(mcp.list_tools()) > 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "True"], out.stderr
