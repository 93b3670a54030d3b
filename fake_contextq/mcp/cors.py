"""CORS on the served fake's ``/mcp``, so a browser-based MCP client (the Inspector's web
UI) can reach it: a preflight is answered and every answer (a 401 too) says which origin may
read it and which headers it may see.

[assumed] As the TypeScript SDK's example servers answer, with the ``cors`` package
(``cors({origin: '*', exposedHeaders: [...]})``): a preflight is a 204 allowing the
package's default methods and the headers the browser asks for, and the MCP headers are
exposed. One difference, the fake's own: bound to loopback, the fake keeps DNS-rebinding
protection (``endpoint.security_for``), so only loopback origins are allowed, each named back
(``Vary: Origin``); a preflight from any other origin is refused with a 403 that says why,
since the request it asks for would be refused all the same.
"""

from __future__ import annotations

from collections.abc import Iterable

from fake_contextq import _msgs
from fake_contextq.http._io import Message, Scope, Send

__all__ = [
    "ALLOWED_METHODS",
    "EXPOSED_HEADERS",
    "LOOPBACK",
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "origin_allowed",
    "preflight",
    "with_cors",
]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: What the SDK's DNS-rebinding protection accepts on loopback (``:*``: any port).
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

#: The ``cors`` package's default methods.
ALLOWED_METHODS = "GET,HEAD,PUT,PATCH,POST,DELETE"
#: What the TypeScript SDK's examples expose to a browser client.
EXPOSED_HEADERS = "Mcp-Session-Id,WWW-Authenticate,Last-Event-Id,Mcp-Protocol-Version"

_Headers = list[tuple[bytes, bytes]]


def origin_allowed(origin: str, bound_host: str) -> bool:
    """Whether a page of ``origin`` may use the fake bound to ``bound_host``: any, unless it
    is bound to loopback, where only loopback origins (as the SDK's check matches them)."""
    if bound_host not in LOOPBACK:
        return True
    for allowed in LOOPBACK_ORIGINS:
        if origin == allowed or (allowed.endswith(":*") and origin.startswith(allowed[:-1])):
            return True
    return False


def _header(scope: Scope, name: bytes) -> str | None:
    return next(
        (v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None
    )


def _allow_origin(origin: str, bound_host: str) -> _Headers:
    if bound_host not in LOOPBACK:
        return [(b"access-control-allow-origin", b"*")]
    return [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"Origin")]


def preflight(scope: Scope, bound_host: str) -> tuple[int, _Headers, bytes] | None:
    """The answer to a CORS preflight (``OPTIONS`` with ``Origin`` and
    ``Access-Control-Request-Method``), or None when ``scope`` is not one."""
    origin = _header(scope, b"origin")
    if (
        scope.get("method") != "OPTIONS"
        or origin is None
        or _header(scope, b"access-control-request-method") is None
    ):
        return None
    if not origin_allowed(origin, bound_host):
        body = _msgs.MCP_ORIGIN_REFUSED.format(origin=origin).encode("utf-8", "replace")
        plain = [(b"content-type", b"text/plain; charset=utf-8")]
        return 403, [*plain, (b"content-length", str(len(body)).encode())], body
    headers = _allow_origin(origin, bound_host)
    headers.append((b"access-control-allow-methods", ALLOWED_METHODS.encode()))
    asked = _header(scope, b"access-control-request-headers")
    if asked is not None:
        headers.append((b"access-control-allow-headers", asked.encode("latin-1")))
        headers.append((b"vary", b"Access-Control-Request-Headers"))
    headers.append((b"access-control-expose-headers", EXPOSED_HEADERS.encode()))
    headers.append((b"content-length", b"0"))
    return 204, headers, b""


def with_cors(scope: Scope, send: Send, bound_host: str) -> Send:
    """``send`` adding the CORS headers to the answer of a request from an allowed origin
    (a browser then lets the page read it, a 401's challenge included); ``send`` itself for
    any other request."""
    origin = _header(scope, b"origin")
    if origin is None or not origin_allowed(origin, bound_host):
        return send
    added = [
        *_allow_origin(origin, bound_host),
        (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
    ]

    async def sent(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = dict(message)
            message["headers"] = _without_cors(message.get("headers", ())) + added
        await send(message)

    return sent


def _without_cors(headers: Iterable[tuple[bytes, bytes]]) -> _Headers:
    return [(k, v) for k, v in headers if not k.lower().startswith(b"access-control-")]
