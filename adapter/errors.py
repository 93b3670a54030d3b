"""The typed error hierarchy of the ContextQ client: one class per ContextQ error code."""

from __future__ import annotations

import re
from typing import Any

from adapter.wire import ErrorCode

#: ``scheme://user:password@`` (the password runs to the authority's last ``@``).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:]*:)[^\s/?#]*@")
#: ``password=...`` / ``pgpassword=...`` / ``passwd=...``: a URL query or a libpq keyword,
#: its value bare (to ``&``, ``#``, ``;`` or a space) or quoted.
_KEYWORD_PASSWORD = re.compile(
    r"""(?i)\b((?:pg)?pass(?:word|wd)?\s*=\s*)('(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|[^\s&#;'"]+)"""
)
#: ``?token=...``, ``&api_key=...``: a query parameter whose name says it holds a credential
#: (``key``, ``token``, ``secret``, ``sig``..., alone or after ``_``, ``.``, ``-``: not
#: ``max_tokens``), its value to ``&``, ``#``, a space or a quote.
_QUERY_SECRET = re.compile(
    r"""(?i)([?&](?:[\w.~%-]*[_.-])?(?:key|apikey|token|accesstoken|auth|authorization"""
    r"""|secret|password|passwd|pwd|sig|signature|credentials?)=)[^&#\s'"]+"""
)
#: A URL's fragment (``#...``), which may carry a token (OAuth's implicit flow does).
_URL_FRAGMENT = re.compile(r"""(?i)(\b[a-z][a-z0-9+.\-]*://[^\s#'"]*)#[^\s'"]+""")
#: A ContextQ API key (``sk_live_`` and its secret part).
_API_KEY = re.compile(r"\b(sk_live_)[0-9A-Za-z]+")
REDACTED = "***"
#: What each pattern above needs somewhere in the text (a literal part of it, case ignored
#: as the patterns ignore it): text with none of these holds nothing to mask, and skips the
#: five substitutions (the fake's journal redacts every request's query, mostly ``limit=50``).
_MAY_HOLD_SECRET = re.compile(r"(?i)://|pass|pwd|key|token|auth|secret|sig|credential|sk_live_")


def redact(text: str) -> str:
    """``text`` with every secret this project handles masked: an API key, a database or
    URL password in any form it is written in (``user:pw@``, ``?password=``,
    ``password=...`` of a libpq DSN), a URL's credential-named query values (``?token=``)
    and its fragment. For messages, reprs and log lines."""
    if _MAY_HOLD_SECRET.search(text) is None:
        return text
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}@", text)
    text = _KEYWORD_PASSWORD.sub(rf"\1{REDACTED}", text)
    text = _QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    text = _URL_FRAGMENT.sub(rf"\1#{REDACTED}", text)
    return _API_KEY.sub(rf"\1{REDACTED}", text)


class ContextQError(Exception):
    """Something ContextQ refused or could not do.

    ``status`` is the HTTP status (None for a transport failure), ``code`` ContextQ's
    error code, ``details`` the rest of its error body. Messages name the request
    (method and path) and never the API key.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        details: dict[str, Any] | None = None,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details or {}
        self.method = method
        self.path = path

    def __str__(self) -> str:
        where = f"{self.method} {self.path}: " if self.method and self.path else ""
        status = f"{self.status} " if self.status is not None else ""
        code = f"{self.code}: " if self.code else ""
        return f"{where}{status}{code}{self.message}"


class AuthenticationError(ContextQError):
    """401: the key is missing, malformed, unknown or revoked."""


class ScopeDeniedError(ContextQError):
    """403: the key lacks the scope the endpoint needs (``required``)."""

    @property
    def required(self) -> str | None:
        value = self.details.get("required")
        return value if isinstance(value, str) else None


class NotFoundError(ContextQError):
    """404: no such row in the caller's tenant (another tenant's rows are 404 too)."""


class ValidationError(ContextQError):
    """400: the request was malformed; ``issues`` says where."""

    @property
    def issues(self) -> list[dict[str, str]]:
        value = self.details.get("issues")
        return value if isinstance(value, list) else []

    def __str__(self) -> str:
        listed = "; ".join(
            f"{i.get('path')}: {i.get('message')}" if i.get("path") else str(i.get("message"))
            for i in self.issues
            if isinstance(i, dict)
        )
        return f"{super().__str__()} ({listed})" if listed else super().__str__()


class NoWorkspaceError(ValidationError):
    """400 ``no_workspace``: a handoff needs a workspace on the body or the session."""


class PayloadTooLargeError(ValidationError):
    """413: the request body is over ContextQ's limit."""


