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
function that takes a ``Bench`` and registers rows with ``bench.add(...)``, decorate it
with ``@section("title")``, and put it in the ``sections_*`` module of what it measures
(``sections_fake``: the fake in-process; ``sections_memory``: the memory tool and the
plugin; ``sections_served``: over sockets). Sections run module by module in the order
``SECTION_MODULES`` lists, each module's in the order they are defined. Time things with
``measure`` or, for rows compared with each other (a floor and what sits on it),
``measure_interleaved``, which alternates them in blocks so machine noise hits both alike.
The helpers sit beside this script: ``_measure`` (timing), ``_registry`` (rows, targets,
sections), ``_http`` and ``_corpus`` (requests, generated contexts), ``_postgres`` (a
scratch schema), ``_report`` (the table and the JSON).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import sections_agent_memory
import sections_fake
import sections_mcp
import sections_memory
import sections_served
from _registry import Bench, in_order
from _report import as_json, environment, table

#: The report's order of the section modules.
SECTION_MODULES = (
    sections_fake,
    sections_memory,
    sections_served,
    sections_mcp,
    sections_agent_memory,
)


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
    for title, fn in in_order(*SECTION_MODULES):
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
        payload = as_json(bench, env, elapsed)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
