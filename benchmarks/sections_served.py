"""Sections over sockets: the fakes served by uvicorn on loopback next to a trivial app,
their throughput under concurrent clients, and what the recording proxy adds."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import statistics
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import httpx2
from _corpus import TextGen, by_external_path, external_id, populate
from _http import JSON_HEADERS, expect
from _measure import Stats, measure_interleaved
from _postgres import postgres_schema
from _registry import Bench, Target, section

from fake_contextq import FakeContextQ

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


#: A served GET may cost this much over the trivial app's (the ASGI adapter hands the request
#: straight to the service); with 8 kept-alive clients the memory store serves at least this
#: share of the trivial app's requests per second.
SERVED_GET_RATIO = 1.5
LOAD_SHARE = 0.6


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
            key = fake.mint_key(fake.create_tenant(plan="enterprise"))
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
                target=None if kind == "postgres" else Target(max_ratio=SERVED_GET_RATIO),
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
                # wall time per request <= 1/x the floor's is throughput >= x the floor's
                target=Target(max_ratio=1 / LOAD_SHARE) if kind == "memory" else None,
                note=f"{rps:,.0f} req/s, {rps / floor_rps:.2f}x the floor's"
                + (f" (target >= {LOAD_SHARE}x)" if kind == "memory" else ""),
            )

        def floor_cycle() -> object:
            served = ServedApp(served_floor_app, name="floor-cycle")
            served.start()
            served.stop()
            return served

        def fake_cycle() -> object:
            with fakes["memory"].serve() as served:
                return served.url

        cycles = bench.iters(full=(60, 5), quick=(15, 2))
        floor_up, fake_up = measure_interleaved([floor_cycle, fake_cycle], cycles.n, cycles.warmup)
        bench.add("floor: a trivial app served, then stopped", floor_up)
        bench.add(
            "memory: fake.serve(), then stopped (what a served fixture costs)",
            fake_up,
            baseline="floor: a trivial app served, then stopped",
            target=Target(max_ms=50.0),
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
