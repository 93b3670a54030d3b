"""The benchmark script still runs as ``python benchmarks/bench.py``: its modules import one
another from the script's folder, which only a run of the script itself shows. One cheap
section, quick; the figures are the bench's business, so no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

FRESH_FAKE_ROWS = [
    "httpx2.Client(MockTransport)",
    "FakeContextQ()",
    "FakeContextQ() + tenant + key",
    "tenant + key on an existing fake",
]


def test_the_bench_script_runs_one_section_and_prints_its_rows(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    ran = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench.py",
            "--quick",
            "--only",
            "fresh fake",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert "== fresh fake" in lines
    running = [line for line in lines if line.startswith("  running: ")]
    assert len(running) == 1
    assert running[0].startswith("  running: fresh fake ...")
    printed = [line.split("  ")[0] for line in lines[lines.index("== fresh fake") + 1 :]]
    assert printed[: len(FRESH_FAKE_ROWS)] == FRESH_FAKE_ROWS
    rows = json.loads(out.read_text())["rows"]
    assert [(r["section"], r["name"]) for r in rows] == [
        ("fresh fake", name) for name in FRESH_FAKE_ROWS
    ]
