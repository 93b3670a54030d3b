"""``e2e/live_memory_roundtrip.py`` end to end with no Docker and no real Claude: ContextQ is
``fake-contextq serve --database-url`` on the machine's Postgres, Claude is the scripted
model served by ``fake-anthropic serve``, and the database is reached by DSN or through the
Docker Engine API stand-in."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from contextq_fixtures.live import KEY_COST_ENV
from fake_anthropic import load_recording
from tests.support.live_stack import CONTAINER, TEST_KEY_COST, docker_engine_for, libpq_dsn
from tests.support.processes import Served, anthropic_command, start, start_model, stop
from tests.support.stores import postgres_schema

ROOT = Path(__file__).resolve().parents[3]
PROMPT: Any = [{"role": "user", "content": "hi"}]


def _memory(n: int, **tool_input: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": f"toolu_{n}", "name": "memory", "input": tool_input}]


#: Claude as the script expects it to behave: look, save; then, in a new conversation,
#: look, read, answer.
SCRIPT: list[object] = [
    _memory(1, command="view", path="/memories"),
    _memory(2, command="create", path="/memories/preferences.md", file_text="Colour: teal\n"),
    [{"type": "text", "text": "Saved to memory."}],
    _memory(3, command="view", path="/memories"),
    _memory(4, command="view", path="/memories/preferences.md"),
    [{"type": "text", "text": "Your favourite colour is teal."}],
]


@dataclass
class Stack:
    served: Served
    database_url: str
    env: dict[str, str]

    def count(self, sql: str) -> int:
        engine = sa.create_engine(self.database_url)
        try:
            with engine.connect() as conn:
                return int(conn.execute(sa.text(sql)).scalar_one())
        finally:
            engine.dispose()


#: For the tests whose subject the database's transport does not touch: it only provisions
#: and cleans up, which the passing round trip runs over both (and tests/plugin/test_live.py
#: checks over both, failures and interruptions included).
ONE_TRANSPORT = pytest.mark.parametrize("stack", ["dsn"], indirect=True)


@pytest.fixture(scope="module", params=["dsn", "docker"])
def stack(request: pytest.FixtureRequest) -> Iterator[Stack]:
    """One dev stack per transport for the module: each run makes and removes its own
    throwaway tenant, as on a shared dev stack. Keys are minted at bcrypt's lowest cost
    (the stack verifies at the cost a hash holds; tests/plugin/test_live.py checks the default)."""
    with postgres_schema() as url:
        served = start("--database-url", url)
        try:
            env = {"CONTEXT_API_URL": served.url, KEY_COST_ENV: str(TEST_KEY_COST)}
            if request.param == "dsn":
                env["CONTEXTQ_DB_DSN"] = libpq_dsn(url)
                yield Stack(served, url, env)
            else:
                with docker_engine_for(url) as engine:
                    env |= {
                        "DOCKER_HOST": engine.base_url,
                        "CONTEXTQ_DB_CONTAINER": CONTAINER,
                        "CONTEXTQ_DB_USER": "postgres",
                        "CONTEXTQ_DB_NAME": "test",
                    }
                    yield Stack(served, url, env)
        finally:
            stop(served)


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CONTEXTQ_", "CONTEXT_API", "DOCKER_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "e2e.live_memory_roundtrip", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _run_with_model(
    script: list[object], stack: Stack, directory: Path
) -> tuple[subprocess.CompletedProcess[str], str, int, str]:
    """The script against ``fake-anthropic serve`` playing ``script``: its result, the
    model's URL, and how the model ended (exit code, output)."""
    model, model_url = start_model(script, directory)
    try:
        result = _run(
            "--anthropic-base-url", model_url, env={**stack.env, "ANTHROPIC_API_KEY": "sk-scripted"}
        )
    finally:
        model.send_signal(signal.SIGINT)
        out, err = model.communicate(timeout=30)
    return result, model_url, model.returncode, out + err


