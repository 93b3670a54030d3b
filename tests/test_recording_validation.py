"""A hand-edited recording is checked when it loads, field by field, so a bad one fails
there with one line naming the file and the exchange, never later in replay; and a fault
of the fake ContextQ answers a final status, never a 1xx."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from fake_anthropic import ScriptedModel
from fake_contextq import FakeContextQ

GOOD: dict[str, Any] = {
    "format": "fake-anthropic-recording",
    "version": 1,
    "exchanges": [
        {
            "request": {
                "method": "POST",
                "path": "/v1/messages",
                "anthropic_version": "2023-06-01",
                "betas": [],
                "body": {"model": "m", "max_tokens": 5, "messages": []},
            },
            "response": {
                "status": 200,
                "headers": {"content-type": "application/json", "request-id": "req_1"},
                "stream": True,
                "body": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
            },
        }
    ],
}


def deep(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = [value]
    return value


def with_change(where: str, value: object) -> dict[str, Any]:
    document = copy.deepcopy(GOOD)
    target = document["exchanges"][0]
    *path, last = where.split(".")
    for key in path:
        target = target[key]
    target[last] = value
    return document


BAD = [
    ("response.status", 99999, "response.status 99999 is not a final HTTP status"),
    ("response.status", 100, "response.status 100 is not a final HTTP status"),
    ("response.headers", {"x-a": "a\r\nx-b: b"}, "response header 'x-a' has a value"),
    ("response.headers", {"x-a": "caf\u00e9 \u2603"}, "response header 'x-a' has a value"),
    ("response.headers", {"content-length": "5"}, "response header 'content-length' frames"),
    ("response.headers", {"bad name": "v"}, "response header name 'bad name' is no token"),
    ("response.body", 5, "a streamed response's body must be the message"),
    ("response.stream", "yes", "response.stream must be true or false"),
    ("request.body", deep(200), "a body nests deeper than 128 levels"),
    ("request.path", "v1/messages", "request.path 'v1/messages' is not a /path?query"),
    ("request.betas", ["a\nb"], "request header value 'a\\nb' cannot be sent"),
]


@pytest.mark.parametrize(("where", "value", "fault"), BAD)
def test_a_bad_field_is_refused_at_load_naming_file_and_exchange(
    tmp_path: Path, where: str, value: object, fault: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(with_change(where, value)))
    with pytest.raises(ValueError, match="exchange 1") as raised:
        ScriptedModel.from_recording(path)
    assert str(path) in str(raised.value)
    assert fault in str(raised.value)


def test_the_good_recording_loads(tmp_path: Path) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD))
    assert ScriptedModel.from_recording(path).remaining == 1


def test_nesting_past_what_json_reads_is_one_value_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(
        json.dumps(GOOD).replace(
            '"body": {"model"',
            '"body": ' + "[" * 100_000 + "1" + "]" * 100_000 + ', "x": {"model"',
            1,
        )
    )
    with pytest.raises(ValueError, match="nests deeper"):
        ScriptedModel.from_recording(path)


@pytest.mark.parametrize("document", [with_change("response.status", 99999), "deep"])
def test_serve_refuses_a_bad_recording_in_one_line(tmp_path: Path, document: object) -> None:
    path = tmp_path / "bad.json"
    if document == "deep":
        path.write_text(
            '{"format": "fake-anthropic-recording", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        )
    else:
        path.write_text(json.dumps(document))
    done = subprocess.run(
        [sys.executable, "-m", "fake_anthropic", "serve", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"fake-anthropic serve: cannot load {path}")


@pytest.mark.parametrize("status", [100, 101, 199, 600])
def test_a_fault_status_must_be_a_final_one(status: int) -> None:
    with FakeContextQ() as fake:
        with pytest.raises(ValueError, match="final HTTP status code"):
            fake.faults.inject("GET", "/api/contexts", status=status)
        with (
            fake.serve(control_token="fkc_t") as served,
            httpx2.Client(base_url=served.url) as client,
        ):
            answer = client.post(
                "/_fake/faults",
                json={"method": "GET", "path": "/api/contexts", "status": status},
                headers={"authorization": "Bearer fkc_t"},
            )
        assert answer.status_code == 400, answer.text
        assert "status" in answer.text
        assert len(fake.faults) == 0
