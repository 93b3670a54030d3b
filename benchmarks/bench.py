#!/usr/bin/env python3
"""Benchmarks of the fake ContextQ: what a test pays per request, per fresh fake, per search.

    python3 dev.py bench [--quick] [--json PATH] [--strict]
    .venv/bin/python benchmarks/bench.py [--quick] [--json PATH] [--strict]

Every row is the median (and p90) wall time of one operation in milliseconds, next to
the row it is compared with (its baseline, measured in the same run, so the ratio holds
on any machine) and, where there is one, a target:

- GET by external id through ``fake.client(key)`` within 3x the same GET through an
  ``httpx2.Client`` on a ``MockTransport`` that returns a canned response (the floor:
  what httpx itself costs);
- a fresh ``FakeContextQ()`` with a tenant and a key in under 2 ms;
- a search over 10,000 contexts in under 20 ms;
- served (uvicorn on loopback, one kept-alive connection): each fake's GET and POST, and
  the scripted model's ``POST /v1/messages``, within 2x the same request to a trivial
  ASGI app served the same way; 8 concurrent clients get at least half the trivial app's
  requests per second from the fake.
- the recording proxy (``fake-anthropic record``, its own process) adds at most 1 ms to
  a served scripted model's ``POST /v1/messages`` over the same request sent direct
  (``Target(max_added_ms=...)``: a bound on the median minus the baseline's median).

Timing uses ``time.perf_counter_ns`` with the garbage collector off during the timed
runs. ``--quick`` runs fewer iterations (a CI smoke run); ``--json PATH`` also writes the
results as JSON; ``--strict`` exits 1 when a target is missed; ``--only TEXT`` runs only
the sections whose title contains TEXT.

Adding a section (the memory-tool adapter's commands, the agent layer, ...): write a
function that takes a ``Bench`` and registers rows with ``bench.add(...)``, and decorate
it with ``@section("title")``. Sections run in the order they are defined. Time things
with ``measure`` or, for rows compared with each other (a floor and what sits on it),
``measure_interleaved``, which alternates them in blocks so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2

from fake_contextq import FakeContextQ

# ----- measuring ---------------------------------------------------------------------------------

NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Stats:
    """Summary of one timed run, in milliseconds."""

    n: int
    median_ms: float
    p90_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def from_ns(cls, samples: Sequence[int]) -> Stats:
        if not samples:
            raise ValueError("no samples")
        ms = [s / NS_PER_MS for s in samples]
        p90 = statistics.quantiles(ms, n=10, method="inclusive")[8] if len(ms) > 1 else ms[0]
        return cls(
            n=len(ms),
            median_ms=statistics.median(ms),
            p90_ms=p90,
            mean_ms=statistics.fmean(ms),
            min_ms=min(ms),
            max_ms=max(ms),
        )


def _time_calls(fn: Callable[[], object], n: int) -> list[int]:
    """Time ``n`` calls of ``fn`` one by one (ns), with the garbage collector off."""
    samples = [0] * n
    clock = time.perf_counter_ns
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(n):
            started = clock()
            fn()
            samples[i] = clock() - started
    finally:
        if was_enabled:
            gc.enable()
    return samples


def measure(fn: Callable[[], object], n: int, warmup: int) -> Stats:
    """Call ``fn`` ``warmup`` times untimed, then ``n`` times timed one by one, gc off."""
    for _ in range(warmup):
        fn()
    return Stats.from_ns(_time_calls(fn, n))


def measure_interleaved(
    fns: Sequence[Callable[[], object]], n: int, warmup: int, rounds: int = 10
) -> list[Stats]:
    """``measure`` for several functions compared with each other: their ``n`` timed calls
    are split into ``rounds`` blocks taken in turn (a, b, a, b, ...), so a change in the
    machine's speed during the run (other load, clock scaling) weighs on all of them alike
    and their ratios stay meaningful on a shared, noisy machine."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples: list[list[int]] = [[] for _ in fns]
    rounds = max(1, min(rounds, n))
    for r in range(rounds):
        block = n // rounds + (1 if r < n % rounds else 0)
        for fn, out in zip(fns, samples, strict=True):
            out.extend(_time_calls(fn, block))
    return [Stats.from_ns(s) for s in samples]


async def _atime_calls(fn: Callable[[], Awaitable[object]], n: int) -> list[int]:
    samples = [0] * n
    clock = time.perf_counter_ns
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(n):
            started = clock()
            await fn()
            samples[i] = clock() - started
    finally:
        if was_enabled:
            gc.enable()
    return samples


async def ameasure_interleaved(
    fns: Sequence[Callable[[], Awaitable[object]]], n: int, warmup: int, rounds: int = 10
) -> list[Stats]:
    """``measure_interleaved`` for coroutine functions, awaited on the running loop."""
    for fn in fns:
        for _ in range(warmup):
            await fn()
    samples: list[list[int]] = [[] for _ in fns]
    rounds = max(1, min(rounds, n))
    for r in range(rounds):
        block = n // rounds + (1 if r < n % rounds else 0)
        for fn, out in zip(fns, samples, strict=True):
            out.extend(await _atime_calls(fn, block))
    return [Stats.from_ns(s) for s in samples]


