"""The server's LLM, as the fake models it: one hook for the four features that need one.

ContextQ writes handoffs, dreams (syntheses of recent contexts), evolved contexts and maps
of content with an LLM provider configured on the server; without one each answers 503
(seed 003: the handoff "wraps the dream-handoff generator"). The fake's hook is one
callable that gets the material of one of them (``LlmMaterial``) and returns the text;
``builtin_llm`` is a deterministic one. A callable written for handoffs alone
(``handoff.Summariser``) is still a hook: it gets only handoffs unless a test asks more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.handoff import HandoffMaterial, Summariser, builtin_summariser
from fake_contextq.domain.records import Context, detached

__all__ = [
    "DreamMaterial",
    "EvolveMaterial",
    "Llm",
    "LlmMaterial",
    "MocMaterial",
    "ServerLlm",
    "builtin_llm",
    "server_llm",
]


@dataclass(frozen=True, slots=True)
class DreamMaterial:
    """A dream's input: the workspace's recent contexts, newest first."""

    workspace: str
    contexts: tuple[Context, ...]
    since: datetime | None


@dataclass(frozen=True, slots=True)
class EvolveMaterial:
    """An evolution's input: the context, its newer related contexts (newest first) and
    the caller's instruction, if any."""

    context: Context
    sources: tuple[Context, ...]
    instruction: str | None


@dataclass(frozen=True, slots=True)
class MocMaterial:
    """One map of content's input: a tag of the workspace and the contexts carrying it,
    in title order."""

    workspace: str
    tag: str
    contexts: tuple[Context, ...]


LlmMaterial = HandoffMaterial | DreamMaterial | EvolveMaterial | MocMaterial
#: The hook: the material of one request, the text the LLM writes for it.
Llm = Callable[[LlmMaterial], str]

#: What each material is called in a 503's message ("no {what} can be written").
_WHAT: dict[type[Any], str] = {
    HandoffMaterial: "handoff",
    DreamMaterial: "synthesis",
    EvolveMaterial: "evolved context",
    MocMaterial: "map of content",
}


def _listed(contexts: tuple[Context, ...]) -> list[str]:
    """One line a context: its title, id and type, and its content's first line."""
    return [f"- {c.title} (#{c.id}, {c.type}): {_first_line(c.content)}" for c in contexts]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def builtin_llm(material: LlmMaterial) -> str:
    """A deterministic LLM in markdown, from the material alone: the same input always
    writes the same text, whose first line is the title (``generated_title``)."""
    if isinstance(material, HandoffMaterial):
        return builtin_summariser(material)
    if isinstance(material, DreamMaterial):
        lines = [f"# Synthesis of {material.workspace}", ""]
        lines.append(f"Drawn from {len(material.contexts)} recent context(s), newest first:")
        return "\n".join([*lines, "", *_listed(material.contexts)]) + "\n"
    if isinstance(material, EvolveMaterial):
        lines = [material.context.content.rstrip(), ""]
        if material.instruction is not None:
            lines += ["## Revised as instructed", material.instruction, ""]
        if material.sources:
            lines += ["## Since then", *_listed(material.sources)]
        return "\n".join(lines).strip() + "\n"
    lines = [f"# Map of content: {material.tag}", ""]
    lines.append(f"{len(material.contexts)} context(s) of {material.workspace} carry this tag:")
    return "\n".join([*lines, "", *_listed(material.contexts)]) + "\n"


class ServerLlm:
    """The configured hook and the rules around each call: a failure, no text or text no
    context can hold is a 503 ``llm_unavailable`` and nothing is written."""

    def __init__(self, write: Llm | Summariser) -> None:
        self._write: Callable[[Any], object] = write

    def write(self, material: LlmMaterial) -> str:
        what = _WHAT[type(material)]
        try:
            text = self._write(detached(material))  # the hook may change what it is given
        except Exception as exc:  # a provider failure is a 503, as upstream
            raise ApiError(
                _msgs.LLM_UNAVAILABLE,
                _msgs.LLM_FAILED_FOR.format(what=what, error=type(exc).__name__),
            ) from None
        if not isinstance(text, str) or not text.strip():
            raise ApiError(_msgs.LLM_UNAVAILABLE, _msgs.LLM_EMPTY_FOR.format(what=what))
        if isinstance(material, HandoffMaterial):
            return text  # stored as the handoff's content, as it always was
        text = wire.well_formed(text)
        size = len(text.encode())
        if size > wire.MAX_CONTENT_BYTES or wire.has_forbidden_char(text):
            raise ApiError(
                _msgs.LLM_UNAVAILABLE,
                _msgs.LLM_UNUSABLE_FOR.format(what=what, size=size, max=wire.MAX_CONTENT_BYTES),
            )
        return text


def unavailable(what: str) -> ApiError:
    """The 503 of a server without an LLM provider."""
    return ApiError(_msgs.LLM_UNAVAILABLE, _msgs.LLM_UNAVAILABLE_FOR.format(what=what))


def server_llm(llm: bool | Llm | Summariser | None) -> ServerLlm | None:
    """The hook ``FakeContextQ(llm=...)`` configures: True the built-in, a callable its own,
    None or False none (every LLM feature then answers 503)."""
    if llm is True:
        return ServerLlm(builtin_llm)
    if llm is None or llm is False:
        return None
    if callable(llm):
        return ServerLlm(llm)
    raise TypeError(f"llm must be True, None or a callable, got {llm!r}")


def generated_title(text: str, fallback: str) -> str:
    """[assumed] The title of a context the LLM wrote: its first non-blank line without a
    markdown heading's ``#``, cut to ``wire.MAX_TITLE_CHARS``; ``fallback`` if none."""
    title = _first_line(text).lstrip("#").strip()
    return (title or fallback)[: wire.MAX_TITLE_CHARS]
