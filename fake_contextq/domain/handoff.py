"""Handoff documents: what the LLM is given, and the fake's built-in summariser."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapter import wire
from fake_contextq.domain.records import AgentSession, AgentTask, Checkpoint, Lesson


@dataclass(frozen=True, slots=True)
class HandoffMaterial:
    """Everything the server assembles for a handoff: the LLM's input."""

    workspace: str
    session: AgentSession | None
    tasks: list[AgentTask]
    lessons: list[Lesson]
    checkpoint: Checkpoint | None


Summariser = Callable[[HandoffMaterial], str]


def builtin_summariser(material: HandoffMaterial) -> str:
    """A deterministic handoff in markdown: where the work stands, from the rows alone."""
    lines = [f"# Handoff: {material.workspace}", ""]
    session = material.session
    if session is not None:
        lines.append(
            f"Session {session.id} is {session.status}"
            + (f": {session.summary}" if session.summary else ".")
        )
        lines.append("")
    done = [t for t in material.tasks if t.status == wire.TASK_VERIFIED]
    open_ = [t for t in material.tasks if t.status != wire.TASK_VERIFIED]
    if done:
        lines.append("## Done")
        lines += [f"- {t.title} (evidence: {t.evidence})" for t in done]
        lines.append("")
    if open_:
        lines.append("## Still open")
        lines += [f"- [{t.status}] {t.title}" for t in open_]
        lines.append("")
    if material.lessons:
        lines.append("## Lessons")
        lines += [f"- {lesson.text}" for lesson in material.lessons]
        lines.append("")
    if material.checkpoint is not None:
        cp = material.checkpoint
        lines.append("## Last checkpoint")
        lines.append(f"seq {cp.seq}" + (f": {cp.summary}" if cp.summary else ""))
        lines.append("")
    if len(lines) == 2:
        lines.append("Nothing has been recorded for this workspace yet.")
    return "\n".join(lines).rstrip() + "\n"
