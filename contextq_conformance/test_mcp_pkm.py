"""The MCP link and ingest tools: every parameter and answer shape is assumed, so against a
real ContextQ the first run says which hold. A job is polled until it ends (the fake ends
one in two reads; a real service is given ``INGEST_WAIT`` seconds)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from contextq_conformance.targets import Target, Tenant

INGEST_WAIT = 60.0  # seconds a real service's job may take
ENDED = ("done", "failed")


def _ok(result: Any) -> dict[str, Any]:
    """A tool result's ``structuredContent``; a tool error fails the rule, with its text."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    assert isinstance(result.structured_content, dict), text
    return result.structured_content


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
