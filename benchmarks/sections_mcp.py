"""ContextQ's MCP surface next to its REST API: a ``ctx_get`` through MCP against the REST
GET of the same record, a ``ctx_import`` of 50 against its REST import and a saved-search
run against its REST run, in-process and served over a kept-alive connection, every store."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
from _http import expect
from _measure import ameasure_interleaved, measure
from _postgres import postgres_schema
from _registry import Bench, Target, section

from adapter import wire
from fake_contextq import FakeContextQ

RECORD = {"type": "reference", "title": "A record", "content": "read through both surfaces"}
#: 50 items with external ids: every import after the first updates them (the tenant stays
#: the same size, whichever surface imports)
IMPORTED = [
    {"type": "reference", "title": f"Imported {i}", "content": f"item {i}", "externalId": f"i{i}"}
    for i in range(50)
]
SAVED = {"name": "records", "query": "read surfaces", "limit": 10}


def _fakes(bench: Bench, stack: contextlib.ExitStack) -> dict[str, tuple[FakeContextQ, str]]:
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    fakes = {
        "memory": FakeContextQ(),
        "sqlite": FakeContextQ(database_url=f"sqlite:///{tmp / 'mcp.db'}"),
    }
    pg_url = stack.enter_context(postgres_schema(bench))
    if pg_url is not None:
        fakes["postgres"] = FakeContextQ(database_url=pg_url)
    made = {}
    for kind, fake in fakes.items():
        stack.callback(fake.close)
        key = fake.mint_key(fake.create_tenant(plan="enterprise"))
        with fake.client(key) as client:
            expect(client.post("/api/contexts", json=RECORD), 201)
            expect(client.post("/api/saved-searches", json=SAVED), 201)
        made[kind] = (fake, key)
    return made


async def _pair(
    bench: Bench, rest: httpx2.AsyncClient, mcp_target: Any, label: str, n: int, warmup: int
) -> None:
    from mcp import Client

    async with Client(mcp_target) as mcp:
        answer = await mcp.call_tool("ctx_get", {"id": 1})
        if answer.is_error or (answer.structured_content or {}).get("title") != RECORD["title"]:
            raise RuntimeError(f"{label}: ctx_get answered {answer!r}")

        async def by_rest() -> object:
            return expect(await rest.get("/api/contexts/1"), 200)

        async def by_mcp() -> object:
            result = await mcp.call_tool("ctx_get", {"id": 1})
            if result.is_error:
                raise RuntimeError(f"{label}: {result.content}")
            return result

        rest_stats, mcp_stats = await ameasure_interleaved([by_rest, by_mcp], n, warmup)
        base = f"{label}: REST GET /api/contexts/1"
        bench.add(base, rest_stats)
        bench.add(
            f"{label}: MCP tools/call ctx_get",
            mcp_stats,
            baseline=base,
            target=Target(max_ratio=3.0),
        )
        await _client_check(bench, mcp, f"{label}: ", ("ctx_get", "ctx_get", {"id": 1}), base, n)
        await _pair_call(
            bench,
            mcp,
            label,
            (n // 4, warmup),
            (
                "POST /api/contexts/import (50)",
                lambda: rest.post(IMPORT, json={"contexts": IMPORTED}),
            ),
            ("ctx_import (50)", "ctx_import", {"contexts": IMPORTED}),
        )
        await _pair_call(
            bench,
            mcp,
            label,
            (n, warmup),
            ("POST /api/saved-searches/1/run", lambda: rest.post(RUN)),
            ("ctx_run_saved_search", "ctx_run_saved_search", {"id": 1}),
        )


IMPORT = wire.Routes.IMPORT_CONTEXTS.template
RUN = wire.Routes.RUN_SAVED_SEARCH.path(search_id=1)


async def _pair_call(
    bench: Bench,
    mcp: Any,
    label: str,
    counts: tuple[int, int],
    rest_call: tuple[str, Callable[[], Awaitable[httpx2.Response]]],
    tool_call: tuple[str, str, dict[str, Any]],
) -> None:
    """One REST call and the MCP tool mapped onto it, interleaved; a row each, the tool's
    held to 3x the REST call's median."""
    rest_name, send = rest_call
    tool_name, tool, args = tool_call

    async def by_rest() -> object:
        return expect(await send(), 200)

    async def by_mcp() -> object:
        result = await mcp.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(f"{label}: {tool}: {result.content}")
        return result

    rest_stats, mcp_stats = await ameasure_interleaved([by_rest, by_mcp], *counts)
    base = f"{label}: REST {rest_name}"
    bench.add(base, rest_stats)
    bench.add(
        f"{label}: MCP tools/call {tool_name}",
        mcp_stats,
        baseline=base,
        target=Target(max_ratio=3.0),
    )
    await _client_check(bench, mcp, f"{label}: ", tool_call, base, counts[0])


async def _client_check(
    bench: Bench,
    mcp: Any,
    label: str,
    tool_call: tuple[str, str, dict[str, Any]],
    base: str,
    n: int,
) -> None:
    """The part of a tools/call row that is the Python SDK client's own: it checks every
    result against the tool's output schema with jsonschema (a validator compiled once,
    ``best_match`` over its errors). Timed alone on the same result, so the report shows
    how much of the MCP row is the client's rather than the fake's."""
    from jsonschema import exceptions
    from jsonschema.validators import validator_for

    tool_name, tool, args = tool_call
    listed = {t.name: t for t in (await mcp.list_tools()).tools}
    schema = listed[tool].output_schema
    content = (await mcp.call_tool(tool, args)).structured_content
    validator = validator_for(schema)(schema)

    def check() -> object:
        error = exceptions.best_match(validator.iter_errors(content))
        if error is not None:
            raise RuntimeError(f"{label}{tool}: its result fails its schema: {error}")
        return error

    bench.add(
        f"{label}the SDK client's output check of {tool_name} alone",
        measure(check, n, max(n // 10, 1)),
        baseline=base,
        note="part of the MCP row above",
    )


@section(
    "MCP (tools/call vs the REST call it maps onto: ctx_get, ctx_import of 50, a saved-search run)"
)
def bench_mcp(bench: Bench) -> None:
    """The MCP surface maps each tool onto one REST call, so its cost is the REST call's
    plus the protocol's framing: the target says the fake must not add more."""
    from mcp.client.streamable_http import streamable_http_client

    it = bench.iters(full=(400, 40), quick=(80, 10))
    stack = contextlib.ExitStack()
    try:
        fakes = _fakes(bench, stack)
        gc.freeze()

        async def run() -> None:
            for kind, (fake, key) in fakes.items():
                auth = {"Authorization": f"Bearer {key}"}
                async with fake.async_client(key) as rest:
                    await _pair(
                        bench, rest, fake.mcp_server(key), f"{kind}, in-process", it.n, it.warmup
                    )
                with fake.serve() as served:
                    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
                    async with (
                        httpx2.AsyncClient(
                            base_url=served.url, headers=auth, limits=limits
                        ) as rest,
                        httpx2.AsyncClient(headers=auth, limits=limits) as http,
                    ):
                        target = streamable_http_client(served.mcp_url, http_client=http)
                        await _pair(bench, rest, target, f"{kind}, served", it.n, it.warmup)

        asyncio.run(run())
    finally:
        gc.unfreeze()
        stack.close()
    gc.collect()
