"""A scripted model: a faithful offline fake of the Anthropic Messages API playing a script.

A test scripts the assistant's turns, points the SDK at the fake (``client``,
``async_client``, or ``serve()`` for a subprocess), and the fake answers each request
with the next turn, as the API would: ids, usage, stop reasons, streaming events,
server-held threads, context editing and the API's errors. It records every exchange
(``requests``, ``tool_results``, ``transcript()``) and ``verify()`` fails a test whose
script was overrun or left unplayed::

    model = ScriptedModel()
    model.script(memory.view("/memories"), memory.create("/memories/a.md", "A\\n"), text("Done."))
    final = model.client.beta.messages.tool_runner(
        model="claude-opus-4-1", max_tokens=1024, tools=[tool], messages=[...]
    ).until_done()
    model.verify()

What the fake was checked against: the source of ``anthropic`` 2.14.0 (``lib/tools/
_beta_runner.py``, ``lib/threads/``, ``_streaming.py``, ``_error_classes.py``):

- The SDK sends HTTP through ``httpx2``. A sync client cannot take an ASGI transport, so
  both clients here use a transport of this module (``ModelTransport``, and its async
  twin) calling the same engine the ASGI app of ``serve()`` calls. It is not one of
  httpx2's own transports, which vcrpy (8.2 and later) patches, so a test under a vcrpy
  cassette still talks to the script, not to the cassette. Both post to ``/v1/messages``
  (2.14 sends no ``?beta=true``; the fake accepts it too).
- The tool runner runs over a server-held message thread **by default** (``Anthropic`` and
  ``AsyncAnthropic`` have ``_supports_message_threads = True``); ``tool_runner(...,
  thread=False)`` turns it off, and then every turn sends the full history and no
  ``thread``. Threaded, every request carries ``anthropic-beta: message-threads-2026-08-12``
  (appended to any other betas); the first has ``thread: {"type": "create"}`` and the full
  history, later ones ``{"type": "continue", "previous_message_id": <last reply id>}``,
  only the new messages, and no ``system`` / ``tools`` (the server keeps the ones the
  thread was created with, and the SDK says it refuses them on a continue).
- The SDK recovers from ``thread_not_found`` (404) and ``thread_already_continued`` (400)
  by replaying the full history under a new thread, and from
  ``thread_unsupported_request`` (400, ``details.unsupported``) by sending that turn and
  all later ones unthreaded. Error codes are read from ``error.details.error_code``.
- The runner executes tools only when ``stop_reason`` is ``tool_use`` (``pause_turn`` and
  ``compaction`` resume the turn; every other reason stops) and sends all tool results
  of a turn in one user message; a successful result carries no ``is_error``.
- The stream reader skips an event without an ``event:`` line and ``ping`` events; the
  stream helper accumulates ``input_json_delta`` bytes with a partial JSON parser and
  takes ``context_management`` and cumulative ``usage`` from ``message_delta``.

Usage counts come from a stated, pluggable estimate: ``token_estimate`` gets the compact
JSON text of what the model reads (``{"system"?, "tools"?, "messages"}`` as seen after
context editing) for ``input_tokens``, and of the reply's ``content`` for
``output_tokens``; the default is ceil(len / 4). Details the API's documentation leaves
open are in ``fake_anthropic.engine.assumptions``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

import httpx2

from fake_anthropic.connector import McpRoute, SdkConnector
from fake_anthropic.engine.engine import Answer, Engine, TokenEstimate, estimate_tokens
from fake_anthropic.http.asgi import ASGIApp, asgi_app
from fake_anthropic.record import recording as recording
from fake_anthropic.record.match import MatchMode
from fake_anthropic.record.proxy import DEFAULT_UPSTREAM
from fake_anthropic.record.recorder import Recorder
from fake_anthropic.record.replay import Replay
from fake_anthropic.script.json_script import items_from_json
from fake_anthropic.script.records import (
    RecordedRequest,
    ToolResult,
)
from fake_anthropic.script.transcript import transcript
from fake_anthropic.script.turns import ScriptItem, check_item

if TYPE_CHECKING:
    import anthropic

    from fake_server import ServedApp

BASE_URL = "http://scripted-model.test"
API_KEY = "sk-ant-scripted-model-no-key"


def _streams(answer: Answer) -> bool:
    """Whether the answer is an event stream, handed over an event (chunk) at a time as a
    server sends it; any other answer is one body with its length, as the API sends JSON,
    which the client then need not read through its streaming machinery."""
    return any(
        name.lower() == "content-type" and value.startswith("text/event-stream")
        for name, value in answer.headers
    )


def _response(answer: Answer) -> httpx2.Response:
    content = iter(answer.chunks) if _streams(answer) else answer.body
    return httpx2.Response(answer.status, headers=answer.headers, content=content)


async def _achunks(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


class ModelTransport(httpx2.BaseTransport):
    """The sync client's way in: each request answered by the model, in the calling thread."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        return self.model.handle(request)


