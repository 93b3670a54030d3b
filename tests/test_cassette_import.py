"""vcrpy cassettes become recordings: vcrpy itself records a real SDK run (the memory tool
against a served fake ContextQ, the model a served scripted one), ``fake-anthropic
import-cassette`` converts it, and ``ScriptedModel.from_recording`` replays it with the
same final text and tool results. Bad cassettes get one clear line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
import vcr
from starlette.middleware.gzip import GZipMiddleware

from adapter import ContextQMemoryTool, wire
from fake_anthropic import ScriptedModel, load_recording, text
from fake_contextq import FakeContextQ
from fake_server import ServedApp
from tests.helpers import MEMORY_FINAL, MEMORY_PROMPT, memory_upstream

KEY = "sk-ant-api03-cassette-key-0123456789"
FINAL = MEMORY_FINAL
PROMPT = MEMORY_PROMPT


class Store:
    """A fake ContextQ with a workspace and the memory tool on it, served (so vcrpy sees
    its HTTP too: the cassette's other host) or in-process."""

    def __init__(self, *, served: bool) -> None:
        self.fake = FakeContextQ()
        self.tenant = self.fake.create_tenant()
        self.fake.create_workspace(self.tenant, "acme")
        key = self.fake.mint_key(self.tenant, wire.SCOPES)
        self.served = self.fake.serve() if served else None
        if self.served is not None:
            self.tool = ContextQMemoryTool(key, base_url=self.served.url, workspace="acme")
        else:
            self.tool = ContextQMemoryTool(key, http_client=self.fake.client(), workspace="acme")

    def rows(self) -> list[tuple[str, str]]:
        return [(c.title, c.content) for c in self.fake.contexts(self.tenant)]

    def close(self) -> None:
        self.tool.close()
        if self.served is not None:
            self.served.stop()
        self.fake.close()


def run(client: anthropic.Anthropic, tool: ContextQMemoryTool, *, stream: bool) -> Any:
    return client.beta.messages.tool_runner(
        model="claude-opus-4-1", max_tokens=1024, tools=[tool], messages=PROMPT, stream=stream
    ).until_done()


def record_with_vcrpy(
    path: Path, *, serializer: str = "yaml", stream: bool = False, gzip: bool = False
) -> tuple[Any, Store]:
    """One real run of the SDK recorded by vcrpy into ``path``."""
    model = memory_upstream()
    app: Any = GZipMiddleware(model.app, minimum_size=0) if gzip else model.app
    store = Store(served=True)
    with ServedApp(app, name="upstream") as served:
        served.start()
        with vcr.use_cassette(str(path), serializer=serializer, record_mode="all"):
            client = anthropic.Anthropic(api_key=KEY, base_url=served.url, max_retries=0)
            final = run(client, store.tool, stream=stream)
    model.verify()
    return final, store


def import_cassette(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fake_anthropic", "import-cassette", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def stores() -> Iterator[list[Store]]:
    made: list[Store] = []
    yield made
    for store in made:
        store.close()


@pytest.mark.parametrize(
    ("serializer", "stream", "gzip"),
    [("yaml", False, False), ("json", False, False), ("yaml", True, False), ("yaml", False, True)],
    ids=["yaml", "json", "stream", "gzip"],
)
@pytest.mark.slow  # a subprocess: not in --quick
def test_a_vcrpy_cassette_converts_and_replays_with_the_same_results(
    tmp_path: Path, stores: list[Store], serializer: str, stream: bool, gzip: bool
) -> None:
    cassette = tmp_path / f"run.{serializer}"
    live, recorded = record_with_vcrpy(cassette, serializer=serializer, stream=stream, gzip=gzip)
    stores.append(recorded)
    out = tmp_path / "recording.json"
    done = import_cassette(str(cassette), "--out", str(out))
    assert done.returncode == 0, done.stderr
    contextq_requests = len(recorded.fake.journal)
    assert done.stdout.strip() == (
        f"fake-anthropic import-cassette: 4 exchange(s) written to {out}; "
        f"{contextq_requests} other exchange(s) skipped"
    )
    assert KEY not in out.read_text("utf-8")
    exchanges = load_recording(out)
    assert [e.stream for e in exchanges] == [stream] * 4
    assert [e.endpoint for e in exchanges] == ["POST /v1/messages"] * 4

    replayed = ScriptedModel.from_recording(out)
    fresh = Store(served=False)
    stores.append(fresh)
    final = run(replayed.client, fresh.tool, stream=stream)
    replayed.verify()
    assert final.content[0].text == live.content[0].text == FINAL
    assert fresh.rows() == recorded.rows() == [("prefs.md", "Prefers TypeScript and Rust.\n")]
    assert [(r.name, r.is_error) for r in replayed.tool_results] == [("memory", False)] * 3


@pytest.mark.slow  # a subprocess: not in --quick
def test_an_existing_recording_is_kept_unless_forced(tmp_path: Path, stores: list[Store]) -> None:
    cassette = tmp_path / "run.yaml"
    stores.append(record_with_vcrpy(cassette)[1])
    out = tmp_path / "kept.json"
    out.write_text("mine")
    refused = import_cassette(str(cassette), "--out", str(out))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"fake-anthropic import-cassette: {out} exists; --force replaces it"
    )
    assert out.read_text() == "mine"
    assert import_cassette(str(cassette), "--out", str(out), "--force").returncode == 0
    assert len(load_recording(out)) == 4


def _one_line(cassette: Path, tmp_path: Path) -> str:
    out = tmp_path / "out.json"
    done = import_cassette(str(cassette), "--out", str(out))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert not out.exists()
    return line


def test_a_cassette_of_only_other_traffic_is_one_clear_error(tmp_path: Path) -> None:
    fake = FakeContextQ()
    key = fake.mint_key(fake.create_tenant())
    cassette = tmp_path / "contextq.yaml"
    with fake.serve() as served, vcr.use_cassette(str(cassette), record_mode="all"):
        tool = ContextQMemoryTool(key, base_url=served.url)
        tool.close()
        import httpx2

        httpx2.get(served.url + "/api/contexts", headers={"Authorization": f"Bearer {key}"})
    line = _one_line(cassette, tmp_path)
    assert line == (
        f"fake-anthropic import-cassette: {cassette}: holds no Messages API exchange (no "
        "request to /v1/messages or /v1/messages/count_tokens; 1 other exchange(s))"
    )


def test_a_recording_of_this_project_is_not_a_cassette(tmp_path: Path) -> None:
    ours = tmp_path / "ours.json"
    ours.write_text(
        json.dumps({"format": "fake-anthropic-recording", "version": 1, "exchanges": []})
    )
    assert _one_line(ours, tmp_path).endswith(
        "not a vcrpy cassette (no top-level 'interactions' list; vcrpy writes "
        "{interactions: [...], version: 1})"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("interactions: [oops", "invalid YAML"),
        ("- just\n- a list\n", "no top-level 'interactions' list"),
        ('{"interactions": [1]}', "interaction 0 has no 'request' and 'response'"),
    ],
)
def test_files_that_are_no_cassette_are_one_clear_error(
    tmp_path: Path, content: str, reason: str
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    assert reason in _one_line(bad, tmp_path)


def test_a_missing_cassette_is_one_clear_error(tmp_path: Path) -> None:
    line = _one_line(tmp_path / "nowhere.yaml", tmp_path)
    assert line.endswith("nowhere.yaml: cannot read it: No such file or directory")


def test_an_encoding_it_cannot_decode_says_how_to_record_instead(
    tmp_path: Path, stores: list[Store]
) -> None:
    cassette = tmp_path / "run.yaml"
    stores.append(record_with_vcrpy(cassette, gzip=True)[1])
    cassette.write_text(cassette.read_text().replace("- gzip\n", "- br\n"))
    line = _one_line(cassette, tmp_path)
    assert "the answer is br-encoded" in line
    assert "decode_compressed_response=True" in line


def test_under_a_vcrpy_cassette_the_scripted_model_still_plays_its_script(
    tmp_path: Path,
) -> None:
    """vcrpy patches httpx2's own transports; the scripted model's client uses none."""
    model = ScriptedModel()
    model.script(text("from the script"))
    with vcr.use_cassette(str(tmp_path / "c.yaml"), record_mode="all") as cassette:
        reply = model.client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.content[0].text == "from the script"  # type: ignore[union-attr]
    assert len(cassette) == 0
    model.verify()