# ----- rows, targets and the registry of sections ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """A bound on a row's median: an absolute time, a multiple of its baseline, a time
    added to its baseline's median (``max_added_ms``: what a layer in front of the baseline
    costs), or several of these."""

    max_ms: float | None = None
    max_ratio: float | None = None
    max_added_ms: float | None = None

    def describe(self) -> str:
        parts = []
        if self.max_ms is not None:
            parts.append(f"< {self.max_ms:g} ms")
        if self.max_ratio is not None:
            parts.append(f"<= {self.max_ratio:g}x")
        if self.max_added_ms is not None:
            parts.append(f"<= base + {self.max_added_ms:g} ms")
        return ", ".join(parts)


@dataclass(slots=True)
class Row:
    section: str
    name: str
    stats: Stats
    baseline: str | None = None  # the name of the row this one is compared with
    target: Target | None = None
    note: str = ""
    ratio: float | None = None
    added_ms: float | None = None  # median minus the baseline's median
    result: str | None = None  # "PASS", "MISS", or None without a target


Section = Callable[["Bench"], None]
SECTIONS: list[tuple[str, Section]] = []


def section(title: str) -> Callable[[Section], Section]:
    """Register a benchmark section; it runs after those registered before it."""

    def register(fn: Section) -> Section:
        SECTIONS.append((title, fn))
        return fn

    return register


@dataclass(slots=True)
class Iterations:
    n: int
    warmup: int


@dataclass
class Bench:
    """What a section gets: the run's settings, and ``add`` to register its rows."""

    quick: bool
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    current_section: str = ""

    def iters(self, full: tuple[int, int], quick: tuple[int, int]) -> Iterations:
        """(n, warmup) for this run: ``full`` normally, ``quick`` under ``--quick``."""
        n, warmup = quick if self.quick else full
        return Iterations(n, warmup)

    def add(
        self,
        name: str,
        stats: Stats,
        *,
        baseline: str | None = None,
        target: Target | None = None,
        note: str = "",
    ) -> Row:
        if any(r.name == name for r in self.rows):
            raise ValueError(f"duplicate benchmark row {name!r}")
        row = Row(self.current_section, name, stats, baseline, target, note)
        if baseline is not None:
            base = self.row(baseline)
            row.ratio = stats.median_ms / base.stats.median_ms if base.stats.median_ms else None
            row.added_ms = stats.median_ms - base.stats.median_ms
        if target is not None:
            ok = True
            if target.max_ms is not None:
                ok = ok and stats.median_ms < target.max_ms
            if target.max_ratio is not None:
                ok = ok and row.ratio is not None and row.ratio <= target.max_ratio
            if target.max_added_ms is not None:
                ok = ok and row.added_ms is not None and row.added_ms <= target.max_added_ms
                added = "?" if row.added_ms is None else f"{row.added_ms:+.3f}"
                row.note = f"adds {added} ms" + (f"; {note}" if note else "")
            row.result = "PASS" if ok else "MISS"
        self.rows.append(row)
        return row

    def row(self, name: str) -> Row:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no benchmark row {name!r} (a baseline must be added before its rows)")

    def note(self, text: str) -> None:
        self.notes.append(f"[{self.current_section}] {text}")


# ----- shared helpers ---------------------------------------------------------------------------

JSON_HEADERS = {"content-type": "application/json"}


def expect(response: httpx2.Response, status: int) -> httpx2.Response:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url} answered "
            f"{response.status_code}, expected {status}: {response.text[:300]}"
        )
    return response


def canned_transport(responses: dict[tuple[str, str], tuple[int, bytes]]) -> httpx2.MockTransport:
    """A MockTransport answering (method, raw path) with a canned status and JSON body."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        path = request.url.raw_path.split(b"?", 1)[0].decode("ascii")
        status, body = responses[(request.method, path)]
        return httpx2.Response(status, content=body, headers=JSON_HEADERS)

    return httpx2.MockTransport(handler)


def _words(text: str) -> list[str]:
    return text.split()


# Realistic-ish note text: a fixed vocabulary drawn with Zipf-like weights (a few words are
# everywhere, most are rare), function words included, so postings lists have natural sizes.
FUNCTION_WORDS = _words(
    "the of and to a in is for that on with as it be this by are from or at was not but"
    " we an have when which can if should then all its so into after before"
)
DOMAIN_WORDS = _words(
    "deploy service database migration index query cache latency timeout retry queue worker"
    " schema tenant workspace context memory agent session checkpoint lesson handoff task"
    " release rollback incident outage alert pager dashboard metric trace log span error"
    " budget token prompt model embedding vector search ranking snippet title content tag"
    " user customer feedback review design spec contract endpoint route handler request"
    " response header body payload quota plan limit scope key secret rotation audit chain"
    " hash row table column postgres docker container cluster node pod replica shard"
    " partition backup restore snapshot volume disk memory cpu thread loop coroutine async"
    " sync lock mutex race deadlock leak profile benchmark regression test fixture mock fake"
    " stub assertion coverage lint type check build pipeline ci runner artifact package"
    " version dependency upgrade patch hotfix branch merge commit diff conflict rebase tag"
    " python typescript node fastify zod httpx fastapi uvicorn pytest hypothesis schemathesis"
    " config environment variable flag feature toggle experiment cohort rollout canary"
    " billing invoice payment refund subscription trial churn onboarding signup login"
    " password session cookie jwt oauth sso permission role admin owner member invite"
    " email notification webhook event stream kafka consumer producer offset lag backlog"
    " storage bucket object upload download stream chunk compression encoding utf json"
    " parser validator serializer mapper adapter gateway proxy balancer dns certificate tls"
    " network packet socket port firewall vpn region zone failover replication consistency"
    " eventual strong transaction isolation commit rollback savepoint constraint foreign"
    " unique primary sequence vacuum analyze explain plan scan seek join aggregate window"
    " report export import csv spreadsheet chart graph summary insight decision owner"
    " meeting roadmap milestone deadline estimate priority blocker risk dependency followup"
    " documentation readme guide tutorial example sample recipe pattern antipattern"
    " refactor cleanup rename extract inline simplify optimize rewrite deprecate remove"
)
TAGS = _words(
    "infra backend frontend data ml security billing oncall postmortem design decision"
    " research howto todo urgent stale archive weekly customer internal"
)
SEARCH_TYPES = ("reference", "feedback", "project", "incident", "lesson", "user")


class TextGen:
    """Seeded generator of titles, sentences, tags and queries over the fixed vocabulary."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        words = list(dict.fromkeys(FUNCTION_WORDS + DOMAIN_WORDS))
        domain = [w for w in dict.fromkeys(DOMAIN_WORDS) if w not in FUNCTION_WORDS]
        random.Random(seed + 1).shuffle(domain)  # rank by a seeded order, not alphabetically
        self.words = [w for w in words if w in FUNCTION_WORDS] + domain
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
        self.domain = domain
        self.domain_weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(domain))]

    def sentence(self, lo: int = 6, hi: int = 18) -> str:
        words = self.rng.choices(self.words, self.weights, k=self.rng.randint(lo, hi))
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def title(self) -> str:
        words = self.rng.choices(self.domain, self.domain_weights, k=self.rng.randint(3, 7))
        return " ".join(words).capitalize()

    def content(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 6)))

    def tags(self) -> list[str]:
        return self.rng.sample(TAGS, self.rng.randint(0, 3))

    def query(self) -> str:
        return " ".join(
            self.rng.choices(self.domain, self.domain_weights, k=self.rng.randint(1, 4))
        )

    def context(self, external_id: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.rng.choice(SEARCH_TYPES),
            "title": self.title(),
            "content": self.content(),
            "tags": self.tags(),
        }
        if external_id is not None:
            body["externalId"] = external_id
        return body


