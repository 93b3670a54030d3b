"""The scripted model's core: one function from a Messages request to its answer.

``Engine.handle`` takes the method, path, query, headers and body bytes of a request and
returns an ``Answer`` (status, headers, body chunks: JSON, or server-sent events for
``stream: true``). The in-process transports and the ASGI app both call it, so the SDK
sees the same answers however it is connected.

Faithful where the SDK or the docs say how the API behaves (SDK 2.14.0 source, see
``fake_anthropic``): errors in the API's shape ``{"type": "error", "error":
{"type", "message", "details"?}, "request_id"}`` with the statuses the SDK maps
(``thread_not_found`` 404, ``thread_already_continued`` / ``thread_unsupported_request``
400); a ``tool_use`` must be answered by a ``tool_result`` in the next message;
server-held threads keep each conversation under its reply's id and refuse ``system`` /
``tools`` on a continue. A request the script cannot answer (used up, a script function
that failed or returned no turn, a call of an undeclared tool, an edit the fake does not
implement) is a *problem*: it answers 500 ``api_error`` with ``x-should-retry: false``
(so no client retries it) and makes ``verify()`` fail.
"""

from __future__ import annotations

import copy
import json
import secrets
import string
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fake_anthropic import _assumptions as assumed
from fake_anthropic import _context_editing as editing
from fake_anthropic import _sse as sse
from fake_anthropic._records import (
    AnsweredError,
    Conversation,
    RecordedRequest,
    ThreadKind,
    ToolResult,
    last_user_tool_results,
    tool_results_of,
)
from fake_anthropic._transcript import describe, describe_item
from fake_anthropic._turns import ScriptItem, Text, ToolUse, Turn, as_turn

Json = dict[str, Any]
TokenEstimate = Callable[[str], int]

MESSAGES_PATH = "/v1/messages"
CREATE_ONLY_FIELDS = ("system", "tools")  # SDK: the server takes them from the thread
_ALPHABET = string.ascii_letters + string.digits


def estimate_tokens(json_text: str) -> int:
    """The default token estimate: ceil(len(JSON text) / 4), about four characters a token."""
    return -(-len(json_text) // 4)


def new_id(prefix: str) -> str:
    """An id shaped like the API's (``msg_01…``, ``toolu_01…``): unique, never reused."""
    return prefix + "01" + "".join(secrets.choice(_ALPHABET) for _ in range(22))


def json_text(value: object) -> str:
    """The compact JSON text the token estimate measures."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, headers, and the body as chunks (one per SSE event)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


class Refusal(Exception):
    """An error answer; ``problem`` marks a script or fake failure that ``verify()`` reports."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        *,
        details: Json | None = None,
        problem: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.details = details
        self.problem = problem


def _invalid(message: str, details: Json | None = None) -> Refusal:
    return Refusal(400, "invalid_request_error", message, details=details)


def _problem(message: str) -> Refusal:
    return Refusal(500, "api_error", f"scripted model: {message}", problem=True)


@dataclass
class _Thread:
    """A conversation the server holds under its latest reply's id."""

    history: list[Json]
    tools: list[Json] | None
    system: object
    continued: bool = False


@dataclass
class _Draft:
    """A request's record while it is handled."""

    index: int
    path: str
    body: Json = field(default_factory=dict)
    betas: list[str] = field(default_factory=list)
    thread: ThreadKind | None = None
    previous_message_id: str | None = None
    messages: list[Json] = field(default_factory=list)
    seen_messages: list[Json] = field(default_factory=list)
    new_messages: list[Json] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    stream: bool = False
    response: Json | None = None
    error: AnsweredError | None = None
    applied_edits: list[Json] = field(default_factory=list)
    turn: int | None = None

    def freeze(self) -> RecordedRequest:
        return RecordedRequest(
            index=self.index,
            path=self.path,
            body=self.body,
            betas=self.betas,
            thread=self.thread,
            previous_message_id=self.previous_message_id,
            messages=self.messages,
            seen_messages=self.seen_messages,
            new_messages=self.new_messages,
            tool_results=self.tool_results,
            stream=self.stream,
            response=self.response,
            error=self.error,
            applied_edits=self.applied_edits,
            turn=self.turn,
        )


def _canon(value: object) -> object:
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items() if v is not None and k != "cache_control"}
    if isinstance(value, list):
        return [_canon(v) for v in value]
    return value


def _canon_message(message: Json) -> str:
    """A message as compared across requests: string content as one text block, no nulls
    and no ``cache_control`` (the SDK re-sends a reply without them)."""
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return json.dumps(_canon({"role": message.get("role"), "content": content}), sort_keys=True)


