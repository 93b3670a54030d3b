"""The in-memory store: dicts behind one lock, the fastest store, for unit tests."""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from itertools import islice

from adapter import wire
from fake_contextq.domain.audit import chain_row
from fake_contextq.domain.records import (
    AgentSession,
    AgentTask,
    ApiKey,
    AuditDraft,
    AuditRow,
    Checkpoint,
    Context,
    ContextLink,
    Handoff,
    IngestJob,
    Lesson,
    ListQuery,
    SavedSearch,
    Tenant,
    Workspace,
)
from fake_contextq.domain.search import SearchIndex


def list_page(
    contexts: Mapping[int, Context], query: ListQuery, workspace_id: int | None
) -> tuple[list[Context], int]:
    """One page of a tenant's contexts (``contexts`` in id order) and the matching total."""
    if query.workspace is None and query.tag is None and query.type is None and not query.types:
        total = len(contexts)
        if query.offset >= total:
            return [], total
        page = islice(contexts.values(), query.offset, query.offset + query.limit)
        return list(page), total
    matches = [
        c
        for c in contexts.values()
        if (query.workspace is None or c.workspace_id == workspace_id)
        and (query.tag is None or query.tag in c.tags)
        and (query.type is None or c.type == query.type)
        and (not query.types or c.type in query.types)
    ]
    return matches[query.offset : query.offset + query.limit], len(matches)


class _TenantRows:
    __slots__ = (
        "by_external",
        "contexts",
        "handoffs",
        "index",
        "keys",
        "lessons",
        "link_ids",
        "links",
        "saved_searches",
        "sessions",
        "workspaces",
    )

    def __init__(self) -> None:
        self.contexts: dict[int, Context] = {}  # insertion order is id order
        self.by_external: dict[str, int] = {}
        self.workspaces: dict[str, Workspace] = {}
        self.keys: list[ApiKey] = []
        self.index = SearchIndex()
        self.sessions: dict[int, AgentSession] = {}
        self.lessons: dict[int, Lesson] = {}
        self.handoffs: list[Handoff] = []
        self.saved_searches: dict[int, SavedSearch] = {}  # insertion order is id order
        self.links: dict[int, ContextLink] = {}  # by id, in id order
        self.link_ids: dict[int, set[int]] = {}  # context id -> its links' ids, both ways


