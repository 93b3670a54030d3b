"""Text that is not valid Unicode, one decision everywhere (``wire.well_formed``): a lone
surrogate a request carries (JSON text may hold one escaped) is U+FFFD from the edge on,
so every store holds the same text and every surface (REST, MCP in-process and over HTTP)
answers it, never a 500 and never a body that is not JSON.

The property drives the three stores side by side with text full of lone surrogates and
pairs; the tests after it check the served ``/mcp`` and MCP arguments on each store.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter import wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.domain.records import Context
from fake_contextq.mcp import SyncMcpClient
from tests.fake_contextq.test_store_differential import Side, normalised
from tests.support.stores import StorePool, fresh_store

pytestmark = pytest.mark.all_stores

SURROGATES = st.characters(categories=["Cs"])
PAIRS = st.sampled_from(["\ud83d\ude00", "\udbff\udfff"])  # escaped halves of one character
PIECES = st.one_of(SURROGATES, PAIRS, st.characters(exclude_characters="\x00"))
#: Text with lone surrogates in it most of the time.
TEXT = st.lists(st.one_of(SURROGATES, PIECES), min_size=1, max_size=8).map("".join)


def stringify(body: Any) -> bytes:
    """A body as JSON.stringify writes it: a lone surrogate as its ``\\udXXX`` escape."""
    return json.dumps(body).encode()


def segment(text: str) -> str:
    """``text`` as one path segment (its UTF-8, so only for well-formed text)."""
    encoded = quote(text, safe="")
    return encoded.replace(".", "%2E") if encoded in (".", "..") else encoded


def no_lone_surrogate(value: Any) -> bool:
    return bool(wire.well_formed_json(value) == value)


@dataclass
class Leg:
    side: Side
    mcp: SyncMcpClient


@pytest.fixture
def legs(store_pool: StorePool) -> Iterator[list[Leg]]:
    made: list[Leg] = []
    try:
        for kind in ("memory", "sqlite", "postgres"):
            fake = FakeContextQ(store=fresh_store(store_pool, kind))
            key = fake.mint_key(fake.create_tenant("acme", "enterprise"), wire.SCOPES)
            side = Side(kind, fake, fake.client(key))
            made.append(Leg(side, SyncMcpClient(fake.mcp_server(key)).open()))
        yield made
    finally:
        for leg in made:
            leg.mcp.close()
            leg.side.client.close()
            leg.side.fake.close()


def agree(answers: list[tuple[int, Any]], legs: list[Leg]) -> tuple[int, Any]:
    first = answers[0]
    for leg, other in zip(legs[1:], answers[1:], strict=True):
        assert other == first, (leg.side.kind, other, "memory", first)
    return first


def rest(legs: list[Leg], method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One REST request to every store: never a 500, a JSON body without a lone surrogate,
    the same answer everywhere (ids and timestamps aside)."""
    answers = []
    for leg in legs:
        content = None if body is None else stringify(body)
        headers = {} if body is None else {"content-type": "application/json"}
        response = leg.side.client.request(method, path, content=content, headers=headers)
        assert response.status_code < 500, (leg.side.kind, response.text)
        shown = response.json() if response.content else None
        assert no_lone_surrogate(shown), (leg.side.kind, response.text)
        answers.append((response.status_code, normalised(shown, leg.side)))
    return agree(answers, legs)


