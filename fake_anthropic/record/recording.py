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
it (``fake_anthropic.redact``). ``RecordingFile`` keeps the file on disk complete and
valid after each exchange, on a writer thread: it appends the exchange in place with one
``write`` that stays within one page (the kernel checks for a fatal signal only between pages, so a
process killed at any moment leaves that write whole or not at all), and otherwise
rewrites the whole file to a temporary file renamed over it. A run killed at any moment
leaves the exchanges written before it. The file is not fsynced.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from fake_anthropic.record.answer_shape import answer_problem

Json = dict[str, Any]

FORMAT: Final = "fake-anthropic-recording"
VERSION: Final = 1
RESPONSE_HEADERS: Final = ("content-type", "request-id", "retry-after", "x-should-retry")
"""The response headers a recording keeps (the SDK reads these; no others reach it)."""
MAX_DEPTH: Final = 128
"""How deeply a recorded body may nest (a real Messages body nests a few dozen levels)."""
_FRAMING_HEADERS: Final = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "host",
    }
)
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SENDABLE: Final = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def depth_ok(value: object) -> bool:
    """Whether ``value`` nests at most ``MAX_DEPTH`` levels (checked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def _sendable(text: str) -> bool:
    """Whether ``text`` can stand in an HTTP field: latin-1, no CR, LF, NUL or other
    control character but tab."""
    return _SENDABLE.fullmatch(text) is not None


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
        """An exchange from its JSON; ``ValueError`` naming ``where`` and the field when a
        field could not be replayed (a status no server may answer, a header no server
        may send, a stream body that is no message, nesting past ``MAX_DEPTH``, an answer
        of a Messages endpoint that is no Messages response or error envelope:
        ``answer_shape``)."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: an exchange is an object with 'request' and 'response'")
        request, response = data.get("request"), data.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            raise ValueError(f"{where}: an exchange is an object with 'request' and 'response'")
        method, path, status = request.get("method"), request.get("path"), response.get("status")
        if not isinstance(method, str) or not isinstance(path, str):
            raise ValueError(f"{where}: request.method and request.path must be strings")
        if not _TOKEN.fullmatch(method):
            raise ValueError(f"{where}: request.method {method[:40]!r} is not an HTTP method")
        if not path.startswith("/") or not _sendable(path) or " " in path or "\t" in path:
            raise ValueError(f"{where}: request.path {path[:80]!r} is not a /path?query")
        if not isinstance(status, int) or isinstance(status, bool):
            raise ValueError(f"{where}: response.status must be an integer")
        if not 200 <= status <= 599:
            raise ValueError(
                f"{where}: response.status {status} is not a final HTTP status (200-599)"
            )
        betas = request.get("betas", [])
        if not isinstance(betas, list) or not all(isinstance(b, str) for b in betas):
            raise ValueError(f"{where}: request.betas must be a list of strings")
        version = request.get("anthropic_version")
        for text in [*betas, version if isinstance(version, str) else ""]:
            if not _sendable(text):
                raise ValueError(f"{where}: request header value {text[:40]!r} cannot be sent")
        headers = response.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise ValueError(f"{where}: response.headers must map names to strings")
        for name, value in headers.items():
            if not _TOKEN.fullmatch(str(name)):
                raise ValueError(f"{where}: response header name {str(name)[:40]!r} is no token")
            if str(name).lower() in _FRAMING_HEADERS:
                raise ValueError(
                    f"{where}: response header {name!r} frames the message; the server "
                    "that replays it sets it"
                )
            if not _sendable(value):
                raise ValueError(
                    f"{where}: response header {name!r} has a value that cannot be sent "
                    "(CR, LF, NUL, another control character, or text beyond latin-1)"
                )
        stream = response.get("stream", False)
        if not isinstance(stream, bool):
            raise ValueError(f"{where}: response.stream must be true or false")
        body = response.get("body")
        kind = body.get("type") if isinstance(body, dict) else None
        if stream and status == 200 and kind not in ("message", "error"):
            raise ValueError(
                f"{where}: a streamed response's body must be the message its events "
                'delivered ("type": "message") or the error event it ended with '
                '("type": "error")'
            )
        if not (depth_ok(request.get("body")) and depth_ok(body)):
            raise ValueError(f"{where}: a body nests deeper than {MAX_DEPTH} levels")
        problem = answer_problem(method, path, status, stream, body)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        return cls(
            method=method,
            path=path,
            body=request.get("body"),
            status=status,
            response=body,
            betas=list(betas),
            anthropic_version=version if isinstance(version, str) else None,
            headers={str(k).lower(): v for k, v in headers.items()},
            stream=stream,
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


_CLOSE: Final = "\n ]\n}\n"
_CLOSE_BYTES: Final = _CLOSE.encode()
PAGE: Final = 4096


def _document(parts: Sequence[str]) -> str:
    return _head() + ",".join(parts) + (_CLOSE if parts else "]\n}\n")


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
    except RecursionError:
        raise ValueError(f"recording {where}: nests deeper than JSON is read here") from None
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

    A reader, or a run killed at any point, sees the file either before or after an
    exchange, never half of one. An exchange goes in one ``os.pwrite`` over the closing
    brackets (the exchange and the brackets again) when that write stays within one page
    of the file: a few microseconds, whole or absent after any kill, done by ``append``
    itself when the writer thread is idle (waking a thread costs more). Otherwise (the
    first exchange, a write that would cross a page) ``append`` returns at once and a
    writer thread rewrites the whole file to a temporary file renamed over it (a rename
    costs about a millisecond on ext4, which the client should not wait for), with
    whitespace before the closing brackets up to the next page boundary, so the appends
    after it fit in place. Appends that come while it writes are written together next.
    ``flush()`` waits until the file holds every exchange appended; ``close()`` flushes,
    stops the thread and rewrites the file indented, without the padding. While the
    recording runs each exchange is one line (made by ``json``'s C encoder, so appending
    costs the proxy's event loop tens of microseconds, not the milliseconds of the
    indenting encoder).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        lock = threading.Lock()
        self._work = threading.Condition(lock)  # the writer thread waits on it
        self._changed = threading.Condition(lock)  # flush() waits on it
        self._exchanges: list[Exchange] = []
        self._parts: list[str] = []
        self._written = 0
        self._busy = False  # the writer thread is writing
        self._closed = False
        self.error: OSError | None = None
        self._fd: int | None = None  # the file at ``path`` as last written, for appends
        self._tail = 0  # where its closing brackets start
        self.rewrites = 0  # whole-file rewrites so far (a test reads it)
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
        """Add an exchange. If it fits in place and the writer thread is idle it is written
        here and now (one ``pwrite`` of a few microseconds, cheaper than waking a thread);
        otherwise the file holds it once the writer thread has run."""
        text = _exchange_text(exchange, pretty=False)
        with self._changed:
            if self._closed:
                raise ValueError(f"the recording {self.path} is closed")
            self._exchanges.append(exchange)
            self._parts.append(text)
            if not self._busy and self.error is None and self._written == len(self._parts) - 1:
                try:
                    written = self._append_in_place([text], self._written)
                except OSError as exc:
                    self.error = exc
                    written = False
                if written or self.error is not None:
                    self._written += 1 if written else 0
                    self._changed.notify_all()
                    return
            self._work.notify_all()

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
                self._work.notify_all()
            self._thread.join(timeout)
        if not already and self.error is None and not self._thread.is_alive():
            try:
                self._write([_exchange_text(e) for e in self.exchanges])
            finally:
                self._close_fd()

    def _run(self) -> None:
        while True:
            with self._work:
                self._work.wait_for(
                    lambda: (
                        self._closed or self.error is not None or self._written < len(self._parts)
                    )
                )
                if self._written == len(self._parts) or self.error is not None:
                    return
                parts = list(self._parts)
                written = self._written
                self._busy = True
            try:
                if not self._append_in_place(parts[written:], written):
                    self._write(parts, pad=True)
            except OSError as exc:
                with self._changed:
                    self.error = exc
                    self._busy = False
                    self._changed.notify_all()
                return
            with self._changed:
                self._written = len(parts)
                self._busy = False
                self._changed.notify_all()

    def _append_in_place(self, new: list[str], written: int) -> bool:
        """Append ``new`` after the ``written`` exchanges in one write within one page;
        False (nothing written) if that cannot be done."""
        if self._fd is None or written == 0 or not hasattr(os, "pwrite"):
            return False
        data = ("," + ",".join(new)).encode("utf-8") + _CLOSE_BYTES
        if self._tail % PAGE + len(data) > PAGE:
            return False
        if os.pwrite(self._fd, data, self._tail) != len(data):
            raise OSError(f"a short write to {self.path}")
        self._tail += len(data) - len(_CLOSE_BYTES)
        return True

    def _write(self, parts: list[str], *, pad: bool = False) -> None:
        """Rewrite the whole file (to a temporary file renamed over it); with ``pad``,
        whitespace up to a page boundary before the closing brackets."""
        body = (_head() + ",".join(parts)).encode("utf-8")
        close = (_CLOSE if parts else "]\n}\n").encode()
        if pad and parts:
            room = -(len(body) + 1) % PAGE
            body += b"\n" + b" " * room
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            data = body + close
            if os.write(fd, data) != len(data):
                raise OSError(f"a short write to {temporary}")
            os.replace(temporary, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._close_fd()
        self._fd, self._tail = fd, len(body)
        self.rewrites += 1

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
