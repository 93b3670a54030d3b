"""The record of a replayed or recorded run, in the scripted model's terms.

A model that replays a recording, or records one, keeps the same record a scripted one
does (``requests``, ``tool_results``, ``transcript()``): each request's full conversation
(a thread's history plus the messages sent), the messages new in it and their tool
results, and the answer. Threads are followed by the ids of the replies the run saw.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from fake_anthropic.engine.engine import MESSAGES_PATH, _canon_message, _thread_of, _tool_names
from fake_anthropic.engine.errors import Refusal
from fake_anthropic.script.records import (
    AnsweredError,
    RecordedRequest,
    ToolResult,
    tool_results_of,
)

Json = dict[str, Any]


def answered_error(status: int, body: object) -> AnsweredError | None:
    """The error an answer carries (a non-2xx status, or a stream's ``error`` event)."""
    error = body.get("error") if isinstance(body, dict) else None
    if status < 400 and not (isinstance(body, dict) and body.get("type") == "error"):
        return None
    error = error if isinstance(error, dict) else {}
    details = error.get("details")
    code = details.get("error_code") if isinstance(details, dict) else None
    return AnsweredError(
        status,
        str(error.get("type", "api_error")),
        str(error.get("message", "")),
        code if isinstance(code, str) else None,
    )


class Ledger:
    """Builds ``RecordedRequest`` records from requests and their answers."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.tool_results: list[ToolResult] = []
        self._histories: dict[str, list[Json]] = {}
        self._known: list[list[str]] = []

    def add(
        self,
        path: str,
        betas: list[str],
        body: object,
        status: int,
        response: object,
        *,
        turn: int | None,
    ) -> RecordedRequest:
        body = body if isinstance(body, dict) else {}
        sent = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        try:
            thread, previous = _thread_of(body.get("thread"))
        except Refusal:
            thread, previous = None, None
        history = copy.deepcopy(sent)
        if thread == "continue" and previous in self._histories:
            history = copy.deepcopy(self._histories[str(previous)]) + history
        canon = [_canon_message(m) for m in history]
        start = max(
            (len(k) for k in self._known if len(k) <= len(canon) and canon[: len(k)] == k),
            default=0,
        )
        new = history[start:] if thread != "continue" else copy.deepcopy(sent)
        results = tool_results_of(new, _tool_names(history))
        error = answered_error(status, response)
        is_message = (
            error is None and isinstance(response, dict) and response.get("type") == "message"
        )
        record = RecordedRequest(
            index=len(self.requests) + 1,
            path=path,
            body=copy.deepcopy(body),
            betas=list(betas),
            thread=thread,
            previous_message_id=previous,
            messages=history,
            seen_messages=history,
            new_messages=new,
            tool_results=results,
            stream=body.get("stream") is True,
            response=copy.deepcopy(response) if isinstance(response, dict) and not error else None,
            error=error,
            applied_edits=list(
                (response.get("context_management") or {}).get("applied_edits") or []
            )
            if is_message and isinstance(response, dict)
            else [],
            turn=turn,
        )
        self.requests.append(record)
        self.tool_results.extend(results)
        if is_message and path.split("?")[0] == MESSAGES_PATH and isinstance(response, dict):
            reply = {"role": "assistant", "content": copy.deepcopy(response.get("content"))}
            after = [*history, reply]
            self._known.append([*canon, _canon_message(reply)])
            if thread is not None and isinstance(response.get("id"), str):
                self._histories[response["id"]] = after
        return record


def body_of(raw: bytes) -> object:
    """A request body as JSON, or its text if it is not JSON."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def betas_of(headers: list[tuple[str, str]]) -> list[str]:
    return [
        beta.strip()
        for name, value in headers
        if name.lower() == "anthropic-beta"
        for beta in value.split(",")
        if beta.strip()
    ]
