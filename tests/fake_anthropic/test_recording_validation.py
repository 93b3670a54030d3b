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
import jsonschema
import pytest

from fake_anthropic import ScriptedModel, load_recording
from fake_anthropic.schemas import RECORDING
from fake_anthropic.schemas import load as load_schema
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
                "body": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                },
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


def answered(
    body: object,
    *,
    status: int = 200,
    stream: bool = False,
    path: str = "/v1/messages",
    method: str = "POST",
) -> dict[str, Any]:
    """GOOD with another answer (and request line)."""
    document = copy.deepcopy(GOOD)
    exchange = document["exchanges"][0]
    exchange["request"].update(method=method, path=path)
    exchange["response"].update(status=status, stream=stream, body=body)
    return document


REPLY: dict[str, Any] = GOOD["exchanges"][0]["response"]["body"]
ENVELOPE = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "memory", "input": {"command": "view"}}


def reply(*, drop: str = "", **changes: object) -> dict[str, Any]:
    """REPLY with fields changed, and the field ``drop`` left out."""
    changed = {**copy.deepcopy(REPLY), **changes}
    return {k: v for k, v in changed.items() if k != drop}


GOOD_ANSWERS = [
    answered(REPLY),
    answered(reply(content=[{"type": "text", "text": "Hi."}, TOOL_USE])),
    answered(REPLY, path="/v1/messages?beta=true", stream=True),
    answered(ENVELOPE, status=529),
    answered("<html>502 Bad Gateway</html>", status=502),  # a gateway's page, as text
    answered(ENVELOPE, stream=True),  # the error event a stream ended with
    answered({"input_tokens": 5}, path="/v1/messages/count_tokens"),
    answered([1], method="GET", path="/v1/models"),  # other endpoints: as recorded
]
BAD_ANSWERS = [
    (answered(5), 'response.body must be a Messages response (an object with "type": "message")'),
    (answered([1]), 'response.body must be a Messages response (an object with "type": "message")'),
    (answered([1], stream=True), "a streamed response's body must be the message"),
    (answered(reply(drop="usage")), "response.body.usage must be an object"),
    (answered(reply(drop="model")), "response.body.model must be a string"),
    (answered(reply(drop="stop_sequence")), "response.body.stop_sequence must be a string or null"),
    (answered(reply(role="user")), 'response.body.role must be "assistant"'),
    (
        answered(reply(usage={"input_tokens": 1, "output_tokens": "2"}), stream=True),
        "response.body.usage.output_tokens must be an integer",
    ),
    (
        answered(reply(content=[{"type": "text"}])),
        "response.body.content[0].text must be a string (a text block)",
    ),
    (
        answered(reply(content=[{**TOOL_USE, "input": []}])),
        "response.body.content[0].input must be an object (a tool_use block)",
    ),
    (answered(reply(content=[5])), "response.body.content[0] must be a content block"),
    (answered([1], status=429), "response.body must be the API's error envelope"),
    (
        answered({"type": "error", "error": {"type": "overloaded_error"}}, status=529),
        "response.body.error.message must be a string",
    ),
    (
        answered({"type": "error", "error": {"message": "m"}}, stream=True),
        "response.body.error.type must be a string",
    ),
    (
        answered({}, path="/v1/messages/count_tokens"),
        "response.body must be a count_tokens result (an integer input_tokens)",
    ),
    (
        answered(None, status=204),
        "response.status 204: the Messages API answers 200, or an error status (400-599)",
    ),
]


@pytest.mark.parametrize(("document", "fault"), BAD_ANSWERS)
def test_an_answer_replay_could_not_serve_is_refused_at_load(
    tmp_path: Path, document: object, fault: str
) -> None:
    """Before: a 200 body that was an int or a list loaded, and replayed to a streaming
    request as an empty event stream the SDK failed on with a bare AssertionError."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="exchange 1") as raised:
        ScriptedModel.from_recording(path)
    assert str(raised.value).startswith(f"recording {path}, exchange 1: ")
    assert fault in str(raised.value)


def _loads(document: object, path: Path) -> bool:
    path.write_text(json.dumps(document))
    try:
        load_recording(path)
    except ValueError:
        return False
    return True


def test_the_schema_and_the_loader_agree_on_answers(tmp_path: Path) -> None:
    schema = jsonschema.Draft202012Validator(load_schema(RECORDING))
    for document in GOOD_ANSWERS:
        assert schema.is_valid(document), document
        assert _loads(document, tmp_path / "good.json"), document
    for document, _ in BAD_ANSWERS:
        assert not schema.is_valid(document), document
        assert not _loads(document, tmp_path / "bad.json"), document


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_good_answer_replays_to_the_sdk_both_ways(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(answered(reply(content=[{"type": "text", "text": "Hi."}]))))
    with ScriptedModel.from_recording(path, match="order") as model:
        ask: Any = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        if stream:
            with model.client.messages.stream(**ask) as events:
                message = events.get_final_message()
        else:
            message = model.client.messages.create(**ask)
    assert message.content[0].text == "Hi."  # type: ignore[union-attr]


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
