"""ContextQ's rules in plain Python: tenancy, quotas, uniqueness, search, audit.

Nothing here knows about HTTP. Each API operation takes the caller's ``Principal``
and the raw request input (the service has checked the key's scope against the
operation's, from the table of operations), validates it,
applies the change in one store transaction (validate everything, then write, so a
failed request changes nothing), and appends one audit row per successful write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import audit, auth, keys, parse, quota
from fake_contextq.domain import records as r
from fake_contextq.domain import search as ranking
from fake_contextq.domain.agent import AgentLayer
from fake_contextq.domain.chunking import chunk_content
from fake_contextq.domain.errors import ApiError, not_found, unauthorized
from fake_contextq.domain.handoff import Summariser
from fake_contextq.domain.ingest import IngestLayer
from fake_contextq.domain.links import LinkLayer
from fake_contextq.domain.llm import Llm, ServerLlm
from fake_contextq.domain.pkm import PkmLayer
from fake_contextq.domain.saved_searches import SavedSearches
from fake_contextq.domain.search import query_terms, snippet
from fake_contextq.domain.store import Store

Body = bytes | Mapping[str, Any]
READ, WRITE, ADMIN = wire.READ, wire.WRITE, wire.ADMIN


def _embedded_text(c: r.Context) -> str:
    """[assumed] What a context's embedding is made of: its title, tags and content."""
    return "\n".join((c.title, " ".join(c.tags), c.content))


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ContextQBackend:
    """The state and rules of one fake ContextQ installation (all its tenants)."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], datetime] | None = None,
        *,
        embed: Callable[[str], tuple[float, ...]] | None = None,
        llm: ServerLlm | Llm | Summariser | None = None,
    ) -> None:
        self.store: Store = store
        self.clock = clock or _utcnow
        if llm is not None and not isinstance(llm, ServerLlm):
            llm = ServerLlm(llm)
        self.llm: ServerLlm | None = llm  # the server's LLM provider, None when it has none
        self.agent = AgentLayer(self, embed, llm)
        self.saved_searches = SavedSearches(self)
        self.pkm = PkmLayer(self, llm)
        self.links = LinkLayer(self)
        self.ingest = IngestLayer(self)
        self._verified = auth.VerifiedKeys()
        self._vectors = ranking.VectorCache()

    # ----- administration (the object API; no scopes, no audit rows) -----

    def create_tenant(self, name: str | None = None, plan: str = quota.DEFAULT_PLAN) -> r.Tenant:
        plan = quota.check_plan(plan)
        with self.store.transaction():
            tenant_id = self.store.next_id("tenant")
            named = wire.well_formed(name) if name else f"tenant-{tenant_id}"
            tenant = r.Tenant(tenant_id, named, plan, self.clock())
            self.store.put_tenant(tenant)
            return tenant

    def tenant(self, tenant_id: int) -> r.Tenant:
        if not wire.id_in_range(tenant_id):  # names no row (the store's ids are 64-bit)
            raise not_found(_msgs.TENANT_NOT_FOUND.format(id=tenant_id))
        with self.store.transaction():
            tenant = self.store.tenant(tenant_id)
        if tenant is None:
            raise not_found(_msgs.TENANT_NOT_FOUND.format(id=tenant_id))
        return tenant

    def tenants(self) -> list[r.Tenant]:
        with self.store.transaction():
            return self.store.tenants()

    def set_plan(self, tenant_id: int, plan: str) -> r.Tenant:
        plan = quota.check_plan(plan)
        with self.store.transaction():
            tenant = replace(self.tenant(tenant_id), plan=plan)
            self.store.put_tenant(tenant)
            return tenant

    def mint_key(self, tenant_id: int, scopes: Iterable[str] = wire.DEFAULT_KEY_SCOPES) -> str:
        held = auth.normalise_scopes(scopes)
        plaintext = auth.new_key()
        with self.store.transaction():
            self.tenant(tenant_id)
            key = r.ApiKey(
                id=self.store.next_id("api_key"),
                tenant_id=tenant_id,
                key_hash=keys.hash_key(plaintext, rounds=keys.FAKE_BCRYPT_ROUNDS),
                prefix=keys.key_display_prefix(plaintext),
                scopes=held,
                created_at=self.clock(),
            )
            self.store.put_key(key)
        self._verified.minted(plaintext, key)
        return plaintext

    def revoke_key(self, plaintext: str) -> None:
        with self.store.transaction():
            key = self._verified.find(self.store, plaintext)
            if key is None:
                raise not_found(_msgs.KEY_NOT_FOUND)
            self.store.put_key(replace(key, revoked=True))
        self._verified.forget(plaintext)

    def keys(self, tenant_id: int) -> list[r.ApiKey]:
        with self.store.transaction():
            self.tenant(tenant_id)
            return self.store.keys(tenant_id)

    def add_workspace(self, tenant_id: int, slug: str, name: str | None = None) -> r.Workspace:
        body: dict[str, Any] = {"slug": slug}
        if name is not None:
            body["name"] = name
        slug, name = parse.parse_workspace_body(body)
        with self.store.transaction():
            self.tenant(tenant_id)
            return self._insert_workspace(tenant_id, slug, name)

    def contexts(self, tenant_id: int) -> list[r.Context]:
        """Every context of a tenant, in id order (for assertions)."""
        with self.store.transaction():
            self.tenant(tenant_id)
            total = self.store.count_contexts(tenant_id)
            rows, _ = self.store.list_contexts(tenant_id, r.ListQuery(limit=max(total, 1)), None)
            return rows

    def workspaces(self, tenant_id: int) -> list[r.Workspace]:
        with self.store.transaction():
            self.tenant(tenant_id)
            return self.store.workspaces(tenant_id)

    def audit_rows(self) -> list[r.AuditRow]:
        with self.store.transaction():
            return self.store.audit_rows()

    def verify_audit_chain(self) -> int:
        return audit.verify_chain(self.audit_rows())

    def reset(self) -> None:
        self.store.reset()
        self._verified.clear()
        self._vectors.clear()

    # ----- auth -----

    def request_transaction(self) -> AbstractContextManager[object]:
        """One store transaction for a whole request whose operation takes one anyway:
        authentication joins it (on a database the key is then read in the transaction's
        first round trip, not in one of its own)."""
        return self.store.transaction()

    def busy_answer(self, authorization: str | None, busy: ApiError) -> ApiError:
        """What a request that found the database busy gets: ContextQ checks the key
        before it touches any lock, so a bad key is still a 401 (the key is read without
        the lock); a good one gets the 503."""
        try:
            self.authenticate(authorization)
        except ApiError as refused:
            return refused
        return busy

    def authenticate(self, authorization: str | None) -> r.Principal:
        """The caller behind an ``Authorization`` header, or a 401."""
        plaintext = auth.bearer_key(authorization)
        with self.store.read():  # one statement once the key is verified: no write lock
            key = self._verified.find(self.store, plaintext)
        if key is None:
            raise unauthorized(_msgs.UNKNOWN_KEY)
        if key.revoked:
            raise unauthorized(_msgs.REVOKED_KEY)
        return r.Principal(key.tenant_id, key.scopes, key.prefix)

    # ----- contexts -----

    def create_context(self, p: r.Principal, body: Body) -> r.Context:
        item = parse.parse_context_body(body, create=True)
        with self.store.transaction():
            self._ensure_room(p, 1)
            self._ensure_external_id_free(p.tenant_id, item.external_id, None)
            context = self._new_context(p.tenant_id, item)
            self.store.put_context(context)
            self.audit(p, audit.AuditAction.CONTEXT_CREATE, "context", str(context.id))
            return context

    def list_contexts(
        self, p: r.Principal, params: Mapping[str, str], *, types: tuple[str, ...] = ()
    ) -> r.Page:
        query = parse.parse_list_query(params)
        if types:
            query = replace(query, types=types)
        with self.store.transaction():
            workspace_id = None
            if query.workspace is not None:
                ws = self._find_workspace(p.tenant_id, query.workspace)
                if ws is None:
                    total = 0
                    return r.Page([], total, query.limit, query.offset)
                workspace_id = ws.id
            items, total = self.store.list_contexts(p.tenant_id, query, workspace_id)
            return r.Page(items, total, query.limit, query.offset)

    def get_context(self, p: r.Principal, raw_id: str | int) -> r.Context:
        context_id = parse.parse_id(str(raw_id))
        with self.store.read():  # one statement: no write lock needed
            return self._context(p.tenant_id, context_id)

    def get_context_by_external(self, p: r.Principal, external_id: str) -> r.Context:
        external_id = self._check_external_id_param(external_id)
        with self.store.read():  # one statement: no write lock needed
            context = self.store.context_by_external(p.tenant_id, external_id)
        if context is None:
            raise not_found(_msgs.EXTERNAL_NOT_FOUND.format(external_id=external_id))
        return context

    def update_context(self, p: r.Principal, raw_id: str | int, body: Body) -> r.Context:
        context_id = parse.parse_id(str(raw_id))
        item = parse.parse_context_body(body, create=False)
        with self.store.transaction():
            old = self._context(p.tenant_id, context_id)
            if "externalId" in item.given:
                self._ensure_external_id_free(p.tenant_id, item.external_id, old.id)
            context = self._apply(old, item)
            self.store.put_context(context)
            self.audit(p, audit.AuditAction.CONTEXT_UPDATE, "context", str(context.id))
            return context

    def delete_context(self, p: r.Principal, raw_id: str | int) -> None:
        context_id = parse.parse_id(str(raw_id))
        with self.store.transaction():
            context = self._context(p.tenant_id, context_id)
            self.store.delete_context(context)
            self.audit(p, audit.AuditAction.CONTEXT_DELETE, "context", str(context.id))

    def bulk_upsert(self, p: r.Principal, body: Body) -> r.BulkResult:
        items = parse.parse_bulk_body(body)
        return self._upsert_all(p, items, audit.AuditAction.CONTEXT_BULK_UPSERT)

    def import_contexts(self, p: r.Principal, body: Body) -> r.BulkResult:
        """[assumed] ``ctx_import``: a bulk upsert whose items need no ``externalId`` (one
        without is always created); the same limits, quota and all-or-nothing answer."""
        items = parse.parse_bulk_body(body, external_id_required=False)
        return self._upsert_all(p, items, audit.AuditAction.CONTEXT_IMPORT)

    def _upsert_all(self, p: r.Principal, items: list[r.ContextInput], action: str) -> r.BulkResult:
        """Create or update every item in one transaction: all of them, or (over the quota,
        which counts only the rows created) none; one audit row."""
        with self.store.transaction():
            existing = [
                None
                if item.external_id is None
                else self.store.context_by_external(p.tenant_id, item.external_id)
                for item in items
            ]
            adding = sum(1 for old in existing if old is None)
            self._ensure_room(p, adding)
            out: list[r.Context] = []
            for item, old in zip(items, existing, strict=True):
                context = (
                    self._new_context(p.tenant_id, item) if old is None else self._apply(old, item)
                )
                self.store.put_context(context)
                out.append(context)
            self.audit(p, action, "context", None)
            return r.BulkResult(created=adding, updated=len(items) - adding, items=out)

    def context_chunks(self, p: r.Principal, raw_id: str | int) -> tuple[r.Context, list[r.Chunk]]:
        """The chunks a context is embedded by (``chunking.chunk_content``)."""
        context = self.get_context(p, raw_id)
        return context, chunk_content(context.content)

    def list_mocs(self, p: r.Principal, params: Mapping[str, str]) -> r.Page:
        """[assumed] ``GET /api/mocs``: the list of contexts of the map-of-content types
        (``wire.MOC_TYPES``), with the list's filters and paging (a ``type`` is ignored)."""
        own = {name: value for name, value in params.items() if name != "type"}
        return self.list_contexts(p, own, types=wire.MOC_TYPES)

    def add_contexts(self, p: r.Principal, items: list[r.ContextInput]) -> list[r.Context]:
        """New contexts from valid create items, inside the caller's transaction: the
        quota is checked before any is written (a 402 writes none). No audit row: the
        caller writes its own."""
        self._ensure_room(p, len(items))
        made = [self._new_context(p.tenant_id, item) for item in items]
        for context in made:
            self.store.put_context(context)
        return made

    def context_in(self, tenant_id: int, context_id: int) -> r.Context:
        """The tenant's context of that id, inside the caller's transaction, or a 404."""
        return self._context(tenant_id, context_id)

    def search(self, p: r.Principal, body: Body) -> list[r.SearchHit]:
        query = parse.parse_search_body(body)
        terms = query_terms(query.query)
        with self.store.transaction():
            workspace_id: int | None = None
            if query.workspace is not None:
                ws = self._find_workspace(p.tenant_id, query.workspace)
                if ws is None:
                    return []
                workspace_id = ws.id
            accept = _search_filter(query, workspace_id)
            pool = max(query.limit, wire.SEARCH_HYBRID_POOL)
            ranked = self.store.search(p.tenant_id, terms, pool, accept)
        ranked = self._hybrid(query.query, ranked, query.limit)
        return [
            r.SearchHit(c, score, snippet(c.content, c.title, terms, wire.SEARCH_SNIPPET_CHARS))
            for c, score in ranked
        ]

    def _hybrid(
        self, query: str, ranked: list[tuple[r.Context, float]], limit: int
    ) -> list[tuple[r.Context, float]]:
        """The full-text ranking fused with the embedding ranking (``wire.SEARCH_RRF_K``);
        a fake without embeddings, or whose embedder fails, ranks by full text alone."""
        embed = self.agent.embed
        if embed is None or not ranked:
            return ranked[:limit]

        def vector_of(c: r.Context) -> Sequence[float]:
            key = (c.tenant_id, c.id, hash((c.title, c.content, c.tags)))
            return self._vectors.get(key, lambda: _embedded_text(c), embed)

        try:
            return ranking.fuse(
                ranked, lambda c: c.id, embed(query), vector_of, wire.SEARCH_RRF_K, limit
            )
        except Exception:  # a caller's embedder that fails: full text still answers
            return ranked[:limit]

    # ----- workspaces -----

    def list_workspaces(self, p: r.Principal) -> list[r.Workspace]:
        with self.store.transaction():
            return self.store.workspaces(p.tenant_id)

    def create_workspace(self, p: r.Principal, body: Body) -> r.Workspace:
        slug, name = parse.parse_workspace_body(body)
        with self.store.transaction():
            ws = self._insert_workspace(p.tenant_id, slug, name)
            self.audit(p, audit.AuditAction.WORKSPACE_CREATE, "workspace", ws.slug)
            return ws

    def archive_workspace(self, p: r.Principal, slug: str) -> r.Workspace:
        with self.store.transaction():
            ws = replace(self._workspace(p.tenant_id, slug), archived=True)
            self.store.put_workspace(ws)
            self.audit(p, audit.AuditAction.WORKSPACE_ARCHIVE, "workspace", ws.slug)
            return ws

    def delete_workspace(self, p: r.Principal, slug: str) -> None:
        with self.store.transaction():
            ws = self._workspace(p.tenant_id, slug)
            held = self.store.count_contexts(p.tenant_id, ws.id)
            if held:
                raise ApiError(
                    _msgs.WORKSPACE_NOT_EMPTY,
                    _msgs.WORKSPACE_NOT_EMPTY_MSG.format(slug=slug, count=held),
                    contexts=held,
                )
            self.store.delete_workspace(ws)
            self.audit(p, audit.AuditAction.WORKSPACE_DELETE, "workspace", ws.slug)

    # ----- helpers -----

    def _plan(self, p: r.Principal) -> str:
        plan = self.store.tenant_plan(p.tenant_id)
        assert plan is not None
        return plan

    def _ensure_room(self, p: r.Principal, adding: int) -> None:
        """402 when ``adding`` new contexts would take the tenant over its plan's quota;
        a plan without one needs no count (on a database, the costliest read of a write)."""
        plan = self._plan(p)
        if adding > 0 and quota.context_limit(plan) is not None:
            quota.ensure_room(plan, self.store.count_contexts(p.tenant_id), adding)

    def _context(self, tenant_id: int, context_id: int) -> r.Context:
        # wire.MAX_ID: an id beyond the 64-bit range names no row, as a missing one
        context = (
            self.store.context(tenant_id, context_id) if wire.id_in_range(context_id) else None
        )
        if context is None:
            raise not_found(_msgs.CONTEXT_NOT_FOUND.format(id=context_id))
        return context

    def _workspace(self, tenant_id: int, slug: str) -> r.Workspace:
        slug = parse.parse_path_text(slug, "slug", wire.MAX_WORKSPACE_SLUG_CHARS)
        ws = self._find_workspace(tenant_id, slug)
        if ws is None:
            raise not_found(_msgs.WORKSPACE_NOT_FOUND.format(slug=slug))
        return ws

    def _insert_workspace(self, tenant_id: int, slug: str, name: str) -> r.Workspace:
        if self.store.workspace(tenant_id, slug) is not None:
            raise ApiError(_msgs.WORKSPACE_TAKEN, _msgs.WORKSPACE_TAKEN_MSG.format(slug=slug))
        ws = r.Workspace(self.store.next_id("workspace"), tenant_id, slug, name, self.clock())
        self.store.put_workspace(ws)
        return ws

    def _resolve_workspace(self, tenant_id: int, slug: str | None) -> r.Workspace | None:
        # wire.UNKNOWN_WORKSPACE_IS_NULL: an unknown slug is stored as no workspace.
        return None if slug is None else self._find_workspace(tenant_id, slug)

    def _find_workspace(self, tenant_id: int, slug: str) -> r.Workspace | None:
        return self.store.workspace(tenant_id, slug) if parse.is_slug(slug) else None

    def _ensure_external_id_free(
        self, tenant_id: int, external_id: str | None, own_id: int | None
    ) -> None:
        if external_id is None:
            return
        holder = self.store.context_id_by_external(tenant_id, external_id)
        if holder is not None and holder != own_id:
            raise ApiError(
                _msgs.EXTERNAL_ID_TAKEN,
                _msgs.EXTERNAL_ID_TAKEN_MSG.format(external_id=external_id, id=holder),
                externalId=external_id,
            )

    @staticmethod
    def _check_external_id_param(external_id: str) -> str:
        return parse.parse_path_text(external_id, "externalId", wire.MAX_EXTERNAL_ID_CHARS)

    def _new_context(self, tenant_id: int, item: r.ContextInput) -> r.Context:
        ws = self._resolve_workspace(tenant_id, item.workspace)
        now = self.clock()
        assert item.type is not None and item.title is not None and item.content is not None
        return r.Context(
            id=self.store.next_id("context"),
            tenant_id=tenant_id,
            workspace_id=None if ws is None else ws.id,
            workspace=None if ws is None else ws.slug,
            type=item.type,
            title=item.title,
            content=item.content,
            tags=item.tags or (),
            external_id=item.external_id,
            metadata=dict(item.metadata or {}),
            created_at=now,
            updated_at=now,
        )

    def _apply(self, old: r.Context, item: r.ContextInput) -> r.Context:
        """``old`` with every field the input gave replaced (last writer wins)."""
        changes: dict[str, Any] = {"updated_at": self.clock()}
        given = item.given
        for name in ("type", "title", "content"):
            if name in given:
                changes[name] = getattr(item, name)
        if "tags" in given:
            changes["tags"] = item.tags or ()
        if "externalId" in given:
            changes["external_id"] = item.external_id
        if "metadata" in given:
            changes["metadata"] = dict(item.metadata or {})
        if "workspace" in given:
            ws = self._resolve_workspace(old.tenant_id, item.workspace)
            changes["workspace_id"] = None if ws is None else ws.id
            changes["workspace"] = None if ws is None else ws.slug
        return replace(old, **changes)

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None:
        """Append the chained audit row of one successful write (inside its transaction)."""
        at = wire.timestamp(self.clock())
        self.store.chain_audit(
            r.AuditDraft(p.tenant_id, p.key_prefix, action, entity, entity_id, at)
        )


def _search_filter(
    query: r.SearchQuery, workspace_id: int | None
) -> Callable[[r.Context], bool] | None:
    if query.type is None and query.workspace is None and not query.tags:
        return None
    wanted_tags = set(query.tags)

    def accept(c: r.Context) -> bool:
        return (
            (query.type is None or c.type == query.type)
            and (query.workspace is None or c.workspace_id == workspace_id)
            and wanted_tags.issubset(c.tags)  # wire.SEARCH_TAGS_MATCH_ALL
        )

    return accept