def test_the_round_trip_passes_and_cleans_up(stack: Stack, tmp_path: Path) -> None:
    result, model_url, model_exit, model_said = _run_with_model(SCRIPT, stack, tmp_path)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines[0] == f"anthropic base url: {model_url.removeprefix('http://')}"
    assert lines[-1].startswith("live memory round trip: PASS: 4 of 4 checks (context ")
    assert "  ok    GET /api/contexts holds the fact in ContextQ" in lines
    # the throwaway tenant wrote, so its row stays; no key and no user survive
    assert any(line.startswith("contextq live: left tenant cqmt-live-") for line in lines)
    assert (
        stack.count(
            "select count(*) from api_keys where tenant_id in "
            "(select id from tenants where name like 'cqmt-live-%')"
        )
        == 0
    )
    assert stack.count("select count(*) from users") == 0
    assert (
        stack.count(
            "select count(*) from contexts where tenant_id in "
            "(select id from tenants where name like 'cqmt-live-%')"
        )
        == 0
    )
    assert model_exit == 0, model_said  # every scripted turn was played


@ONE_TRANSPORT
def test_a_model_that_never_saves_fails_the_check_and_still_cleans_up(
    stack: Stack, tmp_path: Path
) -> None:
    lazy: list[object] = [
        [{"type": "text", "text": "Noted."}],
        [{"type": "text", "text": "I do not know."}],
    ]
    result, _, _, _ = _run_with_model(lazy, stack, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "  FAIL  conversation 1 saved the fact with memory create" in result.stdout
    assert result.stdout.splitlines()[-1] == ("live memory round trip: FAIL: 4 of 4 checks failed")
    assert stack.count("select count(*) from api_keys") == 1  # only the server's own key
    assert stack.count("select count(*) from users") == 0


@ONE_TRANSPORT
def test_without_an_anthropic_key_it_says_why_and_exits_0_touching_nothing(stack: Stack) -> None:
    tenants = stack.count("select count(*) from tenants")
    result = _run(env={**stack.env, "ANTHROPIC_BASE_URL": "https://gateway.example:8443/v1"})
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "anthropic base url: gateway.example:8443",
        "live memory round trip: SKIPPED: ANTHROPIC_API_KEY is not set, so no conversation was "
        "run and nothing was checked (set it to run the round trip)",
    ]
    assert stack.count("select count(*) from tenants") == tenants


