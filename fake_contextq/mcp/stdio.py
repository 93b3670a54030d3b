"""``fake-contextq mcp``: ContextQ's MCP server on stdio, as the real package runs.

It reads ``CONTEXT_API_URL`` and ``CONTEXT_API_KEY`` as that package does and talks to the
ContextQ there over REST, a served fake or a real ContextQ alike: against a real one it is
a usable bridge, against the fake every rule of the fake holds.

Each tool call has one deadline for all of it (``--deadline``, 30 s): every REST call it
makes and every byte of their answers, so a ContextQ that answers a byte at a time cannot
hold a call (and the model waiting on it) longer. Tool errors show the URL without its
password, query or fragment, and nothing of the key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import anyio
import httpx2
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.mcp import CALL_DEADLINE_SECONDS
from fake_contextq.mcp.masking import shown_url
from fake_contextq.mcp.server import bound_server
from fake_contextq.mcp.tools import Rest
from fake_contextq.mcp.versions import SUPPORTED_PROTOCOL_VERSIONS, serves_modern


def settings(env: Mapping[str, str]) -> tuple[str, str]:
    """(base URL, key) from the environment, or SystemExit saying what to set."""
    url = env.get(wire.MCP_API_URL_ENV) or wire.MCP_DEFAULT_API_URL
    key = env.get(wire.MCP_API_KEY_ENV, "").strip()
    if not key:
        raise SystemExit(_msgs.MCP_NO_KEY_ENV.format(url=wire.MCP_DEFAULT_API_URL))
    if not key.isascii() or not key.isprintable() or " " in key:
        # an HTTP header cannot carry it, and the error saying so would quote it
        raise SystemExit(_msgs.MCP_KEY_NOT_SENDABLE)
    try:  # read as the client will: a URL it cannot parse was a traceback at start
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL:
        parsed = None
    if (
        parsed is None
        or parsed.scheme not in ("http", "https")
        or not parsed.host
        or not 0 < (parsed.port or 80) < 2**16  # the client takes port 99999, connect() not
    ):
        raise SystemExit(
            _msgs.MCP_URL_UNUSABLE.format(url=shown_url(url), example=wire.MCP_DEFAULT_API_URL)
        )
    return url.rstrip("/"), key


async def serve_stdio(
    url: str,
    key: str,
    deadline: float = CALL_DEADLINE_SECONDS,
    versions: Sequence[str] = SUPPORTED_PROTOCOL_VERSIONS,
) -> None:
    """Serve until stdin closes. Only the handshake era unless ``versions`` holds a later
    one (``mcp.versions``): a request in the 2026-07-28 envelope is then an unknown
    method, as to ContextQ's TypeScript server."""
    async with httpx2.AsyncClient(base_url=url, timeout=deadline) as client:
        server = bound_server(Rest(client, wire.authorization(key), deadline), versions=versions)
        options = server.create_initialization_options()
        async with stdio_server() as (read, write):
            if serves_modern(versions):
                await server.run(read, write, options)
                return
            async with server.lifespan(server) as state:
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)


def main(
    env: Mapping[str, str] | None = None,
    deadline: float = CALL_DEADLINE_SECONDS,
    versions: Sequence[str] | None = None,
) -> int:
    url, key = settings(os.environ if env is None else env)
    anyio.run(serve_stdio, url, key, deadline, tuple(versions or SUPPORTED_PROTOCOL_VERSIONS))
    return 0
