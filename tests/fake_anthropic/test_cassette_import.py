"""vcrpy cassettes become recordings: vcrpy itself records a real SDK run (the memory tool
against a served fake ContextQ, the model a served scripted one), ``fake-anthropic
import-cassette`` converts it, and ``ScriptedModel.from_recording`` replays it with the
same final text and tool results. Bad cassettes get one clear line."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
import vcr
from starlette.middleware.gzip import GZipMiddleware

from adapter import ContextQMemoryTool, wire
from fake_anthropic import ScriptedModel, load_recording, text
from fake_anthropic.record.cassette import MAX_CASSETTE_BYTES
from fake_anthropic.record.server import MAX_BODY
from fake_contextq import FakeContextQ
from fake_server import ServedApp
from tests.support.helpers import MEMORY_FINAL, MEMORY_PROMPT, memory_upstream

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
) -> tuple[Any, Store, str]:
    """One real run of the SDK recorded by vcrpy into ``path``; the final message, the
    store, and the base URL the SDK sent to (what ``--base-url`` names)."""
    model = memory_upstream()
    app: Any = GZipMiddleware(model.app, minimum_size=0) if gzip else model.app
    store = Store(served=True)
    with ServedApp(app, name="upstream") as served:
        served.start()
        with vcr.use_cassette(str(path), serializer=serializer, record_mode="all"):
            client = anthropic.Anthropic(api_key=KEY, base_url=served.url, max_retries=0)
            final = run(client, store.tool, stream=stream)
        url = served.url
    model.verify()
    return final, store, url


def import_cassette(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_BASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "fake_anthropic", "import-cassette", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
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
    live, recorded, url = record_with_vcrpy(
        cassette, serializer=serializer, stream=stream, gzip=gzip
    )
    stores.append(recorded)
    out = tmp_path / "recording.json"
    done = import_cassette(str(cassette), "--out", str(out), "--base-url", url)
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
    _, store, url = record_with_vcrpy(cassette)
    stores.append(store)
    out = tmp_path / "kept.json"
    out.write_text("mine")
    refused = import_cassette(str(cassette), "--out", str(out), "--base-url", url)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"fake-anthropic import-cassette: {out} exists; --force replaces it"
    )
    assert out.read_text() == "mine"
    done = import_cassette(str(cassette), "--out", str(out), "--force", "--base-url", url)
    assert done.returncode == 0
    assert len(load_recording(out)) == 4


def _one_line(cassette: Path, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "out.json"
    done = import_cassette(str(cassette), "--out", str(out), *args)
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
        "request to /v1/messages or /v1/messages/count_tokens of https://api.anthropic.com; "
        "1 other exchange(s))"
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
    _, store, url = record_with_vcrpy(cassette, gzip=True)
    stores.append(store)
    cassette.write_text(cassette.read_text().replace("- gzip\n", "- br\n"))
    line = _one_line(cassette, tmp_path, "--base-url", url)
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


# --- a hostile cassette: bounded, and one clear line (run in process: cheap) -------------

ANTHROPIC = "https://api.anthropic.com/v1/messages"
REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-1",
    "content": [{"type": "text", "text": "Hi."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
ASKED = '{"model": "claude-opus-4-1", "max_tokens": 9, "messages": []}'


def interaction(uri: str = ANTHROPIC, **response: Any) -> dict[str, Any]:
    """One interaction as vcrpy's JSON serializer writes it; ``response`` overrides."""
    return {
        "request": {
            "body": ASKED,
            "headers": {"x-api-key": [KEY], "anthropic-version": ["2023-06-01"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "body": {"string": json.dumps(REPLY)},
            "headers": {"content-type": ["application/json"]},
            "status": {"code": 200, "message": "OK"},
            **response,
        },
    }


def write_cassette(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"interactions": list(interactions), "version": 1}))
    return path


@pytest.fixture
def cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, str, str]]:
    """``fake-anthropic import-cassette CASSETTE --out OUT [ARGS]`` in this process: its
    exit status, stdout and stderr."""
    from fake_anthropic import cli as command

    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)

    def run(cassette: Path, *args: str, out: Path = tmp_path / "out.json") -> tuple[int, str, str]:
        code = command.main(["import-cassette", str(cassette), "--out", str(out), *args])
        said = capsys.readouterr()
        return code, said.out, said.err

    return run


def refused(cli: Callable[..., tuple[int, str, str]], cassette: Path) -> str:
    """The one line a refused cassette gets (exit status 1, no traceback, nothing written)."""
    out = cassette.with_name("refused.json")
    code, _, err = cli(cassette, out=out)
    assert code == 1, err
    [line] = err.splitlines()
    assert line.startswith(f"fake-anthropic import-cassette: {cassette}: ")
    assert not out.exists()
    return line


