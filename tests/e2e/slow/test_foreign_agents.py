"""Agents in other languages as the served fakes' clients, run as their READMEs say:

- ``examples/agent-ts``: a TypeScript agent on ``@anthropic-ai/sdk``'s tool runner and its
  memory tool, tested by node's own test runner against ``fake-anthropic serve`` and
  ``fake-contextq serve``, and the MCP TypeScript SDK's ``Client`` on
  the fake's ``/mcp`` (an unknown tool and a bad argument seen as error results);
- ``examples/claude-code``: Claude Code, headless, against ``fake-anthropic serve`` and the
  fake ContextQ's ``/mcp``, with tool search on (``smoke.sh``).

Each needs Node and the example's pinned npm packages (``.ci/run`` installs both, ``npm
ci``): without them a test fails under CI and skips elsewhere, saying how to install them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextq_fixtures import ContextQServer
from fake_contextq import FakeContextQ, Tenant

ROOT = Path(__file__).resolve().parents[3]
AGENT_TS = ROOT / "examples" / "agent-ts"
CLAUDE_CODE = ROOT / "examples" / "claude-code"
#: fake-contextq and fake-anthropic, installed beside this interpreter.
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def _toolchain(example: Path, installed: str) -> None:
    """Fail (CI) or skip (elsewhere), saying how to install them, unless ``example``'s npm
    packages are installed (``installed``: a path under its ``node_modules``) and npm is
    on PATH."""
    if shutil.which("npm") and (example / "node_modules" / installed).exists():
        return
    where = example.relative_to(ROOT)
    message = (
        f"{where}: no npm (install Node.js and npm: apt-get install nodejs npm; then "
        f"npm ci --prefix {where})"
        if shutil.which("npm") is None
        else f"{where}: its npm packages are not installed (npm ci --prefix {where})"
    )
    if os.environ.get("CI"):
        pytest.fail(message + "; CI needs them (.ci/run installs them)")
    pytest.skip(message)


def _env(**extra: str) -> dict[str, str]:
    """A child's environment: the fakes' commands first on PATH, nothing of ContextQ's or
    Anthropic's from the caller's."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT", "ANTHROPIC"))}
    return {**keep, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra}


def _block(readme: Path, first: str, language: str = "sh") -> list[str]:
    """The lines of the ``language`` block of ``readme`` that starts with ``first``
    (comments of a shell block left out)."""
    text = readme.read_text("utf-8")
    blocks: list[str] = re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
    found = [b.splitlines() for b in blocks if b.startswith(first)]
    assert found, f"{readme.relative_to(ROOT)} has no {language} block starting {first!r}"
    if language != "sh":
        return found[0]
    return [line.split("#", 1)[0].strip() for line in found[0]]


def test_the_typescript_agent_passes_its_node_tests() -> None:
    """``npm test`` of the README: the SDK's tool runner and memory tool against both served
    fakes, every test passing (none skipped)."""
    block = _block(AGENT_TS / "README.md", "cd examples/agent-ts")
    assert block[1:] == ["npm ci", "npm run typecheck", "npm test"], block
    _toolchain(AGENT_TS, ".bin/tsx")

    run = subprocess.run(
        ["npm", "test"], cwd=AGENT_TS, env=_env(), capture_output=True, text=True, timeout=180
    )

    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    counts = dict(re.findall(r"^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$", report, re.M))
    assert counts == {
        "tests": counts["pass"],
        "pass": counts["pass"],
        "fail": "0",
        "skipped": "0",
        "todo": "0",
        "cancelled": "0",
    }, report
    assert int(counts["pass"]) >= 6, report  # agent.test.ts 2, mcp.test.ts 4


def test_claude_code_saves_to_contextq_through_tool_search(
    contextq_server: ContextQServer,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    tmp_path: Path,
) -> None:
    """``./smoke.sh`` of the README, against this test's served fake: Claude Code loads
    ``ctx_save`` with ``ToolSearch``, calls it over MCP and answers; the context is in the
    fake, and the scripted model played every turn (its refusal of Claude Code's
    ``role: "system"`` message included: Claude Code retries without it)."""
    block = _block(CLAUDE_CODE / "README.md", "cd examples/claude-code")
    assert block[1:] == ["npm ci", "./smoke.sh"], block
    _toolchain(CLAUDE_CODE, ".bin/claude")
    transcript = tmp_path / "transcript.txt"

    run = subprocess.run(
        ["bash", str(CLAUDE_CODE / "smoke.sh")],
        cwd=CLAUDE_CODE,
        env=_env(**contextq_server.env, SMOKE_TRANSCRIPT=str(transcript)),
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines() == _block(CLAUDE_CODE / "README.md", "claude:", "text")
    [row] = fake_contextq.contexts(contextq_tenant)
    assert (row.content, row.tags) == ("Deploys are frozen on Fridays.", ("smoke-test",))
    played = transcript.read_text()
    assert "refused: 400 invalid_request_error: messages.1.role:" in played
    assert "tool_result #1 ok [tool_reference mcp__contextq__ctx_save]" in played
