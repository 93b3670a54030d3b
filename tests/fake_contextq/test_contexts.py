"""The contexts endpoints: every row of the contract's table, and bad input."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.service.exchange import BodyReader, ReceivedBody
from tests.support.helpers import SUMMARY_KEYS, MakeContext, context_body

pytestmark = pytest.mark.all_stores


def external_segment(external_id: str) -> str:
    """One path segment; '.' and '..' need their dots encoded or URL normalisation eats them."""
    segment = quote(external_id, safe="")
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def by_external(client: httpx2.Client, external_id: str) -> httpx2.Response:
    return client.get("/api/contexts/by-external/" + external_segment(external_id))


def issues_of(response: httpx2.Response) -> dict[str, str]:
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"] == "validation_error"
    return {i["path"]: i["message"] for i in body["issues"]}


# ----- create -----


def test_create_answers_201_with_the_whole_context(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.create_workspace(tenant, "acme")
    response = client.post(
        "/api/contexts",
        json=context_body(
            title="Prefs",
            content="Likes TypeScript.",
            tags=["mem-tool", "x"],
            externalId="e-1",
            workspace="acme",
            metadata={"bytes": 17},
            unknownField="ignored",
        ),
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == SUMMARY_KEYS | {"content"}
    assert body["workspace"] == "acme"
    assert body["tags"] == ["mem-tool", "x"]
    assert body["externalId"] == "e-1"
    assert body["metadata"] == {"bytes": 17}
    assert body["createdAt"] == body["updatedAt"]
    assert body["createdAt"].endswith("Z")
    assert "unknownField" not in body
    assert fake.contexts(tenant)[0].content == "Likes TypeScript."


@pytest.mark.parametrize("type_", wire.CONTEXT_TYPES)
def test_create_accepts_all_nine_types(client: httpx2.Client, type_: str) -> None:
    assert client.post("/api/contexts", json=context_body(type=type_)).status_code == 201


def test_unknown_workspace_on_create_is_silently_null(client: httpx2.Client) -> None:
    response = client.post("/api/contexts", json=context_body(workspace="no-such"))
    assert response.status_code == 201
    assert response.json()["workspace"] is None


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ({"title": "t", "content": "c"}, "type", "Required"),
        ({"type": "reference", "content": "c"}, "title", "Required"),
        ({"type": "reference", "title": "t"}, "content", "Required"),
        (context_body(type="handoff"), "type", "Invalid enum value"),
        (context_body(title=""), "title", "at least 1"),
        (context_body(title="x" * 501), "title", "at most 500"),
        (context_body(title=5), "title", "Expected string, received number"),
        (context_body(content=None), "content", "Expected string, received null"),
        (context_body(tags="a"), "tags", "Expected array"),
        (context_body(tags=["a", 3]), "tags.1", "Expected string"),
        (context_body(tags=[""]), "tags.0", "at least 1"),
        (context_body(tags=["t"] * 51), "tags", "at most 50"),
        (context_body(externalId=""), "externalId", "at least 1"),
        (context_body(externalId="e" * 513), "externalId", "at most 512"),
        (context_body(metadata=[1]), "metadata", "Expected object"),
        (context_body(workspace=7), "workspace", "Expected string"),
    ],
)
def test_create_validation_names_the_field(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Tenant,
    body: dict[str, Any],
    path: str,
    fragment: str,
) -> None:
    issues = issues_of(client.post("/api/contexts", json=body))
    assert path in issues, issues
    assert fragment in issues[path]
    assert fake.contexts(tenant) == []


def test_all_issues_are_reported_at_once(client: httpx2.Client) -> None:
    issues = issues_of(client.post("/api/contexts", json={"type": "x", "title": 1}))
    assert set(issues) == {"type", "title", "content"}


@pytest.mark.parametrize("raw", [b"{", b"[1,2", b"nul", b"\xff\xfe", b""])
def test_malformed_json_is_a_400(client: httpx2.Client, raw: bytes) -> None:
    response = client.post(
        "/api/contexts", content=raw, headers={"content-type": "application/json"}
    )
    issues = issues_of(response)
    assert "Malformed JSON" in issues[""]


@pytest.mark.parametrize("raw", [b"[]", b"3", b'"s"', b"null"])
def test_a_body_that_is_not_an_object_is_a_400(client: httpx2.Client, raw: bytes) -> None:
    issues = issues_of(
        client.post("/api/contexts", content=raw, headers={"content-type": "application/json"})
    )
    assert issues[""].startswith("Expected object")


def test_a_body_that_is_not_json_is_a_415(client: httpx2.Client) -> None:
    response = client.post(
        "/api/contexts",
        content=b"type=reference",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_content_over_one_mebibyte_is_refused_whole(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    at_limit = "a" * wire.MAX_CONTENT_BYTES
    assert client.post("/api/contexts", json=context_body(content=at_limit)).status_code == 201
    over = "é" * (wire.MAX_CONTENT_BYTES // 2 + 1)  # 2 bytes each in UTF-8
    issues = issues_of(client.post("/api/contexts", json=context_body(content=over)))
    assert "at most 1048576 bytes" in issues["content"]
    assert len(fake.contexts(tenant)) == 1


def test_a_body_over_the_request_limit_is_a_413(client: httpx2.Client) -> None:
    huge = b'{"x":"' + b"a" * wire.MAX_BODY_BYTES + b'"}'
    response = client.post(
        "/api/contexts", content=huge, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"


@pytest.mark.parametrize(
    ("size", "declared"),
    [
        (0, None),
        (10, "10"),
        (wire.MAX_BODY_BYTES, None),
        (wire.MAX_BODY_BYTES + 1, None),
        (0, str(wire.MAX_BODY_BYTES + 5)),
        (3, "not a number"),
        (3, "\u00b2\u00b3"),  # isdigit() holds, int() refuses
    ],
)
@pytest.mark.parametrize("media", [None, "application/json; charset=utf-8"])
def test_a_whole_body_is_judged_as_one_read_in_one_chunk(
    size: int, declared: str | None, media: str | None
) -> None:
    """The in-process transports judge a body they hold whole as the served app judges the
    same body streamed in one chunk: the same refusal, the same bytes kept (a GET's empty
    body, sent with neither header, too)."""
    headers = {} if media is None else {"content-type": media}
    if declared is not None:
        headers["content-length"] = declared
    data = b"a" * size
    reader = BodyReader(headers)
    streamed = reader.refused or reader.feed(data) or reader.done()
    assert ReceivedBody.whole(data, headers) == streamed


def test_a_content_length_of_other_digits_is_no_length(fake: FakeContextQ, key: str) -> None:
    """A raw ``Content-Length`` of latin-1 digits (``\xb2\xb3``: ``isdigit`` holds, ``int``
    refuses) raised out of the in-process transport; it is read as no length at all, and
    the body is judged as it is."""
    headers = [
        (b"content-type", b"application/json"),
        (b"authorization", wire.authorization(key).encode()),
        (b"content-length", b"\xb2\xb3"),
    ]
    body = json.dumps(context_body()).encode()
    request = httpx2.Request("POST", f"{fake.base_url}/api/contexts", content=body, headers=headers)
    answer = fake.transport().handle_request(request)
    assert answer.status_code == 201, answer.read()


# ----- external ids -----


@pytest.mark.parametrize(
    "external_id",
    [
        "mem-tool:acme/notes/today.md",
        "a/b/c",
        "with space",
        "100%",
        "a%2Fb",
        "colon:s",
        "ünïcødé/日本語",
        "q?x=1#frag",
        "/leading",
        "trailing/",
        "a//b",
        "+plus+",
        ".",
        "..",
    ],
)
def test_external_ids_round_trip_exactly(
    client: httpx2.Client, make_context: MakeContext, external_id: str
) -> None:
    created = make_context(externalId=external_id)
    response = by_external(client, external_id)
    assert response.status_code == 200, response.text
    assert response.json()["id"] == created["id"]
    assert response.json()["externalId"] == external_id


def test_external_id_is_unique_per_tenant_across_workspaces(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, make_context: MakeContext
) -> None:
    fake.create_workspace(tenant, "one")
    fake.create_workspace(tenant, "two")
    first = make_context(externalId="notes.md", workspace="one")
    response = client.post(
        "/api/contexts", json=context_body(externalId="notes.md", workspace="two")
    )
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "external_id_taken"
    assert str(first["id"]) in body["message"]
    assert len(fake.contexts(tenant)) == 1


def test_the_same_external_id_in_two_tenants_is_fine(
    make_context: MakeContext, other: tuple[Tenant, httpx2.Client]
) -> None:
    make_context(externalId="shared")
    assert other[1].post("/api/contexts", json=context_body(externalId="shared")).status_code == 201


def test_unknown_external_id_is_404(client: httpx2.Client) -> None:
    response = by_external(client, "nope")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_an_empty_external_id_segment_is_a_400(client: httpx2.Client) -> None:
    assert client.get("/api/contexts/by-external/").status_code == 400


# ----- get, update, delete -----


def test_get_by_id(client: httpx2.Client, make_context: MakeContext) -> None:
    created = make_context()
    assert client.get(f"/api/contexts/{created['id']}").json() == created


@pytest.mark.parametrize("raw", ["abc", "0", "-1", "1.5", "01", "1e3", "99999999999999999999"])
def test_an_id_that_is_not_a_positive_integer_is_a_400(client: httpx2.Client, raw: str) -> None:
    for method in ("GET", "PUT", "DELETE"):
        response = client.request(
            method, f"/api/contexts/{raw}", json={"title": "t"} if method == "PUT" else None
        )
        assert issues_of(response)["id"].startswith("Must be a positive integer id")


def test_an_unknown_id_is_a_404(client: httpx2.Client) -> None:
    for method in ("GET", "PUT", "DELETE"):
        response = client.request(
            method, "/api/contexts/12345", json={"title": "t"} if method == "PUT" else None
        )
        assert response.status_code == 404
        assert response.json() == {"error": "not_found", "message": "Context 12345 not found."}


def test_put_replaces_the_given_fields_and_keeps_the_rest(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    created = make_context(tags=["a"], externalId="e", metadata={"k": 1})
    response = client.put(f"/api/contexts/{created['id']}", json={"content": "new whole text"})
    assert response.status_code == 200
    updated = response.json()
    assert updated["content"] == "new whole text"
    for unchanged in ("title", "tags", "externalId", "metadata", "type", "createdAt"):
        assert updated[unchanged] == created[unchanged]
    assert updated["updatedAt"] >= created["updatedAt"]


def test_put_can_clear_the_external_id_and_the_workspace(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, make_context: MakeContext
) -> None:
    fake.create_workspace(tenant, "ws")
    created = make_context(externalId="e", workspace="ws")
    updated = client.put(
        f"/api/contexts/{created['id']}", json={"externalId": None, "workspace": None}
    ).json()
    assert updated["externalId"] is None
    assert updated["workspace"] is None
    assert by_external(client, "e").status_code == 404


def test_put_to_a_taken_external_id_is_a_409_and_changes_nothing(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    make_context(externalId="taken")
    mine = make_context(externalId="mine")
    response = client.put(
        f"/api/contexts/{mine['id']}", json={"externalId": "taken", "content": "lost?"}
    )
    assert response.status_code == 409
    assert client.get(f"/api/contexts/{mine['id']}").json() == mine


def test_put_with_a_bad_field_changes_nothing(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    created = make_context()
    response = client.put(f"/api/contexts/{created['id']}", json={"content": "x", "type": "bad"})
    assert response.status_code == 400
    assert client.get(f"/api/contexts/{created['id']}").json() == created


def test_last_writer_wins(client: httpx2.Client, make_context: MakeContext) -> None:
    created = make_context()
    client.put(f"/api/contexts/{created['id']}", json={"content": "first"})
    client.put(f"/api/contexts/{created['id']}", json={"content": "second"})
    assert client.get(f"/api/contexts/{created['id']}").json()["content"] == "second"


def test_delete_answers_204_and_frees_the_external_id(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    created = make_context(externalId="e")
    response = client.delete(f"/api/contexts/{created['id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert client.get(f"/api/contexts/{created['id']}").status_code == 404
    make_context(externalId="e")


# ----- list -----


def test_list_holds_summaries_without_content(
    client: httpx2.Client, make_context: MakeContext
) -> None:
    make_context()
    body = client.get("/api/contexts").json()
    assert body["total"] == 1
    assert body["limit"] == wire.LIST_DEFAULT_LIMIT
    assert body["offset"] == 0
    assert set(body["items"][0]) == SUMMARY_KEYS


def test_list_filters_by_workspace_tag_and_type(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, make_context: MakeContext
) -> None:
    fake.create_workspace(tenant, "ws")
    a = make_context(workspace="ws", tags=["mem-tool"])
    make_context(workspace="ws", tags=["other"])
    make_context(tags=["mem-tool"], type="lesson")

    def ids(**params: str) -> list[int]:
        return [c["id"] for c in client.get("/api/contexts", params=params).json()["items"]]

    assert ids(workspace="ws", tag="mem-tool") == [a["id"]]
    assert len(ids(workspace="ws")) == 2
    assert len(ids(tag="mem-tool")) == 2
    assert len(ids(type="lesson")) == 1
    assert ids(workspace="unknown") == []


def test_list_pages_in_id_order(client: httpx2.Client, make_context: MakeContext) -> None:
    created = [make_context()["id"] for _ in range(7)]
    seen: list[int] = []
    for offset in range(0, 7, 3):
        body = client.get("/api/contexts", params={"limit": 3, "offset": offset}).json()
        assert body["total"] == 7
        seen += [c["id"] for c in body["items"]]
    assert seen == created


@pytest.mark.parametrize(
    ("params", "path"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"offset": "-1"}, "offset"),
        ({"type": "moc-x"}, "type"),
    ],
)
def test_list_rejects_bad_query_parameters(
    client: httpx2.Client, params: dict[str, str], path: str
) -> None:
    assert path in issues_of(client.get("/api/contexts", params=params))


def test_list_allows_a_page_of_500(client: httpx2.Client) -> None:
    assert client.get("/api/contexts", params={"limit": 500}).json()["limit"] == 500


# ----- bulk upsert -----


def test_bulk_upsert_creates_then_updates_idempotently(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    items = [context_body(externalId=f"e{i}", content=f"v1 {i}") for i in range(3)]
    first = client.post("/api/contexts/bulk-upsert", json={"contexts": items})
    assert first.status_code == 200
    assert (first.json()["created"], first.json()["updated"]) == (3, 0)
    items[1]["content"] = "v2"
    second = client.post("/api/contexts/bulk-upsert", json={"contexts": items}).json()
    assert (second["created"], second["updated"]) == (0, 3)
    assert [c["id"] for c in second["items"]] == [c["id"] for c in first.json()["items"]]
    assert second["items"][1]["content"] == "v2"
    assert len(fake.contexts(tenant)) == 3


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({}, "contexts"),
        ({"contexts": []}, "contexts"),
        ({"contexts": {}}, "contexts"),
        ({"contexts": [context_body()]}, "contexts.0.externalId"),
        (
            {"contexts": [context_body(externalId="a"), context_body(externalId="a")]},
            "contexts.1.externalId",
        ),
        ({"contexts": [context_body(externalId="a"), {"externalId": "b"}]}, "contexts.1.type"),
        ({"contexts": [context_body(externalId=f"e{i}") for i in range(501)]}, "contexts"),
    ],
)
def test_bulk_upsert_is_all_or_nothing_on_bad_items(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, body: dict[str, Any], path: str
) -> None:
    assert path in issues_of(client.post("/api/contexts/bulk-upsert", json=body))
    assert fake.contexts(tenant) == []
    assert fake.audit_log() == []


def test_routes_that_do_not_exist_answer_404_in_contract_shape(client: httpx2.Client) -> None:
    for method, path in [
        ("GET", "/api/nothing"),
        ("POST", "/api/contexts/1"),
        ("PATCH", "/api/contexts/1"),
        ("GET", "/"),
    ]:
        response = client.request(method, path)
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"


# ----- hostile bodies and paths (never a 500, nothing half-written) -----


@pytest.mark.parametrize("segment", ["%FF", "a%E9b", "%C3"])
def test_an_external_id_that_is_not_utf8_is_a_400(client: httpx2.Client, segment: str) -> None:
    assert issues_of(client.get("/api/contexts/by-external/" + segment))["externalId"]


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"reference","title":"t","content":NaN}',
        b'{"type":"reference","title":"t","content":"c","metadata":{"a":Infinity}}',
        b'{"type":"reference","title":"t","content":"c","metadata":{"a":-Infinity}}',
    ],
)
def test_non_json_numbers_are_malformed_json(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, raw: bytes
) -> None:
    response = client.post(
        "/api/contexts", content=raw, headers={"content-type": "application/json"}
    )
    assert "Malformed JSON" in issues_of(response)[""]
    assert fake.contexts(tenant) == []


def test_a_huge_number_reads_as_null_like_json_parse(client: httpx2.Client) -> None:
    response = client.post(
        "/api/contexts",
        content=b'{"type":"reference","title":"t","content":"c","metadata":{"big":1e400}}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201
    assert response.json()["metadata"] == {"big": None}


@pytest.mark.parametrize("depth", [257, 50_000])
def test_deep_nesting_is_a_400(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    raw = '{"type":"reference","title":"t","content":"c","metadata":{"x":' + nested + "}}"
    response = client.post(
        "/api/contexts", content=raw.encode(), headers={"content-type": "application/json"}
    )
    assert "nested" in issues_of(response)[""]
    assert fake.contexts(tenant) == []


def test_lone_surrogates_are_stored_and_answered_as_u_fffd(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    """wire.well_formed: a lone surrogate (JSON text may carry one escaped) in any string of
    a body, a key of its metadata too, is U+FFFD from then on; an escaped pair is the one
    character it encodes."""
    raw = (
        b'{"type":"reference","title":"t \\ud800","content":"x \\udfff y \\ud83d\\ude00",'
        b'"tags":["\\udbff"],"externalId":"e\\ud800","metadata":{"k\\udc00":["\\ud800"]}}'
    )
    created = client.post(
        "/api/contexts", content=raw, headers={"content-type": "application/json"}
    )
    assert created.status_code == 201, created.text
    made = created.json()
    assert (made["title"], made["content"]) == ("t \ufffd", "x \ufffd y \U0001f600")
    assert (made["tags"], made["externalId"]) == (["\ufffd"], "e\ufffd")
    assert made["metadata"] == {"k\ufffd": ["\ufffd"]}
    assert b"\\ud8" not in created.content and b"\\udc" not in created.content
    assert client.get(f"/api/contexts/{made['id']}").json() == made
    assert by_external(client, "e\ufffd").json() == made
    assert client.get("/api/contexts", params={"tag": "\ufffd"}).json()["total"] == 1
    found = client.post("/api/search", json={"query": "t", "tags": ["\ufffd"]}).json()
    assert [hit["context"]["id"] for hit in found["results"]] == [made["id"]]
    assert fake.context_json(tenant) == [made]
    assert fake.verify_audit_chain() == 1


@pytest.mark.parametrize("segment", ["%FF", "%ED%A0%80", "a%C3"])
def test_a_query_value_that_is_not_utf8_is_a_400_naming_it(
    client: httpx2.Client, segment: str
) -> None:
    """wire.URL_TEXT_ENCODING: not U+FFFD in its place, which would filter by another tag."""
    response = client.get(f"/api/contexts?workspace=ok&tag={segment}&limit=5")
    assert issues_of(response) == {"tag": _msgs.QUERY_NOT_UTF8}
    assert response.json()["message"] == _msgs.INVALID_QUERY


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("GET", "/api/contexts/%ED%A0%80", "id"),
        ("PUT", "/api/contexts/%FF", "id"),
        ("DELETE", "/api/contexts/1%FF", "id"),
        ("POST", "/api/workspaces/%FF/archive", "slug"),
        ("DELETE", "/api/workspaces/a%ED%A0%80", "slug"),
        ("GET", "/api/agent/sessions/%FF/resume", "id"),
        ("POST", "/api/agent/tasks/%FF/tick", "id"),
        ("GET", "/api/contexts/by-external/%ED%A0%80", "externalId"),
    ],
)
def test_a_path_parameter_that_is_not_utf8_is_a_400_naming_it(
    fake: FakeContextQ, tenant: Tenant, method: str, path: str, field: str
) -> None:
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as admin:
        response = admin.request(method, path, json={} if method in ("PUT", "POST") else None)
    assert issues_of(response) == {field: _msgs.NOT_UTF8}
    assert response.json()["message"] == _msgs.INVALID_PATH


def test_a_bad_key_is_still_the_401_before_a_path_or_query_that_is_not_utf8(
    fake: FakeContextQ,
) -> None:
    with fake.client() as anonymous:
        assert anonymous.get("/api/contexts/%FF").status_code == 401
        assert anonymous.get("/api/contexts?tag=%FF").status_code == 401


def test_the_in_process_api_stores_a_lone_surrogate_as_u_fffd(
    fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    """FakeContextQ's own methods that take text hold it to the same rule as REST."""
    named = fake.create_tenant("team \ud800")
    assert named.name == "team \ufffd"
    assert fake.create_workspace(tenant, "w", "W \udfff").name == "W \ufffd"
    fake.fill(tenant, 1, prefix="f\ud800")
    fake.seed_files(key, {"/memories/w/n\udbff.md": "x\ud800\n"})
    assert fake.memory_files(tenant) == {"/memories/w/n\ufffd.md": "x\ufffd\n"}
    assert [c.title for c in fake.contexts(tenant)] == ["f\ufffd 1", "n\ufffd.md"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/api/contexts/"),
        ("GET", "/api/contexts/1/"),
        ("POST", "/api/search/"),
        ("DELETE", "/api/workspaces/"),
    ],
)
def test_a_trailing_slash_is_a_404_not_a_redirect(
    client: httpx2.Client, method: str, path: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