def _blocks(message: Json) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _tool_names(messages: Sequence[Json]) -> dict[str, str]:
    return {
        str(b.get("id")): str(b.get("name"))
        for m in messages
        if m.get("role") == "assistant"
        for b in _blocks(m)
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }


def _check_history(messages: Sequence[Json]) -> None:
    """Refuse a history the API refuses: unpaired tool_use / tool_result, duplicate ids."""
    seen_ids: set[str] = set()
    for i, message in enumerate(messages):
        uses = [
            str(b.get("id"))
            for b in _blocks(message)
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
        if message.get("role") == "assistant":
            for use_id in uses:
                if use_id in seen_ids:
                    raise _invalid(f"messages.{i}: `tool_use` ids must be unique ({use_id})")
                seen_ids.add(use_id)
        if message.get("role") == "assistant" and uses and i + 1 < len(messages):
            nxt = messages[i + 1]
            answered = {
                b.get("tool_use_id")
                for b in _blocks(nxt)
                if isinstance(b, dict) and b.get("type") == "tool_result"
            }
            missing = [u for u in uses if nxt.get("role") != "user" or u not in answered]
            if missing:
                raise _invalid(
                    f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have "
                    "a corresponding `tool_result` block in the next message."
                )
        if message.get("role") == "user":
            before = messages[i - 1] if i > 0 else {}
            offered = {
                b.get("id")
                for b in _blocks(before)
                if before.get("role") == "assistant" and isinstance(b, dict)
            }
            for j, block in enumerate(_blocks(message)):
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and block.get("tool_use_id") not in offered
                ):
                    raise _invalid(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message."
                    )


def _check_fields(body: Json) -> list[Json]:
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise _invalid("model: Field required")
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        raise _invalid("max_tokens: Field required")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _invalid("max_tokens: must be an integer of at least 1")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _invalid("messages: Field required")
    for i, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or not isinstance(message.get("content"), str | list)
        ):
            raise _invalid(f"messages.{i}: a message is an object with a 'role' and 'content'")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise _invalid("stream: must be a boolean")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise _invalid("tools: must be a list of tool definitions")
    return messages


def _thread_of(value: object) -> tuple[ThreadKind | None, str | None]:
    if value is None:
        return None, None
    if isinstance(value, dict) and value.get("type") == "create":
        return "create", None
    if (
        isinstance(value, dict)
        and value.get("type") == "continue"
        and isinstance(value.get("previous_message_id"), str)
    ):
        return "continue", value["previous_message_id"]
    raise _invalid(
        'thread: must be {"type": "create"} or {"type": "continue", "previous_message_id": ...}'
    )