def external_id(i: int) -> str:
    # A slash, a space and a non-ASCII letter: the id must be quoted as one path segment.
    return f"memories/notes {i:05d}/plan-é.md"


def by_external_path(ext_id: str) -> str:
    return "/api/contexts/by-external/" + quote(ext_id, safe="")


def populate(
    client: httpx2.Client, gen: TextGen, count: int, *, batch: int = 500, start: int = 0
) -> tuple[list[int], list[dict[str, Any]]]:
    """Bulk-upsert ``count`` generated contexts; return each batch's time (ns) and the items."""
    times: list[int] = []
    items: list[dict[str, Any]] = []
    for lo in range(start, start + count, batch):
        chunk = [gen.context(external_id(i)) for i in range(lo, min(lo + batch, start + count))]
        started = time.perf_counter_ns()
        response = client.post("/api/contexts/bulk-upsert", json={"contexts": chunk})
        times.append(time.perf_counter_ns() - started)
        expect(response, 200)
        items.extend(chunk)
    return times, items


def new_fake_with_key(plan: str = "unlimited") -> tuple[FakeContextQ, str]:
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan=plan)
    return fake, fake.mint_key(tenant)


# ----- sections --------------------------------------------------------------------------------


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


@section("requests (in-process fake vs httpx floor)")
def bench_requests(bench: Bench) -> None:
    it = bench.iters(full=(1000, 100), quick=(200, 20))
    gen = TextGen(seed=1)
    fake, key = new_fake_with_key()
    writer_tenant = fake.create_tenant(plan="unlimited")
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
            target = Target(max_ratio=3.0) if label == "GET by external id" else None
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
        "fake: async GET by external id", fake_stats, baseline="floor: async GET by external id"
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


@contextlib.contextmanager
def postgres_schema(bench: Bench) -> Iterator[str | None]:
    """A database URL for a fresh schema on the local Postgres (``CONTEXTQ_BENCH_DATABASE_URL``
    or the tests' server), dropped afterwards; None, with a note, when no server answers."""
    import os
    import uuid

    import sqlalchemy as sa

    from fake_contextq.stores.sql import database_url

    pg_url = os.environ.get(
        "CONTEXTQ_BENCH_DATABASE_URL",
        os.environ.get("CONTEXTQ_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        admin = sa.create_engine(database_url(pg_url))
        with admin.begin() as conn:
            conn.execute(sa.text(f'create schema "{schema}"'))
    except Exception as exc:  # no server: the other rows still run
        bench.note(f"no Postgres at {pg_url} ({type(exc).__name__}); Postgres rows skipped")
        yield None
        return
    try:
        yield (
            database_url(pg_url)
            .update_query_dict({"options": f"-csearch_path={schema}"})
            .render_as_string(hide_password=False)
        )
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'drop schema "{schema}" cascade'))
        admin.dispose()


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
            client = fake.client(fake.mint_key(fake.create_tenant(plan="unlimited")))
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
    fake, key = new_fake_with_key(plan="unlimited")
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


# ----- report -------------------------------------------------------------------------------------


@section("agent memory layer (in-process fake)")
def bench_agent(bench: Bench) -> None:
    """A Boot Pack over 1,000 embedded lessons and 1,000 contexts, and a checkpoint."""
    it = bench.iters(full=(100, 10), quick=(20, 3))
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan="unlimited")
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


def _twenty_commands() -> list[dict[str, Any]]:
    cmds: list[dict[str, Any]] = []
    for i in range(5):
        cmds.append(
            {
                "command": "create",
                "path": f"/memories/notes/{i}.md",
                "file_text": f"fact {i}: alpha\nmore\n",
            }
        )
    cmds += [{"command": "view", "path": f"/memories/notes/{i}.md"} for i in range(5)]
    cmds += [
        {
            "command": "str_replace",
            "path": f"/memories/notes/{i}.md",
            "old_str": "alpha",
            "new_str": "beta",
        }
        for i in range(4)
    ]
    cmds += [
        {
            "command": "insert",
            "path": f"/memories/notes/{i}.md",
            "insert_line": 1,
            "insert_text": "inserted",
        }
        for i in range(2)
    ]
    cmds += [
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/notes"},
    ]
    cmds += [
        {
            "command": "rename",
            "old_path": "/memories/notes/4.md",
            "new_path": "/memories/notes/four.md",
        },
        {"command": "delete", "path": "/memories/notes/3.md"},
    ]
    return cmds


