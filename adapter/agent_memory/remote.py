"""The Agent Memory Layer as the two remote backends reach it: ``RestRemote`` through the
typed client, ``McpRemote`` through ContextQ's MCP tools. Both raise ``ContextQError``
subclasses for a refusal, so the backend above handles them once."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from adapter import wire
from adapter.agent_memory.mapping import RECORD_TAG, record_external_id
from adapter.errors import ContextQError, ContextQTimeoutError, NotFoundError, error_class, redact
from adapter.types import AgentSession, AgentTask, BootPack, Checkpoint, Handoff, Lesson, Resume

if TYPE_CHECKING:
    from adapter.client import ContextQClient
    from adapter.mcp_client import SyncMcpClient

T = TypeVar("T")


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
    becomes the ``ContextQError`` its status and code name, and so does an answer of
    another shape than the tool's (a server that sends text only is read as JSON, as a
    TypeScript MCP server writes it): nothing else escapes."""

    def __init__(self, session: SyncMcpClient) -> None:
        self.session = session

    def _call(
        self, tool: str, arguments: Mapping[str, Any], read: Callable[[Any], T] | None = None
    ) -> T | None:
        """The tool's answer, through ``read`` (None: not read). ``arguments`` are named
        as REST names its fields; sent as the tool's parameters (``wire.mcp_arguments``)."""
        from adapter.mcp_client import result_text

        args = wire.mcp_arguments({k: v for k, v in arguments.items() if v is not None})
        try:
            result = self.session.call_tool(tool, args)
        except TimeoutError as exc:
            raise ContextQTimeoutError(f"{tool}: {redact(str(exc))}") from exc
        except Exception as exc:  # the protocol's error or a broken session
            said = redact(str(exc)) or type(exc).__name__
            raise ContextQError(f"{tool}: {said}", code="mcp_error") from exc
        text = result_text(result)
        if result.is_error:
            body = _error_body(result, text)
            status = wire.mcp_error_status(text) or 500
            code = body.get("error")
            code = code if isinstance(code, str) else wire.mcp_error_code(text)
            cls = error_class(status, code)
            details = {k: v for k, v in body.items() if k not in ("error", "message")}
            message = body.get("message")
            raise cls(message if isinstance(message, str) else text or "tool error",
                      status=status, code=code, details=details)  # fmt: skip
        if read is None:
            return None
        try:
            return read(_answer(result, text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ContextQError(
                f"{tool}: unexpected answer ({type(exc).__name__}: {exc})", code="mcp_error"
            ) from None

    def save_record(self, body: Mapping[str, Any]) -> None:
        self._call("ctx_bulk_update", {"contexts": [_wire_context(body)]})

    def record_metadata(self, workspace: str | None) -> Iterator[Any]:
        offset = 0
        while True:
            arguments = {"tags": [RECORD_TAG], "workspace": workspace, "limit": 500,
                         "offset": offset}  # fmt: skip
            rows, total = _given(self._call("ctx_list", arguments, _metadata_page))
            yield from rows
            offset += len(rows)
            if not rows or offset >= total:
                return

    def record_metadata_of(self, run_id: str) -> Any:
        try:
            return self._call(
                "ctx_get", {"externalId": record_external_id(run_id)}, lambda c: c.get("metadata")
            )
        except NotFoundError:
            return None

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
            AgentSession.from_wire,
        )
        return _given(answer)

    def end_session(self, session_id: int, status: str, summary: str | None) -> AgentSession:
        answer = self._call(
            "agent_session_end",
            {"session_id": session_id, "status": status, "summary": summary},
            AgentSession.from_wire,
        )
        return _given(answer)

    def checkpoint(
        self, session_id: int, seq: int, state: Mapping[str, Any], summary: str | None
    ) -> Checkpoint:
        answer = self._call(
            "agent_checkpoint",
            {"session_id": session_id, "seq": seq, "state": dict(state), "summary": summary},
            Checkpoint.from_wire,
        )
        return _given(answer)

    def resume(self, session_id: int) -> Resume:
        return _given(self._call("agent_resume", {"session_id": session_id}, Resume.from_wire))

    def upsert_task(
        self, session_id: int, key: str, title: str, status: str, evidence: str | None
    ) -> AgentTask:
        answer = self._call(
            "agent_task_upsert",
            {"session_id": session_id, "key": key, "title": title, "status": status,
             "evidence": evidence},
            AgentTask.from_wire,
        )  # fmt: skip
        return _given(answer)

    def add_lesson(
        self, text: str, workspace: str | None, session_id: int | None, tags: Sequence[str]
    ) -> Lesson:
        answer = self._call(
            "agent_lesson_add",
            {"text": text, "workspace": workspace, "session_id": session_id, "tags": list(tags)},
            Lesson.from_wire,
        )
        return _given(answer)

    def handoff(self, session_id: int, workspace: str | None) -> Handoff:
        answer = self._call(
            "agent_handoff", {"session_id": session_id, "workspace": workspace}, Handoff.from_wire
        )
        return _given(answer)

    def boot(self, goal: str, workspace: str | None, token_budget: int | None) -> BootPack:
        answer = self._call(
            "agent_boot",
            {"goal": goal, "workspace": workspace, "token_budget": token_budget},
            BootPack.from_wire,
        )
        return _given(answer)

    def workspaces(self) -> list[str] | None:
        return None  # ContextQ's MCP tools have none for workspaces

    def create_workspace(self, slug: str) -> None:  # noqa: ARG002 (the port requires it)
        raise ContextQError("workspaces cannot be created through MCP", code="unsupported")

    def close(self) -> None:
        self.session.close()


def _answer(result: Any, text: str) -> Any:
    """A tool result's JSON: its ``structuredContent``, else its text read as JSON (with
    the REST answers' depth bound); ``ValueError`` when it has neither."""
    from adapter._api import loads

    if result.structured_content is not None:
        return result.structured_content
    try:
        return loads(text)
    except ValueError as exc:
        raise ValueError(f"no structuredContent, and its text is not JSON ({exc})") from None


def _error_body(result: Any, text: str) -> dict[str, Any]:
    """A tool error's ContextQ error body: its ``structuredContent``, else its text if that
    is one as JSON, else nothing (the text then says the status and code)."""
    try:
        found = _answer(result, text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _metadata_page(answer: Any) -> tuple[list[Any], int]:
    rows, total, _, _ = wire.read_page(answer)
    return [row.get("metadata") if isinstance(row, Mapping) else None for row in rows], total


def _given(answer: T | None) -> T:
    """A read answer (``_call`` with a reader never returns None)."""
    assert answer is not None
    return answer