def laughs(levels: int, width: int) -> list[str]:
    """YAML anchors each naming ``width`` aliases of the one before: ``width ** levels``
    nodes once expanded, in a few hundred bytes."""
    lines = ['lol0: &lol0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * width) + "]")
    return lines


@pytest.mark.parametrize(
    ("levels", "width", "where"),
    [(9, 10, "beside"), (6, 12, "header")],
    ids=["billion-laughs-beside-the-interactions", "three-million-in-a-header"],
)
def test_a_yaml_alias_bomb_is_refused_before_anything_expands_it(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]], levels: int, width: int, where: str
) -> None:
    """Aliases share one node, so what a reader walks (a header's values) expands them;
    the nodes are counted on the parser's events first. Before: a header bomb of 10**9
    ran 61 s into MemoryError; these were read and written (exit 0)."""
    bomb = f"*lol{levels}"
    header = f"x-bomb: {bomb}, " if where == "header" else ""
    cassette = tmp_path / "bomb.yaml"
    cassette.write_text(
        "\n".join(
            [
                *laughs(levels, width),
                "interactions:",
                f"- request: {{method: POST, uri: '{ANTHROPIC}', body: '{ASKED}', headers: {{}}}}",
                f"  response: {{status: {{code: 200}}, headers: {{{header}content-type: "
                f"[application/json]}}, body: {{string: '{json.dumps(REPLY)}'}}}}",
                "version: 1",
            ]
        )
        + "\n"
    )
    assert len(cassette.read_bytes()) < 2048
    started = time.monotonic()
    line = refused(cli, cassette)
    assert line.endswith(
        "more than 1,000,000 YAML nodes once its aliases are expanded (a vcrpy cassette "
        "holds a few dozen an interaction)"
    )
    assert time.monotonic() - started < 10  # does not expand it meanwhile


def test_an_alias_inside_the_node_it_names_is_refused(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    cassette = tmp_path / "cycle.yaml"
    cassette.write_text(
        f"interactions:\n- request: {{method: POST, uri: '{ANTHROPIC}', headers: &h {{x: [*h]}}}}\n"
        "  response: {status: {code: 200}}\n"
    )
    assert refused(cli, cassette).endswith("(the alias *h is inside the node it names)")


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_is_refused_at_the_proxys_body_limit(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]], encoding: str
) -> None:
    """Some 32 KiB that inflate past 32 MiB. Before: inflated whole and written."""
    inflated = b" " * (MAX_BODY + 1024)
    packed = gzip.compress(inflated) if encoding == "gzip" else zlib.compress(inflated)
    assert len(packed) < 64 * 1024
    cassette = write_cassette(
        tmp_path / "bomb.json",
        interaction(
            body={"base64_string": base64.b64encode(packed).decode()},
            headers={"content-type": ["application/json"], "content-encoding": [encoding]},
        ),
    )
    assert refused(cli, cassette).endswith(
        f"interaction 0: the {encoding} body inflates past 32 MiB (the recording proxy's "
        "body limit)"
    )


def test_a_cassette_over_the_size_limit_is_refused_unread(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]]
) -> None:
    cassette = tmp_path / "huge.yaml"
    with cassette.open("wb") as file:
        file.truncate(MAX_CASSETTE_BYTES + 1)  # sparse: no disk, no time
    assert refused(cli, cassette).endswith("over 64 MiB, more than a cassette is read here")


DEEP = 5000


@pytest.mark.parametrize(
    ("content", "said"),
    [
        pytest.param(
            "interactions: " + "[" * 500 + "]" * 500 + "\n",
            "nests deeper than 128 levels",
            id="yaml-nesting",
        ),
        pytest.param(
            "interactions: " + "[" * DEEP + "]" * DEEP + "\n",
            "(invalid YAML: exceeded maximum nesting depth, line 1 column ",
            id="yaml-nesting-past-libyaml",
        ),
        pytest.param(
            json.dumps(
                {"interactions": [interaction(headers={"x": json.loads("[" * 500 + "]" * 500)})]}
            ),
            "nests deeper than 128 levels",
            id="json-nesting",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction(body={"string": "[" * 900 + "]" * 900})]}),
            "interaction 0: the answer's body nests deeper than 128 levels",
            id="answer-nesting",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction(body={"string": "[" * DEEP + "]" * DEEP})]}),
            'interaction 0: response.body must be a Messages response (an object with "type": '
            '"message")',
            id="answer-nesting-past-json",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction(body={"base64_string": "!!!notbase64"})]}),
            "interaction 0: a body's base64_string is not base64",
            id="base64",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction(body={"base64_string": 5})]}),
            "interaction 0: a body's base64_string is not base64",
            id="base64-not-a-string",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction(body={"string": "5"})]}),
            'interaction 0: response.body must be a Messages response (an object with "type": '
            '"message")',
            id="answer-no-message",
        ),
        pytest.param(
            json.dumps({"interactions": [interaction("https://u:S3CRETPW@[::1/v1/messages")]}),
            "interaction 0: request.uri is not a URL",
            id="uri-no-url",
        ),
        pytest.param(
            f"interactions:\n- request: {{method: POST, uri: '{ANTHROPIC}'}}\n"
            "  response: !!python/object/apply:os.system ['echo owned']\n",
            "not a vcrpy cassette (invalid YAML: could not determine a constructor for the tag "
            "'tag:yaml.org,2002:python/object/apply:os.system', line 3 column 13)",
            id="python-tag",
        ),
    ],
)
def test_a_bad_cassette_is_one_line_never_a_traceback(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]], content: str, said: str
) -> None:
    cassette = tmp_path / ("bad.json" if content.startswith("{") else "bad.yaml")
    cassette.write_text(content)
    assert said in refused(cli, cassette)


