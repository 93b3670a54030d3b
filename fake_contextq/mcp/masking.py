"""A ContextQ base URL as a tool error may show it, and a transport error's text without the
URL's secrets or the key: what a model reads never holds a password, a query value or a
fragment of ``CONTEXT_API_URL`` (``user:S3CRET@``, ``?token=``, ``#…``), nor the API key.

``adapter.errors.redact`` masks a ``user:password@`` and any ``sk_live_`` key in free text;
this adds what only the URL itself can say (its query and fragment, a key of any shape).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import unquote, urlsplit, urlunsplit

from adapter.errors import REDACTED, redact

#: What a URL that cannot even be split is shown as (it may still hold a password).
UNSHOWABLE = "the URL in CONTEXT_API_URL"


def shown_url(url: str) -> str:
    """``url`` with its password, every query value and its fragment as ``***``: a ContextQ
    base URL has no use for a query or a fragment, so any of them may be a credential."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return UNSHOWABLE
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}{':' + REDACTED if colon else ''}@{host}"
    query = "&".join(
        f"{part.partition('=')[0]}={REDACTED}" if "=" in part else REDACTED
        for part in parts.query.split("&")
        if part
    )
    fragment = REDACTED if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def url_secrets(url: str, also: Iterable[str] = ()) -> list[str]:
    """What of ``url`` must never be shown, as written and decoded, and ``also`` (the key),
    longest first: the password, each query value (and each whole query part), the
    fragment."""
    found: set[str] = set(also)
    try:
        parts = urlsplit(url)
    except ValueError:
        return sorted(found | {url}, key=len, reverse=True)
    userinfo = parts.netloc.rpartition("@")[0]
    found.add(userinfo.partition(":")[2])
    for part in parts.query.split("&"):
        found.update((part, part.partition("=")[2]))
    found.add(parts.fragment)
    found |= {unquote(s) for s in found}
    return sorted((s for s in found if s), key=len, reverse=True)


def scrubbed(text: str, secrets: Sequence[str]) -> str:
    """``text`` (an exception's message, which may quote the URL or a header) with every
    one of ``secrets`` and any ``user:password@`` or ``sk_live_`` key masked."""
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return redact(text)
