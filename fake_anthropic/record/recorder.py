"""A model that records: the recording proxy served on a loopback port in this process,
in front of an upstream Messages API, with the scripted model's record of the run.

``ScriptedModel.recorder(...)`` wraps it, so a test written against the ``scripted_model``
fixture runs unchanged against the real API while its exchanges are recorded.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx2

from fake_anthropic.engine.engine import Answer
from fake_anthropic.engine.ledger import Ledger
from fake_anthropic.record.proxy import HOP_BY_HOP, RecordingProxy
from fake_anthropic.record.recording import Exchange
from fake_anthropic.script.records import RecordedRequest, ToolResult
from fake_anthropic.script.turns import ScriptItem

if TYPE_CHECKING:
    from fake_anthropic.record.server import ServedProxy


class Recorder:
    """The proxy, served on a thread once ``start()`` returns, and the record of its run."""

    def __init__(self, upstream: str, out: str | os.PathLike[str]) -> None:
        self._lock = threading.Lock()
        self._ledger = Ledger()
        self.proxy = RecordingProxy(upstream, out, on_exchange=self._seen)
        self._served: ServedProxy | None = None
        self._url = ""

    def _seen(self, exchange: Exchange) -> None:
        with self._lock:
            self._ledger.add(
                exchange.path,
                exchange.betas,
                exchange.body,
                exchange.status,
                exchange.response,
                turn=None,
            )

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve the proxy; returns its URL."""
        if self._served is None:
            from fake_anthropic.record.server import ServedProxy
            from fake_server import bind_socket, url_for

            sock = bind_socket(host, port)
            bound = sock.getsockname()[1]
            served = ServedProxy(self.proxy, sock, name=f"fake-anthropic-record:{bound}")
            try:
                served.start()
            except BaseException:
                served.stop()
                raise
            self._served = served
            self._url = url_for(host, bound)
        return self._url

    @property
    def url(self) -> str:
        return self.start()

    def close(self) -> None:
        """Stop the proxy; the recording on disk already holds every finished exchange."""
        if self._served is not None:
            try:
                self.proxy.settle()
                self.proxy.close()
            finally:
                self._served.stop()
                self._served = None

    # --- what a scripted model's engine offers ------------------------------------

    def add(self, items: Sequence[ScriptItem]) -> None:
        raise TypeError(
            f"this model records the upstream {self.proxy.shown_upstream}; "
            f"it takes no script() items (got {len(items)})"
        )

    @property
    def remaining(self) -> int:
        return 0

    def allow_unused(self) -> None:
        """Nothing is scripted, so nothing can be left unplayed."""

    @property
    def requests(self) -> list[RecordedRequest]:
        self.proxy.settle()
        with self._lock:
            return list(self._ledger.requests)

    @property
    def tool_results(self) -> list[ToolResult]:
        self.proxy.settle()
        with self._lock:
            return list(self._ledger.tool_results)

    def problems(self) -> list[str]:
        self.proxy.settle()
        return list(self.proxy.failures)

    def verify(self) -> None:
        found = self.problems()
        if found:
            listed = "\n- ".join(found)
            raise AssertionError(f"recording model:\n- {listed}")

    def handle(
        self,
        method: str,
        path: str,
        query: str,
        headers: Sequence[tuple[str, str]],
        raw: bytes,
    ) -> Answer:
        """Send one request through the proxy and return the whole answer."""
        target = self.url + path + (f"?{query}" if query else "")
        sent = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP]
        with httpx2.Client(timeout=None) as http:
            got = http.request(method, target, headers=sent, content=raw)
        kept = [
            (k, v)
            for k, v in got.headers.multi_items()
            if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding"
        ]
        return Answer(got.status_code, kept, [got.content])
