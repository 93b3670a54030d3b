"""What the conformance suite runs against: the fake in-process, the fake served over a
socket, or a live dev stack through throwaway tenants. The tests see only ``Target``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx2

from adapter import ContextQClient, wire
from adapter._tls import default_ssl_context
from contextq_conformance._names import TARGETS

if TYPE_CHECKING:
    from fake_contextq.mcp import SyncMcpClient


class Recorder:
    """Remembers the status of every response a client got (success statuses are not
    visible through the client's return values)."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def __call__(self, response: httpx2.Response) -> None:
        self.statuses.append(response.status_code)

    @property
    def last(self) -> int:
        if not self.statuses:
            raise AssertionError("no response was received")
        return self.statuses[-1]


@dataclass
class Client:
    """A ``ContextQClient`` with one key, and the statuses it saw."""

    api: ContextQClient
    recorder: Recorder = field(repr=False)
    key: str = field(repr=False)
    http: httpx2.Client = field(repr=False)

    @property
    def status(self) -> int:
        return self.recorder.last


@dataclass
class Tenant:
    """A tenant of the target, empty when made, with an all-scopes client."""

    tenant_id: int
    client: Client
    handle: Any = field(repr=False)


class Target(Protocol):
    name: str
    mcp_url: str | None  # the MCP endpoint over HTTP; None in-process

    def tenant(self, plan: str | None = None) -> Tenant: ...
    def client(self, tenant: Tenant, scopes: Iterable[str]) -> Client: ...
    def client_for_key(self, key: str) -> Client: ...
    def revoke(self, key: str) -> None: ...
    def set_plan(self, tenant: Tenant, plan: str) -> None: ...
    def audit_rows(self, tenant: Tenant) -> int: ...
    def mcp(self, client: Client) -> SyncMcpClient: ...
    def finish_test(self) -> None: ...
    def close(self) -> None: ...


def _client(key: str, base_url: str, http: httpx2.Client | None = None) -> Client:
    recorder = Recorder()
    if http is None:
        http = httpx2.Client(timeout=30.0, verify=default_ssl_context())  # 35 ms saved a key
    http.event_hooks["response"].append(recorder)
    api = ContextQClient(key, base_url=base_url, http_client=http, max_retries=0)
    return Client(api, recorder, key, http)


class FakeTarget:
    """The fake, in-process (no socket) or served by uvicorn on a free port."""

    def __init__(self, *, served: bool) -> None:
        from fake_contextq import FakeContextQ

        self.name = "served" if served else "in-process"
        self.fake = FakeContextQ()
        self._served = self.fake.serve() if served else None
        self._clients: list[Client] = []
        self._mcp: list[SyncMcpClient] = []
        self.mcp_url = None if self._served is None else self._served.mcp_url

    def _new_client(self, key: str) -> Client:
        if self._served is not None:
            made = _client(key, self._served.url)
        else:
            made = _client(key, self.fake.base_url, self.fake.client())
        self._clients.append(made)
        return made

    def tenant(self, plan: str | None = None) -> Tenant:
        made = self.fake.create_tenant() if plan is None else self.fake.create_tenant(plan=plan)
        key = self.fake.mint_key(made, wire.SCOPES)
        return Tenant(made.id, self._new_client(key), made)

    def client(self, tenant: Tenant, scopes: Iterable[str]) -> Client:
        return self._new_client(self.fake.mint_key(tenant.handle, tuple(scopes)))

    def client_for_key(self, key: str) -> Client:
        return self._new_client(key)

    def revoke(self, key: str) -> None:
        self.fake.revoke_key(key)

    def set_plan(self, tenant: Tenant, plan: str) -> None:
        self.fake.set_plan(tenant.handle, plan)

    def audit_rows(self, tenant: Tenant) -> int:
        return sum(1 for row in self.fake.audit_log() if row.tenant_id == tenant.tenant_id)

    def mcp(self, client: Client) -> SyncMcpClient:
        """An MCP session with the key of ``client``: in memory, or over ``/mcp``."""
        from fake_contextq.mcp import SyncMcpClient

        if self._served is not None:
            session = SyncMcpClient(self._served.mcp_url, api_key=client.key)
        else:
            session = SyncMcpClient(self.fake.mcp_server(client.key))
        self._mcp.append(session.open())
        return session

    def finish_test(self) -> None:
        _close_sessions(self._mcp)
        for made in self._clients:
            made.http.close()
        self._clients.clear()

    def close(self) -> None:
        self.finish_test()
        if self._served is not None:
            self._served.stop()
        self.fake.close()


class LiveTarget:
    """A real dev stack: throwaway tenants by direct INSERT, cleaned up after each test."""

    name = "live"

    def __init__(self) -> None:
        from contextq_fixtures.live import LiveConfig, LiveStack

        self.lines: list[str] = []
        self.stack = LiveStack(LiveConfig.from_env(), report=self.lines.append)
        try:
            self.stack.check()  # the database and the API, before any test relies on them
            self.stack.reap()
        except BaseException:
            self.stack.close()
            raise
        self._tenants: list[Any] = []
        self._clients: list[Client] = []
        self._mcp: list[SyncMcpClient] = []
        self.mcp_url: str | None = self.stack.config.mcp_endpoint

    def tenant(self, plan: str | None = None) -> Tenant:
        made = self.stack.provision(plan)  # its own client is kept for the cleanup
        self._tenants.append(made)
        return Tenant(made.tenant_id, self._new_client(made.key), made)

    def _new_client(self, key: str) -> Client:
        made = _client(key, self.stack.config.api_url)
        self._clients.append(made)
        return made

    def client(self, tenant: Tenant, scopes: Iterable[str]) -> Client:
        return self._new_client(self.stack.mint_key(tenant.handle, tuple(scopes)))

    def client_for_key(self, key: str) -> Client:
        return self._new_client(key)

    def revoke(self, key: str) -> None:
        self.stack.revoke_key(key)

    def set_plan(self, tenant: Tenant, plan: str) -> None:
        self.stack.set_plan(tenant.handle, plan)

    def audit_rows(self, tenant: Tenant) -> int:
        return self.stack.audit_rows(tenant.handle)

    def mcp(self, client: Client) -> SyncMcpClient:
        """An MCP session with the stack's MCP server (``CONTEXTQ_MCP_URL``, else the API's
        origin + ``/mcp``) and the key of ``client``."""
        from fake_contextq.mcp import SyncMcpClient

        session = SyncMcpClient(self.stack.config.mcp_endpoint, api_key=client.key)
        self._mcp.append(session.open())
        return session

    def finish_test(self) -> None:
        _close_sessions(self._mcp)
        errors = []
        for made in self._tenants:
            try:
                self.stack.cleanup(made)
            except Exception as exc:  # every tenant gets its cleanup
                errors.append(str(exc))
        self._tenants.clear()
        for client in self._clients:
            client.http.close()
        self._clients.clear()
        if errors:
            raise RuntimeError("; ".join(errors))

    def close(self) -> None:
        self.stack.close()


def _close_sessions(sessions: list[SyncMcpClient]) -> None:
    for session in sessions:
        session.close()
    sessions.clear()


def live_unreachable() -> str | None:
    """Why the live target cannot be used (its database or its API cannot be reached, or
    its configuration is wrong), in one line; None when both answer. Makes nothing."""
    from contextq_fixtures.database import LiveSetupError
    from contextq_fixtures.live import LiveConfig, LiveStack

    try:
        stack = LiveStack(LiveConfig.from_env(), report=lambda _line: None)
    except LiveSetupError as exc:
        return str(exc)
    try:
        stack.check()
    except LiveSetupError as exc:
        return str(exc)
    finally:
        stack.close()
    return None


def make_target(name: str) -> Target:
    if name == "live":
        return LiveTarget()
    if name in ("in-process", "served"):
        return FakeTarget(served=name == "served")
    raise ValueError(f"unknown target {name!r}; one of {', '.join(TARGETS)}")
