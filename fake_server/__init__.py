"""Serving an ASGI fake on a real socket: bound before uvicorn starts (so port 0 is known at
once), on a background thread that is ready when ``start()`` returns, or in the foreground.

Both fakes of this project (``fake_contextq`` and ``fake_anthropic``) serve through it.
"""

from fake_server.served import (
    ASGIApp,
    ServedApp,
    bind_socket,
    make_server,
    run_foreground,
    url_for,
)

__all__ = [
    "ASGIApp",
    "ServedApp",
    "bind_socket",
    "make_server",
    "run_foreground",
    "url_for",
]
