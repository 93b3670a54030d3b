"""vcrpy cassettes of Messages API traffic as this project's recordings.

vcrpy (8.2 and later) records what an ``httpx2`` client sends inside one process; a team
that holds such cassettes of Anthropic traffic can replay them through the scripted model
(``ScriptedModel.from_recording``) without recording again. Each ``/v1/messages`` and
``/v1/messages/count_tokens`` exchange with Anthropic's API (``https://api.anthropic.com``,
or a base URL the caller names: the SDK's ``base_url``, under which those paths then lie)
becomes one recorded exchange, built as the recording proxy builds them
(``capture.exchange_of``: streams rebuilt from their events, credentials redacted);
exchanges with anything else (ContextQ, other hosts, other paths) are counted and skipped.

A cassette is untrusted input, so reading it is bounded: the file's size
(``MAX_CASSETTE_BYTES``), its nesting (``MAX_DEPTH``), the nodes a YAML file holds once its
aliases are expanded (``MAX_NODES``, counted on the parser's events before anything is
built, so a "billion laughs" costs nothing), and what a compressed answer inflates to
(the proxy's body limit, ``server.MAX_BODY``). YAML cassettes need PyYAML (a dependency of
vcrpy itself); they are read by its safe loader (libyaml's when PyYAML has it), which
refuses ``!!python`` tags.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import SplitResult, urlsplit

from fake_anthropic.record.capture import exchange_of
from fake_anthropic.record.recording import MAX_DEPTH, Exchange, depth_ok
from fake_anthropic.record.server import MAX_BODY
from fake_anthropic.redact import masked_url

MESSAGES_PATHS: Final = ("/v1/messages", "/v1/messages/count_tokens")
ANTHROPIC_API: Final = "https://api.anthropic.com"
"""The API whose exchanges are always imported; others only when named (``--base-url``)."""
MAX_CASSETTE_BYTES: Final = 64 * 1024 * 1024
"""The largest cassette read: twice the largest request body the proxy takes."""
MAX_NODES: Final = 1_000_000
"""The most YAML nodes (scalars, lists, mappings) a cassette may hold once its aliases are
expanded; a vcrpy cassette holds a few dozen per interaction."""
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


class CassetteError(ValueError):
    """A file that is not a vcrpy cassette, or one holding no Messages API exchange."""


@dataclass(frozen=True)
class Imported:
    exchanges: list[Exchange]
    skipped: int  # exchanges with other paths or hosts


@dataclass(frozen=True)
class BaseURL:
    """Where the SDK sent Messages API requests: an origin and the path they lie under."""

    url: str
    origin: tuple[str, str, int]
    prefix: str

    @classmethod
    def parse(cls, url: str) -> BaseURL:
        """``ValueError`` (showing ``url`` masked) if it is no ``http(s)`` URL with a host."""
        parts = urlsplit(url)
        origin = _origin(parts)
        if origin is None or parts.query or parts.fragment:
            raise ValueError(
                f"{masked_url(url)!r} is not an http:// or https:// base URL (a host, an "
                "optional path, no query)"
            )
        return cls(masked_url(url), origin, parts.path.rstrip("/"))

    def target(self, parts: SplitResult) -> str | None:
        """The Messages API path and query of a request to ``parts``, if it is one."""
        if _origin(parts) != self.origin or not parts.path.startswith(self.prefix):
            return None
        path = parts.path[len(self.prefix) :]
        if path not in MESSAGES_PATHS:
            return None
        return path + (f"?{parts.query}" if parts.query else "")


def _origin(parts: SplitResult) -> tuple[str, str, int] | None:
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


def _read(path: Path) -> str:
    """The file's text, refused unread when it is over ``MAX_CASSETTE_BYTES``."""
    limit = MAX_CASSETTE_BYTES
    too_big = f"{path}: over {limit // (1024 * 1024)} MiB, more than a cassette is read here"
    try:
        if path.stat().st_size > limit:
            raise CassetteError(too_big)
        with path.open("rb") as file:
            data = file.read(limit + 1)  # a file that grew meanwhile, or no regular file
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise CassetteError(too_big)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CassetteError(f"{path}: not a vcrpy cassette (not UTF-8 text)") from None


