"""The PKM operations that need the server's LLM: dream, evolve, regenerate MOCs.

ContextQ's public docs name the tools (``ctx_dream``, ``ctx_evolve``,
``ctx_regenerate_mocs``); seed 003 says the handoff wraps the "dream-handoff generator",
needs a workspace (400 ``no_workspace``, checked first) and 503s without an LLM provider.
The fake holds these the same way, in that order: the request, then what it names (its
workspace; or its context, then that context's workspace), then the LLM, then its sources
(none is a 400), the quota, and only then the LLM's text, all in one transaction, so a
refusal or a failing LLM writes nothing. Every shape here is [assumed] (``adapter.wire``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, quota
from fake_contextq.domain import records as r
from fake_contextq.domain._pkm_parse import parse_dream, parse_evolve, parse_regenerate_mocs
from fake_contextq.domain.audit import AuditAction
from fake_contextq.domain.errors import ApiError, ValidationFailed, not_found
from fake_contextq.domain.llm import (
    DreamMaterial,
    EvolveMaterial,
    MocMaterial,
    ServerLlm,
    generated_title,
    unavailable,
)
from fake_contextq.domain.store import Store

Body = bytes | Mapping[str, Any]


class Backend(Protocol):
    """What the PKM layer uses of the installation it belongs to (``ContextQBackend``)."""

    @property
    def store(self) -> Store: ...

    def clock(self) -> datetime: ...

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None: ...


@dataclass(frozen=True, slots=True)
class _Moc:
    """One MOC to write: its tag, externalId, the LLM's text and the contexts it maps."""

    tag: str
    external_id: str
    text: str
    sources: tuple[r.Context, ...]


def _newest_first(contexts: Iterable[r.Context]) -> list[r.Context]:
    return sorted(contexts, key=lambda c: (c.updated_at, c.id), reverse=True)


def _generated_moc(c: r.Context) -> bool:
    marker = c.metadata.get(wire.GENERATED_KEY)
    return isinstance(marker, dict) and marker.get("by") == wire.MOC_TYPE


def _source(c: r.Context) -> bool:
    """[assumed] Whether a context may feed a dream, an evolution or a MOC: what they
    write (syntheses, maps) never does."""
    return c.type not in wire.PKM_DERIVED_TYPES


def _no_sources(field: str, message: str) -> ValidationFailed:
    return ValidationFailed([{"path": field, "message": message}])