class MemoryStore:
    """Dicts behind one re-entrant lock; the fastest store, for unit tests."""

    reads_wait = False  # the lock is held for microseconds, never across I/O

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.reset()

    def transaction(self) -> AbstractContextManager[object]:
        return self._lock

    def read(self) -> AbstractContextManager[object]:
        return self._lock

    def reset(self) -> None:
        with self._lock:
            self._ids: dict[str, int] = {}
            self._tenants: dict[int, Tenant] = {}
            self._rows: dict[int, _TenantRows] = {}
            self._keys: dict[int, ApiKey] = {}
            self._key_prefixes: dict[str, list[int]] = {}
            self._audit: list[AuditRow] = []
            self._drafts: deque[tuple[int, AuditDraft]] = deque()  # chained when next read
            self._checkpoints: dict[int, list[Checkpoint]] = {}
            self._tasks: dict[int, AgentTask] = {}  # every tenant's, by id
            self._task_keys: dict[tuple[int, str], int] = {}
            self._session_tasks: dict[int, list[int]] = {}
            self._ingest_jobs: dict[int, IngestJob] = {}  # every tenant's, by id

    def snapshot(self) -> object:
        """A copy of everything held, for ``restore``: an interleaving explorer starts
        every explored order from the same state."""
        with self._lock:
            return copy.deepcopy({k: v for k, v in vars(self).items() if k != "_lock"})

    def restore(self, snapshot: object) -> None:
        """Put back what ``snapshot`` held (the snapshot stays usable for the next one)."""
        if not isinstance(snapshot, dict):
            raise TypeError("restore() takes what snapshot() returned")
        with self._lock:
            vars(self).update(copy.deepcopy(snapshot))

    def next_id(self, kind: str) -> int:
        value = self._ids.get(kind, 0) + 1
        self._ids[kind] = value
        return value

    # tenants and keys

    def put_tenant(self, tenant: Tenant) -> None:
        self._tenants[tenant.id] = tenant
        self._rows.setdefault(tenant.id, _TenantRows())

    def tenant(self, tenant_id: int) -> Tenant | None:
        return self._tenants.get(tenant_id)

    def tenant_plan(self, tenant_id: int) -> str | None:
        found = self.tenant(tenant_id)
        return None if found is None else found.plan

    def tenants(self) -> list[Tenant]:
        return list(self._tenants.values())

    def put_key(self, key: ApiKey) -> None:
        rows = self._rows[key.tenant_id]
        rows.keys = [k for k in rows.keys if k.id != key.id] + [key]
        rows.keys.sort(key=lambda k: k.id)
        if key.id not in self._keys:
            self._key_prefixes.setdefault(key.prefix, []).append(key.id)
        self._keys[key.id] = key

    def keys_by_prefix(self, prefix: str) -> list[ApiKey]:
        return [self._keys[i] for i in self._key_prefixes.get(prefix, ())]

    def key_by_id(self, key_id: int) -> ApiKey | None:
        return self._keys.get(key_id)

    def keys(self, tenant_id: int) -> list[ApiKey]:
        return list(self._rows[tenant_id].keys)

    # workspaces

    def put_workspace(self, workspace: Workspace) -> None:
        self._rows[workspace.tenant_id].workspaces[workspace.slug] = workspace

    def workspace(self, tenant_id: int, slug: str) -> Workspace | None:
        return self._rows[tenant_id].workspaces.get(slug)

    def workspaces(self, tenant_id: int) -> list[Workspace]:
        return sorted(self._rows[tenant_id].workspaces.values(), key=lambda w: w.id)

    def delete_workspace(self, workspace: Workspace) -> None:
        del self._rows[workspace.tenant_id].workspaces[workspace.slug]

    # contexts

    def put_context(self, context: Context) -> None:
        rows = self._rows[context.tenant_id]
        old = rows.contexts.get(context.id)
        if old is not None and old.external_id is not None:
            del rows.by_external[old.external_id]
        rows.contexts[context.id] = context
        if context.external_id is not None:
            rows.by_external[context.external_id] = context.id
        if (
            old is None
            or old.title != context.title
            or old.content != context.content
            or old.tags != context.tags
        ):
            rows.index.add(context.id, context.title, context.content, context.tags)

    def context(self, tenant_id: int, context_id: int) -> Context | None:
        return self._rows[tenant_id].contexts.get(context_id)

    def context_by_external(self, tenant_id: int, external_id: str) -> Context | None:
        rows = self._rows[tenant_id]
        context_id = rows.by_external.get(external_id)
        return None if context_id is None else rows.contexts[context_id]

    def context_id_by_external(self, tenant_id: int, external_id: str) -> int | None:
        found = self.context_by_external(tenant_id, external_id)
        return None if found is None else found.id

    def delete_context(self, context: Context) -> None:
        rows = self._rows[context.tenant_id]
        del rows.contexts[context.id]
        if context.external_id is not None:
            del rows.by_external[context.external_id]
        rows.index.remove(context.id)
        for link_id in rows.link_ids.pop(context.id, ()):
            link = rows.links.pop(link_id)
            other = link.target_id if link.source_id == context.id else link.source_id
            rows.link_ids.get(other, set()).discard(link_id)

    def count_contexts(self, tenant_id: int, workspace_id: int | None = None) -> int:
        contexts = self._rows[tenant_id].contexts
        if workspace_id is None:
            return len(contexts)
        return sum(1 for c in contexts.values() if c.workspace_id == workspace_id)

    def list_contexts(
        self, tenant_id: int, query: ListQuery, workspace_id: int | None
    ) -> tuple[list[Context], int]:
        return list_page(self._rows[tenant_id].contexts, query, workspace_id)

    def search(
        self,
        tenant_id: int,
        terms: list[str],
        limit: int,
        accept: Callable[[Context], bool] | None,
    ) -> list[tuple[Context, float]]:
        rows = self._rows[tenant_id]
        contexts = rows.contexts
        doc_filter = None if accept is None else (lambda doc_id: accept(contexts[doc_id]))
        return [(contexts[d], s) for d, s in rows.index.top(terms, limit, doc_filter)]

    # audit

    def last_audit_hash(self) -> str | None:
        self._chain_drafts()
        return self._audit[-1].hash if self._audit else None

    def append_audit(self, row: AuditRow) -> None:
        self._chain_drafts()
        self._audit.append(row)

    def chain_audit(self, draft: AuditDraft) -> None:
        """Draw the row's id now; hash it when the chain is next read. Nothing outside
        this store reads the chain, and every read here chains the drafts first, in order,
        so the rows are the ones hashing each at once would have made: a write no longer
        pays for a hash nobody may ever read."""
        self._drafts.append((self.next_id("activity_log"), draft))

    def audit_rows(self) -> list[AuditRow]:
        self._chain_drafts()
        return list(self._audit)

    def _chain_drafts(self) -> None:
        if not self._drafts:
            return
        with self._lock:
            drafts, rows = self._drafts, self._audit
            while drafts:  # one at a time: a draft is gone once its row is in the chain
                row_id, draft = drafts[0]
                rows.append(chain_row(rows[-1].hash if rows else None, row_id, draft))
                drafts.popleft()

    # agent layer

    def put_session(self, session: AgentSession) -> None:
        self._rows[session.tenant_id].sessions[session.id] = session

    def session(self, tenant_id: int, session_id: int) -> AgentSession | None:
        return self._rows[tenant_id].sessions.get(session_id)

    def latest_session(self, tenant_id: int, workspace_id: int | None) -> AgentSession | None:
        for session in reversed(self._rows[tenant_id].sessions.values()):
            if workspace_id is None or session.workspace_id == workspace_id:
                return session
        return None

    def sessions(self, tenant_id: int) -> list[AgentSession]:
        return list(self._rows[tenant_id].sessions.values())

    def put_checkpoint(self, checkpoint: Checkpoint) -> None:
        self._checkpoints.setdefault(checkpoint.session_id, []).append(checkpoint)

    def last_checkpoint(self, session_id: int) -> Checkpoint | None:
        found = self._checkpoints.get(session_id)
        return found[-1] if found else None

    def last_checkpoint_seq(self, session_id: int) -> int:
        found = self._checkpoints.get(session_id)
        return found[-1].seq if found else 0

    def checkpoints(self, session_id: int) -> list[Checkpoint]:
        return list(self._checkpoints.get(session_id, ()))

    def put_task(self, task: AgentTask) -> None:
        if task.id not in self._tasks:
            self._session_tasks.setdefault(task.session_id, []).append(task.id)
            self._task_keys[(task.session_id, task.key)] = task.id
        self._tasks[task.id] = task

    def task(self, tenant_id: int, task_id: int) -> AgentTask | None:
        task = self._tasks.get(task_id)
        return task if task is not None and task.tenant_id == tenant_id else None

    def task_by_key(self, session_id: int, key: str) -> AgentTask | None:
        task_id = self._task_keys.get((session_id, key))
        return None if task_id is None else self._tasks[task_id]

    def tasks(self, session_id: int) -> list[AgentTask]:
        return [self._tasks[i] for i in self._session_tasks.get(session_id, [])]

    def put_lesson(self, lesson: Lesson) -> None:
        self._rows[lesson.tenant_id].lessons[lesson.id] = lesson

    def lessons(self, tenant_id: int) -> list[Lesson]:
        return list(self._rows[tenant_id].lessons.values())

    def put_handoff(self, handoff: Handoff) -> None:
        self._rows[handoff.tenant_id].handoffs.append(handoff)

    def handoffs(self, tenant_id: int) -> list[Handoff]:
        return list(self._rows[tenant_id].handoffs)

    def latest_handoff(self, tenant_id: int, workspace_id: int | None) -> Handoff | None:
        for handoff in reversed(self._rows[tenant_id].handoffs):
            if workspace_id is None or handoff.workspace_id == workspace_id:
                return handoff
        return None

    # saved searches

    def put_saved_search(self, saved: SavedSearch) -> None:
        self._rows[saved.tenant_id].saved_searches[saved.id] = saved

    def saved_search(self, tenant_id: int, search_id: int) -> SavedSearch | None:
        return self._rows[tenant_id].saved_searches.get(search_id)

    def saved_search_by_name(self, tenant_id: int, name: str) -> SavedSearch | None:
        found = self._rows[tenant_id].saved_searches.values()
        return next((s for s in found if s.name == name), None)

    def saved_searches(
        self, tenant_id: int, limit: int, offset: int
    ) -> tuple[list[SavedSearch], int]:
        rows = self._rows[tenant_id].saved_searches
        return list(islice(rows.values(), offset, offset + limit)), len(rows)

    def delete_saved_search(self, saved: SavedSearch) -> None:
        del self._rows[saved.tenant_id].saved_searches[saved.id]

    # links

    def put_link(self, link: ContextLink) -> None:
        rows = self._rows[link.tenant_id]
        rows.links[link.id] = link
        rows.link_ids.setdefault(link.source_id, set()).add(link.id)
        rows.link_ids.setdefault(link.target_id, set()).add(link.id)

    def link_between(
        self, tenant_id: int, source_id: int, target_id: int, relation: str
    ) -> ContextLink | None:
        rows = self._rows[tenant_id]
        for link_id in rows.link_ids.get(source_id, ()):
            link = rows.links[link_id]
            if (link.source_id, link.target_id, link.relation) == (source_id, target_id, relation):
                return link
        return None

    def links(self, tenant_id: int, context_id: int) -> list[ContextLink]:
        rows = self._rows[tenant_id]
        return [rows.links[i] for i in sorted(rows.link_ids.get(context_id, ()))]

    # ingest jobs

    def put_ingest_job(self, job: IngestJob) -> None:
        self._ingest_jobs[job.id] = job

    def ingest_job(self, tenant_id: int, job_id: int) -> IngestJob | None:
        job = self._ingest_jobs.get(job_id)
        return job if job is not None and job.tenant_id == tenant_id else None

    def unfinished_ingest_jobs(self) -> list[IngestJob]:
        finished = (wire.INGEST_DONE, wire.INGEST_FAILED)
        return [j for j in self._ingest_jobs.values() if j.status not in finished]
