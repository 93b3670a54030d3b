"""``ContextQClient`` and ``AsyncContextQClient``: typed, retrying clients on httpx2.

Both execute the request plans of ``_api``; they differ only in how they wait.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import time
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeGuard, TypeVar

import httpx2

from adapter import _api, _deadline, errors, wire
from adapter._tls import default_ssl_context
from adapter.types import (
    AgentSession,
    AgentTask,
    BootPack,
    BulkUpsertResult,
    Checkpoint,
    Context,
    ContextInput,
    ContextPage,
    ContextSummary,
    Handoff,
    Lesson,
    Resume,
    SearchResult,
    Workspace,
)
from adapter.wire import KEY_RE, LIST_MAX_LIMIT

T = TypeVar("T")
log = logging.getLogger("adapter")

DEFAULT_BASE_URL = "http://localhost:38200"
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_RETRIES = 2
KEY_ENV = "CONTEXT_API_KEY"
URL_ENV = "CONTEXT_API_URL"
UNSET: Any = object()


def _check_options(timeout: object, max_retries: object, retry_backoff: object) -> None:
    """Refuse options that make no sense, when the client is built rather than on the first
    retry (``timeout`` may be an ``httpx2.Timeout``: each of its limits is checked)."""
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be a whole number >= 0, got {max_retries!r}")
    if not _is_number(retry_backoff) or not 0 <= retry_backoff < math.inf:
        raise ValueError(
            f"retry_backoff must be a finite number of seconds >= 0, got {retry_backoff!r}"
        )
    if isinstance(timeout, httpx2.Timeout):
        limits = {
            "connect": timeout.connect,
            "read": timeout.read,
            "write": timeout.write,
            "pool": timeout.pool,
        }
        for name, value in limits.items():
            if value is not None and not (_is_number(value) and 0 < value < math.inf):
                raise ValueError(
                    f"timeout's {name} limit must be a finite number of seconds > 0 or None, "
                    f"got {value!r}"
                )
    elif timeout is not None and not (_is_number(timeout) and 0 < timeout < math.inf):
        raise ValueError(
            f"timeout must be a finite number of seconds > 0 (or None for the default "
            f"{DEFAULT_TIMEOUT:g} s), got {timeout!r}"
        )


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _sleep(seconds: float) -> None:
    """How the sync client waits between attempts (one place, so tests can stand in)."""
    time.sleep(seconds)


async def _async_sleep(seconds: float) -> None:
    """How the async client waits between attempts."""
    await asyncio.sleep(seconds)


class _Options:
    """Resolved options shared by both clients; the key is kept out of every repr."""

    def __init__(
        self,
        api_key: str | None,
        base_url: str | None,
        timeout: float | httpx2.Timeout | None,
        max_retries: int,
        retry_backoff: float,
        http_client: httpx2.Client | httpx2.AsyncClient | None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get(KEY_ENV)
        if not key:
            raise ValueError(f"No ContextQ API key: pass api_key= or set {KEY_ENV}.")
        if not KEY_RE.fullmatch(key):
            raise ValueError(
                "The ContextQ API key does not look like one (expected 'sk_live_' and 40 "
                "lowercase hex characters); check the value of api_key / " + KEY_ENV + "."
            )
        _check_options(timeout, max_retries, retry_backoff)
        given_url = str(http_client.base_url) if http_client is not None else ""
        url = base_url or given_url or os.environ.get(URL_ENV) or DEFAULT_BASE_URL
        shown = errors.redact(url)
        try:
            parsed = httpx2.URL(url)
        except httpx2.InvalidURL as exc:
            raise ValueError(
                f"The ContextQ base URL {shown!r} is not a URL: {errors.redact(str(exc))}"
            ) from None
        except UnicodeEncodeError:
            raise ValueError(
                f"The ContextQ base URL {shown!r} holds an unpaired surrogate, which cannot "
                "be encoded as UTF-8"
            ) from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"The ContextQ base URL {shown!r} must be an http(s) URL with a host")
        if parsed.userinfo:
            raise ValueError(
                f"The ContextQ base URL {shown!r} must not carry a user name or password: "
                "ContextQ authenticates with the API key alone"
            )
        if parsed.query or parsed.fragment:
            raise ValueError(
                f"The ContextQ base URL {shown!r} must not carry a query or a fragment: "
                "request paths are appended to it"
            )
        self.base_url = url.rstrip("/")
        self.headers = {"Authorization": wire.authorization(key), "Accept": "application/json"}
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.rng = random.Random()

    def url(self, path: str) -> str:
        return self.base_url + path

    def request_kwargs(self, call: _api.Call[Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"headers": self.headers}
        if call.params:
            kwargs["params"] = dict(call.params)
        if call.json is not None:
            kwargs["json"] = call.json
        if self.timeout is not None:
            kwargs["timeout"] = self.timeout
        return kwargs

    def log_retry(self, call: _api.Call[Any], attempt: int, why: str, delay: float) -> None:
        log.info(
            "ContextQ %s %s: %s; retry %d of %d in %.2fs",
            call.method,
            call.path,
            why,
            attempt + 1,
            self.max_retries,
            delay,
        )

    def exchange(
        self, call: _api.Call[T]
    ) -> Generator[float, httpx2.Response | httpx2.RequestError, T]:
        """One call's attempts, free of I/O: yields the seconds to wait before each
        request (0 for the first), is sent each attempt's answer or transport error, and
        returns the parsed result or raises the typed error. Both clients drive it."""
        attempt = 0
        outcome = yield 0.0
        while True:
            response = outcome if isinstance(outcome, httpx2.Response) else None
            if _api.may_retry(call, attempt, self.max_retries, response):
                delay = _api.retry_delay(attempt, response, self.retry_backoff, self.rng)
                why = f"status {response.status_code}" if response else type(outcome).__name__
                self.log_retry(call, attempt, why, delay)
                attempt += 1
                outcome = yield delay
                continue
            if response is None:
                assert isinstance(outcome, httpx2.RequestError)
                raise _api.transport_error(call, outcome) from None
            return _api.finish(call, response)


def _closed(call: _api.Call[Any]) -> errors.ContextQConnectionError:
    """A request on a closed client: a connection error like any other the caller already
    handles (the memory tool's message, the agent memory's counted failure), not httpx's
    ``RuntimeError``."""
    return errors.ContextQConnectionError(
        "this ContextQ client is closed; make a new one", method=call.method, path=call.path
    )


def _within_deadline(call: _api.Call[Any], timeout: Any) -> Any:
    """The request's timeouts cut to what the deadline of the call in progress leaves (see
    ``adapter._deadline``); none left is a ``ContextQTimeoutError`` before it is sent."""
    left = _deadline.remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise errors.ContextQTimeoutError(
            "no time left before the call's deadline", method=call.method, path=call.path
        )
    limits = httpx2.Timeout(timeout)
    cut = [left if t is None else min(t, left) for t in (limits.connect, limits.read,
                                                           limits.write, limits.pool)]  # fmt: skip
    return httpx2.Timeout(connect=cut[0], read=cut[1], write=cut[2], pool=cut[3])


class ContextQClient:
    """A typed client for ContextQ's HTTP API.

    ``api_key`` defaults to ``$CONTEXT_API_KEY``; ``base_url`` to ``$CONTEXT_API_URL``,
    else ``http://localhost:38200``. Idempotent calls are retried ``max_retries`` times
    on 5xx answers and transport errors, with exponential backoff and jitter; 4xx never
    are. ``http_client`` uses your own ``httpx2.Client`` (e.g. one bound to a fake).
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx2.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = _api.RETRY_BACKOFF,
        http_client: httpx2.Client | None = None,
    ) -> None:
        self._opts = _Options(api_key, base_url, timeout, max_retries, retry_backoff, http_client)
        if http_client is not None and not isinstance(http_client, httpx2.Client):
            raise TypeError(f"http_client must be an httpx2.Client, got {type(http_client)!r}")
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx2.Client(
                timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                verify=default_ssl_context(),
            )
        )

    @property
    def base_url(self) -> str:
        return self._opts.base_url

    def _send(self, call: _api.Call[T]) -> T:
        """Run one request plan: every method is one, and the memory tool runs the plans
        its core yields through here, so both share the retries."""
        if self._http.is_closed:
            raise _closed(call)
        plan = self._opts.exchange(call)
        delay = next(plan)
        while True:
            if delay:
                _sleep(delay)
            kwargs = self._opts.request_kwargs(call)  # and, within a deadline, stop at it
            kwargs["timeout"] = _within_deadline(call, kwargs.get("timeout", self._http.timeout))
            outcome: httpx2.Response | httpx2.RequestError
            try:
                outcome = self._http.request(call.method, self._opts.url(call.path), **kwargs)
            except httpx2.RequestError as exc:  # transport failures and undecodable bodies
                outcome = exc
            try:
                delay = plan.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result

    # ----- contexts -----

    def create_context(
        self,
        type: str,
        title: str,
        content: str,
        *,
        external_id: str | None = None,
        tags: Sequence[str] = (),
        workspace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Context:
        return self._send(
            _api.create_context(
                type,
                title,
                content,
                external_id=external_id,
                tags=tags,
                workspace=workspace,
                metadata=metadata,
            )
        )

    def list_contexts(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> ContextPage:
        return self._send(
            _api.list_contexts(workspace=workspace, tag=tag, type=type, limit=limit, offset=offset)
        )

    def iter_contexts(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        page_size: int = LIST_MAX_LIMIT,
    ) -> Iterator[ContextSummary]:
        """Every matching summary, paging through as many pages as it takes."""
        offset = 0
        while True:
            page = self.list_contexts(
                workspace=workspace, tag=tag, type=type, limit=page_size, offset=offset
            )
            yield from page.items
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    def list_context_keys(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> tuple[list[tuple[int, str | None, Any]], int]:
        """One page of ``(id, external_id, metadata)`` and the total: a listing without
        building whole rows, for callers that page through thousands of them."""
        return self._send(
            _api.list_context_keys(workspace=workspace, tag=tag, limit=limit, offset=offset)
        )

    def get_context(self, context_id: int) -> Context:
        return self._send(_api.get_context(context_id))

    def get_context_by_external_id(self, external_id: str) -> Context:
        return self._send(_api.get_context_by_external_id(external_id))

    def update_context(self, context_id: int, **fields: Any) -> Context:
        """Replace the given fields (``content``, ``title``, ``tags``, ``external_id``, ...)."""
        return self._send(_api.update_context(context_id, fields))

    def delete_context(self, context_id: int) -> None:
        self._send(_api.delete_context(context_id))

    def bulk_upsert(self, items: Iterable[ContextInput | Mapping[str, Any]]) -> BulkUpsertResult:
        return self._send(_api.bulk_upsert(items))

    # ----- workspaces -----

    def list_workspaces(self) -> list[Workspace]:
        return self._send(_api.list_workspaces())

    def create_workspace(self, slug: str, name: str | None = None) -> Workspace:
        return self._send(_api.create_workspace(slug, name))

    def archive_workspace(self, slug: str) -> Workspace:
        return self._send(_api.archive_workspace(slug))

    def delete_workspace(self, slug: str) -> None:
        self._send(_api.delete_workspace(slug))

    # ----- search -----

    def search(
        self,
        query: str,
        *,
        type: str | None = None,
        workspace: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SearchResult]:
        return self._send(
            _api.search(query, type=type, workspace=workspace, tags=tags, limit=limit)
        )

    # ----- Agent Memory Layer -----

    def start_session(
        self,
        *,
        workspace: str | None = None,
        parent_session_id: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AgentSession:
        """Start an agent session. An unknown ``workspace`` slug is silently dropped by
        ContextQ (the session gets no workspace): create the workspace first."""
        return self._send(_api.start_session(workspace, parent_session_id, metadata))

    def get_session(self, session_id: int) -> AgentSession:
        return self._send(_api.get_session(session_id))

    def end_session(self, session_id: int, status: str, summary: str | None = None) -> AgentSession:
        return self._send(_api.end_session(session_id, status, summary))

    def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None = None
    ) -> Checkpoint:
        """Checkpoint under the seq lock: ``seq`` must be the last one + 1, else
        ``SeqConflictError`` (``.expected``)."""
        return self._send(_api.checkpoint(session_id, seq, state, summary))

    def resume(self, session_id: int) -> Resume:
        return self._send(_api.resume(session_id))

    def upsert_task(
        self,
        session_id: int,
        key: str,
        title: str,
        *,
        status: str | None = None,
        parent_key: str | None = None,
        evidence: str | None = None,
    ) -> AgentTask:
        return self._send(_api.upsert_task(session_id, key, title, status, parent_key, evidence))

    def tick_task(self, task_id: int, evidence: str) -> AgentTask:
        return self._send(_api.tick_task(task_id, evidence))

    def list_tasks(self, session_id: int) -> list[AgentTask]:
        return self._send(_api.list_tasks(session_id))

    def add_lesson(
        self,
        text: str,
        *,
        workspace: str | None = None,
        session_id: int | None = None,
        tags: Sequence[str] = (),
    ) -> Lesson:
        return self._send(_api.add_lesson(text, workspace, session_id, tags))

    def handoff(self, *, session_id: int | None = None, workspace: str | None = None) -> Handoff:
        return self._send(_api.handoff(session_id, workspace))

    def boot(
        self, goal: str, *, workspace: str | None = None, token_budget: int | None = None
    ) -> BootPack:
        return self._send(_api.boot(goal, workspace, token_budget))

    # ----- life -----

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={errors.redact(self.base_url)!r}, api_key=<hidden>)"


class AsyncContextQClient:
    """The async twin of ``ContextQClient``: same options, same methods, awaited."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx2.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = _api.RETRY_BACKOFF,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._opts = _Options(api_key, base_url, timeout, max_retries, retry_backoff, http_client)
        if http_client is not None and not isinstance(http_client, httpx2.AsyncClient):
            raise TypeError(f"http_client must be an httpx2.AsyncClient, got {type(http_client)!r}")
        self._owns_http = http_client is None
        self._http = (
            http_client
            if http_client is not None
            else httpx2.AsyncClient(
                timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
                verify=default_ssl_context(),
            )
        )

    @property
    def base_url(self) -> str:
        return self._opts.base_url

    async def _send(self, call: _api.Call[T]) -> T:
        """Run one request plan, as ``ContextQClient._send``."""
        if self._http.is_closed:
            raise _closed(call)
        plan = self._opts.exchange(call)
        delay = next(plan)
        while True:
            if delay:
                await _async_sleep(delay)
            outcome: httpx2.Response | httpx2.RequestError
            try:
                outcome = await self._http.request(
                    call.method, self._opts.url(call.path), **self._opts.request_kwargs(call)
                )
            except httpx2.RequestError as exc:  # transport failures and undecodable bodies
                outcome = exc
            try:
                delay = plan.send(outcome)
            except StopIteration as done:
                result: T = done.value
                return result

    async def create_context(
        self,
        type: str,
        title: str,
        content: str,
        *,
        external_id: str | None = None,
        tags: Sequence[str] = (),
        workspace: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Context:
        return await self._send(
            _api.create_context(
                type,
                title,
                content,
                external_id=external_id,
                tags=tags,
                workspace=workspace,
                metadata=metadata,
            )
        )

    async def list_contexts(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> ContextPage:
        return await self._send(
            _api.list_contexts(workspace=workspace, tag=tag, type=type, limit=limit, offset=offset)
        )

    async def iter_contexts(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        page_size: int = LIST_MAX_LIMIT,
    ) -> AsyncIterator[ContextSummary]:
        offset = 0
        while True:
            page = await self.list_contexts(
                workspace=workspace, tag=tag, type=type, limit=page_size, offset=offset
            )
            for item in page.items:
                yield item
            offset += len(page.items)
            if not page.items or offset >= page.total:
                return

    async def list_context_keys(
        self,
        *,
        workspace: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> tuple[list[tuple[int, str | None, Any]], int]:
        return await self._send(
            _api.list_context_keys(workspace=workspace, tag=tag, limit=limit, offset=offset)
        )

    async def get_context(self, context_id: int) -> Context:
        return await self._send(_api.get_context(context_id))

    async def get_context_by_external_id(self, external_id: str) -> Context:
        return await self._send(_api.get_context_by_external_id(external_id))

    async def update_context(self, context_id: int, **fields: Any) -> Context:
        return await self._send(_api.update_context(context_id, fields))

    async def delete_context(self, context_id: int) -> None:
        await self._send(_api.delete_context(context_id))

    async def bulk_upsert(
        self, items: Iterable[ContextInput | Mapping[str, Any]]
    ) -> BulkUpsertResult:
        return await self._send(_api.bulk_upsert(items))

    async def list_workspaces(self) -> list[Workspace]:
        return await self._send(_api.list_workspaces())

    async def create_workspace(self, slug: str, name: str | None = None) -> Workspace:
        return await self._send(_api.create_workspace(slug, name))

    async def archive_workspace(self, slug: str) -> Workspace:
        return await self._send(_api.archive_workspace(slug))

    async def delete_workspace(self, slug: str) -> None:
        await self._send(_api.delete_workspace(slug))

    async def search(
        self,
        query: str,
        *,
        type: str | None = None,
        workspace: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[SearchResult]:
        return await self._send(
            _api.search(query, type=type, workspace=workspace, tags=tags, limit=limit)
        )

    async def start_session(
        self,
        *,
        workspace: str | None = None,
        parent_session_id: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AgentSession:
        return await self._send(_api.start_session(workspace, parent_session_id, metadata))

    async def get_session(self, session_id: int) -> AgentSession:
        return await self._send(_api.get_session(session_id))

    async def end_session(
        self, session_id: int, status: str, summary: str | None = None
    ) -> AgentSession:
        return await self._send(_api.end_session(session_id, status, summary))

    async def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None = None
    ) -> Checkpoint:
        return await self._send(_api.checkpoint(session_id, seq, state, summary))

    async def resume(self, session_id: int) -> Resume:
        return await self._send(_api.resume(session_id))

    async def upsert_task(
        self,
        session_id: int,
        key: str,
        title: str,
        *,
        status: str | None = None,
        parent_key: str | None = None,
        evidence: str | None = None,
    ) -> AgentTask:
        return await self._send(
            _api.upsert_task(session_id, key, title, status, parent_key, evidence)
        )

    async def tick_task(self, task_id: int, evidence: str) -> AgentTask:
        return await self._send(_api.tick_task(task_id, evidence))

    async def list_tasks(self, session_id: int) -> list[AgentTask]:
        return await self._send(_api.list_tasks(session_id))

    async def add_lesson(
        self,
        text: str,
        *,
        workspace: str | None = None,
        session_id: int | None = None,
        tags: Sequence[str] = (),
    ) -> Lesson:
        return await self._send(_api.add_lesson(text, workspace, session_id, tags))

    async def handoff(
        self, *, session_id: int | None = None, workspace: str | None = None
    ) -> Handoff:
        return await self._send(_api.handoff(session_id, workspace))

    async def boot(
        self, goal: str, *, workspace: str | None = None, token_budget: int | None = None
    ) -> BootPack:
        return await self._send(_api.boot(goal, workspace, token_budget))

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={errors.redact(self.base_url)!r}, api_key=<hidden>)"
