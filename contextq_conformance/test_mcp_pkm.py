"""The MCP PKM tools (links, chunks, maps of content, the tools that need the server's LLM)
and ingest: every parameter and answer shape is assumed, so against a real ContextQ the
first run says which hold. A job is polled until it ends (the fake ends
one in two reads; a real service is given ``INGEST_WAIT`` seconds)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from contextq_conformance._results import ok as _ok
from contextq_conformance._results import text
from contextq_conformance.targets import Target, Tenant

INGEST_WAIT = 60.0  # seconds a real service's job may take
ENDED = ("done", "failed")


@pytest.mark.contract("mcp.links")
def test_a_link_is_listed_from_both_ends_and_goes_with_its_context(
    target: Target, tenant: Tenant
) -> None:
    mcp = target.mcp(tenant.client)
    api = tenant.client.api
    a = api.create_context("reference", "Decision", "We ship on Tuesdays.")
    b = api.create_context("reference", "Evidence", "Fridays broke twice.")
    made = _ok(mcp.call_tool("ctx_link", {"id": a.id, "targetId": b.id, "relation": "supports"}))
    assert (made["sourceId"], made["targetId"], made["relation"]) == (a.id, b.id, "supports")
    outgoing = _ok(mcp.call_tool("ctx_links", {"id": a.id}))["outgoing"]
    assert [(x["context"]["id"], x["relation"]) for x in outgoing] == [(b.id, "supports")]
    incoming = _ok(mcp.call_tool("ctx_links", {"id": b.id}))["incoming"]
    assert [x["context"]["title"] for x in incoming] == ["Decision"]
    api.delete_context(b.id)
    assert _ok(mcp.call_tool("ctx_links", {"id": a.id}))["outgoing"] == []


@pytest.mark.contract("mcp.ingest")
def test_ingested_markdown_becomes_one_context_per_heading(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    job = _ok(mcp.call_tool("ctx_ingest", {"text": "# Deploys\nTuesdays.\n# Incidents\nPage."}))
    assert job["status"] == "queued"
    deadline = time.monotonic() + INGEST_WAIT
    polls = 0
    while job["status"] not in ENDED and time.monotonic() < deadline:
        if polls >= 2:  # the fake has ended it by now; a real service gets a breath
            time.sleep(0.5)
        job = _ok(mcp.call_tool("ctx_ingest_status", {"jobId": job["id"]}))
        polls += 1
    assert job["status"] == "done", job
    assert sorted(c["title"] for c in job["contexts"]) == ["Deploys", "Incidents"]
    assert tenant.client.api.list_contexts().total == 2


# Chunks cover the content whatever its size; three paragraphs long enough that any
# embedding chunker splits them (the fake's chunks are 1000 characters).
LONG = "\n\n".join(f"Paragraph {n}: " + "deploys need a migration first. " * 40 for n in range(3))


@pytest.mark.contract("mcp.chunks")
def test_the_chunks_of_a_context_cover_its_content_in_order(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    made = tenant.client.api.create_context("reference", "Long", LONG)
    content = made.content  # as stored: a server may trim it
    chunks = _ok(mcp.call_tool("ctx_chunks", {"id": made.id}))["chunks"]
    assert len(chunks) > 1
    assert [c["index"] for c in chunks] == list(range(len(chunks)))
    starts = [c["start"] for c in chunks]
    assert starts == sorted(set(starts))
    # what no chunk holds is whitespace only: before the first, between two, after the last
    edges = [0, *(x for c in chunks for x in (c["start"], c["end"])), len(content)]
    uncovered = [content[a:b] for a, b in zip(edges[::2], edges[1::2], strict=True) if a < b]
    assert all(not gap.strip() for gap in uncovered), uncovered
    assert all(c["text"] == content[c["start"] : c["end"]] for c in chunks)


@pytest.mark.contract("mcp.mocs")
def test_mocs_lists_a_moc_context_and_no_other_type(target: Target, tenant: Tenant) -> None:
    mcp = target.mcp(tenant.client)
    api = tenant.client.api
    moc = api.create_context("moc", "Deploys: map", "- [[Deploy day]]")
    api.create_context("reference", "Deploy day", "Tuesdays.")
    listed = _ok(mcp.call_tool("ctx_mocs", {}))
    assert [(c["id"], c["type"]) for c in listed["items"]] == [(moc.id, "moc")]


NEEDS_LLM = (
    ("ctx_dream", lambda _id: {"workspace": "ws"}),
    ("ctx_evolve", lambda id_: {"id": id_}),
    ("ctx_regenerate_mocs", lambda _id: {"workspace": "ws"}),
)


@pytest.mark.contract("mcp.llm-tools-no-workspace")
@pytest.mark.parametrize("tool", ["ctx_dream", "ctx_regenerate_mocs", "ctx_evolve"])
def test_a_workspace_tool_without_a_workspace_is_a_no_workspace_error(
    target: Target, tenant: Tenant, tool: str
) -> None:
    """ctx_evolve's workspace is its context's: one saved with none (and two tags in
    common with a newer one, so it has a source where a server has an LLM)."""
    arguments: dict[str, Any] = {}
    if tool == "ctx_evolve":
        api = tenant.client.api
        made = api.create_context("reference", "Deploy day", "Tuesdays.", tags=["d"])
        api.create_context("reference", "Deploy freeze", "Not in December.", tags=["d"])
        arguments = {"id": made.id, "instruction": "shorter"}
    result = target.mcp(tenant.client).call_tool(tool, arguments)
    assert result.is_error
    assert "400" in text(result) and "no_workspace" in text(result), text(result)


@pytest.mark.contract("mcp.llm-tools-no-llm")
def test_the_llm_tools_without_an_llm_provider_are_503(target: Target, tenant: Tenant) -> None:
    """Checked where no LLM provider is configured (the fake's default); a ContextQ that has
    one answers, and the rule is then not checked there."""
    mcp = target.mcp(tenant.client)
    api = tenant.client.api
    api.create_workspace("ws")
    made = api.create_context("reference", "Deploy day", "Tuesdays.", workspace="ws", tags=["d"])
    api.create_context("reference", "Deploy freeze", "Not in December.", workspace="ws", tags=["d"])
    for tool, arguments in NEEDS_LLM:
        result = mcp.call_tool(tool, arguments(made.id))
        if not result.is_error:
            pytest.skip(f"this ContextQ has an LLM provider configured: {tool} answered")
        assert "503" in text(result) and "llm_unavailable" in text(result), (tool, text(result))
