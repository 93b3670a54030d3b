"""The fake's transports: the served ASGI adapter, the in-process httpx2 transports,
the control routes, the dashboard and the served root page."""

from fake_contextq.http._io import ASGIApp, Binding
from fake_contextq.http.app import ServedApi, create_app
from fake_contextq.http.transport import AsyncInProcessTransport, InProcessTransport
from fake_contextq.service.faults import Fault, Faults
from fake_contextq.service.journal import Journal, JournalEntry

__all__ = [
    "ASGIApp",
    "AsyncInProcessTransport",
    "Binding",
    "Fault",
    "Faults",
    "InProcessTransport",
    "Journal",
    "JournalEntry",
    "ServedApi",
    "create_app",
]
