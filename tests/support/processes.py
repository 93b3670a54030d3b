"""Run the fakes' command lines in a subprocess and read their banners, for the e2e tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx2


def _has_store(args: tuple[str, ...]) -> bool:
    return any(a in ("--db", "--memory", "--database-url") for a in args)


def _command(script_name: str, module: str) -> list[str]:
    script = Path(sys.executable).with_name(script_name)
    if script.exists():
        return [str(script)]
    found = shutil.which(script_name)
    return [found] if found else [sys.executable, "-m", module]


def cli_command() -> list[str]:
    """``fake-contextq``, as installed beside this interpreter."""
    return _command("fake-contextq", "fake_contextq.cli")


def anthropic_command() -> list[str]:
    """``fake-anthropic``, as installed beside this interpreter."""
    return _command("fake-anthropic", "fake_anthropic.cli")


@dataclass
class Served:
    process: subprocess.Popen[str]
    lines: dict[str, str] = field(default_factory=dict)
    banner: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.lines["CONTEXT_API_URL"]

    @property
    def key(self) -> str:
        return self.lines["CONTEXT_API_KEY"]

    @property
    def token(self) -> str:
        return self.lines["FAKE_CONTEXTQ_CONTROL_TOKEN"]


def start(*args: str, timeout: float = 20.0) -> Served:
    process = subprocess.Popen(
        [
            *cli_command(),
            "serve",
            "--port",
            "0",
            *(args if _has_store(args) else ("--memory", *args)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return read_banner(process, control="--control" in args, timeout=timeout)


def read_banner(
    process: subprocess.Popen[str], *, control: bool = False, timeout: float = 20.0
) -> Served:
    """The banner of a starting ``fake-contextq serve`` (however it was started), read up to
    its key (and control token); the process is killed if it does not get there."""
    served = Served(process)
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while "CONTEXT_API_KEY" not in served.lines or (
        control and "FAKE_CONTEXTQ_CONTROL_TOKEN" not in served.lines
    ):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise AssertionError(
                f"serve did not start: {served.banner} "
                f"{process.stderr.read() if process.stderr else ''}"
            )
        line = process.stdout.readline().rstrip("\n")
        served.banner.append(line)
        name, sep, value = line.partition("=")
        if sep and name.isupper():
            served.lines[name] = value
    return served


def stop(served: Served, sig: signal.Signals = signal.SIGINT) -> tuple[int, str, str]:
    """Stop the server with ``sig`` (Ctrl-C's by default): its status, stdout and stderr."""
    served.process.send_signal(sig)
    out, err = served.process.communicate(timeout=20)
    return served.process.returncode, out, err


def start_model(script: list[object], directory: Path) -> tuple[subprocess.Popen[str], str]:
    """``fake-anthropic serve`` playing ``script``, and its base URL once it answers."""
    path = directory / "script.json"
    path.write_text(json.dumps(script))
    process = subprocess.Popen(
        [*anthropic_command(), "serve", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    for _ in range(5):
        line = process.stdout.readline()
        if line.startswith("ANTHROPIC_BASE_URL="):
            url = line.strip().split("=", 1)[1]
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # ready once uvicorn answers (its Ctrl-C too)
                try:
                    httpx2.get(url + "/", timeout=1)
                    return process, url
                except httpx2.TransportError:
                    time.sleep(0.05)
    process.kill()
    raise AssertionError("fake-anthropic serve printed no URL")
