"""The fixtures: a fresh fake ContextQ per test, and everything bound to it.

Nothing of the fake or the adapter is imported until a fixture runs, so a session that
loads the plugin and uses none of them pays nothing for it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import pytest

from contextq_fixtures._extra import needs_extra
from contextq_fixtures._state import EXPLORED_KEY, FAKE_KEY, MEMORY_BEFORE_KEY, marker_options
from contextq_fixtures.report import note_calls, recording

if TYPE_CHECKING:
    from mcp.server import Server

    from adapter import (
        AsyncContextQClient,
        AsyncContextQMemoryTool,
        ContextQClient,
        ContextQMemoryTool,
    )
    from adapter.agent_memory import AgentMemory, ContextQAgentMemory
    from fake_contextq import FakeContextQ, ServedFake, Tenant
    from fake_contextq.explore import Agent, Exploration, Explorer
    from fake_contextq.mcp import SyncMcpClient

RETRY_BACKOFF = 0.001  # tests inject faults; retries need not wait


def _last_number(fake: FakeContextQ) -> int:
    entries = fake.journal[-1:]
    return entries[0].number if entries else 0


def _numbers_since(fake: FakeContextQ, after: int) -> tuple[int, ...]:
    return tuple(e.number for e in fake.journal if e.number > after)


def _observe(request: pytest.FixtureRequest, tool: Any, fake: FakeContextQ) -> None:
    """For the HTML report: note each command the tool runs, its result and the journal
    numbers of the requests it made (only when a report is asked for)."""
    if not recording(request.config):
        return
    from contextq_fixtures.html_report import MemoryCall, memory_files

    calls = note_calls(request.node)
    run = tool.call

    def first() -> int:
        if not calls:  # what the files were when the agent began to work on them
            request.node.stash[MEMORY_BEFORE_KEY] = memory_files(fake)
        return _last_number(fake)

    def note(command: Any, start: int, result: object, failed: bool) -> None:
        calls.append(MemoryCall(command, str(result), failed, _numbers_since(fake, start)))

    if inspect.iscoroutinefunction(run):

        async def call_async(input: object) -> Any:
            start = first()
            try:
                result = await run(input)
            except Exception as exc:
                note(input, start, exc, True)
                raise
            note(input, start, result, False)
            return result

        tool.call = call_async
        return

    def call(input: object) -> Any:
        start = first()
        try:
            result = run(input)
        except Exception as exc:
            note(input, start, exc, True)
            raise
        note(input, start, result, False)
        return result

    tool.call = call


@pytest.fixture
def fake_contextq(request: pytest.FixtureRequest) -> Iterator[FakeContextQ]:
    """A fresh, strict ContextQ for this test; ``@pytest.mark.contextq(...)`` configures it
    (``embeddings=``, ``llm=``)."""
    options = marker_options(request.node)
    with needs_extra("fake_contextq"):
        from fake_contextq import FakeContextQ

    fake = FakeContextQ(
        embeddings=options.get("embeddings", True),
        llm=options.get("llm"),
    )
    request.node.stash[FAKE_KEY] = fake
    yield fake
    fake.close()


@pytest.fixture
def contextq_tenant(request: pytest.FixtureRequest, fake_contextq: FakeContextQ) -> Tenant:
    """A tenant of the fake, on the plan the ``contextq`` marker names (``free`` by default)."""
    from fake_contextq.domain.quota import DEFAULT_PLAN

    options = marker_options(request.node)
    return fake_contextq.create_tenant(
        options.get("tenant", "test-tenant"), plan=options.get("plan", DEFAULT_PLAN)
    )


@pytest.fixture
def contextq_api_key(
    request: pytest.FixtureRequest, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> str:
    """A plaintext ``sk_live_`` key of the tenant: read, write and admin unless the marker's
    ``scopes=`` names others (``scopes=("read",)``, ``scopes=()`` for none), so every
    fixture bound to the key (the memory tool, the clients, MCP) has those scopes."""
    from adapter import wire

    scopes = marker_options(request.node).get("scopes", wire.SCOPES)
    if isinstance(scopes, str) or not all(isinstance(s, str) for s in scopes):
        raise pytest.UsageError(
            f"@pytest.mark.contextq(scopes=...) takes a tuple of scope names, got {scopes!r}"
        )
    return fake_contextq.mint_key(contextq_tenant, tuple(scopes))


@pytest.fixture
def contextq_workspace(
    request: pytest.FixtureRequest, fake_contextq: FakeContextQ, contextq_tenant: Tenant
) -> str:
    """The slug of a workspace created for this test (``memories`` unless the marker says)."""
    slug: str = marker_options(request.node).get("workspace", "memories")
    fake_contextq.create_workspace(contextq_tenant, slug)
    return slug


@pytest.fixture
def contextq_client(fake_contextq: FakeContextQ, contextq_api_key: str) -> Iterator[ContextQClient]:
    """An ``adapter.ContextQClient`` bound to the fake in-process."""
    with needs_extra("contextq_client"):
        from adapter import ContextQClient

    client = ContextQClient(
        contextq_api_key, http_client=fake_contextq.client(), retry_backoff=RETRY_BACKOFF
    )
    yield client
    client.close()


@pytest.fixture
def async_contextq_client(
    fake_contextq: FakeContextQ, contextq_api_key: str
) -> AsyncContextQClient:
    """An ``adapter.AsyncContextQClient`` bound to the fake in-process (a plain fixture, so
    it works under any async test runner)."""
    with needs_extra("async_contextq_client"):
        from adapter import AsyncContextQClient

    return AsyncContextQClient(
        contextq_api_key, http_client=fake_contextq.async_client(), retry_backoff=RETRY_BACKOFF
    )


@pytest.fixture
def memory_tool(
    request: pytest.FixtureRequest,
    fake_contextq: FakeContextQ,
    contextq_api_key: str,
    contextq_workspace: str,
) -> Iterator[ContextQMemoryTool]:
    """The memory tool bound to the fake, pinned to ``contextq_workspace``."""
    with needs_extra("memory_tool"):
        from adapter import ContextQMemoryTool

    tool = ContextQMemoryTool(
        contextq_api_key,
        http_client=fake_contextq.client(),
        workspace=contextq_workspace,
        retry_backoff=RETRY_BACKOFF,
    )
    _observe(request, tool, fake_contextq)
    yield tool
    tool.close()


@pytest.fixture
def async_memory_tool(
    request: pytest.FixtureRequest,
    fake_contextq: FakeContextQ,
    contextq_api_key: str,
    contextq_workspace: str,
) -> AsyncContextQMemoryTool:
    """The async memory tool bound to the fake, pinned to ``contextq_workspace``."""
    with needs_extra("async_memory_tool"):
        from adapter import AsyncContextQMemoryTool

    tool = AsyncContextQMemoryTool(
        contextq_api_key,
        http_client=fake_contextq.async_client(),
        workspace=contextq_workspace,
        retry_backoff=RETRY_BACKOFF,
    )
    _observe(request, tool, fake_contextq)
    return tool


@dataclass(frozen=True)
class ContextQServer:
    """The fake served over real HTTP: where it is, a key for it, and its state. The key
    never shows in its repr (a failing test's report prints fixture values)."""

    url: str
    api_key: str = field(repr=False)
    fake: FakeContextQ
    served: ServedFake

    @property
    def env(self) -> dict[str, str]:
        """``CONTEXT_API_URL`` and ``CONTEXT_API_KEY``, for a subprocess's environment."""
        return {"CONTEXT_API_URL": self.url, "CONTEXT_API_KEY": self.api_key}

    @property
    def mcp_url(self) -> str:
        """ContextQ's MCP endpoint on the same server (streamable HTTP, same key)."""
        return self.served.mcp_url


@pytest.fixture
def contextq_server(fake_contextq: FakeContextQ, contextq_api_key: str) -> Iterator[ContextQServer]:
    """The same fake served by uvicorn on a free loopback port, for subprocesses and
    clients in other languages."""
    with fake_contextq.serve() as served:
        yield ContextQServer(served.url, contextq_api_key, fake_contextq, served)


@pytest.fixture
def contextq_mcp_server(fake_contextq: FakeContextQ, contextq_api_key: str) -> Server:
    """ContextQ's MCP server bound to the test's tenant key, in-process: give it to
    ``mcp.Client(...)`` in an async test (no socket)."""
    with needs_extra("contextq_mcp_server"):
        return fake_contextq.mcp_server(contextq_api_key)


@pytest.fixture
def contextq_mcp(contextq_mcp_server: Server) -> Iterator[SyncMcpClient]:
    """An MCP client of the fake, in-process, for synchronous tests: ``.call(tool, args)``
    returns a tool's structured result or raises ``McpToolError`` (``.code``, ``.text``);
    ``.call_tool`` returns the raw result; ``.list_tools()`` the listing."""
    with needs_extra("contextq_mcp"):
        from fake_contextq.mcp import SyncMcpClient

    with SyncMcpClient(contextq_mcp_server) as client:
        yield client


@pytest.fixture
def contextq_mcp_url(contextq_server: ContextQServer) -> str:
    """The served fake's MCP URL (``contextq_server.mcp_url``), for MCP clients in other
    processes and for the scripted model's MCP connector (``authorization_token`` is
    ``contextq_api_key``)."""
    return contextq_server.mcp_url


AGENT_MEMORY_BACKENDS: Final = ("contextq", "mcp", "local")


class _TestWorkspace:
    """The default of ``AgentMemoryFactory(workspace=...)``: the test's own workspace
    (``None`` is a real choice there: sessions with no workspace)."""

    def __repr__(self) -> str:
        return "contextq_workspace"


TEST_WORKSPACE: Final = _TestWorkspace()


class AgentMemoryFactory:
    """What ``agent_memory_factory`` gives a test: called, an ``AgentMemory`` bound to the
    test's fake (REST or MCP, in-process, with the test's key) or a local one under the
    test's ``tmp_path``; the fixture closes every one it made."""

    def __init__(
        self, request: pytest.FixtureRequest, fake: FakeContextQ, api_key: str, workspace: str
    ) -> None:
        self._request = request
        self._fake = fake
        self._api_key = api_key
        self.workspace = workspace
        self._closers: list[Callable[[], None]] = []

    def __call__(
        self,
        backend: str = "contextq",
        *,
        strict: bool = True,
        workspace: str | _TestWorkspace | None = TEST_WORKSPACE,
        api_key: str | None = None,
    ) -> AgentMemory:
        """``backend``: ``contextq`` (REST, the typed client), ``mcp`` (ContextQ's MCP
        tools) or ``local`` (JSON files in ``tmp_path / "agent-memory"``, one directory
        for every local memory of the test). ``strict`` raises what a backend would
        absorb, so a misconfigured test fails where it went wrong; ``strict=False`` is the
        production behaviour, for tests of how code copes with an outage."""
        if backend not in AGENT_MEMORY_BACKENDS:
            raise ValueError(
                f"agent_memory_factory: backend must be one of "
                f"{', '.join(AGENT_MEMORY_BACKENDS)}, not {backend!r}"
            )
        with needs_extra("agent_memory_factory"):
            from adapter.agent_memory import (
                ContextQAgentMemory,
                LocalAgentMemory,
                McpAgentMemory,
            )
        if backend == "local":
            tmp_path: Path = self._request.getfixturevalue("tmp_path")
            return LocalAgentMemory(tmp_path / "agent-memory", strict=strict)
        slug = self.workspace if isinstance(workspace, _TestWorkspace) else workspace
        key = self._api_key if api_key is None else api_key
        memory: ContextQAgentMemory | McpAgentMemory
        if backend == "mcp":
            with needs_extra("agent_memory_factory"):
                from adapter.mcp_client import SyncMcpClient

            session = SyncMcpClient(self._fake.mcp_server(key)).open()
            memory = McpAgentMemory(session, slug, strict=strict)
        else:
            from adapter import ContextQClient

            http = self._fake.client()  # the client does not close what it was given
            self._closers.append(http.close)
            client = ContextQClient(key, http_client=http, retry_backoff=RETRY_BACKOFF)
            memory = ContextQAgentMemory(client, slug, strict=strict)
        self._closers.append(memory.close)
        return memory

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()

    def __repr__(self) -> str:  # no key: a failing test's report prints fixture values
        return f"AgentMemoryFactory(workspace={self.workspace!r})"


@pytest.fixture
def agent_memory_factory(
    request: pytest.FixtureRequest,
    fake_contextq: FakeContextQ,
    contextq_api_key: str,
    contextq_workspace: str,
) -> Iterator[AgentMemoryFactory]:
    """Makes ``AgentMemory`` ports bound to the fake: ``make("contextq" | "mcp" | "local",
    *, strict=True, workspace=contextq_workspace, api_key=None)``."""
    factory = AgentMemoryFactory(request, fake_contextq, contextq_api_key, contextq_workspace)
    yield factory
    factory.close()


@pytest.fixture
def agent_memory(agent_memory_factory: AgentMemoryFactory) -> ContextQAgentMemory:
    """A ``ContextQAgentMemory`` bound to the fake in-process with the test's key, pinned
    to ``contextq_workspace``, strict: a failure raises instead of being absorbed."""
    return cast("ContextQAgentMemory", agent_memory_factory())


class _Masked(str):
    """A secret that is itself where it is used (``str()``, the environment) and ``***``
    wherever it is shown (``repr``: fixture values and assertion diffs in a report)."""

    __slots__ = ()

    def __repr__(self) -> str:
        from adapter.errors import REDACTED

        return REDACTED


class AgentMemoryEnv(dict[str, str]):
    """The variables ``select_agent_memory()`` reads, the key among them ``***`` wherever
    pytest shows it (a failing test's report prints fixture values and compared dicts)."""

    def __repr__(self) -> str:
        return f"AgentMemoryEnv({super().__repr__()})"


@pytest.fixture
def agent_memory_env(
    monkeypatch: pytest.MonkeyPatch, contextq_server: ContextQServer, contextq_workspace: str
) -> AgentMemoryEnv:
    """Sets, for this test, the environment that makes ``select_agent_memory()`` choose the
    ``contextq`` backend on the served fake (``CONTEXTQ_MEMORY_BACKEND``,
    ``CONTEXT_API_URL``, ``CONTEXT_API_KEY``, ``CONTEXTQ_WORKSPACE``; ``CONTEXTQ_MEMORY``
    and ``CONTEXTQ_MCP_URL`` removed), and returns it (also for ``env=``)."""
    from adapter import wire
    from adapter.agent_memory import select

    env = AgentMemoryEnv(
        {
            select.BACKEND_ENV: "contextq",
            wire.MCP_API_URL_ENV: contextq_server.url,
            wire.MCP_API_KEY_ENV: _Masked(contextq_server.api_key),
            select.WORKSPACE_ENV: contextq_workspace,
        }
    )
    for name in (select.SWITCH_ENV, select.MCP_URL_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


__all__ = [
    "AgentMemoryEnv",
    "AgentMemoryFactory",
    "ContextQServer",
    "agent_memory",
    "agent_memory_env",
    "agent_memory_factory",
    "async_contextq_client",
    "async_memory_tool",
    "contextq_api_key",
    "contextq_client",
    "contextq_mcp",
    "contextq_mcp_server",
    "contextq_mcp_url",
    "contextq_server",
    "contextq_tenant",
    "contextq_workspace",
    "fake_contextq",
    "memory_tool",
]


class Interleavings:
    """What ``interleavings`` gives a test: the interleaving explorer bound to the test's
    fake, tenant, key and workspace (the marker's ``explore_bound`` and ``explore_seed``
    as its defaults). Each exploration is kept for the failure report."""

    def __init__(
        self,
        request: pytest.FixtureRequest,
        fake: FakeContextQ,
        tenant: Tenant,
        api_key: str,
        workspace: str,
    ) -> None:
        self._request = request
        self._fake = fake
        self._tenant = tenant
        self._api_key = api_key
        self.workspace = workspace

    def explorer(self, agents: list[Agent], **options: Any) -> Explorer:
        """An ``Explorer`` of ``agents`` from the fake's state now (options as
        ``fake_contextq.explore.Explorer``'s)."""
        from fake_contextq.explore import Explorer

        marked = marker_options(self._request.node)
        if "explore_bound" in marked:
            options.setdefault("bound", marked["explore_bound"])
        if "explore_seed" in marked:
            options.setdefault("seed", marked["explore_seed"])
        options.setdefault("tenant", self._tenant)
        options.setdefault("api_key", self._api_key)
        options.setdefault("workspace", self.workspace)
        return Explorer(self._fake, agents, **options)

    def explore(self, agents: list[Agent], **options: Any) -> Exploration:
        """Explore the orders of ``agents``' requests; ``.check()`` on the result raises
        with the simplest failing order, which the report of a failed test shows too."""
        found = self.explorer(agents, **options).explore()
        self._request.node.stash.setdefault(EXPLORED_KEY, []).append(found)
        return found

    def __repr__(self) -> str:  # no key: a failing test's report prints fixture values
        return f"Interleavings(workspace={self.workspace!r})"


@pytest.fixture
def interleavings(
    request: pytest.FixtureRequest,
    fake_contextq: FakeContextQ,
    contextq_tenant: Tenant,
    contextq_api_key: str,
    contextq_workspace: str,
) -> Interleavings:
    """The interleaving explorer bound to the test's fake: ``interleavings.explore([agent,
    ...], **options)``, each agent a callable given an ``AgentHandle`` (its memory tool,
    clients and Agent Memory Layer port all scheduled)."""
    with needs_extra("interleavings"):
        from fake_contextq.explore import Explorer  # noqa: F401  # the extra, checked here

    return Interleavings(
        request, fake_contextq, contextq_tenant, contextq_api_key, contextq_workspace
    )
