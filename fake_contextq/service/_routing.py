"""Finding the operation of a request, as ContextQ's router (Fastify's) finds a route.

Templates are matched against the percent-decoded path, one ``{name}`` per non-empty
segment, first entry of the table first; the external id of ``by-external`` takes the
whole rest of the path and is then read from the raw path, so ``%2F`` stays a slash
inside the id. A path no template matches, or a method none of the matching ones has, is
ContextQ's 404 (Fastify answers an unknown method with 404, not 405).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import unquote, unquote_to_bytes

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed
from fake_contextq.service.operations import Operation

#: The parameter that takes the rest of the path (ContextQ's ids are opaque strings).
REST_OF_PATH = "external_id"
#: HEAD is answered as GET is, without the body.
_SAME_AS = {"HEAD": "GET"}


@dataclass(frozen=True, slots=True)
class _Compiled:
    op: Operation
    parts: tuple[str, ...]
    prefix: str | None  # set for a template ending in the rest-of-path parameter


class Match(NamedTuple):
    """An operation and its path parameters as the router read them (percent-decoded);
    ``prefix``: its template's part before the rest-of-path parameter, if it ends in one."""

    op: Operation
    params: dict[str, str]
    prefix: str | None = None


class Router:
    """The table's templates, compiled once, grouped by method (in the table's order)."""

    def __init__(self, operations: Sequence[Operation]) -> None:
        self._routes: dict[str, list[_Compiled]] = {}
        marker = "{" + REST_OF_PATH + "}"
        for op in operations:
            template = op.route.template
            prefix = template[: -len(marker)] if template.endswith(marker) else None
            compiled = _Compiled(op, tuple(template.split("/")), prefix)
            self._routes.setdefault(op.route.method, []).append(compiled)

    def match(self, method: str, path: str) -> Match | None:
        segments: list[str] | None = None
        for route in self._routes.get(_SAME_AS.get(method, method), ()):
            if route.prefix is not None:
                if path.startswith(route.prefix):
                    return Match(route.op, {REST_OF_PATH: path[len(route.prefix) :]}, route.prefix)
                continue
            if segments is None:
                segments = path.split("/")
            params = _fit(route.parts, segments)
            if params is not None:
                return Match(route.op, params)
        return None


def _fit(parts: tuple[str, ...], segments: list[str]) -> dict[str, str] | None:
    if len(parts) != len(segments):
        return None
    params: dict[str, str] = {}
    for part, segment in zip(parts, segments, strict=True):
        if part.startswith("{"):
            if not segment:
                return None
            params[part[1:-1]] = segment
        elif part != segment:
            return None
    return params


def shown_path(path: str) -> str:
    """The path as a 404's message names it: as Starlette's ``request.url.path`` shows a
    decoded path (``?``, ``#`` and ``\\`` escaped; tabs and line breaks dropped, as URL
    parsing drops them), so the message is the one this fake has always given."""
    shown = path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")
    return shown.replace("\t", "").replace("\r", "").replace("\n", "")


def route_not_found(method: str, path: str) -> ApiError:
    return ApiError(
        _msgs.NOT_FOUND, _msgs.ROUTE_NOT_FOUND.format(method=method, path=shown_path(path))
    )


def oauth_not_offered(method: str, path: str) -> ApiError:
    """The 404 of a path an MCP client probes for OAuth (``wire.is_oauth_discovery``): an
    unknown route as any other, whose message (also its ``error_description``, the field an
    OAuth client shows) says that ContextQ takes an API key instead."""
    message = _msgs.OAUTH_NOT_OFFERED.format(method=method, path=shown_path(path))
    return ApiError(_msgs.NOT_FOUND, message, **{wire.OAUTH_ERROR_DESCRIPTION: message})


def url_text(raw: str, field: str) -> str:
    """One raw path segment percent-decoded as UTF-8, or a 400 naming ``field`` when it is
    not UTF-8 (``wire.URL_TEXT_ENCODING``): never U+FFFD in place of what was sent."""
    try:
        if raw.isascii():  # what ``unquote`` does with it, less its split into ASCII runs
            return unquote_to_bytes(raw).decode(wire.URL_TEXT_ENCODING) if "%" in raw else raw
        return unquote(raw, encoding=wire.URL_TEXT_ENCODING, errors="strict")
    except UnicodeDecodeError:
        raise ValidationFailed(
            [{"path": field, "message": _msgs.NOT_UTF8}], _msgs.INVALID_PATH
        ) from None


def one_segment(match: Match, raw_path: str | None) -> bool:
    """Whether the rest-of-path parameter is one path segment as sent (``%2F`` is a '/'
    of the id; a bare '/' would be another path, which a ``:externalId`` router never
    matches)."""
    if match.prefix is None or raw_path is None:
        return True
    return wire.PATH_SEPARATOR not in raw_path[len(match.prefix) :]


def path_values(match: Match, raw_path: str | None) -> dict[str, str]:
    """Each path parameter as sent: decoded from the raw path (a 400 naming its field when
    not UTF-8); the router's own decoding, which puts U+FFFD in place of such bytes, only
    when the raw path does not line up with the template."""
    op = match.op
    if raw_path is None:
        return dict(match.params)
    prefix = match.prefix
    values: dict[str, str] = {}
    if prefix is not None:
        if raw_path.startswith(prefix):
            values[REST_OF_PATH] = url_text(raw_path[len(prefix) :], op.field_of(REST_OF_PATH))
        else:
            values[REST_OF_PATH] = match.params[REST_OF_PATH]
        return values
    if not match.params:
        return values
    parts, segments = op.route.template.split("/"), raw_path.split("/")
    for name, decoded in match.params.items():
        if len(parts) != len(segments):
            values[name] = decoded
        else:
            values[name] = url_text(segments[parts.index("{" + name + "}")], op.field_of(name))
    return values
