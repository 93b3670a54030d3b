"""A recording of Messages API exchanges: its file format, loading it, and writing it.

The file is one JSON object::

    {"format": "fake-anthropic-recording", "version": 1, "exchanges": [
      {"request": {"method": "POST", "path": "/v1/messages", "anthropic_version": "2023-06-01",
                   "betas": ["message-threads-2026-08-12"], "body": {...}},
       "response": {"status": 200, "headers": {"request-id": "req_..."}, "stream": true,
                    "body": {"id": "msg_...", "type": "message", ...}}},
      ...]}

A response ``body`` is the JSON the API answered (a message, a ``count_tokens`` result,
an error) or, for a stream, the message its events delivered (``stream`` true); a stream
that ended with an ``error`` event keeps that event as ``body``. No credential is ever in
it (``_redact``). ``RecordingFile`` rewrites the whole file after each exchange, on a
writer thread, to a temporary file renamed over it, so the file on disk is always complete
and valid: a run killed at any moment leaves the exchanges written before it. The file is
not fsynced.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

Json = dict[str, Any]

FORMAT: Final = "fake-anthropic-recording"
VERSION: Final = 1
RESPONSE_HEADERS: Final = ("content-type", "request-id", "retry-after", "x-should-retry")
"""The response headers a recording keeps (the SDK reads these; no others reach it)."""


@dataclass(frozen=True)
class Exchange:
    """One recorded request and the API's answer to it."""

    method: str
    path: str
    body: object
    status: int
    response: object
    betas: list[str] = field(default_factory=list)
    anthropic_version: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path.split('?')[0]}"

    @property
    def message(self) -> Json | None:
        """The reply message if the answer is one (JSON or streamed), else None."""
        r = self.response
        if self.status == 200 and isinstance(r, dict) and r.get("type") == "message":
            return r
        return None

    def to_json(self) -> Json:
        request: Json = {"method": self.method, "path": self.path}
        if self.anthropic_version is not None:
            request["anthropic_version"] = self.anthropic_version
        request["betas"] = list(self.betas)
        request["body"] = self.body
        response: Json = {"status": self.status, "headers": dict(self.headers)}
        response["stream"] = self.stream
        response["body"] = self.response
        return {"request": request, "response": response}

    @classmethod
    def from_json(cls, data: object, where: str) -> Exchange:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: an exchange is an object with 'request' and 'response'")
        request, response = data.get("request"), data.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            raise ValueError(f"{where}: an exchange is an object with 'request' and 'response'")
        method, path, status = request.get("method"), request.get("path"), response.get("status")
        if not isinstance(method, str) or not isinstance(path, str):
            raise ValueError(f"{where}: request.method and request.path must be strings")
        if not isinstance(status, int) or isinstance(status, bool):
            raise ValueError(f"{where}: response.status must be an integer")
        betas = request.get("betas", [])
        if not isinstance(betas, list) or not all(isinstance(b, str) for b in betas):
            raise ValueError(f"{where}: request.betas must be a list of strings")
        headers = response.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise ValueError(f"{where}: response.headers must map names to strings")
        version = request.get("anthropic_version")
        return cls(
            method=method,
            path=path,
            body=request.get("body"),
            status=status,
            response=response.get("body"),
            betas=list(betas),
            anthropic_version=version if isinstance(version, str) else None,
            headers={str(k).lower(): v for k, v in headers.items()},
            stream=response.get("stream") is True,
        )


def _head() -> str:
    return f'{{\n "format": "{FORMAT}",\n "version": {VERSION},\n "exchanges": ['


def _exchange_text(exchange: Exchange, *, pretty: bool = True) -> str:
    """An exchange's text in the file: indented (for a readable diff when a recording is
    re-recorded), or on one line (``json``'s C encoder, a twentieth of the time: what the
    file holds while a recording runs, before ``RecordingFile.close`` rewrites it)."""
    if not pretty:
        return "\n  " + json.dumps(exchange.to_json(), ensure_ascii=False)
    return "\n  " + json.dumps(exchange.to_json(), ensure_ascii=False, indent=1).replace(
        "\n", "\n  "
    )


