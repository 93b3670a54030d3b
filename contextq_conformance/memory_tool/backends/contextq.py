"""``ContextQMemoryTool`` and ``AsyncContextQMemoryTool`` as a backend: pinned to workspace
``acme`` of one tenant of an in-process fake ContextQ, shared by every instance made in
one process, as two agents share one ContextQ."""

from __future__ import annotations

from functools import cache

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool, wire
from fake_contextq import FakeContextQ

WORKSPACE = "acme"


@cache
def _store() -> tuple[FakeContextQ, str]:
    fake = FakeContextQ()
    tenant = fake.create_tenant(plan="enterprise")
    fake.create_workspace(tenant, WORKSPACE)
    return fake, fake.mint_key(tenant, wire.SCOPES)


def memory_tool() -> ContextQMemoryTool:
    fake, key = _store()
    return ContextQMemoryTool(key, http_client=fake.client(), workspace=WORKSPACE)


def async_memory_tool() -> AsyncContextQMemoryTool:
    fake, key = _store()
    return AsyncContextQMemoryTool(key, http_client=fake.async_client(), workspace=WORKSPACE)


__all__ = ["async_memory_tool", "memory_tool"]
