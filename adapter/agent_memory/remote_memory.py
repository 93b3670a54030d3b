"""``ContextQAgentMemory`` (REST, the typed client) and ``McpAgentMemory`` (ContextQ's MCP
tools): one run is one ``agent_session``; its outcome becomes tasks and lessons; the
record itself is one context (the listing); the preamble is one ``agent_boot``."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from adapter import _deadline
from adapter.agent_memory import mapping, preamble
from adapter.agent_memory.port import (
    DEFAULT_MAX_CHARS,
    DEFAULT_TIMEOUT,
    LOG,
    BestEffort,
    best_effort,
    check_preamble_args,
)
from adapter.agent_memory.records import (
    TERMINAL_STATUSES,
    Capabilities,
    IssueEvent,
    RunRecord,
    check_run_id,
    latest,
    open_issues,
)
from adapter.agent_memory.remote import McpRemote, Remote, RestRemote
from adapter.errors import LLMUnavailableError, NotFoundError, SeqConflictError, redact
from adapter.types import AgentTask, BootPack, Lesson, Resume

if TYPE_CHECKING:
    from adapter.client import ContextQClient
    from adapter.mcp_client import SyncMcpClient

SEQ_RETRIES = 10  # a checkpoint that keeps losing the seq race gives up (and is counted)
MAX_SUMMARY = 2_000


class RemoteAgentMemory(BestEffort):
    """The Agent Memory Layer behind the port, through any ``Remote``."""

    capabilities = Capabilities(boot=True, checkpoint=True, tasks=True, lessons=True, handoff=True)

    def __init__(
        self,
        remote: Remote,
        workspace: str | None,
        *,
        strict: bool = False,
        create_workspace: bool = True,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        """``workspace`` is checked at first use (and created, when ``create_workspace`` and
        the key is an admin's): ContextQ silently gives a session no workspace when its slug
        is unknown, and a handoff then fails, so a missing one is logged and left out.
        ``timeout``: each method's deadline in seconds, every request, retry and wait of it
        included (``DEFAULT_TIMEOUT``, 10 s; None: none)."""
        super().__init__(strict=strict, timeout=timeout)
        self.remote = remote
        self.workspace = workspace
        self.create_workspace = create_workspace
        self._checked = False
        self._sessions: dict[str, int] = {}
        self._seqs: dict[int, int] = {}
        self._handoff_llm = True
        self._last: RunRecord | None = None
        # this process's own checkpoints of a session go one at a time; other processes'
        # are the seq lock's business
        self._checkpointing = threading.Lock()

    # --- the workspace trap ------------------------------------------------------------

    def _ws(self) -> str | None:
        if self._checked or self.workspace is None:
            return self.workspace
        known = self.remote.workspaces()
        if known is not None and self.workspace not in known:
            if self.create_workspace:
                try:
                    self.remote.create_workspace(self.workspace)
                    LOG.info("agent memory: created workspace %r", self.workspace)
                except Exception as exc:  # no admin scope: carry on without it, said once
                    self._missing_workspace(
                        f"it does not exist and creating it failed ({redact(str(exc))})"
                    )
            else:
                self._missing_workspace("it does not exist")
        self._checked = True
        return self.workspace

    def _missing_workspace(self, why: str) -> None:
        LOG.warning(
            "agent memory: workspace %r is not usable: %s; sessions are stored without a "
            "workspace and no handoff is written (create it in ContextQ)",
            self.workspace,
            why,
        )
        self.workspace = None

    # --- sessions ------------------------------------------------------------------------

    def _known_session(self, run_id: str) -> int | None:
        """The session of a run: this process's, or the one its stored record names."""
        found = self._sessions.get(run_id)
        if found is None:
            stored = mapping.record_of(self.remote.record_metadata_of(run_id))
            if stored is not None and stored[1] is not None:
                found = self._sessions[run_id] = stored[1]
        return found

    def _open_session(self, record: RunRecord) -> int:
        known = self._known_session(record.run_id)
        if known is not None:
            return known
        workspace = self._ws()
        parent = None if record.parent_run_id is None else self._known_session(record.parent_run_id)
        session = self.remote.start_session(workspace, parent, mapping.session_metadata(record))
        if workspace is not None and session.workspace is None:  # the silent fallback
            self._missing_workspace("ContextQ dropped it from the session")
        self._sessions[record.run_id] = session.id
        return session.id

    @best_effort(lambda: None)
    def begin_run(self, record: RunRecord) -> int | None:
        """Open the run's session and store it as running, so a later process (after a
        crash) finds it: 2 requests (3 when the parent run's session is looked up)."""
        session = self._open_session(record)
        body = mapping.record_context(record, session, self.workspace)
        self.remote.save_record(body)
        return session

    # --- the required methods ------------------------------------------------------------

    @best_effort(lambda: None)
    def write_record(self, record: RunRecord) -> RunRecord | None:
        """The run's outcome as tasks and lessons, the session ended, the record stored,
        a handoff asked for: n + 3 requests for n outcome items after ``begin_run`` (the
        API has no batch for tasks or lessons), 2 more without it (the run's session is
        looked up, then started)."""
        if not isinstance(record, RunRecord):
            raise ValueError(f"write_record takes a RunRecord, not {type(record).__name__}")
        record = record.with_text(preamble.strip)
        session = self._open_session(record)
        workspace = self.workspace
        if record.status in TERMINAL_STATUSES:
            for task in mapping.task_payloads(record):
                self.remote.upsert_task(session, task.key, task.title, task.status, task.evidence)
            for lesson in mapping.lesson_payloads(record):
                self.remote.add_lesson(lesson["text"], workspace, session, lesson["tags"])
            summary = mapping.local_handoff(record)[:MAX_SUMMARY]
            self.remote.end_session(session, mapping.END_STATUS[record.status], summary)
        self.remote.save_record(mapping.record_context(record, session, workspace))
        self._last = record
        if record.status in TERMINAL_STATUSES:
            self._write_handoff(session, workspace)
        return record

    def _write_handoff(self, session: int, workspace: str | None) -> None:
        if not self._handoff_llm or workspace is None:
            return
        try:
            self.remote.handoff(session, workspace)
        except LLMUnavailableError:
            self._handoff_llm = False  # asked once: the preamble renders one locally
            LOG.info("agent memory: ContextQ has no LLM for handoffs; preambles render one")

    def _records(self) -> list[RunRecord]:
        stored = (mapping.record_of(m) for m in self.remote.record_metadata(self._ws()))
        found = [s[0] for s in stored if s is not None]
        return sorted(found, key=lambda r: (r.started_at, r.run_id))

    @best_effort(list)
    def list_records(self) -> list[RunRecord]:
        return self._records()

    @best_effort(lambda: None)
    def get_record(self, run_id: str) -> RunRecord | None:
        check_run_id(run_id)
        stored = mapping.record_of(self.remote.record_metadata_of(run_id))
        return None if stored is None else stored[0]

    @best_effort(lambda: None)
    def latest_record(self) -> RunRecord | None:
        return latest(self._records())

    @best_effort(list)
    def list_open_issues(self) -> list[IssueEvent]:
        return open_issues(self._records())

    @best_effort(str)
    def build_preamble(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        parent_run_id: str | None = None,  # noqa: ARG002 (the port requires it)
        chat_session_id: str | None = None,  # noqa: ARG002 (the port requires it)
    ) -> str:
        """One ``agent_boot``: the session to resume, the handoff (rendered from this
        process's last record when the server has none), lessons and facts. Boot already
        ranks by the query, so the lineage hints are not sent (ContextQ takes none)."""
        check_preamble_args(top_k, max_chars)
        pack = self.remote.boot(query, self._ws(), max(1, max_chars // 4))
        return self._render(pack, top_k, max_chars)

    def _render(self, pack: BootPack, top_k: int, max_chars: int) -> str:
        resume: list[str] = []
        if pack.resume is not None:
            meta = pack.resume.session.metadata
            resume.append(
                f"run {meta.get('run_id', pack.resume.session.id)}: {meta.get('task', '')}"
            )
            if pack.resume.checkpoint is not None and pack.resume.checkpoint.summary:
                resume.append(f"last checkpoint: {pack.resume.checkpoint.summary}")
            resume += [f"open task: {t.title}" for t in pack.resume.open_tasks[:top_k]]
        handoff = [pack.handoff.content] if pack.handoff is not None else []
        if not handoff and self._last is not None:
            handoff = [mapping.local_handoff(self._last)]
        sections = [
            ("Resume", resume),
            ("Handoff", handoff),
            ("Lessons", [lesson.text for lesson in pack.lessons[:top_k]]),
            ("Facts", [f"{h.context.title}: {h.snippet}" for h in pack.facts[:top_k]]),
        ]
        return preamble.render(f"contextq: {self.workspace or 'no workspace'}", sections, max_chars)

    # --- the optional capabilities -----------------------------------------------------

    @best_effort(lambda: None)
    def boot(self, goal: str, *, token_budget: int | None = None) -> BootPack | None:
        return self.remote.boot(goal, self._ws(), token_budget)

    @best_effort(lambda: None)
    def checkpoint(
        self, run_id: str, state: Mapping[str, Any], *, summary: str | None = None
    ) -> int | None:
        """Store the run's state under the next ``seq`` (the optimistic lock): a writer
        that lost the race takes the ``expected`` seq and tries again, so racing writers
        lose no checkpoint. Returns the seq stored."""
        check_run_id(run_id)
        if not isinstance(state, Mapping):
            raise ValueError("state must be a mapping")
        with self._checkpointing:
            return self._checkpoint(run_id, state, summary)

    def _checkpoint(self, run_id: str, state: Mapping[str, Any], summary: str | None) -> int:
        session = self._known_session(run_id)
        if session is None:
            session = self._open_session(RunRecord(run_id, task="", status="running"))
        seq = self._seqs.get(session, 0) + 1
        for _ in range(SEQ_RETRIES):
            try:
                stored = self.remote.checkpoint(session, seq, state, summary)
            except SeqConflictError as exc:
                expected = exc.details.get("expected")
                seq = int(expected) if isinstance(expected, int) else seq + 1
                continue
            self._seqs[session] = stored.seq
            return stored.seq
        raise SeqConflictError(
            f"gave up after {SEQ_RETRIES} seq conflicts", status=409, code="seq_conflict"
        )

    @best_effort(lambda: None)
    def resume(self, run_id: str) -> Resume | None:
        """The run's latest checkpoint and open tasks (after a crash: from any process)."""
        check_run_id(run_id)
        session = self._known_session(run_id)
        if session is None:
            return None
        try:
            return self.remote.resume(session)
        except NotFoundError:
            return None

    @best_effort(list)
    def open_tasks(self, run_id: str) -> list[AgentTask]:
        found = self.resume(run_id)
        return [] if found is None else list(found.open_tasks)

    @best_effort(lambda: None)
    def add_lesson(
        self, text: str, *, run_id: str | None = None, tags: Iterable[str] = ()
    ) -> Lesson | None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("a lesson's text must be a non-empty string")
        session = None if run_id is None else self._known_session(check_run_id(run_id))
        return self.remote.add_lesson(text, self._ws(), session, list(tags))

    @best_effort(lambda: None)
    def handoff(self, run_id: str) -> str | None:
        """The handoff of the run's session: ContextQ's, or, without its LLM, rendered
        from the run's own record."""
        check_run_id(run_id)
        session = self._known_session(run_id)
        workspace = self._ws()
        if session is None:
            return None
        if self._handoff_llm and workspace is not None:
            try:
                return self.remote.handoff(session, workspace).content
            except LLMUnavailableError:
                self._handoff_llm = False
        record = self.get_record(run_id)
        return None if record is None else mapping.local_handoff(record)

    def close(self) -> None:
        """Close the client or session, within the deadline; never raises (a dead server
        has nothing to say)."""
        try:
            _deadline.run_within(self.timeout, self.remote.close, "close")
        except Exception as exc:
            LOG.debug("agent memory: closing failed: %s", redact(str(exc)))


class ContextQAgentMemory(RemoteAgentMemory):
    """The Agent Memory Layer over REST, through ``adapter.ContextQClient``."""

    def __init__(
        self, client: ContextQClient, workspace: str | None, *, strict: bool = False,
        create_workspace: bool = True, timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:  # fmt: skip
        super().__init__(
            RestRemote(client), workspace, strict=strict, create_workspace=create_workspace,
            timeout=timeout,
        )  # fmt: skip


class McpAgentMemory(RemoteAgentMemory):
    """The same through ContextQ's MCP tools (``agent_*``, ``ctx_*``); needs the ``mcp``
    extra. MCP has no workspace tools: an unknown workspace is noticed when a session
    comes back without it. A session that broke (a dropped connection, an answer past
    the deadline) is replaced by a fresh one at the next call."""

    def __init__(
        self, session: SyncMcpClient, workspace: str | None, *, strict: bool = False,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:  # fmt: skip
        super().__init__(
            McpRemote(session), workspace, strict=strict, create_workspace=False, timeout=timeout
        )