def mcp(legs: list[Leg], tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """One MCP tool call on every store: a result (never a protocol error), without a lone
    surrogate, the same everywhere."""
    answers = []
    for leg in legs:
        result = leg.mcp.call_tool(tool, args)
        assert no_lone_surrogate(result.structured_content), (leg.side.kind, result)
        answers.append((bool(result.is_error), normalised(result.structured_content, leg.side)))
    first = answers[0]
    assert all(a == first for a in answers), answers
    return first


@pytest.mark.slow  # three stores, Postgres among them
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(title=TEXT, content=TEXT, tag=TEXT, external=TEXT, query=TEXT)
def test_every_store_and_surface_answers_text_that_is_not_unicode_alike(
    legs: list[Leg], title: str, content: str, tag: str, external: str, query: str
) -> None:
    """The legs are the three stores, side by side, for every example."""
    n = next(_examples)
    tag, external = f"{n}{tag}"[: wire.MAX_TAG_CHARS], f"{n}:{external}"
    body = {"type": "reference", "title": title, "content": content, "tags": [tag]}
    status, made = rest(legs, "POST", "/api/contexts", {**body, "externalId": external})
    if status != 201:  # text no request may hold (a blank title...): refused alike, no row
        assert status == 400, made
        return
    assert (made["title"], made["content"]) == (wire.well_formed(title), wire.well_formed(content))
    assert (made["tags"], made["externalId"]) == (
        [wire.well_formed(tag)],
        wire.well_formed(external),
    )
    ids = [int(leg.side.fake.context_json(leg.side.fake.tenants()[0])[-1]["id"]) for leg in legs]
    for leg, row_id in zip(legs, ids, strict=True):
        got = leg.side.client.get(f"/api/contexts/{row_id}")
        assert normalised(got.json(), leg.side) == made
    assert (
        rest(legs, "GET", "/api/contexts/by-external/" + segment(wire.well_formed(external)))[1]
        == made
    )
    raw_segment = quote(external, safe="", errors="surrogatepass")
    rest(legs, "GET", "/api/contexts/by-external/" + raw_segment.replace(".", "%2E"))
    listed = rest(legs, "GET", f"/api/contexts?tag={segment(wire.well_formed(tag))}")
    assert listed[0] == 200 and listed[1]["total"] == 1
    rest(legs, "GET", "/api/contexts?limit=500")
    rest(legs, "POST", "/api/search", {"query": query, "tags": [tag]})
    assert mcp(legs, "ctx_get", {"externalId": external}) == (False, made)
    mcp(legs, "ctx_list", {})
    error, page = mcp(legs, "ctx_list", {"tags": [tag, tag]})
    assert not error and page["total"] == 1
    mcp(legs, "ctx_search", {"query": query, "tags": [tag]})


_examples = itertools.count()


# ----- the served /mcp and MCP arguments, on each store --------------------------------------


def test_the_served_mcp_answers_a_title_sent_with_a_lone_surrogate(
    fake: FakeContextQ, client: httpx2.Client, key: str
) -> None:
    """Over HTTP the answer is JSON text: a lone surrogate in it made the whole tenant's
    listing unreadable."""
    raw = stringify({"type": "reference", "title": "x\ud800y", "content": "rotate keys"})
    made = client.post("/api/contexts", content=raw, headers={"content-type": "application/json"})
    assert made.json()["title"] == "x\ufffdy"
    with fake.serve() as served, SyncMcpClient(served.mcp_url, api_key=key) as session:
        assert session.call("ctx_get", {"id": made.json()["id"]}) == made.json()
        assert session.call("ctx_list", {})["items"][0]["title"] == "x\ufffdy"
        found = session.call("ctx_search", {"query": "rotate"})["results"]
        assert found[0]["context"]["title"] == "x\ufffdy"


def test_mcp_arguments_with_lone_surrogates_are_stored_as_u_fffd(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    """JSON-RPC text may escape a lone surrogate as any JSON may (a TypeScript client's
    JSON.stringify writes one so): the tool gets U+FFFD in its place, as REST would store."""
    arguments = {"content": "a\udc00", "tags": ["t\ud800"], "metadata": {"k\udfff": "v\ud800"}}
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ctx_save", "arguments": arguments},
    }
    headers = {
        "Authorization": wire.authorization(key),
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    with fake.serve() as served:
        answer = httpx2.post(served.mcp_url, content=stringify(call), headers=headers)
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert not result.get("isError"), result
        saved = result["structuredContent"]
        with SyncMcpClient(served.mcp_url, api_key=key) as session:
            assert session.call("ctx_list", {"tags": ["t\ufffd"]})["total"] == 1
    assert (saved["content"], saved["title"], saved["tags"]) == ("a\ufffd", "a\ufffd", ["t\ufffd"])
    assert saved["metadata"] == {"k\ufffd": "v\ufffd"}
    assert fake.context_json(tenant) == [saved]


def test_a_lone_surrogate_a_store_held_from_before_is_answered_as_u_fffd(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client, key: str
) -> None:
    """A database written before this rule (or by anything but the fake) may hold one: REST
    and the served /mcp answer it as U+FFFD, as if it had come in through the edge."""
    now = datetime.now(UTC)
    with fake.store.transaction():
        row_id = fake.store.next_id("context")
        fake.store.put_context(
            Context(row_id, tenant.id, None, None, "reference", "old \ud800", "c", ("t",), None,
                    {"k\udfff": 1}, now, now)
        )  # fmt: skip
    got = client.get(f"/api/contexts/{row_id}")
    assert got.status_code == 200, got.text
    assert (got.json()["title"], got.json()["metadata"]) == ("old \ufffd", {"k\ufffd": 1})
    assert client.get("/api/contexts").json()["items"][0]["title"] == "old \ufffd"
    with fake.serve() as served, SyncMcpClient(served.mcp_url, api_key=key) as session:
        assert session.call("ctx_get", {"id": row_id}) == got.json()
        assert session.call("ctx_list", {})["items"][0]["title"] == "old \ufffd"
