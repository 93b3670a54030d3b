"""Links between contexts (``ctx_link``, ``ctx_links`` and their REST twins): every rule on
every store, and through MCP in-process."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import jsonschema
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.audit import PkmAction
from fake_contextq.mcp import McpToolError, SyncMcpClient
from fake_contextq.service import mcp_tool
from tests.support.helpers import SUMMARY_KEYS, MakeContext

pytestmark = pytest.mark.all_stores


def _output(name: str) -> Any:
    """The output schema the server lists for the tool ``name``."""
    tool = mcp_tool(name)
    assert tool is not None
    return tool.output_schema


def link(client: httpx2.Client, source: int, target: Any, **body: Any) -> httpx2.Response:
    return client.post(f"/api/contexts/{source}/links", json={"targetId": target, **body})


def links_of(client: httpx2.Client, context_id: int | str) -> httpx2.Response:
    return client.get(f"/api/contexts/{context_id}/links")


def issues_of(response: httpx2.Response) -> dict[str, str]:
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"] == _msgs.VALIDATION_ERROR
    return {i["path"]: i["message"] for i in body["issues"]}


@pytest.fixture
def pair(make_context: MakeContext) -> tuple[int, int]:
    return make_context(title="Decision")["id"], make_context(title="Evidence")["id"]


@pytest.fixture
def mcp(fake: FakeContextQ, key: str) -> Iterator[SyncMcpClient]:
    with SyncMcpClient(fake.mcp_server(key)) as session:
        yield session


# ----- the rules, through REST -----


def test_a_link_is_answered_201_and_listed_from_both_ends(
    client: httpx2.Client, pair: tuple[int, int]
) -> None:
    a, b = pair
    made = link(client, a, b, relation="supports")
    assert made.status_code == 201
    body = made.json()
    assert body["sourceId"] == a and body["targetId"] == b and body["relation"] == "supports"
    assert body["createdAt"].endswith("Z")
    jsonschema.validate(body, _output("ctx_link"))

    from_a, from_b = links_of(client, a).json(), links_of(client, b).json()
    jsonschema.validate(from_a, _output("ctx_links"))
    assert from_a["context"]["id"] == a and from_a["incoming"] == []
    (out,) = from_a["outgoing"]
    assert (out["id"], out["relation"], out["context"]["id"]) == (body["id"], "supports", b)
    assert set(out["context"]) == SUMMARY_KEYS  # a summary: no content
    assert from_b["outgoing"] == []
    (inc,) = from_b["incoming"]
    assert (inc["id"], inc["context"]["id"], inc["context"]["title"]) == (body["id"], a, "Decision")


def test_the_relation_defaults_to_related_and_one_pair_may_carry_several(
    client: httpx2.Client, pair: tuple[int, int]
) -> None:
    a, b = pair
    assert link(client, a, b).json()["relation"] == wire.LINK_DEFAULT_RELATION
    assert link(client, a, b, relation="part_of").status_code == 201
    assert link(client, b, a).status_code == 201  # the other direction is another link
    listed = links_of(client, a).json()
    assert [x["relation"] for x in listed["outgoing"]] == ["related", "part_of"]
    assert [x["relation"] for x in listed["incoming"]] == ["related"]


def test_the_same_link_twice_is_a_409_naming_the_first(
    client: httpx2.Client, pair: tuple[int, int], fake: FakeContextQ
) -> None:
    a, b = pair
    first = link(client, a, b, relation="supports").json()
    audited = len(fake.audit_log())
    again = link(client, a, b, relation="supports")
    assert again.status_code == 409
    message = _msgs.LINK_EXISTS_MSG.format(source=a, target=b, relation="supports", id=first["id"])
    assert again.json() == {"error": _msgs.LINK_EXISTS, "message": message, "linkId": first["id"]}
    assert len(fake.audit_log()) == audited  # a refusal writes nothing


def test_a_context_cannot_be_linked_to_itself(client: httpx2.Client, pair: tuple[int, int]) -> None:
    a, _ = pair
    assert issues_of(link(client, a, a)) == {"targetId": _msgs.LINK_TO_SELF}


def test_either_end_missing_is_a_404(client: httpx2.Client, pair: tuple[int, int]) -> None:
    a, _ = pair
    for source, target, missing in ((a, 999_999, 999_999), (999_999, a, 999_999)):
        refused = link(client, source, target)
        assert refused.status_code == 404
        assert refused.json()["message"] == _msgs.CONTEXT_NOT_FOUND.format(id=missing)
    assert links_of(client, 999_999).status_code == 404
    assert links_of(client, wire.MAX_ID).status_code == 404
    assert links_of(client, "9" * 19).status_code == 404  # beyond MAX_ID: no such row


def test_another_tenants_context_is_a_404_at_either_end_and_never_shown(
    client: httpx2.Client,
    pair: tuple[int, int],
    other: tuple[Tenant, httpx2.Client],
) -> None:
    a, b = pair
    assert link(client, a, b, relation="mine").status_code == 201
    _, theirs = other
    foreign = theirs.post("/api/contexts", json={"type": "user", "title": "T", "content": "x"})
    f = foreign.json()["id"]
    for refused in (
        link(client, a, f),
        link(client, f, a),
        link(theirs, f, a),
        links_of(theirs, a),
        links_of(client, f),
    ):
        assert refused.status_code == 404, refused.text
        assert "Decision" not in refused.text and "mine" not in refused.text
    assert links_of(theirs, f).json()["outgoing"] == []


def test_deleting_a_context_removes_its_links_in_both_directions(
    client: httpx2.Client, make_context: MakeContext, fake: FakeContextQ, tenant: Tenant
) -> None:
    a, b, c = (make_context(title=t)["id"] for t in ("A", "B", "C"))
    for source, target in ((a, b), (b, c), (c, a)):
        assert link(client, source, target).status_code == 201
    assert client.delete(f"/api/contexts/{b}").status_code == 204
    assert links_of(client, b).status_code == 404
    from_a, from_c = links_of(client, a).json(), links_of(client, c).json()
    assert from_a["outgoing"] == [] and [x["context"]["id"] for x in from_a["incoming"]] == [c]
    assert from_c["incoming"] == [] and [x["context"]["id"] for x in from_c["outgoing"]] == [a]
    with fake.store.transaction():  # the rows themselves are gone, not only hidden
        assert [(x.source_id, x.target_id) for x in fake.store.links(tenant.id, a)] == [(c, a)]
        assert fake.store.links(tenant.id, b) == []
    again = make_context(title="B again")["id"]
    assert links_of(client, again).json()["incoming"] == []


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({}, "targetId", _msgs.REQUIRED),
        (
            {"targetId": "2"},
            "targetId",
            _msgs.EXPECTED.format(expected="integer", received="string"),
        ),
        (
            {"targetId": True},
            "targetId",
            _msgs.EXPECTED.format(expected="integer", received="boolean"),
        ),
        (
            {"targetId": 1.5},
            "targetId",
            _msgs.EXPECTED.format(expected="integer", received="number"),
        ),
        ({"targetId": 0}, "targetId", _msgs.OUT_OF_RANGE.format(min=1, max=wire.MAX_ID)),
        ({"targetId": 2**63}, "targetId", _msgs.OUT_OF_RANGE.format(min=1, max=wire.MAX_ID)),
        ({"targetId": 2, "relation": ""}, "relation", _msgs.TOO_SHORT.format(min=1)),
        ({"targetId": 2, "relation": "r" * 65}, "relation", _msgs.TOO_LONG.format(max=64)),
        ({"targetId": 2, "relation": "a\x00b"}, "relation", _msgs.HAS_NUL),
        ({"targetId": 2, "relation": "Supports"}, "relation", _msgs.BAD_RELATION.format(max=64)),
        ({"targetId": 2, "relation": "part of"}, "relation", _msgs.BAD_RELATION.format(max=64)),
        (
            {"targetId": 2, "relation": 7},
            "relation",
            _msgs.EXPECTED.format(expected="string", received="number"),
        ),
    ],
)
def test_bad_link_bodies_are_400s_naming_the_field(
    client: httpx2.Client, pair: tuple[int, int], body: dict[str, Any], path: str, message: str
) -> None:
    a, _ = pair
    assert issues_of(client.post(f"/api/contexts/{a}/links", json=body)) == {path: message}


def test_bad_path_ids_and_bodies_that_are_no_object_are_400s(client: httpx2.Client) -> None:
    assert issues_of(links_of(client, "abc")) == {"id": _msgs.NOT_AN_ID.format(value="abc")}
    assert issues_of(links_of(client, "0")) == {"id": _msgs.NOT_AN_ID.format(value="0")}
    assert "" in issues_of(client.post("/api/contexts/1/links", json=[1]))
    raw = client.post(
        "/api/contexts/1/links", content=b"{", headers={"content-type": "application/json"}
    )
    assert raw.status_code == 400


def test_links_need_write_to_make_and_read_to_list(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client, pair: tuple[int, int]
) -> None:
    a, b = pair
    with fake.client(fake.mint_key(tenant, [wire.READ])) as reader:
        refused = link(reader, a, b)
        assert refused.status_code == 403 and refused.json()["error"] == _msgs.SCOPE_DENIED
        assert links_of(reader, a).status_code == 200
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as writer:
        assert link(writer, a, b).status_code == 201
        assert links_of(writer, a).status_code == 403


def test_a_link_is_audited_once_and_the_chain_holds(
    client: httpx2.Client, pair: tuple[int, int], fake: FakeContextQ, key: str
) -> None:
    a, b = pair
    made = link(client, a, b).json()
    row = fake.audit_log()[-1]
    assert (row.action, row.entity, row.entity_id) == (
        PkmAction.LINK_CREATE,
        "context_link",
        str(made["id"]),
    )
    assert key.startswith(row.actor_key_prefix or "-")
    links_of(client, a)
    assert fake.audit_log()[-1] == row  # a read writes no row
    assert fake.verify_audit_chain() == len(fake.audit_log())


# ----- through MCP -----


def test_ctx_link_and_ctx_links_round_trip_as_rest_answers(
    mcp: SyncMcpClient, client: httpx2.Client, pair: tuple[int, int]
) -> None:
    a, b = pair
    made = mcp.call("ctx_link", {"id": a, "targetId": b, "relation": "supports"})
    jsonschema.validate(made, _output("ctx_link"))
    (out,) = links_of(client, a).json()["outgoing"]
    assert made == {
        "id": out["id"],
        "sourceId": a,
        "targetId": out["context"]["id"],
        "relation": out["relation"],
        "createdAt": out["createdAt"],
    }
    listed = mcp.call("ctx_links", {"id": b})
    jsonschema.validate(listed, _output("ctx_links"))
    assert listed == links_of(client, b).json()
    assert listed["incoming"][0]["id"] == made["id"]


def test_link_refusals_are_tool_errors_with_rests_body(
    mcp: SyncMcpClient, pair: tuple[int, int], fake: FakeContextQ, tenant: Tenant
) -> None:
    a, b = pair
    mcp.call("ctx_link", {"id": a, "targetId": b})
    cases: list[tuple[dict[str, Any], str]] = [
        ({"id": a, "targetId": b}, _msgs.LINK_EXISTS),
        ({"id": a, "targetId": 999_999}, _msgs.NOT_FOUND),
        ({"id": a, "targetId": a}, _msgs.VALIDATION_ERROR),
        ({"id": a, "targetId": b, "relation": "No Caps"}, _msgs.VALIDATION_ERROR),
    ]
    for args, code in cases:
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_link", args)
        assert caught.value.code == code, caught.value.text
    with SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, [wire.READ]))) as reader:
        with pytest.raises(McpToolError) as caught:
            reader.call("ctx_link", {"id": b, "targetId": a})
        assert caught.value.code == _msgs.SCOPE_DENIED
        assert reader.call("ctx_links", {"id": a})["outgoing"][0]["context"]["id"] == b


def test_the_link_tools_are_listed_with_their_scopes(mcp: SyncMcpClient) -> None:
    tools = {t.name: t for t in mcp.list_tools()}
    assert tools["ctx_link"].input_schema["required"] == ["id", "targetId"]
    assert tools["ctx_links"].annotations is not None
    assert tools["ctx_links"].annotations.read_only_hint is True
    assert tools["ctx_link"].annotations is not None
    assert tools["ctx_link"].annotations.read_only_hint is False
