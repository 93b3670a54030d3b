"""One request into the service and its answer, as plain data: what every transport
translates to and from (an httpx2 request in-process, an ASGI scope when served)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain._validate import Issues
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.render import json_body

__all__ = ["Answer", "BodyReader", "ReceivedBody", "Request", "json_answer", "query_params"]

#: How much of a body refused as too large is kept, for the journal (which keeps no more).
KEPT_OF_REFUSED = 64 * 1024

JSON_HEADERS: tuple[tuple[str, str], ...] = (("content-type", wire.JSON_MEDIA_TYPE),)


@dataclass(frozen=True, slots=True)
class ReceivedBody:
    """A request body as received, checked later: an operation authenticates first, so a
    bad key is a 401 even when the body is also too large or not JSON."""

    data: bytes = b""
    media: str = ""
    declared_too_large: int | None = None  # a declared length over the limit: not read
    streamed_too_large: int | None = None  # bytes read when a body without one went over

    @classmethod
    def whole(cls, data: bytes, headers: Mapping[str, str]) -> ReceivedBody:
        """A body that arrived in one piece (in-process), judged as ``BodyReader`` judges a
        streamed one fed it in one chunk (without a reader: every in-process request
        comes here)."""
        if not data and "content-type" not in headers and "content-length" not in headers:
            return NO_BODY  # what the lines below make of it (a GET's, most often)
        media = media_type(headers)
        declared = declared_too_large(headers)
        if declared is not None:
            return cls(b"", media, declared)
        if len(data) > wire.MAX_BODY_BYTES:
            return cls(data[:KEPT_OF_REFUSED], media, streamed_too_large=len(data))
        return cls(data, media)

    def checked(self) -> bytes:
        """The raw body, refusing oversized and non-JSON bodies the way Fastify does."""
        if self.declared_too_large is not None:
            raise too_large(self.declared_too_large)
        if self.streamed_too_large is not None:
            raise ApiError(
                _msgs.PAYLOAD_TOO_LARGE,
                _msgs.PAYLOAD_TOO_LARGE_STREAMED_MSG.format(
                    read=self.streamed_too_large, limit=wire.MAX_BODY_BYTES
                ),
            )
        body = self.data
        if len(body) > wire.MAX_BODY_BYTES:
            raise too_large(len(body))
        if body and self.media != wire.JSON_MEDIA_TYPE:
            raise ApiError(
                _msgs.UNSUPPORTED_MEDIA_TYPE,
                _msgs.UNSUPPORTED_MEDIA_TYPE_MSG.format(content_type=self.media),
            )
        return body


#: An empty body sent with no Content-Type or Content-Length.
NO_BODY: ReceivedBody = ReceivedBody()


class BodyReader:
    """Reads a body within the limit, sans I/O (a transport feeds it what arrives): a
    declared length over the limit is refused unread (``refused``), and a body that streams
    past it without one is refused as soon as it does (``feed``'s answer), so what is past
    the limit is never held and a huge upload costs no memory before its 413."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self.media = media_type(headers)
        self.parts: list[bytes] = []
        self.size = 0
        declared = declared_too_large(headers)
        self.refused = None if declared is None else ReceivedBody(b"", self.media, declared)

    def feed(self, chunk: bytes) -> ReceivedBody | None:
        """Take one chunk; the refusal once the body is over the limit (what was read is
        kept for the journal only), else None."""
        self.size += len(chunk)
        if self.size > wire.MAX_BODY_BYTES:
            kept = (b"".join(self.parts) + chunk)[:KEPT_OF_REFUSED]
            self.parts.clear()
            return ReceivedBody(kept, self.media, streamed_too_large=self.size)
        self.parts.append(chunk)
        return None

    def done(self) -> ReceivedBody:
        return ReceivedBody(b"".join(self.parts), self.media)


def declared_length(headers: Mapping[str, str]) -> int | None:
    """A body's declared ``Content-Length``, or None when none is declared or it is no
    number: ASCII digits only (``isdigit`` also holds for ``²``, which ``int`` refuses)."""
    declared = headers.get("content-length")
    if declared is None or not (declared.isascii() and declared.isdigit()):
        return None
    return int(declared)


def declared_too_large(headers: Mapping[str, str]) -> int | None:
    """The declared length of a body, when it is over the limit (the body is not read)."""
    declared = declared_length(headers)
    return declared if declared is not None and declared > wire.MAX_BODY_BYTES else None


def media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def too_large(size: int) -> ApiError:
    return ApiError(
        _msgs.PAYLOAD_TOO_LARGE,
        _msgs.PAYLOAD_TOO_LARGE_MSG.format(size=size, limit=wire.MAX_BODY_BYTES),
    )


@dataclass(frozen=True, slots=True)
class Request:
    """What the service reads of one HTTP request.

    ``path`` is percent-decoded (what a router matches), ``raw_path`` as sent (None when
    the transport has only the decoded one), ``query`` the raw query string; header names
    are lower case, a repeated header's first value wins."""

    method: str
    path: str
    raw_path: str | None = None
    query: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    body: ReceivedBody = field(default_factory=ReceivedBody)

    @staticmethod
    def header_map(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
        """Headers as bytes pairs (ASGI, httpx2) to the map a request holds: names lower
        case, values read as latin-1 (as Starlette reads them), the first of a name kept."""
        pairs = raw if isinstance(raw, list | tuple) else list(raw)
        # built from the last pair back, so the first of a name is the one that stays
        return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in reversed(pairs)}


@dataclass(slots=True)
class Answer:
    """What the service answers: a status, headers and the whole body; ``tenant_id`` is
    the authenticated caller's and ``asked`` the body the operation read (both for the
    journal: no tenant when nobody was authenticated, no body when none was read)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    tenant_id: int | None = None
    asked: bytes = b""  # the request body the operation read (for the journal)

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]


def json_answer(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    """A JSON answer with its length, as Starlette's ``Response`` sends one; ``body`` a
    JSON value or the bytes of one already rendered."""
    payload = body if isinstance(body, bytes) else json_body(body)
    return Answer(status, (("content-length", str(len(payload))), *JSON_HEADERS, *headers), payload)


def error_answer(exc: ApiError) -> Answer:
    """ContextQ's error body, with the headers the error carries (a 401's challenge)."""
    return json_answer(exc.status, exc.body(), exc.headers())


def query_params(query: str) -> dict[str, str]:
    """The query's parameters (a repeated name: its last value), each value percent-decoded
    as UTF-8; one that is not UTF-8 is a 400 naming it (``wire.URL_TEXT_ENCODING``). A name
    that is not UTF-8 names no parameter: ignored."""
    issues = Issues(_msgs.INVALID_QUERY)
    params: dict[str, str] = {}
    for name, value in parse_qsl(
        query, keep_blank_values=True, encoding=wire.URL_TEXT_ENCODING, errors="surrogateescape"
    ):
        if wire.well_formed(name) != name:
            continue
        if wire.well_formed(value) != value:  # undecodable bytes were kept as surrogates
            issues.add((name,), _msgs.QUERY_NOT_UTF8)
        params[name] = value
    issues.check()
    return params