class Engine:
    """The script, the server-held threads, and the record of every exchange."""

    def __init__(self, token_estimate: TokenEstimate = estimate_tokens) -> None:
        self._estimate = token_estimate
        self._lock = threading.RLock()
        self._script: list[ScriptItem] = []
        self._played = 0
        self._requests: list[RecordedRequest] = []
        self._tool_results: list[ToolResult] = []
        self._problems: list[str] = []
        self._threads: dict[str, _Thread] = {}
        self._known: list[list[str]] = []
        self._allow_unused = False

    # --- the script ---------------------------------------------------------------

    def add(self, items: Sequence[ScriptItem]) -> None:
        with self._lock:
            self._script.extend(items)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script) - self._played

    def allow_unused(self) -> None:
        with self._lock:
            self._allow_unused = True

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def tool_results(self) -> list[ToolResult]:
        with self._lock:
            return list(self._tool_results)

    def problems(self) -> list[str]:
        """What ``verify()`` reports: failed requests, and unplayed turns unless allowed."""
        with self._lock:
            found = list(self._problems)
            unplayed = self._script[self._played :]
            if unplayed and not self._allow_unused:
                listed = "\n".join(
                    f"    {self._played + 1 + i}. {describe_item(item)}"
                    for i, item in enumerate(unplayed)
                )
                found.append(
                    f"{len(unplayed)} scripted turn(s) never played (the conversation ended "
                    f"after {self._played}); call allow_unused() if that is intended:\n{listed}"
                )
            return found

    def verify(self) -> None:
        found = self.problems()
        if found:
            listed = "\n- ".join(p.replace("\n", "\n  ") for p in found)
            raise AssertionError(f"scripted model:\n- {listed}")

    # --- requests -----------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        body: bytes,
    ) -> Answer:
        """Answer one HTTP request and record it."""
        with self._lock:
            draft = _Draft(len(self._requests) + 1, path + (f"?{query}" if query else ""))
            request_id = new_id("req_")
            try:
                if path != MESSAGES_PATH:
                    raise Refusal(404, "not_found_error", f"Not found: {method} {path}")
                if method != "POST":
                    raise Refusal(405, "invalid_request_error", f"Method {method} not allowed")
                answer = self._messages(draft, headers, body, request_id)
            except Refusal as refusal:
                answer = self._refuse(draft, refusal, request_id)
            except Exception as exc:  # a bug of the fake or of a token estimate: report it
                text = "".join(traceback.format_exception_only(exc)).strip()
                answer = self._refuse(draft, _problem(f"failed: {text}"), request_id)
            self._requests.append(draft.freeze())
            return answer

    def _refuse(self, draft: _Draft, refusal: Refusal, request_id: str) -> Answer:
        code = refusal.details.get("error_code") if refusal.details else None
        draft.error = AnsweredError(refusal.status, refusal.kind, refusal.message, code)
        if refusal.problem:
            text = refusal.message.removeprefix("scripted model: ")
            self._problems.append(f"request {draft.index}: {text}")
        error: Json = {"type": refusal.kind, "message": refusal.message}
        if refusal.details is not None:
            error["details"] = refusal.details
        payload = {"type": "error", "error": error, "request_id": request_id}
        headers = [("content-type", "application/json"), ("request-id", request_id)]
        if refusal.problem:
            headers.append(("x-should-retry", "false"))
        return Answer(refusal.status, headers, [json.dumps(payload).encode()])

    def _messages(
        self, draft: _Draft, headers: Sequence[tuple[str, str]], raw: bytes, request_id: str
    ) -> Answer:
        body, sent = self._request(draft, headers, raw)
        history, tools, system, thread = self._history(draft, body, sent)

        def measure(messages: list[Json]) -> int:
            prompt: Json = {}
            if system is not None:
                prompt["system"] = system
            if tools is not None:
                prompt["tools"] = tools
            prompt["messages"] = messages
            return self._estimate(json_text(prompt))

        seen = history
        if body.get("context_management") is not None:
            try:
                edited = editing.apply(body["context_management"], history, measure)
            except editing.EditRefused as exc:
                raise _invalid(str(exc)) from None
            except editing.EditUnsupported as exc:
                raise _problem(str(exc)) from None
            seen, draft.applied_edits = edited.messages, edited.applied_edits
        draft.seen_messages = seen
        tool_names = _tool_names(history)
        canon = [_canon_message(m) for m in history]
        start = max(
            (len(k) for k in self._known if len(k) <= len(canon) and canon[: len(k)] == k),
            default=0,
        )
        draft.new_messages = history[start:]
        draft.tool_results = tool_results_of(draft.new_messages, tool_names)
        self._tool_results.extend(draft.tool_results)

        if self._played >= len(self._script):
            sent_now = describe(draft.new_messages, history)
            raise _problem(
                f"the script is used up: {len(self._script)} turn(s) scripted and played, and "
                f"request {draft.index} asks for another. It sent:\n{sent_now}"
            )
        item = self._script[self._played]
        self._played += 1
        draft.turn = self._played
        conversation = Conversation(
            copy.deepcopy(seen),
            last_user_tool_results(seen, tool_names),
            copy.deepcopy(tools or []),
            draft.index,
        )
        turn = self._turn(item, conversation)
        blocks = self._content(turn, history, tools)
        message: Json = {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": turn.effective_stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": measure(seen),
                "output_tokens": self._estimate(json_text(blocks)),
            },
        }
        if body.get("context_management") is not None:
            message["context_management"] = {"applied_edits": draft.applied_edits}
        draft.response = message

        after = [*history, {"role": "assistant", "content": copy.deepcopy(blocks)}]
        self._known.append([*canon, _canon_message(after[-1])])
        if draft.thread is not None:
            if thread is not None:
                thread.continued = True
            # A copy: the record hands ``history`` to the test, which may change it.
            self._threads[message["id"]] = _Thread(
                copy.deepcopy(after), copy.deepcopy(tools), copy.deepcopy(system)
            )
        if draft.stream:
            headers = [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache"),
                ("request-id", request_id),
            ]
            return Answer(200, headers, sse.stream(message))
        headers = [("content-type", "application/json"), ("request-id", request_id)]
        return Answer(200, headers, [json.dumps(message, ensure_ascii=False).encode()])

    def _request(
        self, draft: _Draft, headers: Sequence[tuple[str, str]], raw: bytes
    ) -> tuple[Json, list[Json]]:
        """The body and its messages, once the headers and fields pass the API's checks."""
        names = {name.lower() for name, _ in headers}
        draft.betas = [
            beta.strip()
            for name, value in headers
            if name.lower() == "anthropic-beta"
            for beta in value.split(",")
            if beta.strip()
        ]
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise _invalid(f"The request body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _invalid("The request body must be a JSON object")
        draft.body = body
        draft.stream = body.get("stream") is True
        if "x-api-key" not in names and "authorization" not in names:
            raise Refusal(401, "authentication_error", "x-api-key header is required")
        if "anthropic-version" not in names:
            raise _invalid("anthropic-version: header is required")
        sent = _check_fields(body)
        draft.messages = draft.seen_messages = draft.new_messages = copy.deepcopy(sent)
        for name, beta in assumed.REQUIRED_BETAS.items():
            if body.get(name) is not None and beta not in draft.betas:
                raise _invalid(f"{name}: requires the beta header 'anthropic-beta: {beta}'")
        return body, sent

    def _history(
        self, draft: _Draft, body: Json, sent: list[Json]
    ) -> tuple[list[Json], list[Json] | None, object, _Thread | None]:
        """The full conversation the request stands for, its tools and system prompt, and the
        thread it continues (None unless a continue)."""
        kind, previous = _thread_of(body.get("thread"))
        draft.thread, draft.previous_message_id = kind, previous
        if kind is not None:
            unsupported = [f for f in assumed.THREAD_UNSUPPORTED_FIELDS if body.get(f) is not None]
            if unsupported:
                raise _invalid(
                    f"thread: cannot be combined with {', '.join(unsupported)}; send the full "
                    "conversation without `thread`",
                    {"error_code": "thread_unsupported_request", "unsupported": unsupported},
                )
        thread = self._thread_for(kind, previous, body)
        if thread is not None:
            history = copy.deepcopy(thread.history) + copy.deepcopy(sent)
            tools, system = thread.tools, thread.system
        else:
            if not sent:
                raise _invalid("messages: at least one message is required")
            history = copy.deepcopy(sent)
            tools, system = body.get("tools"), body.get("system")
        draft.messages = draft.seen_messages = history
        _check_history(history)
        return history, tools, system, thread

    def _thread_for(
        self, kind: ThreadKind | None, previous: str | None, body: Json
    ) -> _Thread | None:
        if kind != "continue" or previous is None:
            return None
        thread = self._threads.get(previous)
        if thread is None:
            raise Refusal(
                404,
                "not_found_error",
                f"No thread state was found for previous_message_id {previous!r}; replay the "
                'full conversation with thread {"type": "create"}',
                details={"error_code": "thread_not_found"},
            )
        if thread.continued:
            raise _invalid(
                f"The response {previous!r} has already been continued; continue from the "
                "thread's most recent response id",
                {"error_code": "thread_already_continued"},
            )
        repeated = [f for f in CREATE_ONLY_FIELDS if f in body]
        if repeated:
            raise _invalid(
                f"{' and '.join(repeated)}: cannot be sent on a thread continue; the thread keeps "
                "the ones it was created with"
            )
        return thread

    def _turn(self, item: ScriptItem, conversation: Conversation) -> Turn:
        if isinstance(item, Turn | Text | ToolUse):
            turn = as_turn(item)
            assert turn is not None
            return turn
        try:
            value = item(conversation)
        except Exception as exc:
            text = "".join(traceback.format_exception_only(exc)).strip()
            raise _problem(
                f"script item {self._played} ({describe_item(item)}) raised {text}"
            ) from None
        turn = as_turn(value)
        if turn is None:
            raise _problem(
                f"script item {self._played} ({describe_item(item)}) returned {value!r}, "
                "not a turn or a block"
            )
        return turn

    def _content(self, turn: Turn, history: Sequence[Json], tools: list[Json] | None) -> list[Json]:
        """The turn's blocks in the API's shape, with ids made; a call the model could not
        make (an undeclared tool, a reused id) is a problem."""
        declared = [t.get("name") for t in tools or []]
        check_names = all(isinstance(n, str) for n in declared)
        used = set(_tool_names(history))
        blocks: list[Json] = []
        for block in turn.blocks:
            if isinstance(block, Text):
                blocks.append({"type": "text", "text": block.text})
                continue
            if check_names and block.name not in declared:
                raise _problem(
                    f"script item {self._played} calls tool {block.name!r}, which the request "
                    f"does not declare (its tools: {declared})"
                )
            use_id = block.id if block.id is not None else new_id("toolu_")
            if use_id in used:
                raise _problem(
                    f"script item {self._played} reuses tool_use id {use_id!r} of this conversation"
                )
            used.add(use_id)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": use_id,
                    "name": block.name,
                    "input": copy.deepcopy(dict(block.input)),
                }
            )
        return blocks