def _check_yaml(yaml: Any, loader: type, text: str, path: Path) -> None:
    """Walk the parser's events (nothing is built) and refuse a file nesting deeper than
    ``MAX_DEPTH``, holding more than ``MAX_NODES`` nodes once its aliases are expanded,
    or an alias inside the node it names (a cycle)."""
    anchors: dict[str, int] = {}  # an anchor's expanded size
    opened: list[tuple[str | None, int]] = []  # each open collection: anchor, nodes before
    nodes = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in opened):
                raise CassetteError(
                    f"{path}: not a vcrpy cassette (the alias *{event.anchor} is inside the "
                    "node it names)"
                )
            nodes += anchors.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor is not None:
                anchors[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            opened.append((event.anchor, nodes))
            nodes += 1
            if len(opened) > MAX_DEPTH:
                raise CassetteError(f"{path}: nests deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before = opened.pop()
            if anchor is not None:
                anchors[anchor] = nodes - before
        if nodes > MAX_NODES:
            raise CassetteError(
                f"{path}: more than {MAX_NODES:,} YAML nodes once its aliases are expanded "
                "(a vcrpy cassette holds a few dozen an interaction)"
            )


def _yaml_document(text: str, path: Path) -> object:
    try:
        import yaml
    except ModuleNotFoundError:
        raise CassetteError(
            f"{path}: a YAML cassette needs PyYAML (vcrpy's own dependency): pip install pyyaml"
        ) from None
    # libyaml's safe loader is some ten times faster than the pure-Python one; both refuse
    # !!python tags and read !!binary (what vcrpy writes for a body that is not UTF-8)
    loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_yaml(yaml, loader, text, path)
        return yaml.load(text, Loader=loader)  # one of the two safe loaders above
    except yaml.YAMLError as exc:
        raise CassetteError(
            f"{path}: not a vcrpy cassette (invalid YAML: {_reason(exc)})"
        ) from None


def _reason(exc: Exception) -> str:
    """A YAML error in one line: what is wrong, and where."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if not isinstance(problem, str):
        return str(exc).splitlines()[0]
    if mark is None:
        return problem
    return f"{problem}, line {mark.line + 1} column {mark.column + 1}"


def _document(path: Path) -> object:
    text = _read(path)
    if text.lstrip().startswith(("{", "[")):
        try:
            document = json.loads(text)
        except (ValueError, RecursionError) as exc:
            reason = "it nests too deeply" if isinstance(exc, RecursionError) else exc
            raise CassetteError(f"{path}: not a vcrpy cassette (invalid JSON: {reason})") from None
    else:
        document = _yaml_document(text, path)
    if not depth_ok(document):
        raise CassetteError(f"{path}: nests deeper than {MAX_DEPTH} levels")
    return document


def _interactions(document: object, path: Path) -> list[Mapping[str, Any]]:
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        raise CassetteError(
            f"{path}: not a vcrpy cassette (no top-level 'interactions' list; vcrpy writes "
            "{interactions: [...], version: 1})"
        )
    found: list[Mapping[str, Any]] = document["interactions"]
    for i, item in enumerate(found):
        if not (
            isinstance(item, dict)
            and isinstance(item.get("request"), dict)
            and isinstance(item.get("response"), dict)
        ):
            raise CassetteError(f"{path}: interaction {i} has no 'request' and 'response'")
    return found


def _bytes(body: object, where: str) -> bytes:
    """A body as vcrpy stores it: a string, bytes (YAML ``!!binary``), ``{"string": ...}``,
    or a base64 ``{"base64_string": ...}`` (its JSON serializer's binary form)."""
    if isinstance(body, dict):
        if "base64_string" in body:
            encoded = body["base64_string"]
            try:
                if not isinstance(encoded, str):
                    raise TypeError
                return base64.b64decode(encoded, validate=True)
            except (TypeError, ValueError, binascii.Error):
                raise CassetteError(f"{where}: a body's base64_string is not base64") from None
        body = body.get("string")
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8", "surrogateescape")
    raise CassetteError(f"{where}: a body must be a string or bytes")


def _headers(raw: object, where: str) -> list[tuple[str, str]]:
    """vcrpy's headers (``{name: [values]}``, or ``{name: value}``) as pairs."""
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise CassetteError(f"{where}: headers must be a mapping of names to values")
    pairs: list[tuple[str, str]] = []
    for name, values in raw.items():
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, str | int | float) or not isinstance(name, str):
                raise CassetteError(
                    f"{where}: headers must map names to strings or lists of strings"
                )
            pairs.append((name, str(value)))
    return pairs


def _inflate(data: bytes, wbits: int, encoding: str, where: str) -> bytes:
    """``data`` decompressed, refused once it inflates past ``MAX_BODY``."""
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, MAX_BODY + 1)
    except zlib.error as exc:
        raise CassetteError(f"{where}: the {encoding} body does not decode: {exc}") from None
    if len(out) > MAX_BODY:
        raise CassetteError(
            f"{where}: the {encoding} body inflates past {MAX_BODY // (1024 * 1024)} MiB "
            "(the recording proxy's body limit)"
        )
    if not inflater.eof:
        raise CassetteError(f"{where}: the {encoding} body does not decode: it ends early")
    return out


def _decoded(data: bytes, headers: list[tuple[str, str]], where: str) -> bytes:
    """The body as the client read it: vcrpy keeps a compressed answer compressed."""
    encodings = [v.strip().lower() for k, v in headers if k.lower() == "content-encoding"]
    for encoding in reversed([e for v in encodings for e in v.split(",") if e.strip()]):
        encoding = encoding.strip()
        if encoding in ("gzip", "x-gzip"):
            data = _inflate(data, 16 + zlib.MAX_WBITS, encoding, where)
        elif encoding == "deflate":
            data = _inflate(data, zlib.MAX_WBITS, encoding, where)
        elif encoding != "identity":
            raise CassetteError(
                f"{where}: the answer is {encoding}-encoded, which this command cannot "
                "decode; record with vcrpy's decode_compressed_response=True"
            )
    return data


def _status(response: Mapping[str, Any], where: str) -> int:
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if not isinstance(code, int) or isinstance(code, bool) or not 200 <= code <= 599:
        raise CassetteError(f"{where}: response.status.code must be an HTTP status (200-599)")
    return code


def convert(path: str | os.PathLike[str], base_urls: Sequence[BaseURL] = ()) -> Imported:
    """The Messages API exchanges of the cassette at ``path``, in order: those sent to
    ``ANTHROPIC_API`` or one of ``base_urls``."""
    source = Path(path)
    apis = [BaseURL.parse(ANTHROPIC_API), *base_urls]
    exchanges: list[Exchange] = []
    skipped = 0
    for i, item in enumerate(_interactions(_document(source), source)):
        where = f"{source}: interaction {i}"
        request, response = item["request"], item["response"]
        uri, method = request.get("uri"), request.get("method")
        if not isinstance(uri, str) or not isinstance(method, str):
            raise CassetteError(f"{where}: request.uri and request.method must be strings")
        try:
            parts = urlsplit(uri)
        except ValueError:  # '[' without its ']': shown not at all, since it may hold a key
            raise CassetteError(f"{where}: request.uri is not a URL") from None
        target = next((t for api in apis if (t := api.target(parts)) is not None), None)
        if target is None:
            skipped += 1
            continue
        answer_headers = _headers(response.get("headers"), where)
        data = _decoded(_bytes(response.get("body"), where), answer_headers, where)
        try:
            exchange = exchange_of(
                method.upper(),
                target,
                _headers(request.get("headers"), where),
                _bytes(request.get("body"), where),
                _status(response, where),
                answer_headers,
                data,
            )
            exchanges.append(Exchange.from_json(exchange.to_json(), where))
        except ValueError as exc:
            said = str(exc)
            raise CassetteError(said if said.startswith(where) else f"{where}: {said}") from None
    if not exchanges:
        raise CassetteError(
            f"{source}: holds no Messages API exchange (no request to "
            f"{' or '.join(MESSAGES_PATHS)} of {' or '.join(api.url for api in apis)}; "
            f"{skipped} other exchange(s))"
        )
    return Imported(exchanges, skipped)
