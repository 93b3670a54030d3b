"""API keys: minting, parsing the Authorization header, and scope checks."""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed, unauthorized


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
        raise unauthorized(_msgs.MISSING_AUTH)
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized(_msgs.NOT_BEARER)
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
