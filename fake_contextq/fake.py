"""``FakeContextQ``: the object a test holds; it owns all its state."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import httpx2

from adapter import wire
from fake_contextq.domain import quota, render
from fake_contextq.domain.backend import ContextQBackend
from fake_contextq.domain.embeddings import Embedder, checked, hashing_embedder
from fake_contextq.domain.handoff import Summariser
from fake_contextq.domain.llm import Llm, server_llm
from fake_contextq.domain.records import (
    AgentState,
    ApiKey,
    AuditRow,
    Context,
    IngestJob,
    Lesson,
    Principal,
    Tenant,
    Workspace,
    detached,
)
from fake_contextq.domain.store import Store
from fake_contextq.http._io import ASGIApp
from fake_contextq.http.app import ServedApi, create_app
from fake_contextq.http.transport import AsyncInProcessTransport, InProcessTransport
from fake_contextq.service import ContextQService
from fake_contextq.service.faults import Faults
from fake_contextq.service.journal import Journal
from fake_contextq.stores.memory import MemoryStore
from fake_server import ServedApp

if TYPE_CHECKING:
    from mcp.server import Server

    from fake_contextq.stores.sql import SqlStore

TenantRef = Tenant | int


def _tenant_id(tenant: TenantRef) -> int:
    return tenant if isinstance(tenant, int) else tenant.id


class FakeContextQ:
    """A strict, in-memory ContextQ: its service (``service``), served in-process by
    ``client()`` and as ASGI by ``app``, plus handles for tests.

    Nothing is shared between instances: two fakes in one process are two installations.
    """

    base_url = "http://contextq.test"

    def __init__(
        self,
        *,
        store: Store | None = None,
        database_url: str | None = None,
        clock: Callable[[], datetime] | None = None,
        embeddings: bool = True,
        embed: Embedder | None = None,
        llm: bool | Llm | Summariser | None = None,
        journal_keep: int | None = None,
        journal_keep_bytes: int | None = None,
    ) -> None:
        """State lives in memory unless ``database_url`` (a SQLAlchemy URL such as
        ``sqlite:///path.db``) or a ready ``store`` says otherwise. ``embeddings=False``
        stores lessons with no vector (boot falls back to recency); ``embed`` replaces the
        built-in 768-dimensional hashing embedder (a wrong dimension is refused here);
        ``llm`` is the server's LLM provider, which writes handoffs, dreams, evolved
        contexts and maps of content: ``True`` a built-in deterministic one
        (``domain.llm.builtin_llm``), a callable gets each request's material
        (``domain.llm.LlmMaterial``) and returns the text, and the default (no provider)
        answers all four with 503, as a ContextQ without an LLM does. ``journal_keep``
        bounds the journal to its newest entries and ``journal_keep_bytes`` the bodies
        and targets they hold (the defaults keep every one)."""
        if not embeddings:
            embedder = None
        elif embed is not None:
            embedder = checked(embed)
        else:
            embedder = hashing_embedder
        hook = server_llm(llm)
        journal = Journal(journal_keep, journal_keep_bytes)  # refused before a store is made
        self._made: SqlStore | None = None  # a store made here is closed with the fake
        if database_url is not None:
            if store is not None:
                raise TypeError("give store= or database_url=, not both")
            from fake_contextq.stores.sql import SqlStore

            store = self._made = SqlStore(database_url)
        self.backend = ContextQBackend(
            MemoryStore() if store is None else store, clock, embed=embedder, llm=hook
        )
        self.journal = journal
        self.faults = Faults()
        self.service = ContextQService(self.backend, self.journal, self.faults)
        self.app: ServedApi = create_app(
            self.backend, self.journal, self.faults, service=self.service
        )

    @property
    def store(self) -> Store:
        return self.backend.store

    # ----- state set-up -----

    def create_tenant(self, name: str | None = None, plan: str = quota.DEFAULT_PLAN) -> Tenant:
        return self.backend.create_tenant(name, plan)

    def mint_key(self, tenant: TenantRef, scopes: Iterable[str] = wire.DEFAULT_KEY_SCOPES) -> str:
        """A new plaintext ``sk_live_`` key for the tenant; only its hash is stored."""
        return self.backend.mint_key(_tenant_id(tenant), scopes)

    def revoke_key(self, key: str) -> None:
        self.backend.revoke_key(key)

    def set_plan(self, tenant: TenantRef, plan: str) -> Tenant:
        return self.backend.set_plan(_tenant_id(tenant), plan)

    def create_workspace(self, tenant: TenantRef, slug: str, name: str | None = None) -> Workspace:
        return self.backend.add_workspace(_tenant_id(tenant), slug, name)

    def fill(
        self,
        tenant: TenantRef,
        count: int | None = None,
        *,
        workspace: str | None = None,
        prefix: str = "fill",
    ) -> int:
        """Add ``count`` contexts to the tenant (default: as many as its plan's quota has
        room for, so the next create is the 402), in bulk upserts of the API's largest
        batch, through the same rules as the API. Returns how many were added."""
        tenant_id = _tenant_id(tenant)
        existing = len(self.backend.contexts(tenant_id))
        if count is None:
            limit = quota.context_limit(self.tenant(tenant_id).plan)
            if limit is None:
                raise ValueError("the tenant's plan has no quota: give fill() a count")
            count = limit - existing
        if count < 0:
            raise ValueError(f"count must be at least 0, not {count}")
        principal = Principal(tenant_id, wire.SCOPES, "fake.fill")
        for start in range(0, count, wire.BULK_MAX_ITEMS):
            items = [
                {
                    "type": "reference",
                    "title": f"{prefix} {existing + i + 1}",
                    "content": f"{prefix} context {existing + i + 1}",
                    "externalId": f"{prefix}:{existing + i + 1}",
                    **({"workspace": workspace} if workspace is not None else {}),
                }
                for i in range(start, min(count, start + wire.BULK_MAX_ITEMS))
            ]
            self.backend.bulk_upsert(principal, {"contexts": items})
        return count

    def seed_files(
        self,
        api_key: str,
        files: Mapping[str, str],
        *,
        workspace: str | None = None,
        tag: str = "mem-tool",
    ) -> None:
        """Create memory files as the memory tool would (``{"/memories/...": text}``), with
        that tool itself: what a test then reads through the tool is exactly this. A lone
        surrogate is stored as U+FFFD, as through the API (``wire.well_formed``)."""
        from adapter import ContextQMemoryTool

        well = wire.well_formed
        tool = ContextQMemoryTool(
            api_key,
            http_client=self.client(),
            workspace=None if workspace is None else well(workspace),
            tag=well(tag),
        )
        try:
            for path, text in files.items():
                tool.call({"command": "create", "path": well(path), "file_text": well(text)})
        finally:
            tool.close()

    def memory_files(
        self, tenant: TenantRef, workspace: str | None = None, *, tag: str = "mem-tool"
    ) -> dict[str, str]:
        """The memory tool's files of the tenant as the model sees them: ``{path: content}``,
        paths as a tool pinned to ``workspace`` shows them (without one, the first
        directory below ``/memories`` is the workspace)."""
        from adapter.paths import ROOT, decode_external_id

        tag = wire.well_formed(tag)
        workspace = None if workspace is None else wire.well_formed(workspace)
        files: dict[str, str] = {}
        for c in self.backend.contexts(_tenant_id(tenant)):
            owner = decode_external_id(tag, c.external_id)
            if owner is None:
                continue
            slug, rest = owner
            if workspace is None:
                files[f"{ROOT}/{slug}/{rest}"] = c.content
            elif slug == workspace:
                files[f"{ROOT}/{rest}"] = c.content
        return dict(sorted(files.items()))

    # ----- state for assertions -----

    def tenant(self, tenant: TenantRef) -> Tenant:
        return self.backend.tenant(_tenant_id(tenant))

    def tenants(self) -> list[Tenant]:
        return self.backend.tenants()

    def keys(self, tenant: TenantRef) -> list[ApiKey]:
        return self.backend.keys(_tenant_id(tenant))

    def contexts(self, tenant: TenantRef) -> list[Context]:
        """The tenant's contexts in id order: copies, so a test may change them freely."""
        return detached(self.backend.contexts(_tenant_id(tenant)))

    def context_json(self, tenant: TenantRef) -> list[dict[str, Any]]:
        """The tenant's contexts as the API would render them: copies, as ``contexts``."""
        return detached([render.context_json(c) for c in self.backend.contexts(_tenant_id(tenant))])

    def workspaces(self, tenant: TenantRef) -> list[Workspace]:
        return self.backend.workspaces(_tenant_id(tenant))

    def lessons(self, tenant: TenantRef) -> list[Lesson]:
        """The tenant's agent lessons, with their vectors (None when not embedded)."""
        return self.backend.agent.lessons(_tenant_id(tenant))

    def agent_state(self, tenant: TenantRef) -> AgentState:
        """The tenant's Agent Memory Layer: ``.sessions`` (each ``.session``, its
        ``.checkpoints`` by seq and its ``.tasks``), ``.lessons`` and ``.handoffs``; a copy,
        as ``contexts``."""
        return detached(self.backend.agent.state(_tenant_id(tenant)))

    def run_ingest_jobs(self) -> list[IngestJob]:
        """Run every unfinished ingest job (of every tenant) to its end now, as if each had
        been polled until done; the jobs, in id order. Without this, a job moves one step
        per read of its status (``queued`` -> ``running`` -> ``done`` or ``failed``)."""
        return self.backend.ingest.run_all()

    def audit_log(self) -> list[AuditRow]:
        """Every audit row, in chain order."""
        return self.backend.audit_rows()

    def verify_audit_chain(self) -> int:
        """Return the number of rows of an intact chain; raise ``AuditChainError`` otherwise."""
        return self.backend.verify_audit_chain()

    def reset(self) -> None:
        """Forget every tenant, key, row, journal entry and fault."""
        self.backend.reset()
        self.journal.clear()
        self.faults.clear()

    # ----- clients -----

    def transport(self) -> httpx2.BaseTransport:
        return InProcessTransport(self.service)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        return AsyncInProcessTransport(self.service)

    def client(self, api_key: str | None = None, **kwargs: Any) -> httpx2.Client:
        """An ``httpx2.Client`` served in-process (no socket), at ``http://contextq.test``."""
        kwargs.setdefault("base_url", self.base_url)
        return httpx2.Client(transport=self.transport(), headers=_auth(api_key), **kwargs)

    def async_client(self, api_key: str | None = None, **kwargs: Any) -> httpx2.AsyncClient:
        kwargs.setdefault("base_url", self.base_url)
        return httpx2.AsyncClient(
            transport=self.async_transport(), headers=_auth(api_key), **kwargs
        )

    def control_app(self, token: str) -> ASGIApp:
        """The API plus the ``/_fake/`` control routes, guarded by ``token``."""
        return create_app(
            self.backend, self.journal, self.faults, control_token=token, service=self.service
        )

    def mcp_server(self, api_key: str) -> Server[Any]:
        """ContextQ's MCP server, every call made with ``api_key`` through this fake's REST
        API in-process: ``mcp.Client(fake.mcp_server(key))`` connects with no socket."""
        from fake_contextq.mcp import Rest, bound_server

        # an in-process client holds no connection, so there is nothing to close later;
        # its transport takes each tool's call straight (``Rest.link``)
        transport = AsyncInProcessTransport(self.service)
        client = httpx2.AsyncClient(transport=transport, base_url=self.base_url)
        return bound_server(Rest(client, wire.authorization(api_key), link=transport))

    def served_app(
        self,
        *,
        control_token: str | None = None,
        host: str = "127.0.0.1",
        mcp_versions: Sequence[str] | None = None,
    ) -> ASGIApp:
        """What ``serve`` serves: the REST API (and the control routes, with a token) with
        ContextQ's MCP endpoint at ``/mcp`` (negotiating among ``mcp_versions``, default
        ``mcp.versions.SUPPORTED_PROTOCOL_VERSIONS``). It needs the ASGI lifespan protocol."""
        from fake_contextq.mcp import McpEndpoint

        rest = self.app if control_token is None else self.control_app(control_token)
        return McpEndpoint(rest, self.backend, host=host, versions=mcp_versions)

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        control_token: str | None = None,
        ready_timeout: float = 10.0,
        mcp_versions: Sequence[str] | None = None,
    ) -> ServedFake:
        """Serve this fake over real HTTP on a background thread (port 0: a free port);
        ``mcp_versions``: the MCP protocol versions ``/mcp`` negotiates (``served_app``).

        Use it as a context manager; it returns once the server accepts connections.
        """
        served = ServedFake(
            self.served_app(control_token=control_token, host=host, mcp_versions=mcp_versions),
            host,
            port,
            ready_timeout=ready_timeout,
            fake=self,
            control_token=control_token,
            lifespan=True,
        )
        served.start()
        return served

    def close(self) -> None:
        """Close the database connections of a store made from ``database_url`` (a
        ``store`` given ready is its owner's to close)."""
        if self._made is not None:
            self._made.close()

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
        return (
            f"<FakeContextQ: {len(self.tenants())} tenant(s), "
            f"{self.journal.served} request(s) served>"
        )


def _auth(api_key: str | None) -> dict[str, str]:
    return {} if api_key is None else {"Authorization": wire.authorization(api_key)}


class ServedFake(ServedApp):
    """A ``FakeContextQ`` served over HTTP: its ``url``, the ``fake`` behind it and, when
    the control routes are on, their ``control_token``."""

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ready_timeout: float = 10.0,
        fake: FakeContextQ | None = None,
        control_token: str | None = None,
        lifespan: bool = False,
    ) -> None:
        super().__init__(
            app, host, port, ready_timeout=ready_timeout, name="fake-contextq", lifespan=lifespan
        )
        self.fake = fake
        self.control_token = control_token

    @property
    def mcp_url(self) -> str:
        """ContextQ's MCP endpoint (streamable HTTP), authenticated by the same keys."""
        return self.url + wire.MCP_PATH