def _document(parts: Sequence[str]) -> str:
    return _head() + ",".join(parts) + ("\n ]\n}\n" if parts else "]\n}\n")


def dump(exchanges: Sequence[Exchange]) -> str:
    """The file's text."""
    return _document([_exchange_text(e) for e in exchanges])


def load(path: str | os.PathLike[str]) -> list[Exchange]:
    """The exchanges of a recording file; ``ValueError`` names what is wrong with it."""
    where = os.fspath(path)
    try:
        document = json.loads(Path(path).read_text("utf-8"))
    except ValueError as exc:
        raise ValueError(f"recording {where} is not valid JSON: {exc}") from None
    return parse(document, where)


def is_recording(document: object) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT


def parse(document: object, where: str) -> list[Exchange]:
    if not is_recording(document):
        raise ValueError(f'recording {where}: not a recording (no "format": "{FORMAT}")')
    assert isinstance(document, dict)
    if document.get("version") != VERSION:
        raise ValueError(
            f"recording {where}: version {document.get('version')!r}; this version of "
            f"fake_anthropic reads version {VERSION}"
        )
    exchanges = document.get("exchanges")
    if not isinstance(exchanges, list):
        raise ValueError(f"recording {where}: 'exchanges' must be a list")
    return [
        Exchange.from_json(e, f"recording {where}, exchange {i}")
        for i, e in enumerate(exchanges, 1)
    ]


class RecordingFile:
    """A recording on disk, kept complete and valid at every moment.

    ``append`` returns at once; a writer thread then rewrites the whole file (each
    exchange's text made once) to a temporary file renamed over it, so a reader, or a run
    killed at any point, sees the file either before or after an exchange, never half of
    one. Appends that come while a write runs are written together by the next one (a
    rename costs about a millisecond on ext4, which the client should not wait for).
    ``flush()`` waits until the file holds every exchange appended; ``close()`` flushes,
    stops the thread and rewrites the file indented. While the recording runs each exchange
    is one line (made by ``json``'s C encoder, so appending costs the proxy's event loop
    tens of microseconds, not the milliseconds of the indenting encoder).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._changed = threading.Condition()
        self._exchanges: list[Exchange] = []
        self._parts: list[str] = []
        self._written = 0
        self._closed = False
        self.error: OSError | None = None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write([])
        self._thread = threading.Thread(
            target=self._run, name=f"recording-writer:{self.path.name}", daemon=True
        )
        self._thread.start()

    @property
    def exchanges(self) -> list[Exchange]:
        with self._changed:
            return list(self._exchanges)

    def append(self, exchange: Exchange) -> None:
        """Add an exchange; the file holds it once the writer thread has run."""
        text = _exchange_text(exchange, pretty=False)
        with self._changed:
            if self._closed:
                raise ValueError(f"the recording {self.path} is closed")
            self._exchanges.append(exchange)
            self._parts.append(text)
            self._changed.notify_all()

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until the file on disk holds every exchange appended so far."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._written == len(self._parts) or self.error is not None, timeout
            )
            if self.error is not None:
                raise self.error

    def close(self, timeout: float = 10.0) -> None:
        """Flush, stop the writer thread, then rewrite the file indented."""
        try:
            self.flush(timeout)
        finally:
            with self._changed:
                already = self._closed
                self._closed = True
                self._changed.notify_all()
            self._thread.join(timeout)
        if not already and self.error is None and not self._thread.is_alive():
            self._write([_exchange_text(e) for e in self.exchanges])

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._closed or self._written < len(self._parts))
                if self._written == len(self._parts):
                    return
                parts = list(self._parts)
            try:
                self._write(parts)
            except OSError as exc:
                with self._changed:
                    self.error = exc
                    self._changed.notify_all()
                return
            with self._changed:
                self._written = len(parts)
                self._changed.notify_all()

    def _write(self, parts: list[str]) -> None:
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(_document(parts), "utf-8")
        os.replace(temporary, self.path)