class PkmLayer:
    """The LLM-written PKM operations of one installation; shares the backend's store,
    audit log and LLM provider (the handoff's)."""

    def __init__(self, backend: Backend, llm: ServerLlm | None) -> None:
        self.backend = backend
        self.llm = llm

    @property
    def store(self) -> Store:
        return self.backend.store

    # ----- dream -----

    def dream(self, p: r.Principal, body: Body) -> r.Context:
        """A new ``synthesis`` context of the workspace's newest contexts."""
        data = parse_dream(body)
        with self.store.transaction():
            ws = self._workspace(p.tenant_id, data.workspace, "A dream")
            llm = self._llm("synthesis")
            pool = [c for c in self._workspace_contexts(ws) if _source(c)]
            if data.since is not None:
                pool = [c for c in pool if c.updated_at >= data.since]
            sources = tuple(_newest_first(pool)[: data.limit])
            if not sources:
                since = "" if data.since is None else wire.timestamp(data.since)
                shown = _msgs.NOTHING_TO_DREAM_SINCE.format(since=since) if since else ""
                raise _no_sources(
                    "workspace", _msgs.NOTHING_TO_DREAM.format(slug=ws.slug, since=shown)
                )
            self._ensure_room(p, 1)
            text = llm.write(DreamMaterial(ws.slug, sources, data.since))
            now = self.backend.clock()
            context = r.Context(
                id=self.store.next_id("context"),
                tenant_id=p.tenant_id,
                workspace_id=ws.id,
                workspace=ws.slug,
                type=wire.DREAM_TYPE,
                title=generated_title(text, f"Synthesis of {ws.slug}"),
                content=text,
                tags=(wire.DREAM_TAG,),
                external_id=None,
                metadata={
                    wire.GENERATED_KEY: {
                        "by": "dream",
                        "sources": [c.id for c in sources],
                        "since": None if data.since is None else wire.timestamp(data.since),
                    }
                },
                created_at=now,
                updated_at=now,
            )
            self.store.put_context(context)
            self.backend.audit(p, AuditAction.CONTEXT_DREAM, "context", str(context.id))
            return context

    # ----- evolve -----

    def evolve(self, p: r.Principal, raw_id: str | int, body: Body) -> r.Context:
        """The context revised by the LLM from its newer related contexts (same workspace,
        a shared tag, written after it) and the caller's instruction. A context of no
        workspace is the handoff's 400 ``no_workspace``: the workspace is what it reads."""
        context_id = parse.parse_id(str(raw_id))
        data = parse_evolve(body)
        with self.store.transaction():
            target = self._context(p.tenant_id, context_id)
            if target.workspace_id is None:  # the handoff's workspace check, before the LLM
                raise ApiError(
                    _msgs.NO_WORKSPACE, _msgs.NO_WORKSPACE_TO_EVOLVE.format(id=target.id)
                )
            llm = self._llm("evolved context")
            sources = tuple(self._newer_related(target)[: data.limit])
            if not sources and data.instruction is None:
                raise _no_sources("instruction", _msgs.NOTHING_TO_EVOLVE.format(id=target.id))
            text = llm.write(EvolveMaterial(target, sources, data.instruction))
            evolved = replace(
                target,
                content=text,
                metadata={
                    **target.metadata,
                    wire.EVOLVED_KEY: {
                        "sources": [c.id for c in sources],
                        "instruction": data.instruction,
                    },
                },
                updated_at=self.backend.clock(),
            )
            self.store.put_context(evolved)
            self.backend.audit(p, AuditAction.CONTEXT_EVOLVE, "context", str(evolved.id))
            return evolved

    def _newer_related(self, target: r.Context) -> list[r.Context]:
        """Newest first: contexts of the target's workspace sharing a tag with it and
        written after it (a later ``updatedAt``, or the same and a higher id)."""
        found: dict[int, r.Context] = {}
        every = max(self.store.count_contexts(target.tenant_id), 1)
        for tag in target.tags:
            rows, _ = self.store.list_contexts(
                target.tenant_id, r.ListQuery(tag=tag, limit=every), None
            )
            for c in rows:
                if (
                    c.workspace_id == target.workspace_id
                    and (c.updated_at, c.id) > (target.updated_at, target.id)
                    and _source(c)
                ):
                    found[c.id] = c
        return _newest_first(found.values())

    # ----- maps of content -----

    def regenerate_mocs(self, p: r.Principal, body: Body) -> r.MocRegeneration:
        """One ``moc`` context per tag that enough of the workspace's contexts carry; the
        previous generated ones updated in place, or removed when their tag is gone."""
        slug = parse_regenerate_mocs(body)
        with self.store.transaction():
            ws = self._workspace(p.tenant_id, slug, "Regenerating maps of content")
            llm = self._llm("map of content")
            contexts = self._workspace_contexts(ws)
            groups = _moc_groups(c for c in contexts if _source(c) and not _generated_moc(c))
            wanted = {wire.moc_external_id(ws.slug, tag): tag for tag in groups}
            held: dict[str, r.Context | None] = {}
            for external_id, tag in wanted.items():
                holder = self.store.context_by_external(p.tenant_id, external_id)
                if holder is not None and not _generated_moc(holder):
                    raise ApiError(
                        _msgs.EXTERNAL_ID_TAKEN,
                        _msgs.MOC_ID_TAKEN.format(external_id=external_id, tag=tag, id=holder.id),
                        externalId=external_id,
                    )
                held[external_id] = holder
            prefix = wire.moc_external_id(ws.slug, "")
            stale = [
                c
                for c in contexts
                if _generated_moc(c)
                and (c.external_id or "").startswith(prefix)
                and c.external_id not in wanted
            ]
            adding = sum(1 for holder in held.values() if holder is None)
            self._ensure_room(p, adding - len(stale))
            texts = {
                eid: llm.write(MocMaterial(ws.slug, tag, groups[tag]))
                for eid, tag in wanted.items()
            }
            done = r.MocRegeneration(ws.slug, [], [], [], [])
            for c in stale:
                self.store.delete_context(c)
                done.removed.append(c.id)
            for external_id, tag in wanted.items():
                moc = _Moc(tag, external_id, texts[external_id], groups[tag])
                self._write_moc(p, ws, moc, held[external_id], done)
            self.backend.audit(p, AuditAction.MOC_REGENERATE, "workspace", ws.slug)
            return done

    def _write_moc(
        self,
        p: r.Principal,
        ws: r.Workspace,
        moc: _Moc,
        old: r.Context | None,
        done: r.MocRegeneration,
    ) -> None:
        """Create, update or keep the MOC of one tag, and say which in ``done``."""
        tag, text = moc.tag, moc.text
        fields: dict[str, Any] = {
            "workspace_id": ws.id,
            "workspace": ws.slug,
            "type": wire.MOC_TYPE,
            "title": generated_title(text, f"Map of content: {tag}"),
            "content": text,
            "tags": (tag,),
            "metadata": {
                wire.GENERATED_KEY: {
                    "by": wire.MOC_TYPE,
                    "tag": tag,
                    "sources": [c.id for c in moc.sources],
                }
            },
        }
        now = self.backend.clock()
        if old is None:
            created = r.Context(
                id=self.store.next_id("context"),
                tenant_id=p.tenant_id,
                external_id=moc.external_id,
                created_at=now,
                updated_at=now,
                **fields,
            )
            self.store.put_context(created)
            done.created.append(created)
        elif all(getattr(old, name) == value for name, value in fields.items()):
            done.unchanged.append(old)
        else:
            updated = replace(old, updated_at=now, **fields)
            self.store.put_context(updated)
            done.updated.append(updated)

    # ----- helpers -----

    def _llm(self, what: str) -> ServerLlm:
        if self.llm is None:
            raise unavailable(what)
        return self.llm

    def _workspace(self, tenant_id: int, slug: str | None, what: str) -> r.Workspace:
        """The named workspace of the tenant; none, or one it does not have, is the
        handoff's 400 ``no_workspace``."""
        ws = (
            self.store.workspace(tenant_id, slug)
            if slug is not None and parse.is_slug(slug)
            else None
        )
        if ws is None:
            raise ApiError(_msgs.NO_WORKSPACE, _msgs.NO_WORKSPACE_FOR.format(what=what))
        return ws

    def _workspace_contexts(self, ws: r.Workspace) -> list[r.Context]:
        every = max(self.store.count_contexts(ws.tenant_id, ws.id), 1)
        query = r.ListQuery(workspace=ws.slug, limit=every)
        rows, _ = self.store.list_contexts(ws.tenant_id, query, ws.id)
        return rows

    def _context(self, tenant_id: int, context_id: int) -> r.Context:
        # wire.MAX_ID: an id beyond the 64-bit range names no row, as a missing one
        context = (
            self.store.context(tenant_id, context_id) if wire.id_in_range(context_id) else None
        )
        if context is None:
            raise not_found(_msgs.CONTEXT_NOT_FOUND.format(id=context_id))
        return context

    def _ensure_room(self, p: r.Principal, adding: int) -> None:
        plan = self.store.tenant_plan(p.tenant_id)
        assert plan is not None
        if adding > 0 and quota.context_limit(plan) is not None:
            quota.ensure_room(plan, self.store.count_contexts(p.tenant_id), adding)


def _moc_groups(contexts: Iterable[r.Context]) -> dict[str, tuple[r.Context, ...]]:
    """[assumed] Tag -> its contexts (title order, at most ``wire.MOC_MAX_ENTRIES``), for
    the tags at least ``wire.MOC_MIN_CONTEXTS`` carry: the most carried first, then by tag,
    at most ``wire.MOC_MAX_GROUPS``."""
    by_tag: dict[str, list[r.Context]] = {}
    for c in contexts:
        for tag in c.tags:
            by_tag.setdefault(tag, []).append(c)
    kept = sorted(
        ((tag, rows) for tag, rows in by_tag.items() if len(rows) >= wire.MOC_MIN_CONTEXTS),
        key=lambda pair: (-len(pair[1]), pair[0]),
    )[: wire.MOC_MAX_GROUPS]
    return {
        tag: tuple(sorted(rows, key=lambda c: (c.title, c.id))[: wire.MOC_MAX_ENTRIES])
        for tag, rows in kept
    }
