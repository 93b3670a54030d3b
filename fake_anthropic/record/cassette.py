"""vcrpy cassettes of Messages API traffic as this project's recordings.

vcrpy (8.2 and later) records what an ``httpx2`` client sends inside one process; a team
that holds such cassettes of Anthropic traffic can replay them through the scripted model
(``ScriptedModel.from_recording``) without recording again. Each ``/v1/messages`` and
``/v1/messages/count_tokens`` exchange becomes one recorded exchange, built as the
recording proxy builds them (``capture.exchange_of``: streams rebuilt from their events,
credentials redacted); exchanges with anything else (ContextQ, other hosts) are counted and
skipped. YAML cassettes need PyYAML (a dependency of vcrpy itself).
"""

from __future__ import annotations

import base64
import json
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fake_anthropic.record.capture import exchange_of
from fake_anthropic.record.recording import Exchange

MESSAGES_PATHS = ("/v1/messages", "/v1/messages/count_tokens")


class CassetteError(ValueError):
    """A file that is not a vcrpy cassette, or one holding no Messages API exchange."""


@dataclass(frozen=True)
class Imported:
    exchanges: list[Exchange]
    skipped: int  # exchanges with other paths or hosts


def _document(path: Path) -> object:
    try:
        text = path.read_text("utf-8")
    except OSError as exc:
        raise CassetteError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CassetteError(f"{path}: not a vcrpy cassette (not UTF-8 text)") from None
    if text.lstrip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise CassetteError(f"{path}: not a vcrpy cassette (invalid JSON: {exc})") from None
    try:
        import yaml
    except ModuleNotFoundError:
        raise CassetteError(
            f"{path}: a YAML cassette needs PyYAML (vcrpy's own dependency): pip install pyyaml"
        ) from None
    try:
        # vcrpy writes bodies that are not UTF-8 as !!binary, which the safe loader reads
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0]
        raise CassetteError(f"{path}: not a vcrpy cassette (invalid YAML: {reason})") from None


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
            return base64.b64decode(str(body["base64_string"]))
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
            pairs.append((str(name), str(value)))
    return pairs


def _decoded(data: bytes, headers: list[tuple[str, str]], where: str) -> bytes:
    """The body as the client read it: vcrpy keeps a compressed answer compressed."""
    encodings = [v.strip().lower() for k, v in headers if k.lower() == "content-encoding"]
    for encoding in reversed([e for v in encodings for e in v.split(",") if e.strip()]):
        encoding = encoding.strip()
        try:
            if encoding in ("gzip", "x-gzip"):
                data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
            elif encoding == "deflate":
                data = zlib.decompress(data)
            elif encoding != "identity":
                raise CassetteError(
                    f"{where}: the answer is {encoding}-encoded, which this command cannot "
                    "decode; record with vcrpy's decode_compressed_response=True"
                )
        except zlib.error as exc:
            raise CassetteError(f"{where}: the {encoding} body does not decode: {exc}") from None
    return data


def _status(response: Mapping[str, Any], where: str) -> int:
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    if not isinstance(code, int) or isinstance(code, bool) or not 200 <= code <= 599:
        raise CassetteError(f"{where}: response.status.code must be an HTTP status (200-599)")
    return code


def convert(path: str | os.PathLike[str]) -> Imported:
    """The Messages API exchanges of the cassette at ``path``, in order."""
    source = Path(path)
    exchanges: list[Exchange] = []
    skipped = 0
    for i, item in enumerate(_interactions(_document(source), source)):
        where = f"{source}: interaction {i}"
        request, response = item["request"], item["response"]
        uri, method = request.get("uri"), request.get("method")
        if not isinstance(uri, str) or not isinstance(method, str):
            raise CassetteError(f"{where}: request.uri and request.method must be strings")
        parts = urlsplit(uri)
        if parts.path not in MESSAGES_PATHS:
            skipped += 1
            continue
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        answer_headers = _headers(response.get("headers"), where)
        data = _decoded(_bytes(response.get("body"), where), answer_headers, where)
        exchange = exchange_of(
            method.upper(),
            target,
            _headers(request.get("headers"), where),
            _bytes(request.get("body"), where),
            _status(response, where),
            answer_headers,
            data,
        )
        try:
            exchanges.append(Exchange.from_json(exchange.to_json(), where))
        except ValueError as exc:
            raise CassetteError(str(exc)) from None
    if not exchanges:
        raise CassetteError(
            f"{source}: holds no Messages API exchange (no request to "
            f"{' or '.join(MESSAGES_PATHS)}; {skipped} other exchange(s))"
        )
    return Imported(exchanges, skipped)
