"""The 401 that clients understand: the Bearer challenge on every 401 (RFC 6750 §3), OAuth
discovery answered as by a server that offers none, CORS on ``/mcp``, and what an MCP
client then shows."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, ServedFake, Tenant, _msgs
from fake_contextq.http.control import CONTROL_REALM
from fake_contextq.mcp.cors import EXPOSED_HEADERS

NO_ERROR = 'Bearer realm="contextq"'
UNKNOWN = "sk_live_" + "0" * 40
RPC = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_ACCEPT = [(b"Accept", b"application/json, text/event-stream")]


def _invalid(message: str) -> str:
    return f'Bearer realm="contextq", error="invalid_token", error_description="{message}"'


# (Authorization header sent, the challenge, the message): no header or another scheme is
# "no token sent" (RFC 6750 §3.1: no error attribute); a token of the wrong shape, unknown
# or revoked is invalid_token
REFUSALS: list[tuple[str | bytes | None, str, str]] = [
    (None, NO_ERROR, _msgs.MISSING_AUTH),
    ("Basic dXNlcjpwdw==", NO_ERROR, _msgs.NOT_BEARER),
    ("Bearer", NO_ERROR, _msgs.NOT_BEARER),
    ("Bogus-Scheme sk_live_" + "a" * 40, NO_ERROR, _msgs.NOT_BEARER),
    ("Bearer sk_live_abc", _invalid(_msgs.MALFORMED_KEY), _msgs.MALFORMED_KEY),
    ("Bearer " + "x" * 60_000, _invalid(_msgs.MALFORMED_KEY), _msgs.MALFORMED_KEY),
    (b"Bearer sk_live_\xff\xfe\x80", _invalid(_msgs.MALFORMED_KEY), _msgs.MALFORMED_KEY),
    (f"Bearer {UNKNOWN}", _invalid(_msgs.UNKNOWN_KEY), _msgs.UNKNOWN_KEY),
]
IDS = ["none", "basic", "empty-bearer", "bogus-scheme", "malformed", "huge", "latin1", "unknown"]


def _headers(authorization: str | bytes | None) -> list[tuple[bytes, bytes]]:
    """The request's headers, as bytes: a value may hold any byte."""
    if authorization is None:
        return []
    value = authorization if isinstance(authorization, bytes) else authorization.encode()
    return [(b"Authorization", value)]


@pytest.fixture(scope="module")
def module_fake() -> FakeContextQ:
    return FakeContextQ()


@pytest.fixture(scope="module")
def module_served(module_fake: FakeContextQ) -> Iterator[ServedFake]:
    with module_fake.serve(control_token="ctl-token") as served:
        yield served


# ----- the challenge on REST, in-process and served ----------------------------------------


@pytest.mark.parametrize(("authorization", "challenge", "message"), REFUSALS, ids=IDS)
@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api/contexts"), ("POST", "/api/search"), ("DELETE", "/api/contexts/1")],
)
def test_every_rest_401_carries_the_challenge_in_process(
    module_fake: FakeContextQ,
    authorization: str | bytes | None,
    challenge: str,
    message: str,
    method: str,
    path: str,
) -> None:
    with module_fake.client(None) as c:
        answer = c.request(method, path, headers=_headers(authorization), json={"query": "q"})
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == challenge
    assert answer.json() == wire.error_body(_msgs.UNAUTHORIZED, message)


@pytest.mark.parametrize(("authorization", "challenge", "message"), REFUSALS[:-2], ids=IDS[:-2])
def test_every_rest_401_carries_the_challenge_served(
    module_served: ServedFake, authorization: str | None, challenge: str, message: str
) -> None:
    """Served too (a header over uvicorn's size limit, or bytes it will not pass, are
    uvicorn's to refuse before the fake: those two are tested in-process above)."""
    answer = httpx2.get(module_served.url + "/api/contexts", headers=_headers(authorization))
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, challenge)
    assert answer.json()["message"] == message


def test_a_revoked_key_is_an_invalid_token(fake: FakeContextQ, tenant: Tenant) -> None:
    key = fake.mint_key(tenant)
    fake.revoke_key(key)
    with fake.client(key) as c:
        answer = c.get("/api/contexts")
    assert answer.headers["www-authenticate"] == _invalid(_msgs.REVOKED_KEY)


def test_a_good_key_gets_no_challenge(fake: FakeContextQ, key: str) -> None:
    with fake.client(key) as c:
        assert "www-authenticate" not in c.get("/api/contexts").headers


def test_an_injected_401_carries_the_challenge_too(fake: FakeContextQ, key: str) -> None:
    fake.faults.inject("GET", "/api/contexts", status=401)
    with fake.client(key) as c:
        answer = c.get("/api/contexts")
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, NO_ERROR)