class ConflictError(ContextQError):
    """409: the write conflicts with existing state."""


class ExternalIdTakenError(ConflictError):
    """409 ``external_id_taken``: external ids are unique per tenant."""


class WorkspaceTakenError(ConflictError):
    """409 ``workspace_taken``: the slug exists in this tenant."""


class WorkspaceNotEmptyError(ConflictError):
    """409 ``workspace_not_empty``: delete the workspace's contexts first."""


class SeqConflictError(ConflictError):
    """409 ``seq_conflict``: a checkpoint's seq was not the next one (``expected``)."""

    @property
    def expected(self) -> int | None:
        value = self.details.get("expected")
        return value if isinstance(value, int) else None


class QuotaExceededError(ContextQError):
    """402: the tenant's plan allows no more of ``resource`` (``limit`` on ``plan``)."""

    @property
    def resource(self) -> str | None:
        return self.details.get("resource")

    @property
    def limit(self) -> int | None:
        return self.details.get("limit")

    @property
    def plan(self) -> str | None:
        return self.details.get("plan")


class EvidenceRequiredError(ContextQError):
    """422 ``evidence_required``: a task tick needs evidence."""


class UnavailableError(ContextQError):
    """5xx: ContextQ (or a provider behind it) is failing; idempotent calls were retried."""


class LLMUnavailableError(UnavailableError):
    """503 ``llm_unavailable``: the server has no LLM provider configured."""


class ContextQConnectionError(ContextQError):
    """The request never got an answer: connection refused, dropped, or timed out."""


class ContextQTimeoutError(ContextQConnectionError):
    """No answer within the client's timeout."""


BY_CODE: dict[str, type[ContextQError]] = {
    ErrorCode.UNAUTHORIZED: AuthenticationError,
    ErrorCode.SCOPE_DENIED: ScopeDeniedError,
    ErrorCode.NOT_FOUND: NotFoundError,
    ErrorCode.VALIDATION_ERROR: ValidationError,
    ErrorCode.NO_WORKSPACE: NoWorkspaceError,
    ErrorCode.PAYLOAD_TOO_LARGE: PayloadTooLargeError,
    ErrorCode.UNSUPPORTED_MEDIA_TYPE: ValidationError,
    ErrorCode.EXTERNAL_ID_TAKEN: ExternalIdTakenError,
    ErrorCode.WORKSPACE_TAKEN: WorkspaceTakenError,
    ErrorCode.WORKSPACE_NOT_EMPTY: WorkspaceNotEmptyError,
    ErrorCode.SEQ_CONFLICT: SeqConflictError,
    ErrorCode.QUOTA_EXCEEDED: QuotaExceededError,
    ErrorCode.EVIDENCE_REQUIRED: EvidenceRequiredError,
    ErrorCode.LLM_UNAVAILABLE: LLMUnavailableError,
}
BY_STATUS: dict[int, type[ContextQError]] = {
    400: ValidationError,
    401: AuthenticationError,
    402: QuotaExceededError,
    403: ScopeDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: ValidationError,
    422: EvidenceRequiredError,
}


def error_class(status: int, code: str | None) -> type[ContextQError]:
    """The most specific class for an error answer: by code, else by status."""
    if code is not None and code in BY_CODE:
        return BY_CODE[code]
    if status >= 500:
        return UnavailableError
    return BY_STATUS.get(status, ContextQError)
