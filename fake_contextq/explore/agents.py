"""``AgentHandle``: what each explored agent is given, clients whose requests wait at its
gate. An agent reaches the fake only through these; other requests (the test's own set
up and checks, through ``fake.client()``) are not scheduled."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx2

from adapter import wire
from fake_contextq.explore._scheduler import AsyncGatedTransport, GatedTransport, Scheduler
from fake_contextq.service import ContextQService

if TYPE_CHECKING:
    from adapter import (
        AsyncContextQClient,
        AsyncContextQMemoryTool,
        ContextQClient,
        ContextQMemoryTool,
    )
    from adapter.agent_memory import ContextQAgentMemory

__all__ = ["RETRY_BACKOFF", "AgentHandle"]

RETRY_BACKOFF = 0.001  # a retried request is another step of the order: no need to wait


class AgentHandle:
    """One agent of an explored order: its number and name, the key and workspace it
    works with, and clients (raw, typed, the memory tool, the Agent Memory Layer port)
    whose every request the explorer schedules."""

    def __init__(
        self,
        scheduler: Scheduler,
        number: int,
        name: str,
        service: ContextQService,
        base_url: str,
        api_key: str | None,
        workspace: str | None,
    ) -> None:
        self._scheduler = scheduler
        self.id = number
        self.name = name
        self._service = service
        self._base_url = base_url
        self.api_key = api_key
        self.workspace = workspace
        self._closers: list[Callable[[], Any]] = []

    def doing(self, command: str) -> None:
        """Name what this agent does now: the timeline shows it beside its requests (the
        memory tools of this handle name their commands themselves)."""
        self._scheduler.commands[self.id] = command

    # ----- raw clients -----

    def transport(self) -> httpx2.BaseTransport:
        return GatedTransport(self._scheduler, self.id, self._service)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        return AsyncGatedTransport(self._scheduler, self.id, self._service)

    def _headers(self) -> dict[str, str]:
        return {} if self.api_key is None else {"Authorization": wire.authorization(self.api_key)}

    def client(self, **kwargs: Any) -> httpx2.Client:
        """An ``httpx2.Client`` to the fake, with this agent's key."""
        kwargs.setdefault("base_url", self._base_url)
        kwargs.setdefault("headers", self._headers())
        client = httpx2.Client(transport=self.transport(), **kwargs)
        self._closers.append(client.close)
        return client

    def async_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        kwargs.setdefault("base_url", self._base_url)
        kwargs.setdefault("headers", self._headers())
        return httpx2.AsyncClient(transport=self.async_transport(), **kwargs)

    # ----- the adapter's clients -----

    def _key(self) -> str:
        if self.api_key is None:
            raise ValueError("this explorer has no API key: give Explorer(api_key=...)")
        return self.api_key

    def contextq_client(self, **kwargs: Any) -> ContextQClient:
        from adapter import ContextQClient

        kwargs.setdefault("retry_backoff", RETRY_BACKOFF)
        client = ContextQClient(self._key(), http_client=self.client(), **kwargs)
        self._closers.append(client.close)
        return client

    def async_contextq_client(self, **kwargs: Any) -> AsyncContextQClient:
        from adapter import AsyncContextQClient

        kwargs.setdefault("retry_backoff", RETRY_BACKOFF)
        return AsyncContextQClient(self._key(), http_client=self.async_client(), **kwargs)

    def memory_tool(self, **kwargs: Any) -> ContextQMemoryTool:
        """A ``ContextQMemoryTool`` of this agent alone (pinned to the explorer's
        workspace unless ``workspace=`` says otherwise)."""
        from adapter import ContextQMemoryTool

        kwargs.setdefault("workspace", self.workspace)
        kwargs.setdefault("retry_backoff", RETRY_BACKOFF)
        tool = ContextQMemoryTool(self._key(), http_client=self.client(), **kwargs)
        self._closers.append(tool.close)
        run = tool.call

        def call(input: object) -> Any:
            self.doing(command_label(input))
            return run(input)

        tool.call = call  # type: ignore[method-assign]
        return tool

    def async_memory_tool(self, **kwargs: Any) -> AsyncContextQMemoryTool:
        from adapter import AsyncContextQMemoryTool

        kwargs.setdefault("workspace", self.workspace)
        kwargs.setdefault("retry_backoff", RETRY_BACKOFF)
        tool = AsyncContextQMemoryTool(self._key(), http_client=self.async_client(), **kwargs)
        run = tool.call

        async def call(input: object) -> Any:
            self.doing(command_label(input))
            return await run(input)

        tool.call = call  # type: ignore[method-assign]
        return tool

    def agent_memory(self, **kwargs: Any) -> ContextQAgentMemory:
        """A strict ``ContextQAgentMemory`` port of this agent, in the explorer's workspace."""
        from adapter.agent_memory import ContextQAgentMemory

        kwargs.setdefault("strict", True)
        memory = ContextQAgentMemory(self.contextq_client(), self.workspace, **kwargs)
        self._closers.append(memory.close)
        return memory

    def close(self) -> None:
        while self._closers:
            with contextlib.suppress(Exception):  # after a failed order: nothing to add
                self._closers.pop()()

    def __repr__(self) -> str:  # no key: a failing test's report prints values
        return f"AgentHandle({self.name!r})"


def command_label(input: object) -> str:
    """A memory command as the timeline names it: ``str_replace /memories/notes.md``."""
    if not isinstance(input, dict):
        return "?"
    command = str(input.get("command", "?"))
    if command == "rename":
        return f"rename {input.get('old_path')} -> {input.get('new_path')}"
    path = input.get("path")
    return command if path is None else f"{command} {path}"
