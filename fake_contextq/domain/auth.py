"""API keys: minting, parsing the Authorization header, and scope checks."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from typing import Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed, unauthorized
from fake_contextq.domain.keys import key_display_prefix, key_matches
from fake_contextq.domain.records import ApiKey


class _KeyRows(Protocol):
    def keys_by_prefix(self, prefix: str) -> list[ApiKey]: ...
    def key_by_id(self, key_id: int) -> ApiKey | None: ...


class VerifiedKeys:
    """Which key row each presented key verified against, so bcrypt runs once per key per
    process, not per request (and not at all for a key this process minted: it is known
    from its minting, as bcrypt would have found it). Only that row's id and bcrypt hash
    are kept, under the sha256 of the key (the plaintext is kept nowhere); the row itself
    is read on every request and must still hold that hash, so a revocation by any process
    sharing the database is seen at the next request, and a row that went (a rolled-back
    mint, a restored snapshot, another process's reset) and whose id a new key took never
    answers for the old key: bcrypt hashes are salted, the new row's differs."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[int, str]] = {}

    def minted(self, plaintext: str, key: ApiKey) -> None:
        """Know the key just stored as ``key`` (whose hash is of ``plaintext``)."""
        self._rows[_digest(plaintext)] = (key.id, key.key_hash)

    def find(self, rows: _KeyRows, plaintext: str) -> ApiKey | None:
        digest = _digest(plaintext)
        prefix = key_display_prefix(plaintext)
        known = self._rows.get(digest)
        if known is not None:
            key = rows.key_by_id(known[0])
            same = key is not None and key.key_hash == known[1] and key.prefix == prefix
            if key is not None and same and not key.revoked:
                return key
            self._rows.pop(digest, None)
            if key is not None and same:
                return key  # revoked: the caller refuses it
        for key in rows.keys_by_prefix(prefix):
            if key_matches(plaintext, key.key_hash):
                if not key.revoked:
                    self._rows[digest] = (key.id, key.key_hash)
                return key
        return None

    def forget(self, plaintext: str) -> None:
        self._rows.pop(_digest(plaintext), None)

    def clear(self) -> None:
        self._rows.clear()


def _digest(plaintext: str) -> str:
    """What a key is known by in ``VerifiedKeys`` (one spelling, or a key minted under one
    name would be looked up under another)."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def new_key() -> str:
    return wire.KEY_PREFIX + secrets.token_hex(wire.KEY_HEX_LENGTH // 2)


def normalise_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    if isinstance(scopes, str):
        scopes = [s for s in scopes.replace(",", " ").split() if s]
    out: list[str] = []
    for scope in scopes:
        if scope not in wire.SCOPES:
            raise ValidationFailed(
                [{"path": "scopes", "message": _msgs.NO_SCOPES_KNOWN.format(scope=scope)}]
            )
        if scope not in out:
            out.append(scope)
    return tuple(out)


def bearer_key(authorization: str | None) -> str:
    """The key from an ``Authorization`` header, or a 401 that says what is wrong with it."""
    if authorization is None or not authorization.strip():
        raise unauthorized(_msgs.MISSING_AUTH, token_sent=False)
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized(_msgs.NOT_BEARER, token_sent=False)
    token = token.strip()
    if not wire.KEY_RE.fullmatch(token):
        raise unauthorized(_msgs.MALFORMED_KEY)
    return token


def require_scope(held: tuple[str, ...], required: str) -> None:
    if not wire.scope_grants(held, required):
        raise ApiError(
            _msgs.SCOPE_DENIED,
            _msgs.SCOPE_DENIED_MSG.format(required=required, held=", ".join(held) or "none"),
            required=required,
        )
