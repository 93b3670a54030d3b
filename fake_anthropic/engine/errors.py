"""The error answers of the scripted model: the API's own refusals and script problems."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


class Refusal(Exception):
    """An error answer; ``problem`` marks a script or fake failure that ``verify()`` reports.
    ``headers`` are extra response headers (``retry-after`` of a scripted error)."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        *,
        details: Json | None = None,
        problem: bool = False,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.details = details
        self.problem = problem
        self.headers = headers or []


def invalid(message: str, details: Json | None = None) -> Refusal:
    """The API's 400 ``invalid_request_error``."""
    return Refusal(400, "invalid_request_error", message, details=details)


def coded(message: str, error_code: str) -> Refusal:
    """A 400 ``invalid_request_error`` with ``details.error_code`` (the SDK's typed details)."""
    return invalid(message, {"error_code": error_code})


def problem(message: str) -> Refusal:
    """A request the script cannot answer: 500 ``api_error``, never retried, and reported
    by ``verify()``."""
    return Refusal(500, "api_error", f"scripted model: {message}", problem=True)
