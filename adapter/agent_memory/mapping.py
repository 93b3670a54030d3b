"""A run's outcome as the Agent Memory Layer's tasks and lessons (the seed's
``outcomeToTaskPayloads`` / ``outcomeToLessonPayloads``), its status as a session's end
status, its lineage as a session's metadata, and the record as the one context that
lists it. Shared by the REST and the MCP backends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from adapter.agent_memory.records import RunRecord

RECORD_TAG: Final = "agent-run"  # the tag every run-record context carries
# [seed] run records under a search-visible type ('reference'), issues as lessons
RECORD_TYPE: Final = "reference"
ISSUE_TAG: Final = "issue"
RECORD_METADATA_KEY: Final = "agentRun"
END_STATUS: Final = {"completed": "completed", "failed": "failed", "cancelled": "cancelled"}


@dataclass(frozen=True)
class TaskPayload:
    key: str
    title: str
    status: str
    evidence: str | None = None


def record_external_id(run_id: str) -> str:
    return f"agent-run:{run_id}"


def task_payloads(record: RunRecord) -> list[TaskPayload]:
    """Accomplished items as verified tasks (their evidence: the run's own report), next
    items as pending ones; keys stable per run, so writing a record twice updates."""
    evidence = f"reported accomplished by run {record.run_id}"
    done = [
        TaskPayload(f"done-{i}", text, "verified", evidence)
        for i, text in enumerate(record.accomplished, start=1)
    ]
    pending = [
        TaskPayload(f"next-{i}", text, "pending") for i, text in enumerate(record.next, start=1)
    ]
    return [*done, *pending]


def lesson_payloads(record: RunRecord) -> list[dict[str, Any]]:
    """Each issue as a lesson, so later runs' boot recalls it."""
    return [{"text": issue, "tags": [ISSUE_TAG, RECORD_TAG]} for issue in record.issues]


def session_metadata(record: RunRecord) -> dict[str, Any]:
    """[seed] the run id is the join key; the three links ContextQ has no column for ride
    in metadata beside it."""
    return {
        "run_id": record.run_id,
        "task": record.task[:500],
        "previous_run_id": record.previous_run_id,
        "chat_session_id": record.chat_session_id,
        "root_run_id": record.root_run_id,
    }


def record_context(
    record: RunRecord, session_id: int | None, workspace: str | None
) -> dict[str, Any]:
    """The context that stores the whole record: its JSON in metadata (list rows carry
    metadata, not content), a readable account as content, so search finds it."""
    lines = [f"Run {record.run_id} ({record.status}): {record.task}"]
    lines += [f"Accomplished: {t}" for t in record.accomplished]
    lines += [f"Next: {t}" for t in record.next]
    lines += [f"Issue: {t}" for t in record.issues]
    stored = {**record.to_json(), "session_id": session_id}
    body: dict[str, Any] = {
        "type": RECORD_TYPE,
        "title": f"Run {record.run_id}: {record.task}"[:200] or f"Run {record.run_id}",
        "content": "\n".join(lines),
        "tags": [RECORD_TAG],
        "external_id": record_external_id(record.run_id),
        "metadata": {RECORD_METADATA_KEY: stored},
    }
    if workspace is not None:
        body["workspace"] = workspace
    return body


def record_of(metadata: Any) -> tuple[RunRecord, int | None] | None:
    """The record (and its session id) a run-record context's metadata holds, or None."""
    stored = metadata.get(RECORD_METADATA_KEY) if isinstance(metadata, dict) else None
    if not isinstance(stored, dict):
        return None
    try:
        record = RunRecord.from_json(stored)
    except ValueError:
        return None
    session = stored.get("session_id")
    return record, session if isinstance(session, int) else None


def local_handoff(record: RunRecord) -> str:
    """What a handoff says when the server has no LLM to write one: the run's outcome."""
    parts = [f"Last run {record.run_id} ({record.status}): {record.task}"]
    if record.accomplished:
        parts.append("done: " + "; ".join(record.accomplished))
    if record.next:
        parts.append("next: " + "; ".join(record.next))
    if record.issues:
        parts.append("issues: " + "; ".join(record.issues))
    return ". ".join(parts)
