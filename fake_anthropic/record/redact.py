"""Keeping credentials out of a recording.

A recording keeps an allow-list of headers (``anthropic-version`` and the betas of a
request; ``content-type``, ``request-id``, ``retry-after`` and ``x-should-retry`` of a
response), so ``x-api-key``, ``authorization``, cookies and any other header never reach
it. In bodies, a field whose name carries a credential (an MCP server's
``authorization_token``, an ``api_key``, a ``password``...) is replaced by ``REDACTED``,
and so is every occurrence, anywhere in the recording, of a credential value the request
carried in its headers (a key pasted into a prompt stays out too).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Final

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
MIN_SECRET_CHARS: Final = 8
"""A header value shorter than this is not scrubbed from bodies (it would blank out
ordinary words); such a value is no real key anyway."""


@functools.lru_cache(maxsize=4096)  # the same few dozen field names, request after request
def is_credential_field(name: str) -> bool:
    """Whether a body field of this name carries a credential (``max_tokens`` does not)."""
    return bool(_CREDENTIAL_FIELD.search(name))


def secrets_of(headers: Iterable[tuple[str, str]]) -> list[str]:
    """The credential values a request carried: each credential header's value, and the
    token of an ``authorization: Bearer ...``, longest first."""
    found: set[str] = set()
    for name, value in headers:
        if name.lower() not in CREDENTIAL_HEADERS:
            continue
        value = value.strip()
        found.add(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic", "token"):
            found.add(token.strip())
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(value: object, secrets: Sequence[str]) -> object:
    """``value`` with credential fields and every occurrence of ``secrets`` replaced."""
    if isinstance(value, dict):
        return {
            k: REDACTED if is_credential_field(str(k)) and v is not None else redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    return value
