"""Ingest as a job (``ctx_ingest``, ``ctx_ingest_status``): [assumed] every rule here.

A request is read and split at once (bad input is a 400, an ``http(s)`` URL the fake's 501:
it fetches nothing) and answers a ``queued`` job. The job then moves one step on each read
of its status, so a client polling it sees every state, in order and deterministically:
the first read answers ``running``, the second ``done`` with the contexts it made (or
``failed`` with the reason). ``FakeContextQ.run_ingest_jobs()`` runs every unfinished job
to its end at once. The contexts are made through the create rules (quota, workspace
fallback), when the job runs: a job that would take the tenant over its quota fails and
makes none. The audit log gets a row for the request and one for the job's end, both in
the name of the key that asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse
from fake_contextq.domain import records as r
from fake_contextq.domain.audit import PkmAction
from fake_contextq.domain.errors import ApiError, not_found
from fake_contextq.domain.ingest_text import parse_ingest_body
from fake_contextq.domain.store import Store

__all__ = ["IngestLayer"]

Body = bytes | Mapping[str, Any]
_ENDED = (wire.INGEST_DONE, wire.INGEST_FAILED)


class Backend(Protocol):
    """What ingest uses of the installation (``ContextQBackend``)."""

    @property
    def store(self) -> Store: ...

    def clock(self) -> datetime: ...

    def add_contexts(self, p: r.Principal, items: list[r.ContextInput]) -> list[r.Context]: ...

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None: ...


class IngestLayer:
    """The ingest endpoints of one installation; shares the backend's store and audit log."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def store(self) -> Store:
        return self.backend.store

    def submit(self, p: r.Principal, body: Body) -> tuple[r.IngestJob, list[r.Context]]:
        asked = parse_ingest_body(body)
        with self.store.transaction():
            now = self.backend.clock()
            job = r.IngestJob(
                id=self.store.next_id("ingest_job"),
                tenant_id=p.tenant_id,
                actor_key_prefix=p.key_prefix,
                status=wire.INGEST_QUEUED,
                source=asked.source,
                media_type=asked.media_type,
                type=asked.type,
                tags=asked.tags,
                workspace=asked.workspace,
                titles=asked.titles,
                contents=asked.contents,
                context_ids=(),
                failure_code=None,
                failure_message=None,
                created_at=now,
                updated_at=now,
            )
            self.store.put_ingest_job(job)
            self.backend.audit(p, PkmAction.INGEST_SUBMIT, "ingest_job", str(job.id))
            return job, []

    def status(
        self, p: r.Principal, raw_id: str | int, *, advance: bool = True
    ) -> tuple[r.IngestJob, list[r.Context]]:
        """The job after one more step (none once it ended, nor when ``advance`` is off: a
        HEAD, whose caller would never see the step) and the contexts it made that still
        exist."""
        job_id = parse.parse_id(str(raw_id), "jobId")
        with self.store.transaction():
            job = self.store.ingest_job(p.tenant_id, job_id) if wire.id_in_range(job_id) else None
            if job is None:
                raise not_found(_msgs.INGEST_JOB_NOT_FOUND.format(id=job_id))
            if advance and job.status not in _ENDED:
                job = self._step(job)
            made = [self.store.context(p.tenant_id, i) for i in job.context_ids]
            return job, [c for c in made if c is not None]

    def run_all(self) -> list[r.IngestJob]:
        """Every unfinished job of every tenant run to its end, in id order."""
        with self.store.transaction():
            ended: list[r.IngestJob] = []
            for job in self.store.unfinished_ingest_jobs():
                while job.status not in _ENDED:
                    job = self._step(job)
                ended.append(job)
            return ended

    def _step(self, job: r.IngestJob) -> r.IngestJob:
        if job.status == wire.INGEST_QUEUED:
            moved = replace(job, status=wire.INGEST_RUNNING, updated_at=self.backend.clock())
            self.store.put_ingest_job(moved)
            return moved
        return self._finish(job)

    def _finish(self, job: r.IngestJob) -> r.IngestJob:
        """Make the job's contexts through the create rules, or fail it with the reason."""
        actor = r.Principal(job.tenant_id, (), job.actor_key_prefix)
        items = [
            r.ContextInput(
                type=job.type,
                title=title,
                content=content,
                tags=job.tags,
                workspace=job.workspace,
                metadata={"ingestJobId": job.id, "ingestPart": n},
                given=frozenset(wire.CONTEXT_FIELDS) - {"externalId"},
            )
            for n, (title, content) in enumerate(zip(job.titles, job.contents, strict=True), 1)
        ]
        now = self.backend.clock()
        try:
            made = self.backend.add_contexts(actor, items)  # checks room before any write
        except ApiError as refused:
            ended = replace(
                job,
                status=wire.INGEST_FAILED,
                failure_code=refused.code,
                failure_message=refused.message,
                updated_at=now,
            )
            action = PkmAction.INGEST_FAILED
        else:
            ended = replace(
                job,
                status=wire.INGEST_DONE,
                context_ids=tuple(c.id for c in made),
                updated_at=now,
            )
            action = PkmAction.INGEST_DONE
        self.store.put_ingest_job(ended)
        self.backend.audit(actor, action, "ingest_job", str(job.id))
        return ended
