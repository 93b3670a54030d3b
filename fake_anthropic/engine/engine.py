"""The scripted model's core: one function from a Messages request to its answer.

``Engine.handle`` takes the method, path, query, headers and body bytes of a request and
returns an ``Answer`` (status, headers, body chunks: JSON, or server-sent events for
``stream: true``). The in-process transports and the ASGI app both call it, so the SDK
sees the same answers however it is connected.

Faithful where the SDK or the docs say how the API behaves (SDK 2.14.0 source, see
``fake_anthropic``): errors in the API's shape ``{"type": "error", "error":
{"type", "message", "details"?}, "request_id"}`` with the statuses the SDK maps
(``thread_not_found`` 404, ``thread_already_continued`` / ``thread_unsupported_request``
400); the API's own 400s (``engine.validation``); server-held threads keep each conversation
under its reply's id and refuse ``system`` / ``tools`` on a continue; compaction
(``engine.compaction``), context editing (``engine.context_editing``), ``count_tokens``
(same estimate, no turn consumed). A scripted ``api_error()`` answers its error as the
API would (not a problem). A request the script cannot answer (used up, a script function
that failed or returned no turn, a call of an undeclared tool, a thinking block without
thinking enabled, a turn that breaks ``tool_choice``) is a *problem*: it answers 500
``api_error`` with ``x-should-retry: false`` (so no client retries it) and makes ``verify()`` fail.
"""

from __future__ import annotations

import copy
import json
import secrets
import string
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine import checked as checking
from fake_anthropic.engine import compaction as compacting
from fake_anthropic.engine import context_editing as editing
from fake_anthropic.engine import mcp, structured, surface
from fake_anthropic.engine import sse as sse
from fake_anthropic.engine import tool_search as searching
from fake_anthropic.engine import validation as check
from fake_anthropic.engine.errors import Refusal, invalid, problem, utf8
from fake_anthropic.engine.mcp import McpConnector, McpOutcome, McpServer, McpUnreachable
from fake_anthropic.engine.signatures import Signatures
from fake_anthropic.engine.trees import copied
from fake_anthropic.engine.usage import iteration, usage
from fake_anthropic.script.records import (
    AnsweredError,
    Conversation,
    RecordedRequest,
    ThreadKind,
    ToolResult,
    last_user_tool_results,
    tool_results_of,
)
from fake_anthropic.script.transcript import describe, describe_item
from fake_anthropic.script.turns import (
    BLOCK_TYPES,
    ApiError,
    Compaction,
    McpToolUse,
    RedactedThinking,
    ScriptItem,
    ServerToolUse,
    Text,
    Thinking,
    Turn,
    as_turn,
)

Json = dict[str, Any]
TokenEstimate = Callable[[str], int]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
CREATE_ONLY_FIELDS = ("system", "tools")  # SDK: the server takes them from the thread
_ALPHABET = string.ascii_letters + string.digits
# Each random byte below 248 (4 x 62) as a character of the alphabet, the others dropped:
# every character equally likely.
_EVEN_BYTES = 256 - 256 % len(_ALPHABET)
_AS_CHARACTER = bytes(
    ord(_ALPHABET[b % len(_ALPHABET)]) if b < _EVEN_BYTES else 0 for b in range(256)
)
_DROPPED = bytes(range(_EVEN_BYTES, 256))


