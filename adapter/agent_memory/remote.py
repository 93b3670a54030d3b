"""The Agent Memory Layer as the two remote backends reach it: ``RestRemote`` through the
typed client, ``McpRemote`` through ContextQ's MCP tools. Both raise ``ContextQError``
subclasses for a refusal, so the backend above handles them once."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from adapter import wire
from adapter.agent_memory.mapping import RECORD_TAG, record_external_id
from adapter.errors import ContextQError, NotFoundError, error_class
from adapter.types import AgentSession, AgentTask, BootPack, Checkpoint, Handoff, Lesson, Resume

if TYPE_CHECKING:
    from adapter.client import ContextQClient
    from adapter.mcp_client import SyncMcpClient


class Remote(Protocol):
    def save_record(self, body: Mapping[str, Any]) -> None: ...
    def record_metadata(self, workspace: str | None) -> Iterator[Any]: ...
    def record_metadata_of(self, run_id: str) -> Any: ...
    def start_session(
        self, workspace: str | None, parent_session_id: int | None, metadata: Mapping[str, Any]
    ) -> AgentSession: ...
    def end_session(self, session_id: int, status: str, summary: str | None) -> AgentSession: ...
    def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None
    ) -> Checkpoint: ...
    def resume(self, session_id: int) -> Resume: ...
    def upsert_task(
        self, session_id: int, key: str, title: str, status: str, evidence: str | None
    ) -> AgentTask: ...
    def add_lesson(
        self, text: str, workspace: str | None, session_id: int | None, tags: Sequence[str]
    ) -> Lesson: ...
    def handoff(self, session_id: int, workspace: str | None) -> Handoff: ...
    def boot(self, goal: str, workspace: str | None, token_budget: int | None) -> BootPack: ...
    def workspaces(self) -> list[str] | None: ...
    def create_workspace(self, slug: str) -> None: ...
    def close(self) -> None: ...


class RestRemote:
    def __init__(self, client: ContextQClient) -> None:
        self.client = client

    def save_record(self, body: Mapping[str, Any]) -> None:
        self.client.bulk_upsert([body])  # an upsert on the external id: one request

    def record_metadata(self, workspace: str | None) -> Iterator[Any]:
        for row in self.client.iter_contexts(workspace=workspace, tag=RECORD_TAG):
            yield row.metadata

    def record_metadata_of(self, run_id: str) -> Any:
        try:
            return self.client.get_context_by_external_id(record_external_id(run_id)).metadata
        except NotFoundError:
            return None

    def start_session(
        self, workspace: str | None, parent_session_id: int | None, metadata: Mapping[str, Any]
    ) -> AgentSession:
        return self.client.start_session(
            workspace=workspace, parent_session_id=parent_session_id, metadata=metadata
        )

    def end_session(self, session_id: int, status: str, summary: str | None) -> AgentSession:
        return self.client.end_session(session_id, status, summary)

    def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None
    ) -> Checkpoint:
        return self.client.checkpoint(session_id, seq, state, summary)

    def resume(self, session_id: int) -> Resume:
        return self.client.resume(session_id)

    def upsert_task(
        self, session_id: int, key: str, title: str, status: str, evidence: str | None
    ) -> AgentTask:
        return self.client.upsert_task(session_id, key, title, status=status, evidence=evidence)

    def add_lesson(
        self, text: str, workspace: str | None, session_id: int | None, tags: Sequence[str]
    ) -> Lesson:
        return self.client.add_lesson(text, workspace=workspace, session_id=session_id, tags=tags)

    def handoff(self, session_id: int, workspace: str | None) -> Handoff:
        return self.client.handoff(session_id=session_id, workspace=workspace)

    def boot(self, goal: str, workspace: str | None, token_budget: int | None) -> BootPack:
        return self.client.boot(goal, workspace=workspace, token_budget=token_budget)

    def workspaces(self) -> list[str] | None:
        return [w.slug for w in self.client.list_workspaces()]

    def create_workspace(self, slug: str) -> None:
        self.client.create_workspace(slug)

    def close(self) -> None:
        self.client.close()


def _wire_context(body: Mapping[str, Any]) -> dict[str, Any]:
    names = wire.CONTEXT_WIRE_NAMES
    return {names.get(k, k): v for k, v in body.items()}


class McpRemote:
    """The same calls as ContextQ's MCP tools (``agent_*`` and ``ctx_*``); a tool error
    becomes the ``ContextQError`` its status and code name."""

    def __init__(self, session: SyncMcpClient) -> None:
        self.session = session

    def _call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        from adapter.mcp_client import result_text

        args = {k: v for k, v in arguments.items() if v is not None}
        try:
            result = self.session.call_tool(tool, args)
        except Exception as exc:  # the protocol's error or a broken session
            raise ContextQError(f"{tool}: {exc}", code="mcp_error") from exc
        if result.is_error:
            body = dict(result.structured_content or {})
            text = result_text(result)
            status = wire.mcp_error_status(text) or 500
            code = body.get("error")
            cls = error_class(status, code if isinstance(code, str) else None)
            details = {k: v for k, v in body.items() if k not in ("error", "message")}
            raise cls(str(body.get("message", text)), status=status, code=code, details=details)
        return result.structured_content

    def save_record(self, body: Mapping[str, Any]) -> None:
        self._call("ctx_bulk_update", {"contexts": [_wire_context(body)]})

    def record_metadata(self, workspace: str | None) -> Iterator[Any]:
        offset = 0
        while True:
            page = self._call(
                "ctx_list",
                {"tags": [RECORD_TAG], "workspace": workspace, "limit": 500, "offset": offset},
            )
            rows, total, _, _ = wire.read_page(page)
            for row in rows:
                yield row.get("metadata")
            offset += len(rows)
            if not rows or offset >= total:
                return

    def record_metadata_of(self, run_id: str) -> Any:
        try:
            found = self._call("ctx_get", {"externalId": record_external_id(run_id)})
        except NotFoundError:
            return None
        return found.get("metadata")

    def start_session(
        self, workspace: str | None, parent_session_id: int | None, metadata: Mapping[str, Any]
    ) -> AgentSession:
        answer = self._call(
            "agent_session_start",
            {
                "workspace": workspace,
                "parent_session_id": parent_session_id,
                "metadata": dict(metadata),
            },
        )
        return AgentSession.from_wire(answer)

    def end_session(self, session_id: int, status: str, summary: str | None) -> AgentSession:
        answer = self._call(
            "agent_session_end", {"session_id": session_id, "status": status, "summary": summary}
        )
        return AgentSession.from_wire(answer)

    def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None
    ) -> Checkpoint:
        answer = self._call(
            "agent_checkpoint",
            {"session_id": session_id, "seq": seq, "state": dict(state), "summary": summary},
        )
        return Checkpoint.from_wire(answer)

    def resume(self, session_id: int) -> Resume:
        return Resume.from_wire(self._call("agent_resume", {"session_id": session_id}))

    def upsert_task(
        self, session_id: int, key: str, title: str, status: str, evidence: str | None
    ) -> AgentTask:
        answer = self._call(
            "agent_task_upsert",
            {"session_id": session_id, "key": key, "title": title, "status": status,
             "evidence": evidence},
        )  # fmt: skip
        return AgentTask.from_wire(answer)

    def add_lesson(
        self, text: str, workspace: str | None, session_id: int | None, tags: Sequence[str]
    ) -> Lesson:
        answer = self._call(
            "agent_lesson_add",
            {"text": text, "workspace": workspace, "session_id": session_id, "tags": list(tags)},
        )
        return Lesson.from_wire(answer)

    def handoff(self, session_id: int, workspace: str | None) -> Handoff:
        answer = self._call("agent_handoff", {"session_id": session_id, "workspace": workspace})
        return Handoff.from_wire(answer)

    def boot(self, goal: str, workspace: str | None, token_budget: int | None) -> BootPack:
        answer = self._call(
            "agent_boot", {"goal": goal, "workspace": workspace, "token_budget": token_budget}
        )
        return BootPack.from_wire(answer)

    def workspaces(self) -> list[str] | None:
        return None  # ContextQ's MCP tools have none for workspaces

    def create_workspace(self, slug: str) -> None:  # noqa: ARG002 (the port requires it)
        raise ContextQError("workspaces cannot be created through MCP", code="unsupported")

    def close(self) -> None:
        self.session.close()
