"""The MCP protocol versions the fake's server speaks, negotiated as ContextQ's would.

[assumed] ContextQ's MCP server is a TypeScript server on the official SDK (seed 003:
``mcp/src/tools.ts``), so it speaks what that SDK speaks: ``LATEST_PROTOCOL_VERSION`` and
``SUPPORTED_PROTOCOL_VERSIONS`` of @modelcontextprotocol/sdk v1.29.0 ``src/types.ts`` (the
same in @modelcontextprotocol/server 2.0.0 ``packages/core/src/constants.ts``). Its
``initialize`` answers the version asked for when it is supported, else its latest
(``Server._oninitialize``); over streamable HTTP a request after ``initialize`` whose
``MCP-Protocol-Version`` header names another version is a 400 (``validateProtocolVersion``).

The Python ``mcp`` SDK the fake runs on also speaks 2026-07-28, a stateless era without the
handshake; the fake serves that era only when its version set holds such a version (a test
may serve ``NEWER_PROTOCOL_VERSIONS``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from fake_contextq import _msgs

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "NEWER_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "InitializeVersion",
    "negotiated",
    "serves_modern",
    "unsupported_header",
]

LATEST_PROTOCOL_VERSION: Final = "2025-11-25"
#: Newest first, as the TypeScript SDK lists them; the first is what a client asking for
#: another version is answered with.
SUPPORTED_PROTOCOL_VERSIONS: Final[tuple[str, ...]] = (
    LATEST_PROTOCOL_VERSION,
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
    "2024-10-07",
)
#: What the Python SDK under the fake would serve: the stateless 2026-07-28 era as well.
NEWER_PROTOCOL_VERSIONS: Final[tuple[str, ...]] = (
    *reversed(MODERN_PROTOCOL_VERSIONS),
    *SUPPORTED_PROTOCOL_VERSIONS,
)


def serves_modern(versions: Sequence[str]) -> bool:
    """Whether ``versions`` holds a version of the handshake-less era (2026-07-28 on)."""
    return any(v in MODERN_PROTOCOL_VERSIONS for v in versions)


def negotiated(requested: Any, versions: Sequence[str]) -> str:
    """The version ``initialize`` answers: the one asked for if served, else the newest
    served one that has a handshake."""
    handshake = [v for v in versions if v not in MODERN_PROTOCOL_VERSIONS]
    return requested if requested in handshake else handshake[0]


def unsupported_header(version: str | None, versions: Sequence[str]) -> str | None:
    """The 400's message for an ``MCP-Protocol-Version`` header naming a version not
    served, or None when it names one (or there is none)."""
    if version is None or version in versions:
        return None
    return _msgs.MCP_UNSUPPORTED_VERSION.format(version=version, versions=", ".join(versions))


class InitializeVersion:
    """Server middleware: ``initialize`` answered with ``negotiated`` (the Python SDK
    answers from its own set, which holds neither 2024-10-07 nor a test's choice)."""

    def __init__(self, versions: Sequence[str]) -> None:
        self.versions = tuple(versions)

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            asked = (ctx.params or {}).get("protocolVersion")
            return {**result, "protocolVersion": negotiated(asked, self.versions)}
        return result