@ONE_TRANSPORT
def test_an_unreachable_stack_is_a_setup_failure(stack: Stack) -> None:
    env = {**stack.env, "ANTHROPIC_API_KEY": "sk-x", "CONTEXT_API_URL": "http://127.0.0.1:9"}
    result = _run("--anthropic-base-url", "http://127.0.0.1:9", env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(
        "live memory round trip: SETUP FAILED: cannot reach ContextQ at http://127.0.0.1:9"
    )
    assert stack.count("select count(*) from users") == 0


def test_the_default_model_is_not_one_the_sdk_calls_deprecated() -> None:
    from anthropic._data import DEPRECATED_MODELS

    from e2e.live_memory_roundtrip import DEFAULT_MODEL

    assert DEFAULT_MODEL not in DEPRECATED_MODELS


def test_a_refusal_is_told_in_the_scripts_words_on_any_sdk() -> None:
    """anthropic 2.17 re-worded its errors ("Error code: 401 - {body}" became "401 <message>
    (request_id: ...)"); the script's line is built from the error's fields on both."""
    import anthropic
    import httpx2

    from e2e.live_memory_roundtrip import refused
    from fake_anthropic import ScriptedModel, api_error

    model = ScriptedModel()
    model.script(api_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(anthropic.AuthenticationError) as caught:
        model.client.messages.create(model="m", max_tokens=8, messages=PROMPT)
    said = refused(caught.value, "api.example")
    assert said.startswith("401 authentication_error from api.example: invalid x-api-key (request ")
    assert said.endswith("check ANTHROPIC_BASE_URL (unset it for a direct run)")

    request = httpx2.Request("POST", "https://gateway.example/v1/messages")
    bare = httpx2.Response(401, request=request)
    plain = anthropic.AuthenticationError("x", response=bare, body="Unauthorized\n")
    assert refused(plain, "gateway.example").startswith("401 from gateway.example: Unauthorized;")
    gone = httpx2.Response(502, request=request)
    empty = anthropic.InternalServerError("x", response=gone, body="")
    assert refused(empty, "gateway.example") == (
        "502 from gateway.example: an answer with no error message"
    )


def test_an_unreachable_api_is_told_by_the_transports_failure() -> None:
    """2.17 words it "Connection to <host> failed: <reason>", 2.16 "Connection error."; the
    script names the host once and the transport's own failure."""
    import anthropic

    from e2e.live_memory_roundtrip import unreachable

    client = anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.create(model="m", max_tokens=8, messages=PROMPT)
    client.close()
    said = unreachable(caught.value, "127.0.0.1:9")
    assert said.startswith("cannot reach 127.0.0.1:9: ConnectError")
    assert said.count("127.0.0.1:9") == 1


def test_it_also_runs_as_a_file() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "e2e" / "live_memory_roundtrip.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and "--anthropic-base-url" in result.stdout


def _serve_recording(path: Path) -> tuple[subprocess.Popen[str], str]:
    """``fake-anthropic serve RECORDING`` (strict replay), and its base URL."""
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
            return process, line.strip().split("=", 1)[1]
    process.kill()
    raise AssertionError(f"fake-anthropic serve printed no URL: {process.communicate()}")


@ONE_TRANSPORT
def test_record_then_replay_the_round_trip_with_no_model(stack: Stack, tmp_path: Path) -> None:
    """``--record``: the round trip through the recording proxy to "the real API" (a served
    scripted model here), then the same round trip replayed from the file alone, strictly
    matched, against the fake ContextQ: as CI runs it with no key and no network."""
    recording = tmp_path / "recordings" / "roundtrip.json"
    key = "sk-ant-recorded-key-0123456789"
    model, model_url = start_model(SCRIPT, tmp_path)
    try:
        recorded = _run(
            "--anthropic-base-url",
            model_url,
            "--record",
            str(recording),
            env={**stack.env, "ANTHROPIC_API_KEY": key},
        )
    finally:
        model.send_signal(signal.SIGINT)
        model.communicate(timeout=30)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    lines = recorded.stdout.splitlines()
    assert f"recorded {len(SCRIPT)} exchange(s) to {recording}" in lines
    assert any(line.startswith(f"recording to {recording} through 127.0.0.1:") for line in lines)
    text = recording.read_text()
    assert key not in text
    assert len(load_recording(recording)) == len(SCRIPT)

    replay, replay_url = _serve_recording(recording)
    try:
        replayed = _run(
            "--anthropic-base-url", replay_url, env={**stack.env, "ANTHROPIC_API_KEY": "replay"}
        )
    finally:
        replay.send_signal(signal.SIGINT)
        out, err = replay.communicate(timeout=30)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr + out + err
    assert replayed.stdout.splitlines()[-1].startswith(
        "live memory round trip: PASS: 4 of 4 checks (context "
    )
    assert replay.returncode == 0, out + err  # every recorded exchange matched and played


@ONE_TRANSPORT
def test_record_to_an_unwritable_path_is_a_setup_failure(stack: Stack, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {**stack.env, "ANTHROPIC_API_KEY": "sk-x"}
    result = _run(
        "--anthropic-base-url", "http://127.0.0.1:9", "--record", str(blocker / "r.json"), env=env
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(
        f"live memory round trip: SETUP FAILED: cannot record to {blocker / 'r.json'}"
    )
    assert stack.count("select count(*) from users") == 0