@section("scripted tool-runner runs (plugin: model fake + runner + adapter + ContextQ fake)")
def bench_scripted_runs(bench: Bench) -> None:
    """20 memory commands through client.beta.messages.tool_runner end to end, next to the
    same run with the client on a MockTransport of canned turns and the SDK's own local
    filesystem memory tool; and the fixture set-up a test pays."""
    import json as _json
    import tempfile

    import anthropic
    from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

    from adapter import ContextQMemoryTool
    from fake_anthropic import ScriptedModel, text, tool_use

    it = bench.iters(full=(30, 3), quick=(8, 2))
    commands = _twenty_commands()
    messages = [{"role": "user", "content": "Keep these notes."}]
    canned = [
        _json.dumps(
            {
                "id": f"msg_{i}",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "memory", "input": cmd}
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        ).encode()
        for i, cmd in enumerate(commands)
    ] + [
        _json.dumps(
            {
                "id": "msg_end",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "done"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        ).encode()
    ]

    def baseline() -> object:
        answers = iter(canned)
        transport = httpx2.MockTransport(
            lambda _r: httpx2.Response(200, content=next(answers), headers=JSON_HEADERS)
        )
        client = anthropic.Anthropic(
            api_key="x",
            base_url="http://model.test",
            max_retries=0,
            http_client=httpx2.Client(transport=transport),
        )
        with tempfile.TemporaryDirectory() as tmp:
            tool = BetaLocalFilesystemMemoryTool(base_path=tmp)
            final = client.beta.messages.tool_runner(
                model="m",
                max_tokens=100,
                tools=[tool],
                messages=messages,  # type: ignore[arg-type]
                thread=False,
            ).until_done()
        return final

    def ours() -> object:
        fake = FakeContextQ()
        tenant = fake.create_tenant(plan="unlimited")
        fake.create_workspace(tenant, "memories")
        key = fake.mint_key(tenant, ("read", "write", "admin"))
        tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="memories")
        model = ScriptedModel()
        model.script(*[tool_use("memory", cmd) for cmd in commands], text("done"))
        final = model.client.beta.messages.tool_runner(
            model="m",
            max_tokens=100,
            tools=[tool],
            messages=messages,  # type: ignore[arg-type]
        ).until_done()
        model.verify()
        fake.close()
        return final

    base_s, ours_s = measure_interleaved([baseline, ours], it.n, it.warmup)
    bench.add("MockTransport + SDK local fs tool: 20 commands", base_s)
    bench.add(
        "scripted model + adapter + fake: 20 commands",
        ours_s,
        baseline="MockTransport + SDK local fs tool: 20 commands",
        target=Target(max_ratio=2.0),
    )

    def setup() -> object:
        fake = FakeContextQ()
        tenant = fake.create_tenant()
        key = fake.mint_key(tenant, ("read", "write", "admin"))
        fake.create_workspace(tenant, "memories")
        tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="memories")
        return tool, ScriptedModel()

    setup_s = measure(setup, it.n * 10, it.warmup)
    bench.add(
        "fixture set-up: fake, tenant, key, workspace, tool, model",
        setup_s,
        target=Target(max_ms=5.0),
    )


