"""One HTTP exchange with the Messages API as a recording holds it: the request's path,
betas, version and JSON body, the answer's kept headers and body (a stream rebuilt into the
message its events delivered), every credential the request carried redacted.

The recording proxy captures exchanges as they pass through it, ``cassette`` from a vcrpy
cassette; both make them here, so a recording reads the same whichever wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fake_anthropic.record.recording import MAX_DEPTH, RESPONSE_HEADERS, Exchange, depth_ok
from fake_anthropic.record.sse_read import accumulate, parse_events
from fake_anthropic.redact import redact, redact_target, secrets_of


def response_body(content_type: str, data: bytes) -> tuple[bool, object]:
    """Whether the answer was a stream, and the body to record."""
    if content_type.startswith("text/event-stream"):
        state = accumulate(parse_events(data))
        if state.error is not None:
            return True, state.error
        return True, state.message
    try:
        return False, json.loads(data) if data else None
    except (ValueError, RecursionError):
        return False, data.decode("utf-8", errors="replace")


def exchange_of(
    method: str,
    target: str,
    headers: Sequence[tuple[str, str]],
    raw: bytes,
    status: int,
    answer_headers: Sequence[tuple[str, str]],
    data: bytes,
) -> Exchange:
    """The exchange of a request (``target`` its path and query as sent) and its answer;
    ``ValueError`` if a body nests deeper than a recording may."""
    secrets = secrets_of(headers, target.partition("?")[2])
    try:
        body: object = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        body = raw.decode("utf-8", errors="replace")
    kept: dict[str, str] = {}
    for k, value in answer_headers:
        name = k.lower()
        if name in RESPONSE_HEADERS:
            kept[name] = f"{kept[name]}, {value}" if name in kept else value
    stream, answer = response_body(kept.get("content-type", ""), data)
    for side, parsed in (("request", body), ("answer", answer)):
        if not depth_ok(parsed):  # redacting it would recurse past Python's limit
            raise ValueError(f"the {side}'s body nests deeper than {MAX_DEPTH} levels")
    version = next((v for k, v in headers if k.lower() == "anthropic-version"), None)
    betas = [
        b.strip()
        for k, v in headers
        if k.lower() == "anthropic-beta"
        for b in v.split(",")
        if b.strip()
    ]
    return Exchange(
        method=method,
        path=redact_target(target, secrets),
        body=redact(body, secrets),
        status=status,
        response=redact(answer, secrets),
        betas=[str(redact(b, secrets)) for b in betas],
        anthropic_version=None if version is None else str(redact(version, secrets)),
        headers={k: str(redact(kept[k], secrets)) for k in RESPONSE_HEADERS if k in kept},
        stream=stream,
    )
