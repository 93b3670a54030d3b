"""``select_agent_memory``: the backend configuration names, falling back to the local one
(with one log line saying why) when a value is missing or the service cannot be reached;
``strict=True`` raises instead of falling back."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, NoReturn

from adapter import _deadline, wire
from adapter.agent_memory.local import LocalAgentMemory, NoAgentMemory
from adapter.agent_memory.port import DEFAULT_TIMEOUT, LOG, AgentMemory
from adapter.agent_memory.remote_memory import ContextQAgentMemory, McpAgentMemory
from adapter.errors import REDACTED, ContextQConnectionError, ContextQError, redact

BACKEND_ENV: Final = "CONTEXTQ_MEMORY_BACKEND"
SWITCH_ENV: Final = "CONTEXTQ_MEMORY"
WORKSPACE_ENV: Final = "CONTEXTQ_WORKSPACE"
MCP_URL_ENV: Final = "CONTEXTQ_MCP_URL"
TIMEOUT_ENV: Final = "CONTEXTQ_MEMORY_TIMEOUT"
BACKENDS: Final = ("local", "contextq", "mcp")
DEFAULT_DIRECTORY: Final = Path(".agent-memory")


class _Unusable(Exception):
    """Why the configured backend cannot be used (masked, for the log line), and the
    error to raise when strict: a ``ValueError`` (configuration) or a ``ContextQError``
    (the service)."""

    def __init__(self, error: Exception, why: str | None = None) -> None:
        super().__init__(str(error) if why is None else why)
        self.error = error


def select_agent_memory(
    env: Mapping[str, str] | None = None,
    *,
    directory: str | os.PathLike[str] = DEFAULT_DIRECTORY,
    strict: bool = False,
    timeout: float | None = None,
) -> AgentMemory:
    """``CONTEXTQ_MEMORY_BACKEND`` (``local``, the default; ``contextq``; ``mcp``) with
    ``CONTEXT_API_URL``, ``CONTEXT_API_KEY`` and ``CONTEXTQ_WORKSPACE``; ``CONTEXTQ_MEMORY=0``
    turns memory off. ``timeout`` (else ``CONTEXTQ_MEMORY_TIMEOUT``, else 10 s) is each
    remote method's deadline and the probe's: the remote backends are probed once (the
    workspace check, or opening MCP's session and listing its tools), and a service that
    cannot be used within it is the local backend, logged. ``strict=True`` raises instead
    of falling back: ``ValueError`` for the configuration (an unknown backend, a missing
    value), a ``ContextQError`` for the service (unreachable, the key refused, no answer
    within the deadline), ``ModuleNotFoundError`` for ``mcp`` without its extra. Every
    message and log line shows URLs with their password, tokens and fragment as ``***``."""
    env = os.environ if env is None else env
    if env.get(SWITCH_ENV, "").strip() == "0":
        LOG.info("agent memory: off (%s=0)", SWITCH_ENV)
        return NoAgentMemory()
    local = LocalAgentMemory(directory, strict=strict)
    backend = env.get(BACKEND_ENV, "").strip().lower() or "local"
    if backend == "local":
        return local
    try:
        return _remote(env, backend, strict, timeout)
    except _Unusable as why:
        if strict:
            raise why.error from None  # its cause may show what the message masks
        LOG.warning("agent memory: using the local backend (%s): %s", local.directory, why)
        return local


def _remote(
    env: Mapping[str, str], backend: str, strict: bool, timeout: float | None
) -> AgentMemory:
    if backend not in BACKENDS:
        _config(f"{BACKEND_ENV}={backend!r} is none of {', '.join(BACKENDS)}")
    missing = [
        name
        for name in (wire.MCP_API_URL_ENV, wire.MCP_API_KEY_ENV, WORKSPACE_ENV)
        if not env.get(name, "").strip()
    ]
    if missing:
        _config(f"{backend} needs {', '.join(missing)}")
    url, key, workspace = (
        env[wire.MCP_API_URL_ENV].strip(), env[wire.MCP_API_KEY_ENV].strip(),
        env[WORKSPACE_ENV].strip(),
    )  # fmt: skip
    seconds = _timeout(env, timeout)
    if backend == "contextq":
        return _contextq(url, key, workspace, strict, seconds)
    mcp_url = env.get(MCP_URL_ENV, "").strip() or url.rstrip("/") + wire.MCP_PATH
    return _mcp(mcp_url, key, workspace, strict, seconds)


def _config(why: str) -> NoReturn:
    raise _Unusable(ValueError(why))


def _timeout(env: Mapping[str, str], given: float | None) -> float:
    if given is not None:
        return _deadline.check(given) or DEFAULT_TIMEOUT
    raw = env.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        return _deadline.check(float(raw), TIMEOUT_ENV) or DEFAULT_TIMEOUT
    except ValueError:
        _config(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds > 0")


def _masked(text: str, key: str) -> str:
    """``text`` as it may be logged: URLs' passwords, tokens and fragments, and the key."""
    return redact(text.replace(key, REDACTED) if key else text)


def _probe(probe: Callable[[], object], seconds: float, what: str, key: str) -> None:
    """Run the probe within the deadline; any failure is ``_Unusable``, saying ``what``."""
    try:
        _deadline.run_within(seconds, probe, "the probe")
    except ContextQError as exc:  # the same class, status and code, saying where
        where = f"{exc.method} {exc.path}: " if exc.method and exc.path else ""
        said = _masked(f"{what} cannot be used: {where}{exc.message}", key)
        error = type(exc)(said, status=exc.status, code=exc.code, details=exc.details)
        raise _Unusable(error, _masked(f"{what} cannot be used: {exc}", key)) from None
    except Exception as exc:  # any failure to connect or to speak MCP
        said = str(exc) or type(exc).__name__
        error = ContextQConnectionError(_masked(f"{what} cannot be used: {said}", key))
        raise _Unusable(error) from None


def _contextq(url: str, key: str, workspace: str, strict: bool, seconds: float) -> AgentMemory:
    from adapter.client import ContextQClient

    try:
        client = ContextQClient(key, base_url=url, max_retries=1)
    except (ValueError, ContextQError) as exc:
        _config(_masked(f"cannot use {wire.MCP_API_URL_ENV}: {exc}", key))
    memory = ContextQAgentMemory(client, workspace, strict=strict, timeout=seconds)
    try:
        _probe(memory._ws, seconds, f"ContextQ at {client.base_url}", key)  # one request
    except _Unusable:
        client.close()
        raise
    return memory


def _mcp(url: str, key: str, workspace: str, strict: bool, seconds: float) -> AgentMemory:
    try:
        from adapter.mcp_client import SyncMcpClient
    except ModuleNotFoundError as exc:
        hint = f"the mcp backend needs {exc.name}: pip install 'contextq-memory-tool[mcp]'"
        raise _Unusable(ModuleNotFoundError(hint, name=exc.name)) from None
    session = SyncMcpClient(url, api_key=key, timeout=seconds)
    try:
        _probe(session.list_tools, seconds, f"ContextQ's MCP server at {url}", key)
    except _Unusable:
        session.close(wait=0)  # the probe's deadline is spent: no graceful goodbye
        raise
    return McpAgentMemory(session, workspace, strict=strict, timeout=seconds)