@section("memory tool commands (adapter in-process vs the SDK's local filesystem tool)")
def bench_memory_tool(bench: Bench) -> None:
    """Each memory command through the adapter on the in-process fake, next to the same
    command on the SDK's own BetaLocalFilesystemMemoryTool in a temporary directory, with
    the number of HTTP requests each adapter command makes (read from the journal)."""
    import tempfile

    from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

    from adapter import ContextQMemoryTool

    it = bench.iters(full=(200, 20), quick=(40, 5))
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan="unlimited")
    fake.create_workspace(tenant, "acme")
    key = fake.mint_key(tenant, ("read", "write", "admin"))
    ours = ContextQMemoryTool(key, http_client=fake.client(), workspace="acme")
    tmp = tempfile.TemporaryDirectory()
    sdk = BetaLocalFilesystemMemoryTool(base_path=tmp.name)
    text = "".join(f"line {i}: some remembered fact about the project\n" for i in range(40))
    total = it.n + it.warmup + 5
    for tool in (ours, sdk):
        tool.call({"command": "create", "path": "/memories/file.md", "file_text": text})
        tool.call({"command": "create", "path": "/memories/edit.md", "file_text": "alpha\n"})
        tool.call({"command": "create", "path": "/memories/move-a.md", "file_text": "x\n"})
        for i in range(200):
            tool.call(
                {
                    "command": "create",
                    "path": f"/memories/dir/{i:03}.md",
                    "file_text": f"file {i}\n",
                }
            )
        for i in range(total):
            tool.call(
                {"command": "create", "path": f"/memories/trash/{i:04}.md", "file_text": "bye\n"}
            )

    def commands(tool: Any) -> dict[str, Callable[[], object]]:
        """Each command, repeatable: creates make new files, deletes use files made in
        advance, edits and renames flip back and forth."""
        state = {"create": 0, "delete": 0, "replace": 0, "rename": 0}

        def create() -> object:
            state["create"] += 1
            return tool.call(
                {
                    "command": "create",
                    "path": f"/memories/new/{state['create']}.md",
                    "file_text": "new\n",
                }
            )

        def delete() -> object:
            state["delete"] += 1
            return tool.call(
                {"command": "delete", "path": f"/memories/trash/{state['delete'] - 1:04}.md"}
            )

        def str_replace() -> object:
            state["replace"] += 1
            old, new = ("alpha", "beta") if state["replace"] % 2 else ("beta", "alpha")
            return tool.call(
                {
                    "command": "str_replace",
                    "path": "/memories/edit.md",
                    "old_str": old,
                    "new_str": new,
                }
            )

        def rename() -> object:
            state["rename"] += 1
            a, b = ("move-a", "move-b") if state["rename"] % 2 else ("move-b", "move-a")
            return tool.call(
                {
                    "command": "rename",
                    "old_path": f"/memories/{a}.md",
                    "new_path": f"/memories/{b}.md",
                }
            )

        return {
            "view file": lambda: tool.call({"command": "view", "path": "/memories/file.md"}),
            "view 200-file directory": lambda: tool.call(
                {"command": "view", "path": "/memories/dir"}
            ),
            "create": create,
            "str_replace": str_replace,
            "insert": lambda: tool.call(
                {
                    "command": "insert",
                    "path": "/memories/file.md",
                    "insert_line": 1,
                    "insert_text": "more",
                }
            ),
            "delete": delete,
            "rename": rename,
        }

    limits = {
        "view file": 1,
        "view 200-file directory": 2,
        "create": 3,  # one level down: POST, its own tag's row, the parent's lookup (README)
        "str_replace": 2,
        "insert": 2,
        "delete": 2,
        "rename": 4,
    }
    ours_cmds, sdk_cmds = commands(ours), commands(sdk)
    for name, most in limits.items():
        before = len(fake.journal)
        ours_cmds[name]()  # one un-timed call, counted
        requests = len(fake.journal) - before
        sdk_cmds[name]()
        sdk_s, ours_s = measure_interleaved([sdk_cmds[name], ours_cmds[name]], it.n, it.warmup)
        bench.add(f"sdk local fs: {name}", sdk_s)
        verdict = "PASS" if requests <= most else "MISS"
        bench.add(
            f"adapter: {name}",
            ours_s,
            baseline=f"sdk local fs: {name}",
            target=Target(max_ms=3.0),
            note=f"{requests} request(s), target <= {most}: {verdict}",
        )
        if requests > most:
            bench.note(f"MISS: adapter {name} made {requests} requests (target <= {most})")
    _bench_create_by_directory_size(bench, ours, fake, key, it)
    _bench_str_replace_many_matches(bench, fake, key)
    ours.close()
    fake.close()
    tmp.cleanup()


def _bench_create_by_directory_size(
    bench: Bench, ours: Any, fake: FakeContextQ, key: str, it: Iterations
) -> None:
    """A create into a 1,000-file directory next to one into a new (empty) directory: its
    cost must not grow with the directory (same store, so the fake's own work is equal)."""
    from adapter import ContextQMemoryTool

    def create(path: str) -> object:
        return ours.call({"command": "create", "path": path, "file_text": "new\n"})

    for i in range(1000):
        create(f"/memories/big/{i:04}.md")
    made = itertools.count()

    def into_big() -> object:
        return create(f"/memories/big/new-{next(made)}.md")

    def into_empty() -> object:
        return create(f"/memories/empty-{next(made)}/a.md")

    counts: dict[str, int] = {}
    for name, fn in (("empty", into_empty), ("big", into_big)):
        before = len(fake.journal)
        fn()  # one un-timed call, counted
        counts[name] = len(fake.journal) - before
    unseen = ContextQMemoryTool(key, http_client=fake.client(), workspace="acme")
    unseen.call({"command": "create", "path": "/memories/unseen.md", "file_text": "x\n"})
    before = len(fake.journal)
    unseen.call({"command": "create", "path": "/memories/big/unseen.md", "file_text": "x\n"})
    unseen_count = len(fake.journal) - before
    unseen.close()
    empty_s, big_s = measure_interleaved([into_empty, into_big], it.n, it.warmup)
    base = "adapter: create into a new (empty) directory"
    bench.add(base, empty_s, note=f"{counts['empty']} request(s)")
    verdict = "PASS" if counts["big"] <= 3 else "MISS"  # 2 cannot hold across instances
    bench.add(
        "adapter: create into a 1,000-file directory",
        big_s,
        baseline=base,
        target=Target(max_ratio=1.3),
        note=(
            f"{counts['big']} request(s), target <= 3: {verdict}; {unseen_count} from a tool "
            "that has not yet seen the directory"
        ),
    )
    if verdict == "MISS":
        bench.note(f"MISS: a create into a 1,000-file directory made {counts['big']} requests")


def _bench_str_replace_many_matches(bench: Bench, fake: FakeContextQ, key: str) -> None:
    """A str_replace refused for 80,000 matches in a 256 KiB file (the SDK's way of listing
    them is quadratic: about 25 s), next to one unique match in the same file."""
    from anthropic.lib.tools import ToolError

    from adapter import ContextQMemoryTool

    it = bench.iters(full=(20, 2), quick=(5, 1))
    tool = ContextQMemoryTool(
        key, http_client=fake.client(), workspace="acme", max_file_bytes=2**20
    )
    text = ("ab\n" * 80_000 + "unique\n").ljust(256 * 1024, ".")
    tool.call({"command": "create", "path": "/memories/many.md", "file_text": text})
    flip = itertools.cycle([("unique", "single"), ("single", "unique")])

    def one_match() -> object:
        old, new = next(flip)
        cmd = {"command": "str_replace", "path": "/memories/many.md", "old_str": old}
        return tool.call({**cmd, "new_str": new})

    def many_matches() -> object:
        try:
            tool.call({"command": "str_replace", "path": "/memories/many.md", "old_str": "ab"})
        except ToolError as exc:
            return exc
        raise AssertionError("80,000 matches were replaced")

    one_s, many_s = measure_interleaved([one_match, many_matches], it.n, it.warmup)
    base = "adapter: str_replace, 256 KiB file, one match"
    bench.add(base, one_s)
    bench.add(
        "adapter: str_replace refused, 256 KiB file, 80,000 matches",
        many_s,
        baseline=base,
        target=Target(max_ms=1000.0),
        note=f"error of {len(str(many_matches()))} characters",
    )
    tool.close()