def test_the_challenge_keeps_to_the_characters_rfc_6750_allows() -> None:
    challenge = wire.bearer_challenge("r", "invalid_token", 'a "quoted" \\ näme\n')
    assert (
        challenge
        == 'Bearer realm="r", error="invalid_token", error_description="a \'quoted\' ? n?me?"'
    )


# ----- the control routes: their own realm ---------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        (None, f'Bearer realm="{CONTROL_REALM}"'),
        ("Basic x", f'Bearer realm="{CONTROL_REALM}"'),
        (
            "Bearer wrong",
            f'Bearer realm="{CONTROL_REALM}", error="invalid_token", '
            f'error_description="{_msgs.CONTROL_TOKEN_REQUIRED}"',
        ),
    ],
)
def test_the_control_routes_401_names_their_own_realm(
    module_served: ServedFake, authorization: str | None, challenge: str
) -> None:
    answer = httpx2.get(module_served.url + "/_fake/tenants", headers=_headers(authorization))
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, challenge)
    assert answer.json()["message"] == _msgs.CONTROL_TOKEN_REQUIRED


def test_the_dashboards_401_page_names_the_control_realm(module_served: ServedFake) -> None:
    answer = httpx2.get(module_served.url + "/_fake/ui")
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == f'Bearer realm="{CONTROL_REALM}"'


# ----- /mcp ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("authorization", "challenge", "message"), REFUSALS[:-2], ids=IDS[:-2])
def test_mcp_401_carries_the_same_challenge_and_rest_body(
    module_served: ServedFake, authorization: str | None, challenge: str, message: str
) -> None:
    answer = httpx2.post(module_served.mcp_url, json=RPC, headers=_headers(authorization))
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, challenge)
    assert answer.json() == wire.error_body(_msgs.UNAUTHORIZED, message)


@pytest.mark.parametrize(("authorization", "challenge", "message"), REFUSALS[:-2], ids=IDS[:-2])
def test_mcp_401_to_an_mcp_client_is_a_json_rpc_error(
    module_served: ServedFake, authorization: str | None, challenge: str, message: str
) -> None:
    headers = [*_headers(authorization), *MCP_ACCEPT]
    answer = httpx2.post(module_served.mcp_url, json=RPC, headers=headers)
    assert (answer.status_code, answer.headers["www-authenticate"]) == (401, challenge)
    rest = wire.error_body(_msgs.UNAUTHORIZED, message)
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": wire.MCP_UNAUTHORIZED_CODE,
            "message": f"ContextQ 401 unauthorized: {message}",
            "data": rest,
        },
    }


async def _initialize(url: str, authorization: str | None) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=_headers(authorization)) as http,
        streamable_http_client(url, http_client=http) as (read, write, *_),
        ClientSession(read, write) as session,
    ):
        await session.initialize()


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


@pytest.mark.parametrize(
    ("authorization", "shown"),
    [
        (None, f"ContextQ 401 unauthorized: {_msgs.MISSING_AUTH}"),
        (f"Bearer {UNKNOWN}", "ContextQ 401 unauthorized: Unknown API key."),
    ],
    ids=["no-key", "unknown-key"],
)
def test_the_python_sdk_shows_what_key_to_send(
    module_served: ServedFake, authorization: str | None, shown: str
) -> None:
    """Without the JSON-RPC body the SDK shows only '-32603 Server returned an error
    response'; with it, REST's message."""
    from mcp.shared.exceptions import MCPError

    with pytest.raises(BaseException) as caught:
        anyio.run(_initialize, module_served.mcp_url, authorization)
    error = _leaf(caught.value)
    assert isinstance(error, MCPError), repr(caught.value)
    assert (error.error.code, error.error.message) == (wire.MCP_UNAUTHORIZED_CODE, shown)
    assert "sk_live_" in shown or "API key" in shown


# ----- OAuth discovery: a server that offers none --------------------------------------------

DISCOVERY = [
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
    ("GET", "/.well-known/oauth-authorization-server"),
    ("GET", "/.well-known/oauth-authorization-server/mcp"),
    ("GET", "/.well-known/openid-configuration"),
    ("GET", "/.well-known/openid-configuration/mcp"),
    ("GET", "/mcp/.well-known/openid-configuration"),
    ("POST", "/register"),
]


def _no_oauth(method: str, path: str) -> dict[str, str]:
    message = _msgs.OAUTH_NOT_OFFERED.format(method=method, path=path)
    return wire.error_body(_msgs.NOT_FOUND, message, {"error_description": message})


@pytest.mark.parametrize(("method", "path"), DISCOVERY, ids=[p for _, p in DISCOVERY])
def test_oauth_discovery_is_a_404_that_names_the_api_key(
    module_fake: FakeContextQ, module_served: ServedFake, method: str, path: str
) -> None:
    with module_fake.client(None) as c:
        in_process = c.request(method, path, json={"client_name": "x"})
    served = httpx2.request(method, module_served.url + path, json={"client_name": "x"})
    for answer in (in_process, served):
        assert answer.status_code == 404
        assert answer.json() == _no_oauth(method, path)
        assert "Authorization: Bearer sk_live_" in answer.json()["error_description"]
    journaled = [(e.method, e.path, e.status) for e in module_fake.journal]
    assert journaled.count((method, path, 404)) >= 2  # ContextQ's origin: journaled


