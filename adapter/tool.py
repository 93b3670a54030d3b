"""``ContextQMemoryTool`` and ``AsyncContextQMemoryTool``: the memory tool's two shells.

Both subclass the Anthropic SDK's own memory-tool bases, so they drop into
``client.beta.messages.tool_runner(tools=[...])``. All command logic is in
``_memory.MemoryCore``; a shell only runs each request its plans yield with a sync or
async client, and serialises writes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx2
from anthropic.lib.tools import (
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    BetaAsyncFunctionTool,
    BetaFunctionTool,
    beta_async_tool,
    beta_tool,
)
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from adapter import errors
from adapter._api import RETRY_BACKOFF
from adapter._memory import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_VIEW_CHARS,
    MemoryCore,
    Plan,
    check_input,
    explain,
)
from adapter.client import DEFAULT_MAX_RETRIES, AsyncContextQClient, ContextQClient

T = TypeVar("T")
RECALL_DESCRIPTION = (
    "Search the memory files by meaning and wording. Returns the best matching paths under "
    "/memories with a relevance score and a snippet; open one with the memory tool's view."
)


def _drive_sync(client: ContextQClient, plan: Plan[T]) -> T:
    """Run each request the plan yields and send back its result, or throw in its error."""
    value: Any = None
    error: errors.ContextQError | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as done:
            result: T = done.value  # a generator's return value reaches us untyped
            return result
        except errors.ContextQError as exc:
            raise explain(exc) from None
        try:
            value, error = client._send(call), None
        except errors.ContextQError as exc:
            value, error = None, exc


async def _drive_async(client: AsyncContextQClient, plan: Plan[T]) -> T:
    value: Any = None
    error: errors.ContextQError | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(value)
        except StopIteration as done:
            result: T = done.value
            return result
        except errors.ContextQError as exc:
            raise explain(exc) from None
        try:
            value, error = await client._send(call), None
        except errors.ContextQError as exc:
            value, error = None, exc


class ContextQMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool (``memory_20250818``) with every file a ContextQ context.

    Paths: ``/memories`` lists workspaces, ``/memories/<workspace>/a/b.md`` is one
    context with external id ``mem-tool:<workspace>/a/b.md``. With ``workspace="acme"``
    (pinned), ``/memories`` is the root of workspace ``acme`` instead.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx2.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = RETRY_BACKOFF,
        http_client: httpx2.Client | None = None,
        client: ContextQClient | None = None,
        context_type: str = "reference",
        tag: str = "mem-tool",
        workspace: str | None = None,
        auto_create_workspaces: bool = False,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_view_chars: int | None = DEFAULT_MAX_VIEW_CHARS,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.core = MemoryCore(
            tag=tag,
            context_type=context_type,
            workspace=workspace,
            auto_create_workspaces=auto_create_workspaces,
            max_file_bytes=max_file_bytes,
            max_view_chars=max_view_chars,
        )
        self._owns_client = client is None
        self.client = (
            client
            if client is not None
            else ContextQClient(
                api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                retry_backoff=retry_backoff,
                http_client=http_client,
            )
        )
        # Writes through one tool instance run one at a time: an edit can then never land
        # between a rename's copy and its delete, and no two creates race on one tree.
        self._write_lock = threading.Lock()

    def _run(self, plan: Plan[T], *, write: bool = False) -> T:
        if not write:
            return _drive_sync(self.client, plan)
        with self._write_lock:
            return _drive_sync(self.client, plan)

    def call(self, input: object) -> Any:
        """Read the input as the SDK does, refusing what it cannot read (it would raise)."""
        return super().call(check_input(input))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(self.core.view(command.path, command.view_range))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(self.core.create(command.path, command.file_text), write=True)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        plan = self.core.str_replace(command.path, command.old_str, command.new_str)
        return self._run(plan, write=True)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        plan = self.core.insert(command.path, command.insert_line, command.insert_text)
        return self._run(plan, write=True)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(self.core.delete(command.path), write=True)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(self.core.rename(command.old_path, command.new_path), write=True)

    def clear_all_memory(self) -> str:
        """Delete every file this tool wrote (its tag, in its workspace scope); nothing else."""
        return self._run(self.core.clear_all(), write=True)

    def recall(self, query: str, limit: int = 5) -> str:
        """The memory files most relevant to ``query``, with scores and snippets."""
        return self._run(self.core.recall(query, limit))

    def recall_tool(self) -> BetaFunctionTool[Callable[..., str]]:
        """A companion function tool, ``memory_recall``, for the same tool runner."""

        def memory_recall(query: str, limit: int = 5) -> str:
            """Search the memory files by meaning and wording.

            Args:
                query: what to look for.
                limit: how many files to return (1-50).
            """
            return self.recall(query, limit)

        return beta_tool(memory_recall, name="memory_recall", description=RECALL_DESCRIPTION)

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        scope = f"workspace={self.core.pinned!r}" if self.core.pinned else "all workspaces"
        return f"{type(self).__name__}({self.client.base_url}, {scope}, tag={self.core.tag!r})"


class AsyncContextQMemoryTool(BetaAsyncAbstractMemoryTool):
    """The async shell: same options and behaviour as ``ContextQMemoryTool``."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: float | httpx2.Timeout | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        retry_backoff: float = RETRY_BACKOFF,
        http_client: httpx2.AsyncClient | None = None,
        client: AsyncContextQClient | None = None,
        context_type: str = "reference",
        tag: str = "mem-tool",
        workspace: str | None = None,
        auto_create_workspaces: bool = False,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_view_chars: int | None = DEFAULT_MAX_VIEW_CHARS,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.core = MemoryCore(
            tag=tag,
            context_type=context_type,
            workspace=workspace,
            auto_create_workspaces=auto_create_workspaces,
            max_file_bytes=max_file_bytes,
            max_view_chars=max_view_chars,
        )
        self._owns_client = client is None
        self.client = (
            client
            if client is not None
            else AsyncContextQClient(
                api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                retry_backoff=retry_backoff,
                http_client=http_client,
            )
        )
        # asyncio locks bind to a loop on first use; one dict per loop keeps tools usable
        # from several event loops (e.g. one asyncio.run per test).
        self._write_locks: dict[int, asyncio.Lock] = {}

    async def _run(self, plan: Plan[T], *, write: bool = False) -> T:
        if not write:
            return await _drive_async(self.client, plan)
        lock = self._write_locks.setdefault(id(asyncio.get_running_loop()), asyncio.Lock())
        async with lock:
            return await _drive_async(self.client, plan)

    async def call(self, input: object) -> Any:
        return await super().call(check_input(input))

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(self.core.view(command.path, command.view_range))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(self.core.create(command.path, command.file_text), write=True)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        plan = self.core.str_replace(command.path, command.old_str, command.new_str)
        return await self._run(plan, write=True)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        plan = self.core.insert(command.path, command.insert_line, command.insert_text)
        return await self._run(plan, write=True)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(self.core.delete(command.path), write=True)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(self.core.rename(command.old_path, command.new_path), write=True)

    async def clear_all_memory(self) -> str:
        return await self._run(self.core.clear_all(), write=True)

    async def recall(self, query: str, limit: int = 5) -> str:
        return await self._run(self.core.recall(query, limit))

    def recall_tool(self) -> BetaAsyncFunctionTool[Callable[..., Coroutine[Any, Any, str]]]:
        async def memory_recall(query: str, limit: int = 5) -> str:
            """Search the memory files by meaning and wording.

            Args:
                query: what to look for.
                limit: how many files to return (1-50).
            """
            return await self.recall(query, limit)

        return beta_async_tool(memory_recall, name="memory_recall", description=RECALL_DESCRIPTION)

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    def __repr__(self) -> str:
        scope = f"workspace={self.core.pinned!r}" if self.core.pinned else "all workspaces"
        return f"{type(self).__name__}({self.client.base_url}, {scope}, tag={self.core.tag!r})"


def contextq_memory_tool(**options: Any) -> ContextQMemoryTool:
    """The one-line factory: ``tools=[contextq_memory_tool(workspace="acme")]``."""
    return ContextQMemoryTool(**options)
