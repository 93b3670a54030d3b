"""Reading an ingest request: its body, a ``data:`` URL's text, and the split of that text
into the parts that become contexts. Everything here is [assumed]: the public page names
the tools only.

The split: markdown (``text``, or a ``data:`` URL of ``text/markdown``) is cut before each
top-level ATX heading (``# Title``, outside fenced code); each part's title is its
heading's text, its content the part with its heading. Text before the first heading is a
part of its own, titled by ``title`` or its first non-blank line. ``text/plain`` is one part.
Blank parts are dropped.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import unquote_to_bytes

from adapter import wire
from adapter.errors import redact
from fake_contextq import _msgs
from fake_contextq.domain import shapes
from fake_contextq.domain.errors import NotFaked, ValidationFailed

__all__ = ["IngestRequest", "parse_ingest_body", "split_markdown"]

MARKDOWN, PLAIN = "text/markdown", "text/plain"
_FETCHED_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_HEADING = re.compile(r" {0,3}#(?=[ \t]|$)(.*)")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_SHOWN_URL_CHARS = 200


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """A valid ingest request, its text already split into parts."""

    source: str  # "text" or "data"
    media_type: str
    type: str
    tags: tuple[str, ...]
    workspace: str | None
    titles: tuple[str, ...]
    contents: tuple[str, ...]


def parse_ingest_body(raw: bytes | Mapping[str, Any]) -> IngestRequest:
    """``{"text" | "url", "title"?, "type"?, "tags"?, "workspace"?}``: a 400 listing every
    issue; then an ``http(s)`` URL is the fake's 501 ``not_faked`` (it fetches nothing)."""
    values = shapes.INGEST.read(raw)
    if ("text" in values.given) == ("url" in values.given):
        _refuse_body(_msgs.INGEST_NEEDS_ONE)
    text, url, title = values["text"], values["url"], values["title"]
    type_, tags, workspace = values["type"], values["tags"], values["workspace"]
    if url is not None:
        source, media_type, text = "data", *_read_url(url)
    else:
        source, media_type = "text", MARKDOWN
    assert text is not None
    parts = split_markdown(text, title) if media_type == MARKDOWN else _one_part(text, title)
    if not parts:
        _refuse("text" if source == "text" else "url", _msgs.INGEST_BLANK)
    if len(parts) > wire.INGEST_MAX_PARTS:
        message = _msgs.INGEST_TOO_MANY_PARTS.format(count=len(parts), max=wire.INGEST_MAX_PARTS)
        _refuse("text" if source == "text" else "url", message)
    return IngestRequest(
        source=source,
        media_type=media_type,
        type=type_ or wire.INGEST_DEFAULT_TYPE,
        tags=tags or (),
        workspace=workspace,
        titles=tuple(t for t, _ in parts),
        contents=tuple(c for _, c in parts),
    )


def _refuse_body(message: str) -> NoReturn:
    raise ValidationFailed([{"path": wire.issue_path(()), "message": message}])


def _refuse(field: str, message: str) -> NoReturn:
    raise ValidationFailed([{"path": wire.issue_path((field,)), "message": message}])


def _read_url(url: str) -> tuple[str, str]:
    """(media type, text) of a ``data:`` URL (RFC 2397), or a 400 naming ``url``; an
    ``http(s)`` URL is refused as not faked."""
    found = _SCHEME.match(url)
    scheme = found.group(1).lower() if found else ""
    if scheme in _FETCHED_SCHEMES:
        masked = redact(url)  # a password, a token, a fragment: *** (masked before cut)
        shown = masked if len(masked) <= _SHOWN_URL_CHARS else masked[:_SHOWN_URL_CHARS] + "..."
        raise NotFaked(_msgs.INGEST_NO_FETCH.format(url=repr(shown)))
    if scheme != "data":
        _refuse("url", _msgs.INGEST_BAD_SCHEME.format(scheme=scheme or url[:20]))
    header, comma, payload = url[len("data:") :].partition(",")
    if not comma:
        _refuse("url", _msgs.INGEST_NOT_DATA_URL)
    params = [p.strip() for p in header.split(";")]
    is_base64 = len(params) > 1 and params[-1].lower() == "base64"
    if is_base64:
        params.pop()
    media_type = params[0].lower() or PLAIN
    if media_type not in wire.INGEST_MEDIA_TYPES:
        types = ", ".join(wire.INGEST_MEDIA_TYPES)
        _refuse("url", _msgs.INGEST_BAD_MEDIA_TYPE.format(media_type=media_type, types=types))
    for param in params[1:]:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in ("utf-8", "utf8", "us-ascii"):
            _refuse("url", _msgs.INGEST_BAD_CHARSET.format(charset=value.strip()))
    return media_type, _decoded(payload, is_base64=is_base64)


def _decoded(payload: str, *, is_base64: bool) -> str:
    try:
        if is_base64:
            data = base64.b64decode(unquote_to_bytes(payload), validate=True)
        else:
            data = unquote_to_bytes(payload)
    except (binascii.Error, ValueError):
        _refuse("url", _msgs.INGEST_BAD_BASE64)
    if len(data) > wire.INGEST_MAX_TEXT_BYTES:
        _refuse("url", _msgs.TOO_MANY_BYTES.format(max=wire.INGEST_MAX_TEXT_BYTES, got=len(data)))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        _refuse("url", _msgs.INGEST_NOT_UTF8)
    if wire.has_forbidden_char(text):
        _refuse("url", _msgs.HAS_NUL)
    return text


def _trimmed(lines: list[str]) -> str:
    """The lines without the blank ones at either end, joined."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[start:end]).rstrip("\r\n")


def _first_line_title(text: str) -> str:
    for line in text.splitlines():
        shown = line.strip().lstrip("#").strip()
        if shown:
            return shown[: wire.MAX_TITLE_CHARS]
    return _msgs.INGEST_UNTITLED


def _one_part(text: str, title: str | None) -> list[tuple[str, str]]:
    content = _trimmed(text.splitlines(keepends=True))
    return [(title or _first_line_title(content), content)] if content.strip() else []


def split_markdown(text: str, title: str | None = None) -> list[tuple[str, str]]:
    """(title, content) of each part of markdown ``text``, cut before each top-level heading."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        opened = _FENCE.match(bare)
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and opened and opened.group(1)[0] == fence[0]:
            if len(opened.group(1)) >= len(fence) and not bare.strip().strip(fence[0]):
                fence = None
        elif fence is None and (heading := _HEADING.fullmatch(bare)):
            named = _CLOSING_HASHES.sub("", heading.group(1).strip()).strip()
            parts.append((named[: wire.MAX_TITLE_CHARS] or _msgs.INGEST_UNTITLED, [line]))
            continue
        parts[-1][1].append(line)
    out: list[tuple[str, str]] = []
    for heading_title, lines in parts:
        content = _trimmed(lines)
        if content.strip():
            out.append((heading_title or title or _first_line_title(content), content))
    return out
