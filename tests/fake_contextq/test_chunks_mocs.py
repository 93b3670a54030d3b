"""``ctx_chunks`` (``GET /api/contexts/{id}/chunks``): the chunking rule, and ``ctx_mocs``
(``GET /api/mocs``): the map-of-content contexts, paged as the list; on every store,
through REST and MCP."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.chunking import chunk_content
from fake_contextq.mcp import McpToolError, SyncMcpClient
from tests.support.helpers import MakeContext, context_body, error, ok

# ----- the rule (pure) ------------------------------------------------------------------------


def test_short_paragraphs_share_a_chunk_and_long_text_is_cut_with_overlap() -> None:
    text = "alpha beta\n\ngamma delta epsilon\n\nzeta"
    shown = [(c.index, c.start, c.end, c.text) for c in chunk_content(text, 20, 8)]
    assert shown == [
        (0, 0, 10, "alpha beta"),
        (1, 6, 31, "beta\n\ngamma delta epsilon"),
        (2, 24, 37, "epsilon\n\nzeta"),
    ]
    assert [c.text for c in chunk_content("a b\n\nc d", 100, 10)] == ["a b\n\nc d"]


def test_a_paragraph_without_whitespace_is_cut_at_the_limit() -> None:
    chunks = chunk_content("x" * 2500)
    assert [(c.start, c.end) for c in chunks] == [(0, 1000), (1000, 2000), (2000, 2500)]


def test_no_text_is_no_chunks() -> None:
    assert chunk_content("") == chunk_content(" \n\n\t ") == []


@given(
    st.text(alphabet=st.sampled_from("ab \n\t.é"), max_size=400),
    st.integers(1, 40),
    st.integers(0, 12),
)
def test_every_chunk_is_a_slice_within_its_limits_and_all_text_is_covered(
    text: str, size: int, overlap: int
) -> None:
    chunks = chunk_content(text, size, overlap)
    assert chunks == chunk_content(text, size, overlap)  # deterministic
    covered: set[int] = set()
    for i, c in enumerate(chunks):
        assert c.index == i and c.text == text[c.start : c.end] and c.text.strip()
        if i:
            before = chunks[i - 1]
            assert before.start < c.start and before.end < c.end
            assert c.start >= before.end - overlap
        if overlap == 0 or i == 0:
            assert c.end - c.start <= size
        covered.update(range(c.start, c.end))
    assert {i for i, ch in enumerate(text) if not ch.isspace()} <= covered


# ----- through REST and MCP, on every store ------------------------------------------------------


@pytest.mark.all_stores
def test_chunks_of_a_context_through_rest_and_mcp(
    client: httpx2.Client, fake: FakeContextQ, key: str, make_context: MakeContext
) -> None:
    content = "\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(8))
    context = make_context(content=content)
    answer = ok(client.get(f"/api/contexts/{context['id']}/chunks"))
    expected = chunk_content(content)
    assert answer["contextId"] == context["id"]
    assert (answer["chunkSize"], answer["overlap"]) == (
        wire.CHUNK_MAX_CHARS,
        wire.CHUNK_OVERLAP_CHARS,
    )
    assert answer["total"] == len(expected) > 1
    assert [(c["start"], c["end"], c["text"]) for c in answer["chunks"]] == [
        (c.start, c.end, c.text) for c in expected
    ]
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        assert mcp.call("ctx_chunks", {"id": context["id"]}) == answer


@pytest.mark.all_stores
def test_chunks_refusals(
    fake: FakeContextQ,
    tenant: Tenant,
    client: httpx2.Client,
    other: tuple[Tenant, httpx2.Client],
    make_context: MakeContext,
) -> None:
    mine = make_context(content="secret text")
    _, other_client = other
    theirs = error(other_client.get(f"/api/contexts/{mine['id']}/chunks"), 404, _msgs.NOT_FOUND)
    assert "secret" not in str(theirs)
    error(client.get("/api/contexts/999999/chunks"), 404, _msgs.NOT_FOUND)
    error(client.get(f"/api/contexts/{2**63}/chunks"), 404, _msgs.NOT_FOUND)
    error(client.get("/api/contexts/abc/chunks"), 400, _msgs.VALIDATION_ERROR)
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as writer:
        error(writer.get(f"/api/contexts/{mine['id']}/chunks"), 403, _msgs.SCOPE_DENIED)
    with fake.client(fake.mint_key(tenant, [wire.READ])) as reader:
        ok(reader.get(f"/api/contexts/{mine['id']}/chunks"))
    with (
        SyncMcpClient(fake.mcp_server(fake.mint_key(other[0], wire.SCOPES))) as mcp,
        pytest.raises(McpToolError) as refused,
    ):
        mcp.call("ctx_chunks", {"id": mine["id"]})
    assert wire.mcp_error_code(refused.value.text) == _msgs.NOT_FOUND


@pytest.mark.all_stores
def test_mocs_lists_only_map_of_content_contexts_paged_as_the_list(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, key: str
) -> None:
    fake.create_workspace(tenant, "docs")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("moc", {}),
        ("reference", {}),
        ("map", {"workspace": "docs", "tags": ["x"]}),
        ("synthesis", {}),
        ("moc", {"tags": ["x"]}),
    ]
    made = [
        ok(client.post("/api/contexts", json=context_body(type=t, title=f"{t}{i}", **extra)), 201)
        for i, (t, extra) in enumerate(cases)
    ]
    mocs = [m["id"] for m in made if m["type"] in wire.MOC_TYPES]
    page = ok(client.get("/api/mocs"))
    assert [row["id"] for row in page["items"]] == mocs and page["total"] == 3
    assert all("content" not in row for row in page["items"])
    second = ok(client.get("/api/mocs", params={"limit": 1, "offset": 1}))
    assert ([r["id"] for r in second["items"]], second["total"]) == ([mocs[1]], 3)
    assert [
        r["id"] for r in ok(client.get("/api/mocs", params={"workspace": "docs"}))["items"]
    ] == [mocs[1]]
    assert ok(client.get("/api/mocs", params={"tag": "x"}))["total"] == 2
    assert ok(client.get("/api/mocs", params={"type": "reference"}))["total"] == 3  # ignored
    error(client.get("/api/mocs", params={"limit": 0}), 400, _msgs.VALIDATION_ERROR)
    error(client.get("/api/mocs", params={"tag": "a\x00"}), 400, _msgs.VALIDATION_ERROR)
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        assert mcp.call("ctx_mocs", {"limit": 1, "offset": 1}) == second
        assert mcp.call("ctx_mocs", {}) == page


@pytest.mark.all_stores
def test_mocs_are_the_tenants_own(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client], fake: FakeContextQ, tenant: Tenant
) -> None:
    ok(client.post("/api/contexts", json=context_body(type="moc")), 201)
    assert ok(other[1].get("/api/mocs"))["total"] == 0
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as writer:
        error(writer.get("/api/mocs"), 403, _msgs.SCOPE_DENIED)
