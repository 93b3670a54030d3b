"""How ContextQ's MCP server answers beside its tools' work: which mistakes are tool
results (``isError``) rather than JSON-RPC errors, the Bearer challenge of a 401, and the
output schemas its tools declare. Seed 003 places the server in ``mcp/src/tools.ts``, so the
shapes assumed are those of the TypeScript SDK's ``McpServer``; a real run says which hold."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import jsonschema
import pytest

from contextq_conformance._results import ok, text
from contextq_conformance.targets import Target, Tenant

TOOL_ERROR = "MCP error -32602: "  # the TypeScript SDK's McpError text, as a tool result
BAD_ARGUMENTS = TOOL_ERROR + "Input validation error"
UNKNOWN_KEY = "sk_live_" + "0" * 40
CHALLENGE = re.compile(r'^Bearer realm="[^"]*"', re.IGNORECASE)
INVALID_TOKEN = re.compile(r'\berror="invalid_token"')


def _call(target: Target, tenant: Tenant, name: str, arguments: dict[str, Any]) -> Any:
    """The tool's result; a JSON-RPC error (which the client raises) fails the rule."""
    try:
        return target.mcp(tenant.client).call_tool(name, arguments)
    except Exception as exc:  # the client's exception for a protocol error, whatever its class
        pytest.fail(f"{name} answered a JSON-RPC error, not an isError result: {exc!r}")


@pytest.mark.contract("mcp.unknown-tool")
def test_an_unknown_tool_is_an_error_result(target: Target, tenant: Tenant) -> None:
    result = _call(target, tenant, "ctx_no_such_tool", {})
    assert result.is_error
    assert text(result) == TOOL_ERROR + "Tool ctx_no_such_tool not found"


@pytest.mark.contract("mcp.bad-arguments")
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("ctx_get", {"id": "abc"}), ("ctx_save", {}), ("ctx_search", {"query": 7})],
    ids=["wrong-type", "missing-required", "wrong-type-required"],
)
def test_a_bad_argument_is_an_input_validation_error_result(
    target: Target, tenant: Tenant, tool: str, arguments: dict[str, Any]
) -> None:
    result = _call(target, tenant, tool, arguments)
    assert result.is_error
    assert text(result).startswith(BAD_ARGUMENTS), text(result)
    assert tenant.client.api.list_contexts().total == 0


def _challenge(answer: httpx2.Response, key_sent: bool) -> None:
    assert answer.status_code == 401, answer.text[:500]
    challenge = answer.headers.get("WWW-Authenticate", "")
    assert CHALLENGE.match(challenge), f"WWW-Authenticate: {challenge!r}"
    assert bool(INVALID_TOKEN.search(challenge)) == key_sent, challenge


@pytest.mark.contract("auth.401-challenge")
def test_a_401_carries_a_bearer_challenge_on_rest_and_mcp(target: Target) -> None:
    """Where the target has no HTTP (in-process), the REST route answers through the
    client's transport as the other 401 rules do, and ``/mcp`` is not there to ask."""
    client = target.client_for_key(UNKNOWN_KEY)
    route = f"{client.api.base_url}/api/contexts"
    _challenge(client.http.get(route), key_sent=False)
    _challenge(client.http.get(route, headers={"Authorization": f"Bearer {UNKNOWN_KEY}"}), True)
    if target.mcp_url is None:
        return
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    _challenge(client.http.post(target.mcp_url, json=request, headers=accept), key_sent=False)
    wrong = {**accept, "Authorization": f"Bearer {UNKNOWN_KEY}"}
    _challenge(client.http.post(target.mcp_url, json=request, headers=wrong), key_sent=True)


def _validate(schema: dict[str, Any], instance: dict[str, Any]) -> None:
    validator = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    validator.check_schema(schema)
    validator(schema).validate(instance)


@pytest.mark.contract("mcp.output-schemas")
def test_every_tool_declares_an_output_schema_its_results_satisfy(
    target: Target, tenant: Tenant
) -> None:
    mcp = target.mcp(tenant.client)
    schemas = {t.name: t.output_schema for t in mcp.list_tools()}
    assert [name for name, schema in schemas.items() if not schema] == []
    saved = ok(mcp.call_tool("ctx_save", {"content": "Schema check", "tags": ["s"]}))
    _validate(dict(schemas["ctx_save"] or {}), saved)
    _validate(dict(schemas["ctx_get"] or {}), ok(mcp.call_tool("ctx_get", {"id": saved["id"]})))
    _validate(dict(schemas["ctx_list"] or {}), ok(mcp.call_tool("ctx_list", {})))
