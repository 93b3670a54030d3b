"""The one verifying TLS context the adapter's own HTTP clients share."""

from __future__ import annotations

import functools
import ssl

import httpx2


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """Made once per process: building a verifying context loads the CA bundle, about
    35 ms, which every client (a memory tool, an agent memory, a throwaway tenant's
    client) would otherwise pay again. Contexts are safe to share across threads and
    clients; one the caller configures goes in its own ``http_client``."""
    return httpx2.create_ssl_context()
