"""The async twin of every backend: ``AsyncAgentMemory`` runs the synchronous backend's
methods on worker threads, so an asyncio agent awaits its memory without blocking its
loop, and the backends' logic exists once.

Not on the loop's default executor (``asyncio.to_thread``): its few threads made calls
awaited together queue, each waiting out the deadlines of those before it, and
``asyncio.run`` and the interpreter's exit wait for a call nobody awaits any more until its
deadline. The deadline's daemon threads start a call when it is awaited and hold no exit."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, ParamSpec, Self, TypeVar

from adapter import _deadline
from adapter.agent_memory.port import DEFAULT_MAX_CHARS, AgentMemory, Failure
from adapter.agent_memory.records import Capabilities, IssueEvent, RunRecord
from adapter.agent_memory.select import DEFAULT_DIRECTORY, select_agent_memory
from adapter.types import AgentTask, BootPack, Lesson, Resume

P = ParamSpec("P")
T = TypeVar("T")


async def _off_loop(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``func(*args, **kwargs)`` on a daemon thread (with the caller's context vars),
    awaited; a result that comes after its awaiter left (cancelled, the loop closed) is
    dropped."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if future.done():  # cancelled meanwhile
            return
        ok, value = outcome
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, func(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiter
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody awaits it
            loop.call_soon_threadsafe(settle, outcome)

    _deadline.start(partial(contextvars.copy_context().run, work))
    return await future


class AsyncAgentMemory:
    """The same port, awaited; ``sync`` is the backend it runs."""

    def __init__(self, sync: AgentMemory) -> None:
        self.sync = sync

    @property
    def capabilities(self) -> Capabilities:
        return self.sync.capabilities

    @property
    def failures(self) -> list[Failure]:
        return self.sync.failures

    async def write_record(self, record: RunRecord) -> RunRecord | None:
        return await _off_loop(self.sync.write_record, record)

    async def list_records(self) -> list[RunRecord]:
        return await _off_loop(self.sync.list_records)

    async def get_record(self, run_id: str) -> RunRecord | None:
        return await _off_loop(self.sync.get_record, run_id)

    async def latest_record(self) -> RunRecord | None:
        return await _off_loop(self.sync.latest_record)

    async def list_open_issues(self) -> list[IssueEvent]:
        return await _off_loop(self.sync.list_open_issues)

    async def build_preamble(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        parent_run_id: str | None = None,
        chat_session_id: str | None = None,
    ) -> str:
        return await _off_loop(
            lambda: self.sync.build_preamble(
                query,
                top_k=top_k,
                max_chars=max_chars,
                parent_run_id=parent_run_id,
                chat_session_id=chat_session_id,
            )
        )

    async def boot(self, goal: str, *, token_budget: int | None = None) -> BootPack | None:
        return await _off_loop(lambda: self.sync.boot(goal, token_budget=token_budget))

    async def begin_run(self, record: RunRecord) -> int | None:
        return await _off_loop(self.sync.begin_run, record)

    async def checkpoint(
        self, run_id: str, state: Mapping[str, Any], *, summary: str | None = None
    ) -> int | None:
        return await _off_loop(lambda: self.sync.checkpoint(run_id, state, summary=summary))

    async def resume(self, run_id: str) -> Resume | None:
        return await _off_loop(self.sync.resume, run_id)

    async def open_tasks(self, run_id: str) -> list[AgentTask]:
        return await _off_loop(self.sync.open_tasks, run_id)

    async def add_lesson(
        self, text: str, *, run_id: str | None = None, tags: Iterable[str] = ()
    ) -> Lesson | None:
        return await _off_loop(lambda: self.sync.add_lesson(text, run_id=run_id, tags=tuple(tags)))

    async def handoff(self, run_id: str) -> str | None:
        return await _off_loop(self.sync.handoff, run_id)

    async def close(self) -> None:
        """The backend's ``close()``, off the loop (closing a session may wait on it)."""
        await _off_loop(self.sync.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def select_async_agent_memory(
    env: Mapping[str, str] | None = None,
    *,
    directory: str | os.PathLike[str] = DEFAULT_DIRECTORY,
    strict: bool = False,
    timeout: float | None = None,
) -> AsyncAgentMemory:
    """``select_agent_memory``, its probe run off the loop."""
    chosen = await _off_loop(
        lambda: select_agent_memory(env, directory=directory, strict=strict, timeout=timeout)
    )
    return AsyncAgentMemory(chosen)