class AsyncModelTransport(httpx2.AsyncBaseTransport):
    """The async client's way in (the engine is synchronous and quick)."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self.model.ahandle(request)


class ScriptedModel:
    """A fake Messages API answering each request with the next scripted turn.

    ``script(*items)`` appends turns: ``turn(...)``, a bare block (``text``,
    ``tool_use``, ``memory.*``), or a function of the ``Conversation`` so far returning a
    turn or a block. ``client`` / ``async_client`` reach it with no network and no key.
    A request using a beta, field, tool type or block type the model does not model is a
    script problem naming it; ``ignore_betas`` lists betas to play as if not sent
    (``fake_anthropic.engine.surface`` classifies every name).
    """

    def __init__(
        self,
        *,
        token_estimate: TokenEstimate = estimate_tokens,
        ignore_betas: Iterable[str] = (),
    ) -> None:
        self._connector = SdkConnector()
        self._engine: Engine | Replay | Recorder = Engine(
            token_estimate, self._connector, ignore_betas
        )
        self._client: anthropic.Anthropic | None = None
        self._async_client: anthropic.AsyncAnthropic | None = None
        self._api_key = API_KEY

    @classmethod
    def from_json(
        cls,
        source: str | os.PathLike[str] | list[object],
        *,
        token_estimate: TokenEstimate = estimate_tokens,
        ignore_betas: Iterable[str] = (),
    ) -> ScriptedModel:
        """A model scripted from JSON: a list of items, each a turn (a list of content
        blocks in the API's shape, or ``{"content": [...], "stop_reason": ...,
        "stop_sequence": ..., "usage": {...}}``), ``{"type": "compaction", "summary": ...}``
        or ``{"type": "api_error", "status": ..., "error": {"type": ..., "message": ...},
        "retry_after": ...}``; ``source`` is that list or the path of a file holding it."""
        data = source if isinstance(source, list) else json.loads(Path(source).read_text("utf-8"))
        model = cls(token_estimate=token_estimate, ignore_betas=ignore_betas)
        model.script(*items_from_json(data))
        return model

    @classmethod
    def from_recording(
        cls, path: str | os.PathLike[str], *, match: MatchMode = "strict"
    ) -> ScriptedModel:
        """A model replaying a recording of ``fake-anthropic record`` in order: each
        request answered with the recorded answer (a stream when the request streams).
        ``match="strict"``: each request must equal the recorded one once ids, thread ids,
        ``cache_control``, ``metadata``, ``stream`` and key order are normalised away; a
        mismatch answers an API error showing the differences and fails ``verify()``.
        ``match="order"``: only the sequence of endpoints must match."""
        model = cls()
        model._engine = Replay(recording.load(path), match, os.fspath(path))
        return model

    @classmethod
    def recorder(
        cls,
        out: str | os.PathLike[str],
        *,
        api_key: str,
        upstream: str = DEFAULT_UPSTREAM,
    ) -> ScriptedModel:
        """A model that is the ``upstream`` API itself, reached through a recording proxy
        served on a loopback port: ``client`` / ``async_client`` send ``api_key`` there,
        every finished exchange is written to ``out`` (without credentials), and
        ``requests``, ``tool_results`` and ``transcript()`` describe the run as for a
        scripted model. ``close()`` stops the proxy."""
        model = cls()
        recorder = Recorder(upstream, out)
        recorder.start()
        model._engine = recorder
        model._api_key = api_key
        return model

    def close(self) -> None:
        """Stop what the model serves in the background (a recorder's proxy); a scripted
        or replaying model holds nothing, so this does nothing for it."""
        if isinstance(self._engine, Recorder):
            self._engine.close()

    def route_mcp(self, url: str, server: McpRoute) -> None:
        """Answer the MCP connector's calls to ``url`` in-process: ``server(token)`` (the
        request's ``authorization_token``) returns an ``mcp`` server object, for example
        ``lambda token: fake.mcp_server(token)``. Other URLs are reached over HTTP."""
        self._connector.route(url, server)

    # --- the script ---------------------------------------------------------------

    def script(self, *items: ScriptItem) -> ScriptedModel:
        """Append turns to the script (callable repeatedly); returns the model."""
        for item in items:
            check_item(item)
        self._engine.add(items)
        return self

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return self._engine.remaining

    def allow_unused(self) -> None:
        """Let ``verify()`` pass with turns left unplayed."""
        self._engine.allow_unused()

    def verify(self) -> None:
        """Raise ``AssertionError`` if a request could not be answered from the script (it
        was used up, a script function failed, a call named an undeclared tool...), or if
        turns were left unplayed and ``allow_unused()`` was not called."""
        self._engine.verify()

    def problems(self) -> list[str]:
        """What ``verify()`` would report, as a list (empty when it would pass)."""
        return self._engine.problems()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Leaving the block stops what the model serves and, unless the block raised,
        verifies it: ``with ScriptedModel.from_recording(FILE) as model:`` fails on drift
        or an unplayed recording without a ``verify()`` to forget."""
        self.close()
        if exc_type is None:
            self.verify()

    # --- the record ---------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request in order, refused ones included."""
        return self._engine.requests

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every ``tool_result`` block the client sent, in order, each once."""
        return self._engine.tool_results

    def transcript(self) -> str:
        """The exchanges as stable text (no ids, no times) for snapshots and failure reports."""
        return transcript(self._engine.requests)

    # --- reaching it --------------------------------------------------------------

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        """Answer an ``httpx2`` request (the sync transport's handler)."""
        return _response(self._answer(request))

    async def ahandle(self, request: httpx2.Request) -> httpx2.Response:
        """Answer an ``httpx2`` request (the async transport's handler)."""
        await request.aread()
        answer = self._answer(request)
        content = _achunks(answer.chunks) if _streams(answer) else answer.body
        return httpx2.Response(answer.status, headers=answer.headers, content=content)

    def _answer(self, request: httpx2.Request) -> Answer:
        return self._engine.handle(
            request.method,
            request.url.path,
            request.url.query.decode("latin-1"),
            request.headers.multi_items(),
            request.content,
        )

    @property
    def client(self) -> anthropic.Anthropic:
        """An ``anthropic.Anthropic`` wired to this model (no network, no key, no retries)."""
        import anthropic  # here: serving a script (fake-anthropic serve) needs no SDK

        if self._client is None:
            if isinstance(self._engine, Recorder):
                self._client = anthropic.Anthropic(
                    api_key=self._api_key, base_url=self._engine.url, max_retries=0
                )
            else:
                self._client = anthropic.Anthropic(
                    api_key=API_KEY,
                    base_url=BASE_URL,
                    max_retries=0,
                    http_client=httpx2.Client(transport=ModelTransport(self)),
                )
        return self._client

    @property
    def async_client(self) -> anthropic.AsyncAnthropic:
        """An ``anthropic.AsyncAnthropic`` wired to this model, like ``client``."""
        import anthropic

        if self._async_client is None:
            if isinstance(self._engine, Recorder):
                self._async_client = anthropic.AsyncAnthropic(
                    api_key=self._api_key, base_url=self._engine.url, max_retries=0
                )
            else:
                self._async_client = anthropic.AsyncAnthropic(
                    api_key=API_KEY,
                    base_url=BASE_URL,
                    max_retries=0,
                    http_client=httpx2.AsyncClient(transport=AsyncModelTransport(self)),
                )
        return self._async_client

    @property
    def app(self) -> ASGIApp:
        """The model as an ASGI app (``POST /v1/messages``); a recorder's is its proxy."""
        if isinstance(self._engine, Recorder):
            return self._engine.proxy
        return asgi_app(self._engine)

    def serve(
        self, host: str = "127.0.0.1", port: int = 0, *, ready_timeout: float = 10.0
    ) -> ServedApp:
        """Serve the model over HTTP with uvicorn on a thread, ready when this returns; use
        it as a context manager and give its ``url`` as ``ANTHROPIC_BASE_URL``."""
        from fake_server import ServedApp

        served = ServedApp(self.app, host, port, ready_timeout=ready_timeout, name="fake-anthropic")
        served.start()
        return served

    def __repr__(self) -> str:
        return (
            f"<ScriptedModel {len(self.requests)} request(s), {self.remaining} turn(s) remaining>"
        )
