"""Replaying a recording: each request is answered with the next recorded answer, once it
matches the recorded request (``record.match``).

The answer is the recorded one, ids included (so a thread continues from the recorded
reply id, and tool results answer the recorded tool-use ids): its status, its kept
headers, and its body, as JSON or, when the request asks for ``stream``, as the event
stream of the recorded message (``engine.sse``). A request that does not match, or comes after
the recording is used up, is a *problem*, as in a scripted model: it answers 500
``api_error`` (never retried) whose message shows the differences, consumes nothing, and
makes ``verify()`` fail; so do exchanges left unplayed, unless ``allow_unused()``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine import sse as sse
from fake_anthropic.engine.engine import Answer, new_id
from fake_anthropic.engine.ledger import Ledger, betas_of, body_of
from fake_anthropic.record.match import MATCH_MODES, MatchMode, differences, normalise
from fake_anthropic.record.recording import Exchange
from fake_anthropic.script.records import RecordedRequest, ToolResult
from fake_anthropic.script.transcript import describe
from fake_anthropic.script.turns import ScriptItem

Json = dict[str, Any]


def _messages(body: object) -> list[Json]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


class Replay:
    """A recording played back in order, checking each request against it."""

    def __init__(self, exchanges: Sequence[Exchange], match: MatchMode, source: str) -> None:
        if match not in MATCH_MODES:
            raise ValueError(f"match must be one of {list(MATCH_MODES)}, not {match!r}")
        self._exchanges = list(exchanges)
        self._match = match
        self._source = source
        self._lock = threading.RLock()
        self._played = 0
        self._ledger = Ledger()
        self._problems: list[str] = []
        self._allow_unused = False
        self._replies: dict[str, int] = {}
        for i, exchange in enumerate(self._exchanges, 1):
            message = exchange.message
            if message is not None and isinstance(message.get("id"), str):
                self._replies.setdefault(message["id"], i)

    # --- what a scripted model's engine offers ------------------------------------

    def add(self, items: Sequence[ScriptItem]) -> None:
        raise TypeError(
            f"this model replays the recording {self._source}; "
            f"it takes no script() items (got {len(items)})"
        )

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._exchanges) - self._played

    def allow_unused(self) -> None:
        with self._lock:
            self._allow_unused = True

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._ledger.requests)

    @property
    def tool_results(self) -> list[ToolResult]:
        with self._lock:
            return list(self._ledger.tool_results)

    def problems(self) -> list[str]:
        with self._lock:
            found = list(self._problems)
            unplayed = self._exchanges[self._played :]
            if unplayed and not self._allow_unused:
                listed = "\n".join(
                    f"    {self._played + 1 + i}. {e.endpoint} → {e.status}"
                    for i, e in enumerate(unplayed)
                )
                found.append(
                    f"{len(unplayed)} recorded exchange(s) of {self._source} never replayed "
                    f"(the run ended after {self._played}); call allow_unused() if that is "
                    f"intended:\n{listed}"
                )
            return found

    def verify(self) -> None:
        found = self.problems()
        if found:
            listed = "\n- ".join(p.replace("\n", "\n  ") for p in found)
            raise AssertionError(f"replayed model:\n- {listed}")

    # --- requests -----------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        raw: bytes,
    ) -> Answer:
        with self._lock:
            full_path = path + (f"?{query}" if query else "")
            body = body_of(raw)
            betas = betas_of(list(headers))
            index = len(self._ledger.requests) + 1
            fault = self._fault(index, method, path, betas, body)
            if fault is not None:
                self._problems.append(f"request {index}: {fault}")
                payload = {
                    "type": "error",
                    "error": {"type": "api_error", "message": f"replayed model: {fault}"},
                    "request_id": new_id("req_"),
                }
                self._ledger.add(full_path, betas, body, 500, payload, turn=None)
                return Answer(
                    500,
                    [("content-type", "application/json"), ("x-should-retry", "false")],
                    [json.dumps(payload, ensure_ascii=False).encode()],
                )
            exchange = self._exchanges[self._played]
            self._played += 1
            self._ledger.add(
                full_path, betas, body, exchange.status, exchange.response, turn=self._played
            )
            wants_stream = isinstance(body, dict) and body.get("stream") is True
            return _answer(exchange, wants_stream)

    def _fault(
        self, index: int, method: str, path: str, betas: list[str], body: object
    ) -> str | None:
        endpoint = f"{method} {path}"
        if self._played >= len(self._exchanges):
            sent = describe(_messages(body), _messages(body))
            return (
                f"the recording {self._source} is used up: {len(self._exchanges)} exchange(s) "
                f"recorded and replayed, and request {index} ({endpoint}) asks for another. "
                f"It sent:\n{sent}"
            )
        exchange = self._exchanges[self._played]
        number = self._played + 1
        if self._match == "order":
            if exchange.endpoint == endpoint:
                return None
            return (
                f"request {index} is {endpoint}, but exchange {number} of the recording "
                f"{self._source} is {exchange.endpoint} (match='order')"
            )
        recorded = (exchange.endpoint, exchange.betas, normalise(exchange.body, self._replies))
        sent_now = (endpoint, betas, normalise(body, self._replies))
        found = differences(recorded, sent_now)
        if not found:
            return None
        lines = "\n".join(f"  {line}" for line in found)
        return (
            f"request {index} does not match exchange {number} of the recording "
            f"{self._source} ({exchange.endpoint}; ids, cache_control, metadata and key "
            f"order aside); re-record it if the change is intended:\n{lines}"
        )


def _answer(exchange: Exchange, wants_stream: bool) -> Answer:
    headers = [(k, v) for k, v in exchange.headers.items() if k != "content-type"]
    message = exchange.message
    response = exchange.response
    if wants_stream and message is not None:
        headers = [("content-type", "text/event-stream; charset=utf-8"), *headers]
        return Answer(200, headers, sse.stream(message))
    if exchange.stream and exchange.status == 200 and wants_stream and isinstance(response, dict):
        # a stream that ended in an ``error`` event
        headers = [("content-type", "text/event-stream; charset=utf-8"), *headers]
        return Answer(200, headers, [sse.encode("error", response)])
    if exchange.stream and exchange.status == 200 and message is None:
        # recorded as a stream error, asked for as JSON: the API's error body, as a 500
        status = assumed.STREAM_ERROR_STATUSES.get(_error_type(response) or "", 500)
        headers = [("content-type", "application/json"), *headers]
        return Answer(status, headers, [json.dumps(response, ensure_ascii=False).encode()])
    headers = [("content-type", "application/json"), *headers]
    if isinstance(response, str):
        return Answer(exchange.status, headers, [response.encode()])
    return Answer(exchange.status, headers, [json.dumps(response, ensure_ascii=False).encode()])


def _error_type(body: object) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None
