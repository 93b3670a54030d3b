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
    from its minting, as bcrypt would have found it). Only that row's id is kept, under
    the sha256 of the key (the plaintext is kept nowhere); the row itself is read on every
    request, so a revocation by any process sharing the database is seen at the next
    request, which drops the entry."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def minted(self, plaintext: str, key_id: int) -> None:
        """Know the key just stored under row ``key_id`` (its hash is of ``plaintext``)."""
        self._ids[hashlib.sha256(plaintext.encode()).hexdigest()] = key_id

    def find(self, rows: _KeyRows, plaintext: str) -> ApiKey | None:
        digest = hashlib.sha256(plaintext.encode()).hexdigest()
        prefix = key_display_prefix(plaintext)
        key_id = self._ids.get(digest)
        if key_id is not None:
            key = rows.key_by_id(key_id)
            if key is not None and key.prefix == prefix and not key.revoked:
                return key
            self._ids.pop(digest, None)
            if key is not None and key.prefix == prefix:
                return key  # revoked: the caller refuses it
        for key in rows.keys_by_prefix(prefix):
            if key_matches(plaintext, key.key_hash):
                if not key.revoked:
                    self._ids[digest] = key.id
                return key
        return None

    def forget(self, plaintext: str) -> None:
        self._ids.pop(hashlib.sha256(plaintext.encode()).hexdigest(), None)

    def clear(self) -> None:
        self._ids.clear()


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