def estimate_tokens(json_text: str) -> int:
    """The default token estimate: ceil(len(JSON text) / 4), about four characters a token."""
    return -(-len(json_text) // 4)


def new_id(prefix: str) -> str:
    """An id shaped like the API's (``msg_01…``, ``toolu_01…``): unique, never reused.
    One read of the system's randomness, not one per character (a turn makes three ids)."""
    chars = b""
    while len(chars) < 22:
        chars += secrets.token_bytes(32).translate(_AS_CHARACTER, _DROPPED)
    return prefix + "01" + chars[:22].decode("ascii")


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


def _invalid(message: str, details: Json | None = None) -> Refusal:
    return invalid(message, details)


def _problem(message: str) -> Refusal:
    return problem(message)


@dataclass
class _Thread:
    """A conversation the server holds under its latest reply's id, as the server holds
    it: each message of the history as its JSON text (``texts``, which the token estimate
    also measures, and from which a continue's record gets its own copy), and as compared
    across requests (``canon``, ``_canon_message``); the tools and system prompt; what the
    checks found in the history (``checked``). All of it the engine's own, never handed
    out or changed, so the next thread shares it instead of copying."""

    tools: list[Json] | None
    system: object
    canon: list[str]
    texts: list[str]
    checked: checking.Checked
    continued: bool = False

    def history(self) -> list[Json]:
        """A new copy of the history (what the client was answered: JSON)."""
        messages: list[Json] = json.loads("[" + ",".join(self.texts) + "]")
        return messages


@dataclass(frozen=True)
class _Seen:
    """What a turn's checks found: the conversation the model sees (before context
    editing), and of the history, what a thread kept under the reply checks no more."""

    view: list[Json]
    checked: checking.Checked


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


def _prompt_text(head: Json, messages: str) -> str:
    """``json_text({**head, "messages": ...})`` with the messages' text already made (the
    same text: a compact JSON object is its members' texts joined)."""
    text = json_text(head)
    return text[:-1] + ("," if head else "") + '"messages":' + messages + "}"


def _parts(thread: _Thread | None, history: list[Json]) -> tuple[list[str], list[str]]:
    """The canon and the JSON text of each message of ``history``: of a thread's part as
    it kept them, of the messages sent made now."""
    new = history[len(thread.texts) if thread is not None else 0 :]
    canon = [*(thread.canon if thread else ()), *(_canon_message(m) for m in new)]
    texts = [*(thread.texts if thread else ()), *(json_text(m) for m in new)]
    return canon, texts


def _kept(
    thread: _Thread | None,
    tools: list[Json] | None,
    system: object,
    known: tuple[list[str], list[str], checking.Checked],
) -> _Thread:
    """The thread held under a reply: ``known`` holds the canon and the texts of the
    history and the reply, and what the checks found in the history; the tools and system
    prompt are the continued ``thread``'s, else copies of the request's (the record hands
    its body to the test, which may change it)."""
    canon, texts, checked = known
    if thread is None:
        return _Thread(copied(tools), copied(system), canon, texts, checked)
    return _Thread(thread.tools, thread.system, canon, texts, checked)


class Engine:
    """The script, the server-held threads, and the record of every exchange."""

    def __init__(
        self,
        token_estimate: TokenEstimate = estimate_tokens,
        connector: McpConnector | None = None,
        ignore_betas: Iterable[str] = (),
    ) -> None:
        """``connector`` reaches the MCP servers of requests that use the MCP connector;
        ``ignore_betas`` are betas played as if not sent though ``engine.surface`` does not
        model them."""
        self._ignored_betas = surface.check_ignored_betas(ignore_betas)
        self._estimate = token_estimate
        self._connector = connector
        self._lock = threading.RLock()
        self._script: list[ScriptItem] = []
        self._played = 0
        self._requests: list[RecordedRequest] = []
        self._tool_results: list[ToolResult] = []
        self._problems: list[str] = []
        self._threads: dict[str, _Thread] = {}
        self._known: list[list[str]] = []
        self._allow_unused = False
        self._signatures = Signatures()
        self._thinking_replies: dict[str, bool] = {}
        """Whether the reply holding each tool_use id began with thinking."""

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
            played = self._played
            try:
                if path not in (MESSAGES_PATH, COUNT_TOKENS_PATH):
                    raise Refusal(404, "not_found_error", f"Not found: {method} {path}")
                if method != "POST":
                    raise Refusal(405, "invalid_request_error", f"Method {method} not allowed")
                if path == COUNT_TOKENS_PATH:
                    answer = self._count_tokens(draft, headers, body, request_id)
                else:
                    answer = self._messages(draft, headers, body, request_id)
            except mcp.ServerUnusable as refusal:
                # The API refuses such a request before sampling: it used no turn.
                self._played, draft.turn = played, None
                answer = self._refuse(draft, refusal, request_id)
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
        headers.extend(refusal.headers)
        if refusal.problem:
            headers.append(("x-should-retry", "false"))
        return Answer(refusal.status, headers, [json.dumps(payload).encode()])

    def _measure(
        self,
        system: object,
        tools: list[Json] | None,
        history: list[Json] | None = None,
        texts: list[str] | None = None,
    ) -> Callable[[list[Json]], int]:
        """The token estimate of the prompt with some messages; of ``history`` itself (the
        usual case: no context editing) from its messages' ``texts``."""

        def measure(messages: list[Json]) -> int:
            prompt: Json = {}
            if system is not None:
                prompt["system"] = system
            if tools is not None:
                prompt["tools"] = searching.visible_tools(tools, messages)
            if messages is history and texts is not None:
                return self._estimate(_prompt_text(prompt, "[" + ",".join(texts) + "]"))
            prompt["messages"] = messages
            return self._estimate(json_text(prompt))

        return measure

    def _checked_view(
        self,
        body: Json,
        history: list[Json],
        tools: list[Json] | None,
        thinking: str | None,
        prior: checking.Checked | None = None,
    ) -> _Seen:
        """Run the API's checks of the conversation, of what follows ``prior`` if its part
        is plain (``engine.checked``); return what the model sees of it before context
        editing (from a compaction block on, if one was sent back) and what was found."""
        after = checking.after(prior)
        start = check.compaction_start(history, self._signatures, after)
        use_ids = check.check_history(
            history,
            opens_with_compaction=start == 0,
            start=after,
            seen=prior.use_ids if prior is not None and after else frozenset(),
        )
        check.check_thinking_blocks(
            history, self._signatures, thinking, self._thinking_replies, after
        )
        check.check_tool_choice(body, tools, thinking)
        searching.check_references(history[after:], searching.check_request(tools))
        structured.output_schema(body)
        structured.strict_schemas(tools)
        known = prior.length if prior is not None else 0
        names = {**prior.names, **_tool_names(history[known:])} if prior else _tool_names(history)
        plain = (prior.plain if prior else True) and checking.plain(history[known:])
        found = checking.Checked(len(history), frozenset(use_ids), names, plain)
        return _Seen(history[start:] if start else history, found)

    def _count_tokens(
        self, draft: _Draft, headers: Sequence[tuple[str, str]], raw: bytes, request_id: str
    ) -> Answer:
        """``POST /v1/messages/count_tokens``: the estimate of what the model would read,
        after context editing; no turn is consumed. ``compaction`` is accepted and ignored
        (the SDK's docs), and a ``compact_20260112`` edit does not compact a count."""
        body, sent = self._request(draft, headers, raw, max_tokens_required=False)
        if not sent:
            raise _invalid("messages: at least one message is required")
        thinking = check.thinking_type(body)
        tools = body.get("tools")
        measure = self._measure(body.get("system"), tools)
        seen = self._checked_view(body, sent, tools, thinking).view
        result: Json = {}
        if body.get("context_management") is not None:
            original = measure(seen)
            seen, draft.applied_edits, _ = self._edit(body, seen, measure, thinking)
            result["context_management"] = {"original_input_tokens": original}
        draft.seen_messages = seen
        result = {"input_tokens": measure(seen), **result}
        draft.response = result
        headers_out = [("content-type", "application/json"), ("request-id", request_id)]
        return Answer(200, headers_out, [json.dumps(result).encode()])

    def _edit(
        self,
        body: Json,
        seen: list[Json],
        measure: Callable[[list[Json]], int],
        thinking: str | None,
    ) -> tuple[list[Json], list[Json], Mapping[str, Any] | None]:
        try:
            edited = editing.apply(body["context_management"], seen, measure, thinking)
        except editing.EditRefused as exc:
            raise _invalid(str(exc)) from None
        return edited.messages, edited.applied_edits, edited.compact

    def _next_item(self, draft: _Draft, new: list[Json], history: list[Json]) -> ScriptItem:
        if self._played >= len(self._script):
            sent_now = describe(new, history)
            raise _problem(
                f"the script is used up: {len(self._script)} turn(s) scripted and played, and "
                f"request {draft.index} asks for another. It sent:\n{sent_now}"
            )
        item = self._script[self._played]
        self._played += 1
        draft.turn = self._played
        return item

    def _summary(self, draft: _Draft, conversation: list[Json]) -> str:
        """The scripted ``compaction()`` if it is next (consumed), else the default summary."""
        if self._played < len(self._script):
            item = self._script[self._played]
            if isinstance(item, Compaction):
                self._played += 1
                draft.turn = self._played
                return item.summary
        return compacting.default_summary(conversation)

    def _messages(
        self, draft: _Draft, headers: Sequence[tuple[str, str]], raw: bytes, request_id: str
    ) -> Answer:
        body, sent = self._request(draft, headers, raw)
        thinking = check.thinking_type(body)
        check.check_max_tokens(body)
        is_compaction = body.get("compaction") is not None
        if is_compaction:
            compacting.check_config(body)
        history, tools, system, thread = self._history(draft, body, sent)
        prior = thread.checked if thread is not None else None
        servers = mcp.check_connector(body, draft.betas, tools, history, checking.after(prior))
        if is_compaction:
            compacting.check_conversation(history)
        found = self._checked_view(body, history, tools, thinking, prior)
        seen, tool_names = found.view, found.checked.names
        canon, texts = _parts(thread, history)
        measure = self._measure(system, tools, history, texts)

        compact: Mapping[str, Any] | None = None
        if body.get("context_management") is not None:
            seen, draft.applied_edits, compact = self._edit(body, seen, measure, thinking)
        draft.seen_messages = seen
        start = max(
            (len(k) for k in self._known if len(k) <= len(canon) and canon[: len(k)] == k),
            default=0,
        )
        draft.new_messages = history[start:]
        draft.tool_results = tool_results_of(draft.new_messages, tool_names)
        self._tool_results.extend(draft.tool_results)

        iterations: list[Json] | None = None
        if is_compaction:
            summary = self._summary(draft, seen)
            blocks = [compacting.block(summary, self._signatures)]
            turn = Turn((), "compaction")
        else:
            leading: list[Json] = []
            if compact is not None:
                before = measure(seen)
                summary = self._summary(draft, seen)
                leading = [compacting.block(summary, self._signatures)]
                seen = [{"role": "assistant", "content": copy.deepcopy(leading)}]
                draft.seen_messages = seen
                made = {"input_tokens": before, "output_tokens": self._estimate(json_text(leading))}
                iterations = [iteration("compaction", made)]
            if compact is not None and compact.get("pause_after_compaction") is True:
                blocks, turn = leading, Turn((), "compaction")
            else:
                listings, listed = self._list_before_sampling(servers)
                item = self._next_item(draft, draft.new_messages, history)
                if isinstance(item, ApiError):
                    raise self._scripted_error(item)
                if isinstance(item, Compaction):
                    raise _problem(
                        f"script item {self._played} is compaction({item.summary[:40]!r}), but "
                        f"request {draft.index} asks for a turn, not a compaction (no `compaction` "
                        "field, no compact_20260112 edit that fired)"
                    )
                shown = seen
                turn = self._turn(
                    item,
                    lambda: Conversation(
                        copied(shown),
                        last_user_tool_results(shown, tool_names),
                        copied(tools or []),
                        draft.index,
                    ),
                )
                blocks = [
                    *leading,
                    *listed,
                    *self._content(
                        turn, history, tool_names, tools, body, thinking, servers, listings
                    ),
                ]
        read = measure(seen)
        written = self._estimate(json_text(blocks))
        limit = body.get("max_tokens")
        if isinstance(limit, int):  # the API never counts past it, and a cut reply is at it
            written = limit if turn.effective_stop_reason == "max_tokens" else min(written, limit)
        counts = usage(read, written, blocks, turn.usage)
        if iterations is not None:
            iterations.append(iteration("message", counts))
            counts["iterations"] = iterations
        message: Json = {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": blocks,
            "stop_reason": turn.effective_stop_reason,
            "stop_sequence": turn.stop_sequence,
            "usage": counts,
        }
        if body.get("context_management") is not None:
            message["context_management"] = {"applied_edits": draft.applied_edits}
        draft.response = message

        reply: Json = {"role": "assistant", "content": blocks}
        canon.append(_canon_message(reply))
        self._known.append(canon)
        if draft.thread is not None:
            if thread is not None:
                thread.continued = True
            known = (canon, [*texts, json_text(reply)], found.checked)
            self._threads[message["id"]] = _kept(thread, tools, system, known)
        if draft.stream:
            headers = [
                ("content-type", "text/event-stream; charset=utf-8"),
                ("cache-control", "no-cache"),
                ("request-id", request_id),
            ]
            return Answer(200, headers, sse.stream(message))
        headers = [("content-type", "application/json"), ("request-id", request_id)]
        return Answer(200, headers, [utf8(json.dumps(message, ensure_ascii=False))])

    @staticmethod
    def _scripted_error(item: ApiError) -> Refusal:
        headers: list[tuple[str, str]] = []
        if item.retry_after is not None:
            seconds = item.retry_after
            value = str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))
            headers.append(("retry-after", value))
        return Refusal(item.status, item.type, item.message, headers=headers)

    def _request(
        self,
        draft: _Draft,
        headers: Sequence[tuple[str, str]],
        raw: bytes,
        *,
        max_tokens_required: bool = True,
    ) -> tuple[Json, list[Json]]:
        """The body and the record's own copy of its messages, once the headers and fields
        pass the API's checks."""
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
        sent = check.check_fields(body, max_tokens_required=max_tokens_required)
        sent = draft.messages = draft.seen_messages = draft.new_messages = copied(sent)
        surface.check(body, draft.betas, self._ignored_betas)
        required = dict(assumed.REQUIRED_BETAS, compaction=assumed.COMPACTION_BETA)
        for name, beta in required.items():
            if body.get(name) is not None and beta not in draft.betas:
                raise _invalid(f"{name}: requires the beta header 'anthropic-beta: {beta}'")
        edits = (
            (body.get("context_management") or {}).get("edits")
            if isinstance(body.get("context_management"), dict)
            else None
        )
        for i, edit in enumerate(edits if isinstance(edits, list) else []):
            kind = edit.get("type") if isinstance(edit, dict) else None
            edit_beta = assumed.REQUIRED_EDIT_BETAS.get(str(kind))
            if edit_beta is not None and edit_beta not in draft.betas:
                raise _invalid(
                    f"context_management.edits.{i}: {kind} requires the beta header "
                    f"'anthropic-beta: {edit_beta}'"
                )
        return body, sent

    def _history(
        self, draft: _Draft, body: Json, sent: list[Json]
    ) -> tuple[list[Json], list[Json] | None, object, _Thread | None]:
        """The full conversation the request stands for, its tools and system prompt, and the
        thread it continues (None unless a continue). ``sent`` is the record's own copy of
        the messages sent (``_request``), so it goes into the history as it is."""
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
            history = thread.history() + sent
            tools, system = thread.tools, thread.system
        else:
            if not sent:
                raise _invalid("messages: at least one message is required")
            history = list(sent)
            tools, system = body.get("tools"), body.get("system")
        draft.messages = draft.seen_messages = history
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

    def _turn(self, item: ScriptItem, conversation: Callable[[], Conversation]) -> Turn:
        """The item's turn; a script function is shown the ``conversation`` (made only
        then: a copy of the whole conversation, which a scripted turn does not need)."""
        if isinstance(item, (Turn, *BLOCK_TYPES)):
            turn = as_turn(item)
            assert turn is not None
            return turn
        assert callable(item)
        try:
            value = item(conversation())
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

    def _content(
        self,
        turn: Turn,
        history: Sequence[Json],
        names: Mapping[str, str],
        tools: list[Json] | None,
        body: Json,
        thinking: str | None,
        servers: Sequence[McpServer] = (),
        listings: dict[str, list[str]] | None = None,
    ) -> list[Json]:
        """The turn's blocks in the API's shape, with ids and signatures made; a turn the
        model could not answer this request with is a problem."""
        where = f"script item {self._played}"
        declared = [t.get("name") for t in mcp.client_tools(tools)]
        listings = {} if listings is None else listings
        check_names = all(isinstance(n, str) for n in declared)
        used = set(names)
        loading = searching.Loading(tools, history)
        blocks: list[Json] = []
        for block in turn.blocks:
            if isinstance(block, Text):
                shaped: Json = {"type": "text", "text": block.text}
                if block.citations:
                    shaped["citations"] = [copy.deepcopy(dict(c)) for c in block.citations]
                blocks.append(shaped)
            elif isinstance(block, Thinking | RedactedThinking):
                if thinking not in assumed.THINKING_ON:
                    kind = "thinking" if isinstance(block, Thinking) else "redacted_thinking"
                    raise _problem(
                        f"{where} plays a {kind} block, but the request does not enable `thinking`"
                    )
                if isinstance(block, Thinking):
                    signature = self._signatures.sign_thinking(block.thinking, block.signature)
                    blocks.append(
                        {"type": "thinking", "thinking": block.thinking, "signature": signature}
                    )
                else:
                    self._signatures.add_redacted(block.data)
                    blocks.append({"type": "redacted_thinking", "data": block.data})
            elif isinstance(block, McpToolUse):
                loading.mcp_call(block.server, block.name, where)
                blocks.extend(self._mcp_blocks(block, servers, listings, used, where))
            elif isinstance(block, ServerToolUse):
                if check_names and block.name not in declared:
                    raise _problem(
                        f"{where} uses server tool {block.name!r}, which the request does not "
                        f"declare (its tools: {declared})"
                    )
                if block.result_type == searching.RESULT_TYPE:
                    loading.search(block.name, block.content, where)
                use_id = block.id if block.id is not None else new_id("srvtoolu_")
                blocks.append(
                    {
                        "type": "server_tool_use",
                        "id": use_id,
                        "name": block.name,
                        "input": copy.deepcopy(dict(block.input)),
                    }
                )
                blocks.append(
                    {
                        "type": block.result_type,
                        "tool_use_id": use_id,
                        "content": copy.deepcopy(block.content),
                    }
                )
            else:
                if check_names and block.name not in declared:
                    raise _problem(
                        f"{where} calls tool {block.name!r}, which the request does not "
                        f"declare (its tools: {declared}){loading.undeclared_hint(block.name)}"
                    )
                loading.call(block.name, where)
                use_id = block.id if block.id is not None else new_id("toolu_")
                if use_id in used:
                    raise _problem(f"{where} reuses tool_use id {use_id!r} of this conversation")
                used.add(use_id)
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": use_id,
                        "name": block.name,
                        "input": copy.deepcopy(dict(block.input)),
                    }
                )
        self._check_turn(turn, blocks, body, where)
        structured.check_turn(
            blocks,
            turn.effective_stop_reason,
            structured.output_schema(body),
            structured.strict_schemas(tools),
            where,
        )
        first = blocks[0]["type"] if blocks else None
        for b in blocks:
            if b["type"] == "tool_use":
                self._thinking_replies[b["id"]] = first in ("thinking", "redacted_thinking")
        return blocks

    def _mcp_blocks(
        self,
        block: McpToolUse,
        servers: Sequence[McpServer],
        listings: dict[str, list[str]],
        used: set[str],
        where: str,
    ) -> list[Json]:
        """``mcp_tool_use`` and the ``mcp_tool_result`` of calling the tool on the request's
        server (or of the recorded result), as the API makes them on its side."""
        server = next((s for s in servers if s.name == block.server), None)
        if server is None:
            raise _problem(
                f"{where} calls MCP tool {block.name!r} on server {block.server!r}, which the "
                f"request's mcp_servers do not name (its servers: {[s.name for s in servers]})"
            )
        use_id = block.id if block.id is not None else new_id(assumed.MCP_TOOL_USE_ID_PREFIX)
        if use_id in used:
            raise _problem(f"{where} reuses tool use id {use_id!r} of this conversation")
        used.add(use_id)
        if block.result is not None:
            is_error, content = block.result[0], [copy.deepcopy(dict(c)) for c in block.result[1]]
        else:
            outcome = self._call_mcp(block, server, listings, where)
            is_error, content = outcome.is_error, outcome.content
        return [
            {
                "type": "mcp_tool_use",
                "id": use_id,
                "name": block.name,
                "server_name": server.name,
                "input": copy.deepcopy(dict(block.input)),
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": use_id,
                "is_error": is_error,
                "content": content,
            },
        ]

    def _list_tools(self, server: McpServer, why: str) -> list[Json]:
        """The server's listing, or the API's 400 (``mcp.ServerUnusable``) naming it."""
        if self._connector is None:
            raise _problem(f"{why}, but no MCP connector is set")
        try:
            return self._connector.list_tools(server)
        except McpUnreachable as exc:
            raise mcp.unreachable(server, str(exc)) from None

    def _list_before_sampling(
        self, servers: Sequence[McpServer]
    ) -> tuple[dict[str, list[str]], list[Json]]:
        """The tool names of each server known before the turn (pinned, sent back, or listed
        now under ``mcp-client-2026-09-15``) and the ``mcp_tool_listing`` blocks of those
        listed now, which the reply carries first."""
        names = {s.name: [t["name"] for t in s.listing] for s in servers if s.listing is not None}
        blocks: list[Json] = []
        for server in servers:
            if server.lists_before_sampling:
                why = f"the request's MCP server {server.name!r} is listed before sampling"
                tools = self._list_tools(server, why)
                names[server.name] = [t["name"] for t in tools]
                blocks.append(mcp.listing_block(server, tools))
        return names, blocks

    def _call_mcp(
        self, block: McpToolUse, server: McpServer, listings: dict[str, list[str]], where: str
    ) -> McpOutcome:
        why = f"{where} calls MCP tool {block.name!r}"
        listed = listings.get(server.name)
        if listed is None:
            tools = self._list_tools(server, why)
            listed = listings[server.name] = [t["name"] for t in tools]
        if block.name not in listed:
            lister = (
                f"the mcp_toolset of server {server.name!r} does not pin in `tools`"
                if server.pinned
                else f"server {server.name!r} does not list"
            )
            raise _problem(f"{why}, which {lister} (its tools: {listed})")
        if not server.allows(block.name):
            raise _problem(
                f"{why} of server {server.name!r}, which the request's tool configuration disables"
            )
        if self._connector is None:
            raise _problem(f"{why}, but no MCP connector is set")
        try:
            return self._connector.call_tool(server, block.name, block.input)
        except McpUnreachable as exc:
            raise mcp.unreachable(server, str(exc)) from None

    @staticmethod
    def _check_turn(turn: Turn, blocks: list[Json], body: Json, where: str) -> None:
        """A turn that keeps to the request's ``tool_choice`` and ``stop_sequences``."""
        calls = [b["name"] for b in blocks if b["type"] == "tool_use"]
        choice = body.get("tool_choice") or {}
        kind = choice.get("type")
        if kind == "none" and calls:
            raise _problem(f"{where} calls {calls}, but the request's tool_choice is 'none'")
        if kind == "any" and not calls:
            raise _problem(f"{where} calls no tool, but the request's tool_choice is 'any'")
        if kind == "tool" and choice.get("name") not in calls:
            raise _problem(
                f"{where} does not call {choice.get('name')!r}, which the request's "
                "tool_choice forces"
            )
        if turn.stop_sequence is not None and turn.stop_sequence not in (
            body.get("stop_sequences") or []
        ):
            raise _problem(
                f"{where} stops on {turn.stop_sequence!r}, which is not among the request's "
                f"stop_sequences {body.get('stop_sequences') or []}"
            )
