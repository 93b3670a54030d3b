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


def utf8(answer: str) -> bytes:
    """An answer's text as UTF-8; a scripted text that cannot be is a script problem."""
    try:
        return answer.encode()
    except UnicodeEncodeError as exc:
        raise not_unicode(exc) from None


def not_unicode(exc: UnicodeEncodeError) -> Refusal:
    """A scripted answer holding an unpaired surrogate: the API answers in UTF-8 and never
    sends one, so the script, not the caller, must change."""
    found = exc.object[exc.start : exc.end]
    points = ", ".join(f"U+{ord(ch):04X}" for ch in found)
    return problem(
        f"the scripted answer holds an unpaired surrogate ({points}: half of a UTF-16 pair), "
        "which is not valid Unicode and which the API never sends; write the whole character "
        "(or U+FFFD) in the script"
    )


SURFACE_MODULE = "fake_anthropic/engine/surface.py"
_WHAT = {
    "beta": "the beta {name!r} (anthropic-beta header)",
    "field": "the request field {name!r}",
    "tool": "the tool type {name!r}{where}",
    "block": "the content-block type {name!r} in `messages`",
}


def not_modelled(kind: str, name: str, why: str | None, where: str | None) -> Refusal:
    """A beta, field, tool type or block type the scripted model refuses (``why`` says what
    it does not model) or does not know (``why`` None): a script problem naming it and how
    to go on, so a client's new beta is a visible decision and never a silent drift."""
    what = _WHAT[kind].format(name=name, where=f" ({where}.type)" if where else "")
    if why is not None:
        text = f"{what} is not modelled: {why}."
    else:
        text = (
            f"{what} is not one the scripted model knows (neither the installed anthropic "
            "SDK's nor one a known client sends), so it does not model it."
        )
        if kind != "beta":
            text += " The real API refuses an unknown one too (400 invalid_request_error)."
    if kind == "beta":
        text += (
            " The real API may take it and answer differently, so the request is not "
            "played. To play the script with the beta ignored: ScriptedModel(ignore_betas="
            f"[{name!r}]) or `fake-anthropic serve --ignore-beta {name}`."
        )
    elif kind == "field":
        text += " Leave it out of the request to play the script."
    elif kind == "tool":
        text += " Leave that tool out of the request's `tools` to play the script."
    else:
        text += " Leave such blocks out of the conversation to play the script."
    if why is None:
        text += f" A name the SDK or a client newly sends is classified in {SURFACE_MODULE}."
    return problem(text)


def header_in_body(name: str) -> Refusal:
    """An SDK parameter the SDK sends as a header (``betas``, ``workspace_id``...) found in
    the body: the API refuses it as an unknown field, and so does the fake, saying where it
    belongs."""
    header = "anthropic-beta" if name == "betas" else "anthropic-" + name.replace("_", "-")
    return problem(
        f"the request field {name!r} belongs in the {header} header, where the SDK sends it, "
        "not in the body; the real API refuses it there too (400 invalid_request_error, "
        "an unknown field). Pass it as the SDK's parameter, not in extra_body."
    )


def bad_ignored_beta(name: object) -> str:
    """The message for an ``ignore_betas`` entry that no ``anthropic-beta`` header can hold."""
    return (
        f"ignore_betas: {name!r} is not a beta name; give each as the anthropic-beta header "
        "spells it, one per entry (e.g. 'per-turn-control-2026-07-01')"
    )