def test_yaml_is_read_by_libyaml_when_pyyaml_has_it_and_by_python_when_not(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """libyaml reads a 10 MB cassette in about 2 s of CPU; the pure-Python loader took 90."""
    import yaml

    cassette = tmp_path / "run.yaml"
    cassette.write_text(yaml.safe_dump({"interactions": [interaction()], "version": 1}))
    assert yaml.__with_libyaml__

    class NotThisOne(yaml.SafeLoader):
        def __init__(self, _stream: str) -> None:
            raise AssertionError("the pure-Python loader was used, though libyaml is there")

    with monkeypatch.context() as patch:
        patch.setattr(yaml, "SafeLoader", NotThisOne)
        code, _, err = cli(cassette)
    assert (code, err) == (0, "")
    monkeypatch.delattr(yaml, "CSafeLoader")
    code, _, err = cli(cassette, "--force")
    assert (code, err) == (0, "")
    assert len(load_recording(tmp_path / "out.json")) == 1


def test_only_the_apis_host_and_a_named_base_url_are_imported(
    tmp_path: Path, cli: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every /v1/messages was imported, whatever its host."""
    gateway = "https://llm-gateway.evil.example"
    cassette = write_cassette(
        tmp_path / "hosts.json",
        interaction(ANTHROPIC),
        interaction("https://API.anthropic.com:443/v1/messages/count_tokens?beta=true")
        | {"response": interaction()["response"] | {"body": {"string": '{"input_tokens": 7}'}}},
        interaction(f"{gateway}/v1/messages"),
        interaction("http://api.anthropic.com/v1/messages"),
        interaction("http://gw.example/anthropic/v1/messages?beta=true"),
        interaction("https://api.anthropic.com/v1/models"),
    )
    out = tmp_path / "out.json"
    code, said, err = cli(cassette)
    assert (code, err) == (0, "")
    assert said.strip().endswith(f"2 exchange(s) written to {out}; 4 other exchange(s) skipped")
    assert [e.path for e in load_recording(out)] == [
        "/v1/messages",
        "/v1/messages/count_tokens?beta=true",
    ]

    code, said, err = cli(
        cassette, "--force", "--base-url", gateway, "--base-url", "http://gw.example/anthropic/"
    )
    assert (code, err) == (0, "")
    assert [e.path for e in load_recording(out)] == [
        "/v1/messages",
        "/v1/messages/count_tokens?beta=true",
        "/v1/messages",
        "/v1/messages?beta=true",
    ]

    monkeypatch.setenv("ANTHROPIC_BASE_URL", gateway + "/")  # the SDK's own setting
    code, said, err = cli(cassette, "--force")
    assert (code, err) == (0, "")
    assert len(load_recording(out)) == 3


@pytest.mark.parametrize(
    "url", ["gw.example", "ftp://gw.example", "https://gw.example/?key=Qk-0123456789-secret"]
)
def test_a_base_url_that_is_none_is_a_usage_error(
    tmp_path: Path,
    cli: Callable[..., tuple[int, str, str]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    url: str,
) -> None:
    cassette = write_cassette(tmp_path / "c.json", interaction())
    with pytest.raises(SystemExit) as exited:
        cli(cassette, "--base-url", url)
    assert exited.value.code == 2
    said = capsys.readouterr().err
    assert "is not an http:// or https:// base URL (a host, an optional path, no query)" in said
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    code, _, err = cli(cassette)
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith("fake-anthropic import-cassette: ANTHROPIC_BASE_URL '")
    assert "Qk-0123456789-secret" not in said + err
