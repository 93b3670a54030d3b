"""``select_agent_memory``: the backend configuration names, falling back to the local one
(with one log line saying why) when a value is missing or the service cannot be reached."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from adapter import wire
from adapter.agent_memory.local import LocalAgentMemory, NoAgentMemory
from adapter.agent_memory.port import LOG, AgentMemory
from adapter.agent_memory.remote_memory import ContextQAgentMemory, McpAgentMemory

BACKEND_ENV: Final = "CONTEXTQ_MEMORY_BACKEND"
SWITCH_ENV: Final = "CONTEXTQ_MEMORY"
WORKSPACE_ENV: Final = "CONTEXTQ_WORKSPACE"
MCP_URL_ENV: Final = "CONTEXTQ_MCP_URL"
BACKENDS: Final = ("local", "contextq", "mcp")
DEFAULT_DIRECTORY: Final = Path(".agent-memory")


def select_agent_memory(
    env: Mapping[str, str] | None = None,
    *,
    directory: str | os.PathLike[str] = DEFAULT_DIRECTORY,
    strict: bool = False,
) -> AgentMemory:
    """``CONTEXTQ_MEMORY_BACKEND`` (``local``, the default; ``contextq``; ``mcp``) with
    ``CONTEXT_API_URL``, ``CONTEXT_API_KEY`` and ``CONTEXTQ_WORKSPACE``; ``CONTEXTQ_MEMORY=0``
    turns memory off. The remote backends are probed once (the workspace check, or MCP's
    tool listing): an unreachable service is the local backend, logged."""
    env = os.environ if env is None else env
    if env.get(SWITCH_ENV, "").strip() == "0":
        LOG.info("agent memory: off (%s=0)", SWITCH_ENV)
        return NoAgentMemory()
    local = LocalAgentMemory(directory, strict=strict)
    backend = env.get(BACKEND_ENV, "").strip().lower() or "local"
    if backend == "local":
        return local
    if backend not in BACKENDS:
        return _fallback(local, f"{BACKEND_ENV}={backend!r} is none of {', '.join(BACKENDS)}")
    missing = [
        name
        for name in (wire.MCP_API_URL_ENV, wire.MCP_API_KEY_ENV, WORKSPACE_ENV)
        if not env.get(name, "").strip()
    ]
    if missing:
        return _fallback(local, f"{backend} needs {', '.join(missing)}")
    url, key, workspace = (
        env[wire.MCP_API_URL_ENV].strip(), env[wire.MCP_API_KEY_ENV].strip(),
        env[WORKSPACE_ENV].strip(),
    )  # fmt: skip
    if backend == "contextq":
        return _contextq(local, url, key, workspace, strict)
    mcp_url = env.get(MCP_URL_ENV, "").strip() or url.rstrip("/") + wire.MCP_PATH
    return _mcp(local, mcp_url, key, workspace, strict)


def _fallback(local: LocalAgentMemory, why: str) -> LocalAgentMemory:
    LOG.warning("agent memory: using the local backend (%s): %s", local.directory, why)
    return local


def _contextq(
    local: LocalAgentMemory, url: str, key: str, workspace: str, strict: bool
) -> AgentMemory:
    from adapter.client import ContextQClient
    from adapter.errors import ContextQError

    try:
        client = ContextQClient(key, base_url=url, max_retries=1)
    except (ValueError, ContextQError) as exc:
        return _fallback(local, f"cannot use {wire.MCP_API_URL_ENV}: {exc}")
    memory = ContextQAgentMemory(client, workspace, strict=strict)
    try:
        memory._ws()  # the probe: the workspace check's one request
    except ContextQError as exc:
        client.close()
        return _fallback(local, f"ContextQ at {client.base_url} cannot be used: {exc}")
    return memory


def _mcp(local: LocalAgentMemory, url: str, key: str, workspace: str, strict: bool) -> AgentMemory:
    try:
        from adapter.mcp_client import SyncMcpClient
    except ModuleNotFoundError as exc:
        return _fallback(
            local, f"the mcp backend needs {exc.name}: pip install 'contextq-memory-tool[mcp]'"
        )
    session = SyncMcpClient(url, api_key=key)
    try:
        session.open()
        session.list_tools()
    except Exception as exc:  # any failure to connect: the local backend, said once
        session.close()
        return _fallback(local, f"ContextQ's MCP server at {url} cannot be used: {exc}")
    return McpAgentMemory(session, workspace, strict=strict)
