"""The Agent Memory Layer's rules: sessions, checkpoints, tasks, lessons, handoff, boot.

Like ``models``, nothing here knows HTTP. Traps the seeds describe are reproduced on
purpose: an unknown workspace slug silently leaves a session without a workspace; a
checkpoint's ``seq`` is an optimistic lock; a tick needs evidence; lessons are stored
first and embedded after (with embeddings off they keep a null vector and boot falls
back to recency); a handoff needs a workspace, then an LLM provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, render
from fake_contextq.domain import records as r
from fake_contextq.domain.audit import AgentAction
from fake_contextq.domain.embeddings import cosine
from fake_contextq.domain.errors import ApiError, not_found
from fake_contextq.domain.handoff import HandoffMaterial
from fake_contextq.domain.llm import ServerLlm, unavailable
from fake_contextq.domain.search import query_terms, snippet
from fake_contextq.domain.store import Store


class Backend(Protocol):
    """What the agent layer uses of the installation it belongs to (``ContextQBackend``)."""

    @property
    def store(self) -> Store: ...

    def clock(self) -> datetime: ...

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None: ...


Body = bytes | Mapping[str, Any]
READ, WRITE = wire.READ, wire.WRITE


class AgentLayer:
    """The agent endpoints of one installation; shares the backend's store and audit log."""

    def __init__(
        self,
        backend: Backend,
        embed: Callable[[str], tuple[float, ...]] | None,
        llm: ServerLlm | None,
    ) -> None:
        self.backend = backend
        self.embed = embed
        self.llm = llm

    @property
    def store(self) -> Store:
        return self.backend.store

    # ----- sessions -----

    def start_session(self, p: r.Principal, body: Body) -> r.AgentSession:
        data = parse.parse_session_start(body)
        with self.store.transaction():
            parent = data["parent_session_id"]
            if parent is not None:
                self._session(p.tenant_id, parent)
            ws = self._workspace_or_none(p.tenant_id, data["workspace"])
            session = r.AgentSession(
                id=self.store.next_id("agent_session"),
                tenant_id=p.tenant_id,
                workspace_id=None if ws is None else ws.id,
                workspace=None if ws is None else ws.slug,
                parent_session_id=parent,
                metadata=data["metadata"],
                status=wire.SESSION_STATUS_ACTIVE,
                summary=None,
                started_at=self.backend.clock(),
            )
            self.store.put_session(session)
            self.backend.audit(p, AgentAction.SESSION_START, "agent_session", str(session.id))
            return session

    def get_session(self, p: r.Principal, raw_id: str | int) -> r.AgentSession:
        session_id = parse.parse_id(str(raw_id))
        with self.store.transaction():
            return self._session(p.tenant_id, session_id)

    def end_session(self, p: r.Principal, raw_id: str | int, body: Body) -> r.AgentSession:
        session_id = parse.parse_id(str(raw_id))
        data = parse.parse_session_end(body)
        with self.store.transaction():
            session = replace(
                self._session(p.tenant_id, session_id),
                status=data["status"],
                summary=data["summary"],
                ended_at=self.backend.clock(),
            )
            self.store.put_session(session)
            self.backend.audit(p, AgentAction.SESSION_END, "agent_session", str(session.id))
            return session

    # ----- checkpoints -----

    def checkpoint(self, p: r.Principal, raw_id: str | int, body: Body) -> r.Checkpoint:
        session_id = parse.parse_id(str(raw_id))
        data = parse.parse_checkpoint(body)
        with self.store.transaction():
            self._session(p.tenant_id, session_id)
            expected = self.store.last_checkpoint_seq(session_id) + 1
            if data["seq"] != expected:
                raise ApiError(
                    _msgs.SEQ_CONFLICT,
                    _msgs.SEQ_CONFLICT_MSG.format(seq=data["seq"], expected=expected),
                    expected=expected,
                )
            cp = r.Checkpoint(
                id=self.store.next_id("agent_checkpoint"),
                tenant_id=p.tenant_id,
                session_id=session_id,
                seq=expected,
                state=data["state"],
                summary=data["summary"],
                created_at=self.backend.clock(),
            )
            self.store.put_checkpoint(cp)
            self.backend.audit(p, AgentAction.CHECKPOINT, "agent_checkpoint", str(cp.id))
            return cp

    def resume(self, p: r.Principal, raw_id: str | int) -> r.Resume:
        session_id = parse.parse_id(str(raw_id))
        with self.store.transaction():
            return self._resume(self._session(p.tenant_id, session_id))

    def _resume(self, session: r.AgentSession) -> r.Resume:
        open_tasks = [
            t for t in self.store.tasks(session.id) if t.status in wire.TASK_OPEN_STATUSES
        ]
        return r.Resume(session, self.store.last_checkpoint(session.id), open_tasks)

    # ----- tasks -----

    def upsert_task(self, p: r.Principal, body: Body) -> tuple[r.AgentTask, bool]:
        """The task, and whether it was created (else updated)."""
        data = parse.parse_task(body)
        with self.store.transaction():
            session = self._session(p.tenant_id, data["session_id"])
            parent_id = None
            if data["parent_key"] is not None:
                parent = self.store.task_by_key(session.id, data["parent_key"])
                if parent is None:
                    raise not_found(
                        _msgs.TASK_KEY_NOT_FOUND.format(key=data["parent_key"], session=session.id)
                    )
                parent_id = parent.id
            evidence = (data["evidence"] or "").strip() or None
            old = self.store.task_by_key(session.id, data["key"])
            status = data["status"] or (wire.TASK_STATUSES[0] if old is None else old.status)
            if (
                status == wire.TASK_VERIFIED
                and evidence is None
                and (old is None or old.evidence is None)
            ):
                raise ApiError(_msgs.EVIDENCE_REQUIRED, _msgs.EVIDENCE_REQUIRED_MSG)
            now = self.backend.clock()
            if old is None:
                task = r.AgentTask(
                    id=self.store.next_id("agent_task"),
                    tenant_id=p.tenant_id,
                    session_id=session.id,
                    key=data["key"],
                    title=data["title"],
                    status=status,
                    parent_id=parent_id,
                    evidence=evidence,
                    created_at=now,
                    updated_at=now,
                )
            else:
                task = replace(
                    old,
                    title=data["title"],
                    status=status,
                    parent_id=parent_id if data["parent_key"] else old.parent_id,
                    evidence=evidence or old.evidence,
                    updated_at=now,
                )
            if self._makes_cycle(task):
                raise ApiError(
                    _msgs.VALIDATION_ERROR,
                    _msgs.INVALID_BODY,
                    issues=[{"path": "parent_key", "message": _msgs.TASK_CYCLE}],
                )
            self.store.put_task(task)
            self.backend.audit(p, AgentAction.TASK_UPSERT, "agent_task", str(task.id))
            return task, old is None

    def tick_task(self, p: r.Principal, raw_id: str | int, body: Body) -> r.AgentTask:
        task_id = parse.parse_id(str(raw_id))
        evidence = parse.parse_tick(body)
        with self.store.transaction():
            task = self._task(p.tenant_id, task_id)
            if evidence is None or not evidence.strip():
                raise ApiError(_msgs.EVIDENCE_REQUIRED, _msgs.EVIDENCE_REQUIRED_MSG)
            task = replace(
                task,
                status=wire.TASK_VERIFIED,
                evidence=evidence.strip(),
                updated_at=self.backend.clock(),
            )
            self.store.put_task(task)
            self.backend.audit(p, AgentAction.TASK_TICK, "agent_task", str(task.id))
            return task

    def list_tasks(self, p: r.Principal, raw_id: str | int) -> list[r.AgentTask]:
        session_id = parse.parse_id(str(raw_id))
        with self.store.transaction():
            self._session(p.tenant_id, session_id)
            tasks: list[r.AgentTask] = self.store.tasks(session_id)
            return tasks

    # ----- lessons -----

    def add_lesson(self, p: r.Principal, body: Body) -> r.Lesson:
        data = parse.parse_lesson(body)
        with self.store.transaction():
            if data["session_id"] is not None:
                self._session(p.tenant_id, data["session_id"])
            ws = self._workspace_or_none(p.tenant_id, data["workspace"])
            lesson = r.Lesson(
                id=self.store.next_id("agent_lesson"),
                tenant_id=p.tenant_id,
                workspace_id=None if ws is None else ws.id,
                workspace=None if ws is None else ws.slug,
                session_id=data["session_id"],
                text=data["text"],
                tags=tuple(data["tags"]),
                embedding=None,
                created_at=self.backend.clock(),
            )
            self.store.put_lesson(lesson)  # stored first, with no vector ...
            vector = self._embedding(lesson.text)  # ... then embedded, as ContextQ does
            if vector is not None:
                lesson = replace(lesson, embedding=vector)
                self.store.put_lesson(lesson)
            self.backend.audit(p, AgentAction.LESSON_ADD, "agent_lesson", str(lesson.id))
            return lesson

    def _embedding(self, text: str) -> tuple[float, ...] | None:
        """The text's vector, or None: embeddings off, nothing to embed, or the embedder
        failed. A failure keeps the stored lesson without a vector (recall falls back to
        recency) rather than failing the write, so the lesson and its audit row stay."""
        if self.embed is None:
            return None
        try:
            vector = self.embed(text)
        except Exception:  # any embedder failure degrades the same way
            return None
        return vector if any(vector) else None

    def lessons(self, tenant_id: int) -> list[r.Lesson]:
        with self.store.transaction():
            found: list[r.Lesson] = self.store.lessons(tenant_id)
            return found

    def state(self, tenant_id: int) -> r.AgentState:
        """The tenant's sessions (each with its checkpoints and tasks), lessons and
        handoffs, in the order they were written."""
        with self.store.transaction():
            sessions = tuple(
                r.SessionState(
                    s, tuple(self.store.checkpoints(s.id)), tuple(self.store.tasks(s.id))
                )
                for s in self.store.sessions(tenant_id)
            )
            return r.AgentState(
                sessions,
                tuple(self.store.lessons(tenant_id)),
                tuple(self.store.handoffs(tenant_id)),
            )

    # ----- handoff -----

    def handoff(self, p: r.Principal, body: Body) -> r.Handoff:
        data = parse.parse_handoff(body)
        with self.store.transaction():
            session = None
            if data["session_id"] is not None:
                session = self._session(p.tenant_id, data["session_id"])
            ws = self._workspace_or_none(p.tenant_id, data["workspace"])
            if ws is None and session is not None and session.workspace is not None:
                ws = self.store.workspace(p.tenant_id, session.workspace)
            if ws is None:  # checked before the LLM, as ContextQ does
                raise ApiError(_msgs.NO_WORKSPACE, _msgs.NO_WORKSPACE_MSG)
            if self.llm is None:
                raise unavailable("handoff")
            if session is None:
                session = self.store.latest_session(p.tenant_id, ws.id)
            material = HandoffMaterial(
                workspace=ws.slug,
                session=session,
                tasks=[] if session is None else self.store.tasks(session.id),
                lessons=[
                    x
                    for x in self.store.lessons(p.tenant_id)
                    if x.workspace_id == ws.id
                    or (session is not None and x.session_id == session.id)
                ],
                checkpoint=None if session is None else self.store.last_checkpoint(session.id),
            )
            content = self.llm.write(material)  # a failure or no text: a 503
            handoff = r.Handoff(
                id=self.store.next_id("agent_handoff"),
                tenant_id=p.tenant_id,
                workspace_id=ws.id,
                workspace=ws.slug,
                session_id=None if session is None else session.id,
                content=content,
                created_at=self.backend.clock(),
            )
            self.store.put_handoff(handoff)
            self.backend.audit(p, AgentAction.HANDOFF, "agent_handoff", str(handoff.id))
            return handoff

    # ----- boot -----

    def boot(self, p: r.Principal, body: Body) -> r.BootPack:
        """Resume, handoff, lessons and facts for a goal, trimmed to the token budget."""
        data = parse.parse_boot(body)
        goal: str = data["goal"]
        budget: int = data["token_budget"]
        with self.store.transaction():
            ws = self._workspace_or_none(p.tenant_id, data["workspace"])
            ws_id = None if ws is None else ws.id
            latest = self.store.latest_session(p.tenant_id, ws_id)
            resume = None if latest is None else self._resume(latest)
            handoff = self.store.latest_handoff(p.tenant_id, ws_id)
            lessons, scores = self._recall(p.tenant_id, ws_id, goal)
            terms = query_terms(goal)
            ranked = self.store.search(p.tenant_id, terms, wire.BOOT_FACTS, None)
        facts = [
            r.SearchHit(c, s, snippet(c.content, c.title, terms, wire.SEARCH_SNIPPET_CHARS))
            for c, s in ranked
        ]
        used = 0
        truncated = False

        def fits(rendered: Any) -> bool:
            nonlocal used, truncated
            cost = wire.estimate_tokens(rendered)
            if used + cost > budget:
                truncated = True
                return False
            used += cost
            return True

        if resume is not None and not fits(render.resume_json(resume)):
            resume = None
        if handoff is not None and not fits(render.handoff_json(handoff)):
            handoff = None
        kept_lessons = [x for x in lessons if fits(render.lesson_json(x, scores.get(x.id)))]
        kept_facts = [h for h in facts if fits(render.fact_json(h))]
        return r.BootPack(
            goal=goal,
            workspace=None if ws is None else ws.slug,
            resume=resume,
            handoff=handoff,
            lessons=kept_lessons,
            facts=kept_facts,
            token_budget=budget,
            tokens_used=used,
            truncated=truncated,
            lesson_scores={x.id: scores[x.id] for x in kept_lessons if x.id in scores},
        )

    def _recall(
        self, tenant_id: int, workspace_id: int | None, goal: str
    ) -> tuple[list[r.Lesson], dict[int, float]]:
        """kNN by the goal's embedding; recency (newest first) when there are no vectors."""
        pool = [
            x
            for x in self.store.lessons(tenant_id)
            if workspace_id is None or x.workspace_id in (workspace_id, None)
        ]
        embedded = [x for x in pool if x.embedding is not None]
        if self.embed is None or not embedded:
            return sorted(pool, key=lambda x: x.id, reverse=True)[: wire.BOOT_LESSONS], {}
        query = self.embed(goal)
        scored = sorted(
            ((cosine(query, x.embedding or ()), x) for x in embedded),
            key=lambda pair: (-pair[0], -pair[1].id),
        )[: wire.BOOT_LESSONS]
        return [x for _, x in scored], {x.id: s for s, x in scored}

    # ----- helpers -----

    def _session(self, tenant_id: int, session_id: int) -> r.AgentSession:
        # wire.MAX_ID: an id beyond the 64-bit range names no row, as a missing one
        session: r.AgentSession | None = (
            self.store.session(tenant_id, session_id) if wire.id_in_range(session_id) else None
        )
        if session is None:
            raise not_found(_msgs.SESSION_NOT_FOUND.format(id=session_id))
        return session

    def _makes_cycle(self, task: r.AgentTask) -> bool:
        """Whether the task's parent link would make the tree a loop."""
        seen = {task.id}
        parent_id = task.parent_id
        while parent_id is not None:
            if parent_id in seen:
                return True
            seen.add(parent_id)
            parent = self.store.task(task.tenant_id, parent_id)
            parent_id = None if parent is None else parent.parent_id
        return False

    def _task(self, tenant_id: int, task_id: int) -> r.AgentTask:
        task: r.AgentTask | None = (
            self.store.task(tenant_id, task_id) if wire.id_in_range(task_id) else None
        )
        if task is None:
            raise not_found(_msgs.TASK_NOT_FOUND.format(id=task_id))
        return task

    def _workspace_or_none(self, tenant_id: int, slug: str | None) -> r.Workspace | None:
        # [seed] resolveWorkspaceId returns null for unknown slugs: no error, no workspace.
        if slug is None or not parse.is_slug(slug):  # no slug, or a string that names none
            return None
        ws: r.Workspace | None = self.store.workspace(tenant_id, slug)
        return ws
