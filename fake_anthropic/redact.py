"""Keeping credentials out of a recording, and out of what the proxy prints.

A recording keeps an allow-list of headers (``anthropic-version`` and the betas of a
request; ``content-type``, ``request-id``, ``retry-after`` and ``x-should-retry`` of a
response), so ``x-api-key``, ``authorization``, cookies and any other header never reach
it. The credentials a request carried are its credential headers' values (and a bearer
token alone) and the values of its credential-named query parameters (``key``,
``api_key``, ``token``...); each of them, as sent and percent-encoded, is replaced by
``REDACTED`` wherever it occurs in the recording: the path and query, the kept headers and
betas, JSON keys and values of both bodies, a streamed message's text. A credential-named
query parameter's value and a credential-named body field's value are replaced whatever
they hold. ``masked_url`` is an upstream URL as it may be printed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Final
from urllib.parse import quote, unquote, urlsplit, urlunsplit

REDACTED: Final = "[redacted]"

CREDENTIAL_HEADERS: Final = frozenset(
    {"x-api-key", "authorization", "proxy-authorization", "cookie", "set-cookie"}
)
"""Request headers whose values are credentials (their values are scrubbed from bodies)."""

_CREDENTIAL_FIELD: Final = re.compile(
    r"(?:^|[_-])(?:api[_-]?key|authorization(?:[_-]token)?|access[_-]?token|refresh[_-]?token"
    r"|auth[_-]?token|bearer[_-]?token|secret|client[_-]?secret|password|credentials?)$",
    re.IGNORECASE,
)
_CREDENTIAL_PARAM: Final = re.compile(
    r"(?:^|[_.-])(?:key|api[_-]?key|apikey|token|access[_-]?token|auth|authorization|secret"
    r"|password|passwd|pwd|sig|signature|credentials?)$",
    re.IGNORECASE,
)
MASK: Final = "***"
MIN_SECRET_CHARS: Final = 8
"""A header value shorter than this is not scrubbed from bodies (it would blank out
ordinary words); such a value is no real key anyway."""


@functools.lru_cache(maxsize=4096)  # the same few dozen field names, request after request
def is_credential_field(name: str) -> bool:
    """Whether a body field of this name carries a credential (``max_tokens`` does not)."""
    return bool(_CREDENTIAL_FIELD.search(name))


def is_credential_param(name: str) -> bool:
    """Whether a query parameter of this name carries a credential (``key``, ``api_key``,
    ``token``, ``sig``...; ``max_tokens`` and ``beta`` do not)."""
    return bool(_CREDENTIAL_PARAM.search(unquote(name)))


def _params(query: str) -> list[tuple[str, str, str]]:
    """Each ``name=value`` of a query: its raw text, its decoded name and decoded value."""
    found = []
    for part in query.split("&"):
        name, _, value = part.partition("=")
        found.append((part, unquote(name.replace("+", " ")), unquote(value.replace("+", " "))))
    return found


def secrets_of(headers: Iterable[tuple[str, str]], query: str = "") -> list[str]:
    """The credentials a request carried, longest first, each as sent and percent-encoded:
    every credential header's value, the token of an ``authorization: Bearer ...``, and the
    value of every credential-named query parameter."""
    found: set[str] = set()
    for name, value in headers:
        if name.lower() not in CREDENTIAL_HEADERS:
            continue
        value = value.strip()
        found.add(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic", "token"):
            found.add(token.strip())
    if query:
        for raw, name, value in _params(query):
            if is_credential_param(name):
                found.update((value, raw.partition("=")[2]))
    found |= {quote(s, safe="") for s in found}
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def _scrub(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_target(target: str, secrets: Sequence[str]) -> str:
    """A request's path and query for the recording: credential-named parameters' values
    replaced, and every credential removed from the rest."""
    path, mark, query = target.partition("?")
    if mark:
        query = "&".join(
            f"{raw.partition('=')[0]}={REDACTED}" if is_credential_param(name) else raw
            for raw, name, _ in _params(query)
        )
    return _scrub(path, secrets) + mark + _scrub(query, secrets)


def redact(value: object, secrets: Sequence[str]) -> object:
    """``value`` with credential fields and every occurrence of ``secrets`` replaced, in
    keys as in values."""
    if isinstance(value, dict):
        return {
            _scrub(str(k), secrets): REDACTED
            if is_credential_field(str(k)) and v is not None
            else redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        return _scrub(value, secrets)
    return value


def url_secrets(url: str) -> list[str]:
    """The credentials an upstream URL holds (a ``user:password@`` password, values of
    credential-named query parameters, the fragment), as written and decoded, for scrubbing
    text."""
    parts = urlsplit(url)
    found: set[str] = set()
    password = parts.netloc.rpartition("@")[0].partition(":")[2] if "@" in parts.netloc else ""
    if password:
        found.update((password, unquote(password)))
    for raw, name, value in _params(parts.query) if parts.query else []:
        if is_credential_param(name):
            found.update((raw.partition("=")[2], value))
    if parts.fragment:
        found.update((parts.fragment, unquote(parts.fragment)))
    return sorted((s for s in found if s), key=len, reverse=True)


def masked_url(url: str) -> str:
    """``url`` as it may be printed: a password, credential-named query values and the
    fragment as ``***`` (as ``adapter.errors.redact`` shows a URL)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}{':' + MASK if colon else ''}@{host}"
    query = parts.query
    if query:
        query = "&".join(
            f"{raw.partition('=')[0]}={MASK}" if is_credential_param(name) else raw
            for raw, name, _ in _params(query)
        )
    # a fragment may carry a token (OAuth's implicit flow does): never shown
    return urlunsplit((parts.scheme, netloc, parts.path, query, MASK if parts.fragment else ""))


def scrub_url(text: str, url: str) -> str:
    """``text`` (a message that may quote ``url``) without the URL's credentials."""
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text