@section("plugin load: a one-test pytest session with and without -p contextq_fixtures")
def bench_plugin_load(bench: Bench) -> None:
    """What loading the plugin costs a session that uses none of its fixtures: whole
    ``python -m pytest`` processes on one trivial test, alternated so load hits both."""
    import os
    import subprocess
    import tempfile

    it = bench.iters(full=(20, 2), quick=(6, 1))
    tmp = tempfile.TemporaryDirectory()
    project = Path(tmp.name)
    (project / "test_one.py").write_text("def test_one():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

    def session(*plugin: str) -> Callable[[], object]:
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin]

        def run() -> object:
            return subprocess.run(
                [*argv, "test_one.py"], cwd=project, env=env, capture_output=True, check=True
            )

        return run

    without, with_plugin = measure_interleaved(
        [session(), session("-p", "contextq_fixtures")], it.n, it.warmup
    )
    base = "pytest session, 1 test (no plugin)"
    bench.add(base, without)
    added = with_plugin.median_ms - without.median_ms
    bench.add(
        "pytest session, 1 test, -p contextq_fixtures",
        with_plugin,
        baseline=base,
        target=Target(max_ms=without.median_ms + 100.0),
        note=f"adds {added:+.1f} ms (target <= +100 ms)",
    )
    tmp.cleanup()


# ----- served mode: the fakes behind uvicorn on loopback, next to a trivial app -------------

SERVED_FLOOR_BODY = b'{"ok":true,"id":1,"title":"floor"}'


async def served_floor_app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """The served rows' floor: the same uvicorn set-up and socket, no framework, no work."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body", False):
        pass
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(SERVED_FLOOR_BODY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": SERVED_FLOOR_BODY})


def _one_connection(url: str, headers: dict[str, str]) -> httpx2.Client:
    """A client held to one kept-alive connection, as a test's client mostly is."""
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx2.Client(base_url=url, headers=headers, limits=limits)


def _moto_s3(stack: contextlib.ExitStack) -> tuple[httpx2.Client, str] | None:
    """A client and object path on moto_server's S3 when ``moto`` is importable, else None:
    a familiar served fake to read the rows against (moto is no dependency of this project)."""
    import importlib

    try:
        moto_server = importlib.import_module("moto.server")
    except ImportError:
        return None
    import logging

    # werkzeug logs every request moto serves: a cost the served fakes do not pay
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    stack.callback(server.stop)
    host, port = server.get_host_and_port()
    # moto reads the service from the credential scope and checks no signature.
    auth = (
        "AWS4-HMAC-SHA256 Credential=bench/20250101/us-east-1/s3/aws4_request, "
        "SignedHeaders=host, Signature=0"
    )
    client = stack.enter_context(_one_connection(f"http://{host}:{port}", {"Authorization": auth}))
    expect(client.put("/bench-bucket"), 200)
    expect(client.put("/bench-bucket/notes/plan.md", content=b"x" * 400), 200)
    return client, "/bench-bucket/notes/plan.md"


