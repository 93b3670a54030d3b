"""Load for the served-mode throughput rows of ``bench.py``, run as a child process.

It runs in a process of its own so the clients do not share the served fakes' interpreter
lock, and it speaks HTTP/1.1 itself on asyncio streams (a fixed GET, a response read by
its ``Content-Length``): an httpx client costs more per request than the trivial floor
app does, so with one the rows would time the client and every ratio would read 1.

    python benchmarks/served_load.py PLAN.json

PLAN holds ``targets`` (each ``{"url", "path", "headers"}``, loopback only), ``clients``
(concurrent kept-alive connections), ``requests`` (per connection, per round), ``warmup``
(per connection, untimed, on the same connection) and ``rounds``. The targets take turns
round by round, so machine noise weighs on each alike; each round opens its connections
afresh, so none sits idle long enough for the server to close it. Prints
``{"seconds": [[round, ...] per target], "requests": N}``, N the requests of one round.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class Target:
    def __init__(self, spec: dict[str, Any]) -> None:
        url = urlsplit(spec["url"])
        if url.hostname not in LOOPBACK or url.port is None:
            raise ValueError(f"load goes to a loopback host and port only, not {spec['url']}")
        self.host, self.port = url.hostname, url.port
        authority = f"[{self.host}]" if ":" in self.host else self.host
        lines = [f"GET {spec['path']} HTTP/1.1", f"Host: {authority}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in spec["headers"].items()]
        self.request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, req: bytes) -> None:
    writer.write(req)
    head = await reader.readuntil(b"\r\n\r\n")
    if head[9:12] != b"200":
        raise RuntimeError(f"the server answered {head[:12]!r}")
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            await reader.readexactly(int(value))
            return
    raise RuntimeError("an answer without Content-Length (this client reads no other kind)")


async def _connection(
    target: Target, n: int, warmup: int, ready: asyncio.Barrier, start: asyncio.Event
) -> None:
    reader, writer = await asyncio.open_connection(target.host, target.port)
    try:
        for _ in range(warmup):
            await _exchange(reader, writer, target.request)
        await ready.wait()
        await start.wait()
        for _ in range(n):
            await _exchange(reader, writer, target.request)
    finally:
        writer.close()
        await writer.wait_closed()


async def _round(target: Target, clients: int, n: int, warmup: int) -> float:
    """Seconds for ``clients`` warmed-up connections to make ``n`` requests each at once."""
    ready, start = asyncio.Barrier(clients + 1), asyncio.Event()
    tasks = [
        asyncio.create_task(_connection(target, n, warmup, ready, start)) for _ in range(clients)
    ]
    waiting = asyncio.ensure_future(ready.wait())
    await asyncio.wait([waiting, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if not waiting.done():  # a connection failed before the start: raise its error
        await asyncio.gather(*tasks)
    started = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    return time.perf_counter() - started


async def run(plan: dict[str, Any]) -> dict[str, Any]:
    targets = [Target(spec) for spec in plan["targets"]]
    clients, n = int(plan["clients"]), int(plan["requests"])
    warmup, rounds = int(plan["warmup"]), int(plan["rounds"])
    seconds: list[list[float]] = [[] for _ in targets]
    for _ in range(rounds):
        for target, out in zip(targets, seconds, strict=True):
            out.append(await _round(target, clients, n, warmup))
    return {"seconds": seconds, "requests": n * clients}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.loads(Path(sys.argv[1]).read_text())))))
