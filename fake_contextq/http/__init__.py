"""The fake's HTTP side: the ASGI app, the control routes, the OpenAPI document, the
journal and faults, and the transports that serve it in-process."""

from fake_contextq.http._io import ASGIApp, Binding
from fake_contextq.http.app import create_app
from fake_contextq.http.faults import Fault, Faults
from fake_contextq.http.journal import Journal, JournalEntry
from fake_contextq.http.transport import AsyncInProcessTransport, InProcessTransport, LoopRunner

__all__ = [
    "ASGIApp",
    "AsyncInProcessTransport",
    "Binding",
    "Fault",
    "Faults",
    "InProcessTransport",
    "Journal",
    "JournalEntry",
    "LoopRunner",
    "create_app",
]