@section("served mode (fakes behind uvicorn on loopback vs a trivial ASGI app)")
def bench_served(bench: Bench) -> None:
    """What a request costs a client in another process: each fake served as tests and the
    CLIs serve it (``fake_server.ServedApp`` on a thread), one kept-alive connection per
    client, next to a trivial ASGI app served the same way (the floor: uvicorn, the socket
    and httpx, and nothing else); and the throughput of 8 concurrent kept-alive clients,
    sent by ``served_load.py`` from a child process (so the clients do not share the
    servers' interpreter lock) in plain HTTP/1.1 (so the client is cheaper than the floor)."""
    import subprocess
    import tempfile

    from fake_anthropic import ScriptedModel, text
    from fake_server import ServedApp

    it = bench.iters(full=(600, 60), quick=(120, 15))
    load = {"clients": 8, "requests": 150, "warmup": 10, "rounds": 5}
    if bench.quick:
        load.update(requests=40, rounds=2)
    stack = contextlib.ExitStack()
    try:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        floor = stack.enter_context(ServedApp(served_floor_app, name="floor"))
        floor.start()
        get_path = by_external_path(external_id(437))
        body = TextGen(seed=5).context(None)
        counter = itertools.count()
        fakes = {
            "memory": FakeContextQ(),
            "sqlite": FakeContextQ(database_url=f"sqlite:///{tmp / 'served.db'}"),
        }
        pg_url = stack.enter_context(postgres_schema(bench))
        if pg_url is not None:
            fakes["postgres"] = FakeContextQ(database_url=pg_url)
        kinds = list(fakes)
        clients: dict[str, httpx2.Client] = {}
        auths: dict[str, dict[str, str]] = {}
        for kind, fake in fakes.items():
            stack.callback(fake.close)
            key = fake.mint_key(fake.create_tenant(plan="unlimited"))
            with fake.client(key) as local:
                populate(local, TextGen(seed=5), 1_000)
            served = stack.enter_context(fake.serve())
            auths[kind] = {"Authorization": f"Bearer {key}"}
            clients[kind] = stack.enter_context(_one_connection(served.url, auths[kind]))
            got = expect(clients[kind].get(get_path), 200).json()
            if got["externalId"] != external_id(437):
                raise RuntimeError(f"served {kind} GET returned {got['externalId']!r}")
        # The floor gets a header of the same size, so the requests are alike byte for byte.
        floor_client = stack.enter_context(_one_connection(floor.url, auths["memory"]))

        model = ScriptedModel()
        model.script(*(text("ok") for _ in range(it.n + it.warmup + 1)))
        served_model = stack.enter_context(model.serve())
        model_client = stack.enter_context(
            _one_connection(
                served_model.url,
                {"x-api-key": "scripted", "anthropic-version": "2023-06-01"},
            )
        )
        ask = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
        reply = expect(model_client.post("/v1/messages", json=ask), 200).json()
        if reply["content"] != [{"type": "text", "text": "ok"}]:
            raise RuntimeError(f"the served model answered {reply['content']!r}")

        def create(client: httpx2.Client, status: int = 201) -> Callable[[], object]:
            return lambda: expect(
                client.post("/api/contexts", json={**body, "externalId": f"s/{next(counter)}"}),
                status,
            )

        def get(client: httpx2.Client, path: str = get_path) -> Callable[[], object]:
            return lambda: expect(client.get(path), 200)

        moto = None
        try:
            moto = _moto_s3(stack)
        except Exception as exc:  # moto is optional and not ours: its row only is lost
            bench.note(f"moto_server could not be set up ({type(exc).__name__}: {exc})")
        # The set-up's objects (1,000 contexts each, the SDK, FastAPI's models) move out of
        # the collector's reach, so the gc.collect() before each timed block is quick.
        gc.freeze()
        gets = [get(floor_client), *(get(clients[kind]) for kind in kinds)]
        if moto is not None:
            gets.append(get(*moto))
        floor_get, *get_stats = measure_interleaved(gets, it.n, it.warmup)
        bench.add("floor: served GET", floor_get)
        for kind, stats in zip(kinds, get_stats, strict=False):
            bench.add(
                f"{kind}: served GET by external id",
                stats,
                baseline="floor: served GET",
                target=None if kind == "postgres" else Target(max_ratio=2.0),
            )
        if moto is not None:
            bench.add("moto_server: S3 GET object", get_stats[-1], baseline="floor: served GET")

        posts = [
            create(floor_client, 200),
            lambda: expect(model_client.post("/v1/messages", json=ask), 200),
            *(create(clients[kind]) for kind in kinds),
        ]
        floor_post, model_post, *post_stats = measure_interleaved(posts, it.n, it.warmup)
        model.verify()  # every scripted turn played, none overrun
        bench.add("floor: served POST", floor_post)
        named = [
            (f"{kind}: served POST create", st) for kind, st in zip(kinds, post_stats, strict=True)
        ]
        for name, stats in (*named, ("scripted model: served POST /v1/messages", model_post)):
            target = None if name.startswith("postgres") else Target(max_ratio=2.0)
            bench.add(name, stats, baseline="floor: served POST", target=target)

        plan = tmp / "load.json"
        urls = {"floor": floor.url, **{k: str(c.base_url) for k, c in clients.items()}}
        targets = [
            {
                "url": urls[kind],
                "path": get_path,
                "headers": auths["memory" if kind == "floor" else kind],
            }
            for kind in ("floor", *kinds)
        ]
        plan.write_text(json.dumps({**load, "targets": targets}))
        ran = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("served_load.py")), str(plan)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if ran.returncode != 0:
            raise RuntimeError(f"the load process failed:\n{ran.stderr}")
        result = json.loads(ran.stdout)
        per_round = [
            Stats.from_ns([round(s * 1e9 / result["requests"]) for s in seconds])
            for seconds in result["seconds"]
        ]
        clients_n = load["clients"]
        floor_rps = result["requests"] / statistics.median(result["seconds"][0])
        base = f"floor: {clients_n} clients, GET (wall ms/request)"
        bench.add(base, per_round[0], note=f"{floor_rps:,.0f} req/s")
        for kind, stats, seconds in zip(kinds, per_round[1:], result["seconds"][1:], strict=True):
            rps = result["requests"] / statistics.median(seconds)
            bench.add(
                f"{kind}: {clients_n} clients, GET by external id",
                stats,
                baseline=base,
                # wall time per request <= 2x the floor's is throughput >= 0.5x the floor's
                target=Target(max_ratio=2.0) if kind == "memory" else None,
                note=f"{rps:,.0f} req/s, {rps / floor_rps:.2f}x the floor's"
                + (" (target >= 0.5x)" if kind == "memory" else ""),
            )
    finally:
        gc.unfreeze()
        stack.close()
    gc.collect()


# ----- the recording proxy: what it adds to a request, next to the request sent direct --------


