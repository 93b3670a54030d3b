"""Raw HTTP/1.1 over sockets for the proxy's tests: an upstream whose connections a test
answers byte by byte, and a client that sends exactly the bytes a test gives."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

Handler = Callable[[socket.socket, "RawUpstream"], None]
JSON_BODY = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],'
    b'"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}'
)
"""A Messages response (the proxy records only answers a replay can serve)."""


class RawUpstream:
    """A TCP server on loopback whose connections ``handler`` answers with raw bytes, one
    thread a connection; ``accepted`` counts the connections."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.accepted = 0
        self.gate = threading.Event()  # a handler may wait on it between two writes
        self.released: bool | None = None  # whether the gate opened (not timed out)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.handler(conn, self)

    def close(self) -> None:
        self.sock.close()


def read_request(conn: socket.socket, buffered: bytearray) -> bytes | None:
    """One request (head and content-length body) off ``conn``; None at end of stream."""
    while b"\r\n\r\n" not in buffered:
        data = conn.recv(65536)
        if not data:
            return None
        buffered += data
    end = buffered.index(b"\r\n\r\n") + 4
    length = 0
    for line in bytes(buffered[:end]).split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buffered) < end + length:
        buffered += conn.recv(65536)
    request = bytes(buffered[: end + length])
    del buffered[: end + length]
    return request


def answering(*answers: bytes, close: bool = False) -> Handler:
    """Answers each request on a connection with the next of ``answers`` (cycling), and
    closes the connection after each if ``close``."""

    def handler(conn: socket.socket, _server: RawUpstream) -> None:
        buffered = bytearray()
        n = 0
        while read_request(conn, buffered) is not None:
            conn.sendall(answers[n % len(answers)])
            n += 1
            if close:
                return

    return handler


def json_answer(status: int = 200, body: bytes = JSON_BODY, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n%s" % (
        status,
        len(body),
        extra,
        body,
    )


def send_raw(port: int, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a new connection and read until the proxy closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        return read_all(conn)


def read_all(conn: socket.socket) -> bytes:
    """What arrives on ``conn`` until the peer closes it (or resets it)."""
    got = bytearray()
    with contextlib.suppress(ConnectionResetError):
        while data := conn.recv(65536):
            got += data
    return bytes(got)


def status_of(answer: bytes) -> int:
    """The status code of the first answer in ``answer`` (0 if there is none)."""
    line = answer.split(b"\r\n", 1)[0].split(b" ")
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0