def test_other_unknown_routes_keep_their_plain_404(fake: FakeContextQ) -> None:
    with fake.client(None) as c:
        answer = c.get("/.well-known/security.txt")
    assert answer.json() == wire.error_body(
        _msgs.NOT_FOUND,
        _msgs.ROUTE_NOT_FOUND.format(method="GET", path="/.well-known/security.txt"),
    )


def test_the_python_sdks_oauth_client_ends_naming_the_api_key(module_served: ServedFake) -> None:
    """An OAuth-capable client (the SDK's provider) probes discovery, finds none, tries
    dynamic registration and fails with the 404's body: which names the API key."""
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    class _Memory:
        async def get_tokens(self) -> None:
            return None

        async def set_tokens(self, tokens: object) -> None: ...

        async def get_client_info(self) -> None:
            return None

        async def set_client_info(self, info: object) -> None: ...

    async def redirect(url: str) -> None:
        raise AssertionError(f"no authorization to redirect to: {url}")

    async def callback() -> AuthorizationCodeResult:
        raise AssertionError("no callback")

    provider = OAuthClientProvider(
        server_url=module_served.mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="probe",
            redirect_uris=["http://127.0.0.1:1/cb"],  # type: ignore[list-item]
        ),
        storage=_Memory(),
        redirect_handler=redirect,
        callback_handler=callback,
    )

    async def post() -> None:
        async with httpx2.AsyncClient(auth=provider) as http:
            await http.post(module_served.mcp_url, json=RPC, headers=MCP_ACCEPT)

    with pytest.raises(BaseException) as caught:
        anyio.run(post)
    shown = str(_leaf(caught.value))
    assert "404" in shown and "ContextQ does not offer OAuth" in shown, shown
    assert "Authorization: Bearer sk_live_" in shown, shown


# ----- CORS on /mcp --------------------------------------------------------------------------

PREFLIGHT = {
    "Origin": "http://localhost:6274",
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type,mcp-protocol-version",
}


def test_a_preflight_from_a_loopback_page_is_allowed(module_served: ServedFake) -> None:
    answer = httpx2.options(module_served.mcp_url, headers=PREFLIGHT)
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "http://localhost:6274"
    assert (
        answer.headers["access-control-allow-headers"]
        == PREFLIGHT["Access-Control-Request-Headers"]
    )
    assert "POST" in answer.headers["access-control-allow-methods"].split(",")
    assert "WWW-Authenticate" in answer.headers["access-control-expose-headers"].split(",")
    assert "Origin" in answer.headers["vary"]


def test_a_preflight_from_a_foreign_page_is_refused_saying_why(module_served: ServedFake) -> None:
    answer = httpx2.options(
        module_served.mcp_url, headers={**PREFLIGHT, "Origin": "http://evil.example"}
    )
    assert answer.status_code == 403
    assert "access-control-allow-origin" not in answer.headers
    assert answer.text == _msgs.MCP_ORIGIN_REFUSED.format(origin="http://evil.example")


def test_a_browsers_401_is_readable_by_the_page(module_served: ServedFake) -> None:
    answer = httpx2.post(
        module_served.mcp_url, json=RPC, headers={"Origin": "http://127.0.0.1:6274"}
    )
    assert answer.status_code == 401
    assert answer.headers["access-control-allow-origin"] == "http://127.0.0.1:6274"
    assert answer.headers["access-control-expose-headers"] == EXPOSED_HEADERS
    assert answer.headers["www-authenticate"] == NO_ERROR


def test_a_browsers_answer_is_readable_by_the_page(
    module_fake: FakeContextQ, module_served: ServedFake
) -> None:
    key = module_fake.mint_key(module_fake.create_tenant("cors"))
    headers = [
        (b"Origin", b"http://127.0.0.1:6274"),
        *_headers(wire.authorization(key)),
        *MCP_ACCEPT,
    ]
    answer = httpx2.post(module_served.mcp_url, json=RPC, headers=headers)
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "http://127.0.0.1:6274"


def test_served_on_any_host_every_origin_is_allowed(fake: FakeContextQ) -> None:
    with fake.serve(host="0.0.0.0") as served:
        url = served.mcp_url.replace("0.0.0.0", "127.0.0.1")
        answer = httpx2.options(url, headers={**PREFLIGHT, "Origin": "https://app.example"})
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "*"


def test_an_options_without_cors_headers_is_not_a_preflight(module_served: ServedFake) -> None:
    answer = httpx2.options(module_served.mcp_url)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == NO_ERROR
