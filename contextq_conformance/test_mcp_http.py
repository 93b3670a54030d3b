"""How ContextQ's MCP endpoint answers over HTTP before any tool runs: a browser page's
CORS preflight, the OAuth discovery an MCP client tries after a 401 (a server without OAuth
answers each with a 404), and the protocol version ``initialize`` settles on. Checked
where there is HTTP (served, live); in-process the MCP server is driven in memory, so the
CORS and version rules are not checked there."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest

from contextq_conformance.targets import Target, Tenant

# Spelled here, not taken from fake_contextq (see test_search.py).
INSPECTOR_ORIGIN = "http://localhost:6274"  # the MCP Inspector's page, a browser client
ASKED_HEADERS = ("authorization", "content-type", "mcp-protocol-version")
EXPOSED = ("www-authenticate", "mcp-protocol-version")
TS_SDK_LATEST = "2025-11-25"  # LATEST_PROTOCOL_VERSION of the TypeScript SDK today
UNKNOWN_VERSION = "1999-01-01"
DISCOVERY = (
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/openid-configuration"),
    ("POST", "/register"),
)


def _mcp_url(target: Target) -> str:
    if target.mcp_url is None:
        pytest.skip("in-process there is no HTTP: the MCP server is driven in memory")
    return target.mcp_url


def _names(header: str | None) -> set[str]:
    return {part.strip().lower() for part in (header or "").split(",") if part.strip()}


def _allows(origin_header: str | None) -> bool:
    return origin_header in ("*", INSPECTOR_ORIGIN)


@pytest.mark.contract("mcp.cors-preflight")
def test_a_browser_pages_preflight_is_allowed_and_so_is_reading_the_401(
    target: Target, tenant: Tenant
) -> None:
    url = _mcp_url(target)
    http = tenant.client.http
    asked = {
        "Origin": INSPECTOR_ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": ",".join(ASKED_HEADERS),
    }
    answer = http.options(url, headers=asked)
    assert answer.status_code == 204, answer.text[:500]
    headers = answer.headers
    assert _allows(headers.get("access-control-allow-origin")), dict(headers)
    assert "post" in _names(headers.get("access-control-allow-methods")), dict(headers)
    allowed = _names(headers.get("access-control-allow-headers"))
    assert "*" in allowed or set(ASKED_HEADERS) <= allowed, dict(headers)
    assert set(EXPOSED) <= _names(headers.get("access-control-expose-headers")), dict(headers)
    # the request it was asked for, without a key: a 401 the page may read, challenge and all
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Origin": INSPECTOR_ORIGIN, "Accept": "application/json, text/event-stream"}
    refused = http.post(url, json=request, headers=accept)
    assert refused.status_code == 401
    assert _allows(refused.headers.get("access-control-allow-origin")), dict(refused.headers)
    exposed = _names(refused.headers.get("access-control-expose-headers"))
    assert "www-authenticate" in exposed, dict(refused.headers)


@pytest.mark.contract("auth.no-oauth")
@pytest.mark.parametrize(("method", "path"), DISCOVERY, ids=[p for _, p in DISCOVERY])
def test_oauth_discovery_finds_no_oauth(target: Target, method: str, path: str) -> None:
    """Asked where an MCP client asks: the MCP endpoint's origin (else the API's)."""
    client = target.client_for_key("sk_live_" + "0" * 40)  # sent by no request here
    url = target.mcp_url or client.api.base_url
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    body = {"client_name": "contextq-conformance", "redirect_uris": ["http://localhost/cb"]}
    answer = client.http.request(method, origin + path, json=body if method == "POST" else None)
    assert answer.status_code == 404, (answer.status_code, answer.text[:500])


def _initialize(http: httpx2.Client, url: str, key: str, version: str) -> dict[str, Any]:
    """The result of one ``initialize`` asking for ``version`` (a stateless server answers
    each POST on its own), read from JSON or from an event stream's ``data:``."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "contextq-conformance", "version": "1"},
        },
    }
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
    }
    answer = http.post(url, json=request, headers=headers)
    assert answer.status_code == 200, (answer.status_code, answer.text[:500])
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in answer.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[0])
    else:
        message = answer.json()
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


@pytest.mark.contract("mcp.protocol-versions")
def test_initialize_answers_the_version_asked_for_or_the_servers_latest(
    target: Target, tenant: Tenant
) -> None:
    url = _mcp_url(target)
    http, key = tenant.client.http, tenant.client.key
    assert _initialize(http, url, key, TS_SDK_LATEST)["protocolVersion"] == TS_SDK_LATEST
    latest = _initialize(http, url, key, UNKNOWN_VERSION)["protocolVersion"]
    # the server's latest: no older than what it just agreed to, and one it agrees to
    assert latest >= TS_SDK_LATEST, latest
    assert _initialize(http, url, key, latest)["protocolVersion"] == latest
