"""Exceptions the fake's model raises; the HTTP layer turns them into error bodies."""

from __future__ import annotations

from typing import Any

from adapter import wire
from fake_contextq import _msgs


class ApiError(Exception):
    """A ContextQ error answer: a code from ``_msgs``, a sentence, and optional details."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    @property
    def status(self) -> int:
        return wire.ERROR_STATUS[self.code]

    def body(self) -> dict[str, Any]:
        return wire.error_body(self.code, self.message, self.details)

    def headers(self) -> tuple[tuple[str, str], ...]:
        """Headers the answer carries besides the body's (a 401's challenge)."""
        return ()

    def __repr__(self) -> str:
        return f"ApiError({self.status} {self.code}: {self.message})"


class ValidationFailed(ApiError):
    """400 ``validation_error`` with the list of ``{path, message}`` issues."""

    def __init__(self, issues: list[dict[str, str]], message: str = _msgs.INVALID_BODY) -> None:
        super().__init__(_msgs.VALIDATION_ERROR, message, issues=issues)
        self.issues = issues

    def __str__(self) -> str:
        listed = "; ".join(
            f"{i['path']}: {i['message']}" if i["path"] else i["message"] for i in self.issues
        )
        return f"{self.message} {listed}" if listed else self.message


class NotFaked(ApiError):
    """501 ``not_faked`` (the fake's own code): a request ContextQ is assumed to serve by
    something this fake never does, such as fetching a URL; the message says which."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(_msgs.NOT_FAKED, message, **details)

    @property
    def status(self) -> int:
        return NOT_FAKED_STATUS


#: [the fake's own] the status of ``NotFaked``: Not Implemented, by this fake.
NOT_FAKED_STATUS = 501


class AuditChainError(AssertionError):
    """Raised by ``verify_audit_chain`` at the first row that breaks the chain."""

    def __init__(self, row_id: int, reason: str) -> None:
        super().__init__(reason)
        self.row_id = row_id
        self.reason = reason


class Unauthorized(ApiError):
    """401 ``unauthorized``, whose answer carries the Bearer challenge of ``realm``
    (``wire.bearer_challenge``): ``invalid_token`` and the message when a token was sent and
    refused; no error when none was (no header, or another scheme: RFC 6750 §3.1)."""

    def __init__(self, message: str, *, token_sent: bool, realm: str = wire.AUTH_REALM) -> None:
        super().__init__(_msgs.UNAUTHORIZED, message)
        self.token_sent = token_sent
        self.realm = realm

    def headers(self) -> tuple[tuple[str, str], ...]:
        if not self.token_sent:
            return ((WWW_AUTHENTICATE, wire.bearer_challenge(self.realm)),)
        challenge = wire.bearer_challenge(self.realm, wire.INVALID_TOKEN, self.message)
        return ((WWW_AUTHENTICATE, challenge),)


WWW_AUTHENTICATE = "www-authenticate"


def unauthorized(message: str, *, token_sent: bool = True) -> Unauthorized:
    """A refused API key (``token_sent``: one was sent, in the Bearer scheme)."""
    return Unauthorized(message, token_sent=token_sent)


def not_found(message: str) -> ApiError:
    return ApiError(_msgs.NOT_FOUND, message)