def _start_proxy(upstream: str, out: Path) -> tuple[Any, str]:
    """``fake-anthropic record`` in a child process (so it does not share the client's
    interpreter lock), and the URL it printed."""
    import os
    import subprocess

    command = [sys.executable, "-m", "fake_anthropic", "record", "--upstream", upstream]
    process = subprocess.Popen(
        [*command, "--out", str(out), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    for _ in range(5):
        line = process.stdout.readline()
        if line.startswith("ANTHROPIC_BASE_URL="):
            return process, line.strip().split("=", 1)[1]
    process.kill()
    raise RuntimeError(f"fake-anthropic record printed no URL: {process.communicate()}")


@section("recording proxy (fake-anthropic record vs the same request sent direct)")
def bench_recording_proxy(bench: Bench) -> None:
    """What ``fake-anthropic record`` adds to a request: one kept-alive client sends the same
    ``POST /v1/messages`` to a served scripted model (the upstream) and, interleaved, through
    the proxy in front of it; the target is on the difference of the medians (the proxy's
    own work plus one more loopback hop), not a ratio."""
    import signal
    import tempfile

    from fake_anthropic import ScriptedModel, text

    it = bench.iters(full=(600, 60), quick=(120, 15))
    stack = contextlib.ExitStack()
    try:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        model = ScriptedModel()
        model.script(*(text("ok") for _ in range(2 * (it.n + it.warmup) + 2)))
        upstream = stack.enter_context(model.serve())
        process, proxy_url = _start_proxy(upstream.url, tmp / "recording.json")

        def stop_proxy() -> None:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=30)
            except Exception:
                process.kill()
                raise

        stack.callback(stop_proxy)
        headers = {"x-api-key": "sk-bench-key", "anthropic-version": "2023-06-01"}
        direct = stack.enter_context(_one_connection(upstream.url, headers))
        proxied = stack.enter_context(_one_connection(proxy_url, headers))
        ask = json.dumps(
            {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        for client in (direct, proxied):
            reply = expect(client.post("/v1/messages", content=ask, headers=JSON_HEADERS), 200)
            reply = reply.json()
            if reply["content"] != [{"type": "text", "text": "ok"}]:
                raise RuntimeError(f"the model answered {reply['content']!r}")
        gc.freeze()
        direct_s, proxied_s = measure_interleaved(
            [
                lambda: expect(direct.post("/v1/messages", content=ask, headers=JSON_HEADERS), 200),
                lambda: expect(
                    proxied.post("/v1/messages", content=ask, headers=JSON_HEADERS), 200
                ),
            ],
            it.n,
            it.warmup,
        )
        model.verify()
        base = "direct: served model POST /v1/messages"
        bench.add(base, direct_s)
        bench.add(
            "through fake-anthropic record",
            proxied_s,
            baseline=base,
            target=Target(max_added_ms=1.0),
        )
    finally:
        gc.unfreeze()
        stack.close()
    gc.collect()


def fmt_ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def table(rows: Sequence[Row]) -> str:
    header = (
        "benchmark",
        "n",
        "median ms",
        "p90 ms",
        "baseline",
        "x base",
        "target",
        "result",
        "note",
    )
    lines: list[tuple[str, ...] | str] = []
    current = None
    for r in rows:
        if r.section != current:
            current = r.section
            lines.append(f"== {current}")
        lines.append(
            (
                r.name,
                str(r.stats.n),
                fmt_ms(r.stats.median_ms),
                fmt_ms(r.stats.p90_ms),
                r.baseline or "-",
                "-" if r.ratio is None else f"{r.ratio:.2f}x",
                r.target.describe() if r.target else "",
                r.result or "",
                r.note,
            )
        )
    cells = [line for line in lines if isinstance(line, tuple)]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    right = {1, 2, 3, 5}

    def render(values: Sequence[str]) -> str:
        out = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        ]
        return "  ".join(out).rstrip()

    out = [render(header), render(["-" * w for w in widths])]
    out += [line if isinstance(line, str) else render(line) for line in lines]
    return "\n".join(out)


def environment(quick: bool) -> dict[str, Any]:
    import fastapi

    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": _cpu_count(),
        "httpx2": getattr(httpx2, "__version__", "?"),
        "fastapi": getattr(fastapi, "__version__", "?"),
        "mode": "quick" if quick else "full",
    }


def _cpu_count() -> int | None:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="fewer iterations (a smoke run for CI)"
    )
    parser.add_argument(
        "--json", metavar="PATH", type=Path, help="also write the results as JSON to PATH"
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--only",
        metavar="TEXT",
        action="append",
        default=[],
        help="run only the sections whose title contains TEXT (repeatable)",
    )
    args = parser.parse_args(argv)

    bench = Bench(quick=args.quick)
    env = environment(args.quick)
    print(
        f"fake-contextq benchmark ({env['mode']}): Python {env['python']} on "
        f"{env['platform']}, {env['cpus']} CPU(s), httpx2 {env['httpx2']}, "
        f"fastapi {env['fastapi']}",
        flush=True,
    )
    started = time.perf_counter()
    for title, fn in SECTIONS:
        if args.only and not any(o.lower() in title.lower() for o in args.only):
            continue
        bench.current_section = title
        section_started = time.perf_counter()
        print(f"  running: {title} ...", end="", flush=True)
        fn(bench)
        print(f" {time.perf_counter() - section_started:.1f} s", flush=True)
    elapsed = time.perf_counter() - started

    print()
    print(table(bench.rows))
    if bench.notes:
        print()
        for note in bench.notes:
            print(f"note: {note}")
    judged = [r for r in bench.rows if r.result is not None]
    missed = [r for r in judged if r.result == "MISS"]
    print()
    print(
        f"targets: {len(judged) - len(missed)} PASS, {len(missed)} MISS"
        + (f" ({', '.join(r.name for r in missed)})" if missed else "")
        + f"; total {elapsed:.1f} s"
    )

    if args.json is not None:
        payload = {
            "environment": env,
            "elapsed_s": round(elapsed, 3),
            "rows": [
                {
                    "section": r.section,
                    "name": r.name,
                    **{k: round(v, 4) for k, v in asdict(r.stats).items()},
                    "baseline": r.baseline,
                    "ratio": None if r.ratio is None else round(r.ratio, 3),
                    "added_ms": None if r.added_ms is None else round(r.added_ms, 4),
                    "target": None if r.target is None else asdict(r.target),
                    "result": r.result,
                    "note": r.note,
                }
                for r in bench.rows
            ],
            "notes": bench.notes,
            "passed": len(judged) - len(missed),
            "missed": [r.name for r in missed],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
