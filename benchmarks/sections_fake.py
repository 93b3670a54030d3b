"""Sections on the fake in-process: a fresh fake, its requests next to httpx's own floor,
each store, search over a large corpus, and the agent memory layer."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
from _corpus import TextGen, by_external_path, external_id, populate
from _http import canned_transport, expect
from _measure import Stats, ameasure_interleaved, measure, measure_interleaved
from _postgres import postgres_schema
from _registry import Bench, Target, section

from fake_contextq import FakeContextQ


def new_fake_with_key(plan: str = "enterprise") -> tuple[FakeContextQ, str]:
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan=plan)
    return fake, fake.mint_key(tenant)


@section("fresh fake")
def bench_fresh_fake(bench: Bench) -> None:
    it = bench.iters(full=(300, 20), quick=(60, 5))
    transport = canned_transport({})
    shared = FakeContextQ()

    def new_client() -> None:
        httpx2.Client(transport=transport, base_url=FakeContextQ.base_url)

    def bare_fake() -> None:
        FakeContextQ()

    def fake_tenant_key() -> None:
        fake = FakeContextQ()
        fake.mint_key(fake.create_tenant())

    def tenant_key_only() -> None:
        shared.mint_key(shared.create_tenant())

    client_s, bare_s, full_s, tk_s = measure_interleaved(
        [new_client, bare_fake, fake_tenant_key, tenant_key_only], it.n, it.warmup
    )
    base = "httpx2.Client(MockTransport)"
    bench.add(base, client_s)
    bench.add("FakeContextQ()", bare_s, baseline=base)
    bench.add("FakeContextQ() + tenant + key", full_s, baseline=base, target=Target(max_ms=2.0))
    bench.add("tenant + key on an existing fake", tk_s, baseline=base)
    shared.close()
    gc.collect()


#: What an in-process request may cost over a canned MockTransport answer: the service is
#: called directly (no ASGI, no event loop), so little more than the domain's own work.
IN_PROCESS_RATIOS = {"GET by external id": 1.5, "POST create": 2.0, "GET list 50 of 1,000": 2.0}


@section("requests (in-process fake vs httpx floor)")
def bench_requests(bench: Bench) -> None:
    it = bench.iters(full=(1000, 100), quick=(200, 20))
    gen = TextGen(seed=1)
    fake, key = new_fake_with_key()
    writer_tenant = fake.create_tenant(plan="enterprise")
    writer_key = fake.mint_key(writer_tenant)
    with fake.client(key) as client, fake.client(writer_key) as writer:
        populate(client, gen, 1_000)
        target_id = external_id(437)
        get_path = by_external_path(target_id)
        list_path = "/api/contexts"
        list_params = {"limit": "50"}
        create_counter = itertools.count()
        create_body = gen.context(None)

        def create_json() -> dict[str, Any]:
            return {**create_body, "externalId": f"bench/create/{next(create_counter)}"}

        # Capture the fake's real answers, so the floor parses and returns the same bytes.
        got = expect(client.get(get_path), 200)
        if got.json()["externalId"] != target_id:
            raise RuntimeError(f"GET {get_path} returned {got.json()['externalId']!r}")
        listed = expect(client.get(list_path, params=list_params), 200)
        if len(listed.json()["items"]) != 50 or listed.json()["total"] != 1_000:
            raise RuntimeError("the list did not return 50 of 1,000 contexts")
        created = expect(writer.post("/api/contexts", json=create_json()), 201)
        floor_transport = canned_transport(
            {
                ("GET", get_path): (200, got.content),
                ("GET", list_path): (200, listed.content),
                ("POST", "/api/contexts"): (201, created.content),
            }
        )
        auth = {"Authorization": f"Bearer {key}"}
        floor = httpx2.Client(transport=floor_transport, base_url=fake.base_url, headers=auth)

        rows: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            (
                "GET by external id",
                lambda: expect(floor.get(get_path), 200),
                lambda: expect(client.get(get_path), 200),
            ),
            (
                "POST create",
                lambda: expect(floor.post("/api/contexts", json=create_json()), 201),
                lambda: expect(writer.post("/api/contexts", json=create_json()), 201),
            ),
            (
                "GET list 50 of 1,000",
                lambda: expect(floor.get(list_path, params=list_params), 200),
                lambda: expect(client.get(list_path, params=list_params), 200),
            ),
        ]
        for label, floor_fn, fake_fn in rows:
            floor_s, fake_s = measure_interleaved([floor_fn, fake_fn], it.n, it.warmup)
            bench.add(f"floor: {label}", floor_s)
            target = Target(max_ratio=IN_PROCESS_RATIOS[label])
            bench.add(f"fake: {label}", fake_s, baseline=f"floor: {label}", target=target)
        floor.close()

    async def async_rows() -> tuple[Stats, Stats]:
        async_floor = httpx2.AsyncClient(
            transport=canned_transport({("GET", get_path): (200, got.content)}),
            base_url=fake.base_url,
            headers={"Authorization": f"Bearer {key}"},
        )
        async with async_floor, fake.async_client(key) as aclient:

            async def floor_get() -> None:
                expect(await async_floor.get(get_path), 200)

            async def fake_get() -> None:
                expect(await aclient.get(get_path), 200)

            floor_s, fake_s = await ameasure_interleaved([floor_get, fake_get], it.n, it.warmup)
            return floor_s, fake_s

    floor_stats, fake_stats = asyncio.run(async_rows())
    bench.add("floor: async GET by external id", floor_stats)
    bench.add(
        "fake: async GET by external id",
        fake_stats,
        baseline="floor: async GET by external id",
        # the async client costs no more over its floor than the sync one over its own
        target=Target(max_ratio=IN_PROCESS_RATIOS["GET by external id"]),
    )
    sync_ms = bench.row("fake: GET by external id").stats.median_ms
    bench.note(
        f"async GET by external id is {fake_stats.median_ms / sync_ms:.2f}x the sync one "
        f"({fake_stats.median_ms:.3f} vs {sync_ms:.3f} ms)"
    )
    fake.close()
    gc.collect()


#: Postgres over loopback, as a multiple of the memory store: reads one round trip past the
#: key's, writes a few (the rest of the rows have no target).
POSTGRES_RATIOS = {"GET by external id": 3.0, "POST create": 5.0, "POST checkpoint": 5.0}


@section("stores (SQLite and Postgres vs the memory store, in-process)")
def bench_stores(bench: Bench) -> None:
    """The same requests on each store, interleaved, so the SQL rows read as ratios."""
    import tempfile

    from fake_contextq.stores.sql import SqlStore

    it = bench.iters(full=(400, 40), quick=(100, 10))
    stack = contextlib.ExitStack()
    stores: dict[str, SqlStore | None] = {"memory": None}
    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
    stores["sqlite"] = SqlStore(f"sqlite:///{tmp / 'bench.db'}")
    pg_url = stack.enter_context(postgres_schema(bench))
    if pg_url is not None:
        stores["postgres"] = SqlStore(pg_url)

    gen = TextGen(seed=7)
    clients: dict[str, httpx2.Client] = {}
    sessions: dict[str, str] = {}
    seqs: dict[str, itertools.count[int]] = {}
    counters: dict[str, itertools.count[int]] = {}
    fakes: list[FakeContextQ] = []
    try:
        for kind, store in stores.items():
            fake = FakeContextQ(store=store)
            fakes.append(fake)
            client = fake.client(fake.mint_key(fake.create_tenant(plan="enterprise")))
            stack.callback(client.close)
            populate(client, TextGen(seed=7), 1_000)
            clients[kind] = client
            session = expect(client.post("/api/agent/sessions", json={}), 201).json()
            sessions[kind] = f"/api/agent/sessions/{session['id']}/checkpoint"
            seqs[kind] = itertools.count(1)
            counters[kind] = itertools.count()
        body = gen.context(None)
        query = {"query": gen.query(), "limit": 10}
        get_path = by_external_path(external_id(437))

        def requests(kind: str) -> list[tuple[str, Callable[[], object]]]:
            c = clients[kind]
            return [
                ("GET by external id", lambda: expect(c.get(get_path), 200)),
                (
                    "POST create",
                    lambda: expect(
                        c.post(
                            "/api/contexts",
                            json={**body, "externalId": f"s/{next(counters[kind])}"},
                        ),
                        201,
                    ),
                ),
                (
                    "GET list 50",
                    lambda: expect(c.get("/api/contexts", params={"limit": "50"}), 200),
                ),
                ("POST search", lambda: expect(c.post("/api/search", json=query), 200)),
                (
                    "POST checkpoint",
                    lambda: expect(
                        c.post(sessions[kind], json={"seq": next(seqs[kind]), "state": {"n": 1}}),
                        201,
                    ),
                ),
            ]

        plans = {kind: requests(kind) for kind in stores}
        for index, (label, _) in enumerate(plans["memory"]):
            fns = [plans[kind][index][1] for kind in stores]
            # Checkpoints must go in order per session: no warm-up calls may be lost.
            stats = measure_interleaved(fns, it.n, it.warmup)
            bench.add(f"memory: {label}", stats[0])
            for kind, kind_stats in zip(list(stores)[1:], stats[1:], strict=True):
                ratio = 3.0 if kind == "sqlite" else POSTGRES_RATIOS.get(label)
                target = None if ratio is None else Target(max_ratio=ratio)
                bench.add(
                    f"{kind}: {label}", kind_stats, baseline=f"memory: {label}", target=target
                )
    finally:
        for fake in fakes:
            fake.close()
        for store in stores.values():
            if store is not None:
                store.close()
        stack.close()  # the clients, then the schema (its connections are closed now)
    gc.collect()


@section("search over 10,000 contexts")
def bench_search(bench: Bench) -> None:
    it = bench.iters(full=(300, 20), quick=(60, 5))
    corpus_size, batch = 10_000, 500
    gen = TextGen(seed=2)
    fake, key = new_fake_with_key(plan="enterprise")
    with fake.client(key) as client:
        build_started = time.perf_counter_ns()
        batch_times, items = populate(client, gen, corpus_size, batch=batch)
        build_s = (time.perf_counter_ns() - build_started) / 1e9
        bench.add(f"bulk-upsert {batch} (building the corpus)", Stats.from_ns(batch_times))
        bench.note(
            f"built {corpus_size:,} contexts in {build_s:.2f} s "
            f"({len(batch_times)} bulk-upserts of {batch})"
        )

        queries = [gen.query() for _ in range(50)]
        # How much work a query is: documents holding at least one of its terms.
        doc_terms = [
            set(
                f"{c['title']} {c['content']} {' '.join(c['tags'])}".lower()
                .replace(".", " ")
                .split()
            )
            for c in items
        ]
        touched = [sum(1 for d in doc_terms if not d.isdisjoint(q.split())) for q in queries]
        bench.note(
            f"{len(queries)} queries of 1-4 words, cycled; each matches "
            f"{statistics.median(touched):,.0f} docs (median; max {max(touched):,}) "
            f"of {corpus_size:,}"
        )

        # Each timed function walks the same queries in the same order.
        floor_q, plain_q, typed_q = (itertools.cycle(queries) for _ in range(3))
        answers: dict[str, bytes] = {}
        for q in queries:
            response = expect(client.post("/api/search", json={"query": q, "limit": 10}), 200)
            if not response.json()["results"]:
                raise RuntimeError(f"search {q!r} found nothing")
            answers[q] = response.content
        canned = answers[queries[0]]  # one typical answer (10 hits) for the floor
        floor = httpx2.Client(
            transport=canned_transport({("POST", "/api/search"): (200, canned)}),
            base_url=fake.base_url,
            headers={"Authorization": f"Bearer {key}"},
        )
        with floor:
            floor_s, plain_s, typed_s = measure_interleaved(
                [
                    lambda: expect(
                        floor.post("/api/search", json={"query": next(floor_q), "limit": 10}), 200
                    ),
                    lambda: expect(
                        client.post("/api/search", json={"query": next(plain_q), "limit": 10}), 200
                    ),
                    lambda: expect(
                        client.post(
                            "/api/search",
                            json={"query": next(typed_q), "limit": 10, "type": "incident"},
                        ),
                        200,
                    ),
                ],
                it.n,
                it.warmup,
            )
        bench.add("floor: POST search", floor_s)
        bench.add(
            "fake: POST search (limit 10)",
            plain_s,
            baseline="floor: POST search",
            target=Target(max_ms=20.0),
        )
        bench.add("fake: POST search, type filter", typed_s, baseline="floor: POST search")
    fake.close()
    gc.collect()


@section("agent memory layer (in-process fake)")
def bench_agent(bench: Bench) -> None:
    """A Boot Pack over 1,000 embedded lessons and 1,000 contexts, and a checkpoint."""
    it = bench.iters(full=(100, 10), quick=(20, 3))
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan="enterprise")
    fake.create_workspace(tenant, "acme")
    key = fake.mint_key(tenant, ("read", "write"))
    client = fake.client(key)
    corpus = TextGen(seed=7)
    populate(client, corpus, 1000)
    for _ in range(1000):
        expect(
            client.post(
                "/api/agent/lessons", json={"text": corpus.sentence(), "workspace": "acme"}
            ),
            201,
        )
    session = expect(client.post("/api/agent/sessions", json={"workspace": "acme"}), 201)
    sid = session.json()["id"]
    for i in range(20):
        expect(
            client.post(
                "/api/agent/tasks",
                json={"session_id": sid, "key": f"t{i}", "title": corpus.title()},
            ),
            201,
        )
    seq = {"n": 0}
    goals = [corpus.query() for _ in range(20)]
    floor = canned_transport({("POST", "/api/agent/boot"): (200, b'{"goal":"x"}')})

    def boot() -> object:
        seq["n"] += 1
        return expect(
            client.post(
                "/api/agent/boot",
                json={
                    "goal": goals[seq["n"] % len(goals)],
                    "workspace": "acme",
                    "token_budget": 4000,
                },
            ),
            200,
        )

    def checkpoint() -> object:
        seq["n"] += 1
        return expect(
            client.post(
                f"/api/agent/sessions/{sid}/checkpoint",
                json={"seq": seq["n"], "state": {"step": seq["n"]}},
            ),
            201,
        )

    floor_client = httpx2.Client(transport=floor, base_url=FakeContextQ.base_url)

    def floor_post() -> object:
        return floor_client.post("/api/agent/boot", json={"goal": "x"})

    floor_s, boot_s = measure_interleaved([floor_post, boot], it.n, it.warmup)
    bench.add("floor: POST (MockTransport)", floor_s)
    bench.add(
        "fake: boot, 1,000 lessons + 1,000 contexts",
        boot_s,
        baseline="floor: POST (MockTransport)",
        target=Target(max_ms=50.0),
    )
    seq["n"] = 0
    last = client.get(f"/api/agent/sessions/{sid}/resume").json()["checkpoint"]
    seq["n"] = 0 if last is None else last["seq"]
    cp_s = measure(checkpoint, it.n * 5, it.warmup)
    bench.add(
        "fake: checkpoint", cp_s, baseline="floor: POST (MockTransport)", target=Target(max_ms=1.0)
    )
    client.close()
    fake.close()
