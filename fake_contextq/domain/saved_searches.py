"""Saved searches: a tenant's named ``POST /api/search`` bodies, and running one.

The public page names the tools (``ctx_saved_searches_*``, ``ctx_run_saved_search``);
everything else is [assumed] (``wire.SAVED_SEARCH_FIELDS``): a saved search holds exactly
the fields of a search body, validated by the search's own limits, so running it answers
what ``POST /api/search`` answers for them, at the time it runs (an unknown workspace
finds nothing then, as in a search). Its name is unique per tenant (409).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, shapes
from fake_contextq.domain import records as r
from fake_contextq.domain.audit import AuditAction
from fake_contextq.domain.errors import ApiError, not_found
from fake_contextq.domain.store import Store

__all__ = ["SavedSearches", "parse_saved_search"]

Body = bytes | Mapping[str, Any]
_ENTITY = "saved_search"


class Backend(Protocol):
    """What saved searches use of their installation (``ContextQBackend``)."""

    @property
    def store(self) -> Store: ...

    def clock(self) -> datetime: ...

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None: ...

    def search(self, p: r.Principal, body: Body) -> list[r.SearchHit]: ...


def parse_saved_search(raw: Body, *, create: bool) -> dict[str, Any]:
    """The fields a body gives (``shapes.SAVED_SEARCH_CREATE`` / ``_UPDATE``), checked as a
    search body's are; an update may send ``null`` for ``type``, ``workspace`` and
    ``limit`` to drop them. Unknown fields are ignored, as everywhere."""
    shape = shapes.SAVED_SEARCH_CREATE if create else shapes.SAVED_SEARCH_UPDATE
    values = shape.read(raw)
    return {name: values[name] for name in values.given if name in values}


def search_body(saved: r.SavedSearch) -> dict[str, Any]:
    """The ``POST /api/search`` body a saved search runs as (the fields it holds)."""
    return wire.search_body(
        saved.query,
        type=saved.type,
        workspace=saved.workspace,
        tags=saved.tags,
        limit=saved.limit,
    )


class SavedSearches:
    """The saved-search endpoints of one installation."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def store(self) -> Store:
        return self.backend.store

    def listing(self, p: r.Principal, params: Mapping[str, str]) -> r.SavedSearchPage:
        paging = {k: v for k, v in params.items() if k in ("limit", "offset")}
        query = parse.parse_list_query(paging)
        with self.store.transaction():
            items, total = self.store.saved_searches(p.tenant_id, query.limit, query.offset)
        return r.SavedSearchPage(items, total, query.limit, query.offset)

    def create(self, p: r.Principal, body: Body) -> r.SavedSearch:
        given = parse_saved_search(body, create=True)
        with self.store.transaction():
            self._ensure_name_free(p.tenant_id, given["name"], None)
            now = self.backend.clock()
            saved = r.SavedSearch(
                id=self.store.next_id("saved_search"),
                tenant_id=p.tenant_id,
                name=given["name"],
                query=given["query"],
                type=given.get("type"),
                workspace=given.get("workspace"),
                tags=given.get("tags", ()),
                limit=given.get("limit"),
                created_at=now,
                updated_at=now,
            )
            self.store.put_saved_search(saved)
            self.backend.audit(p, AuditAction.SAVED_SEARCH_CREATE, _ENTITY, str(saved.id))
            return saved

    def get(self, p: r.Principal, raw_id: str) -> r.SavedSearch:
        search_id = parse.parse_id(raw_id)
        with self.store.read():
            return self._saved(p.tenant_id, search_id)

    def update(self, p: r.Principal, raw_id: str, body: Body) -> r.SavedSearch:
        search_id = parse.parse_id(raw_id)
        given = parse_saved_search(body, create=False)
        with self.store.transaction():
            old = self._saved(p.tenant_id, search_id)
            if "name" in given:
                self._ensure_name_free(p.tenant_id, given["name"], old.id)
            saved = replace(old, **given, updated_at=self.backend.clock())
            self.store.put_saved_search(saved)
            self.backend.audit(p, AuditAction.SAVED_SEARCH_UPDATE, _ENTITY, str(saved.id))
            return saved

    def delete(self, p: r.Principal, raw_id: str) -> None:
        search_id = parse.parse_id(raw_id)
        with self.store.transaction():
            saved = self._saved(p.tenant_id, search_id)
            self.store.delete_saved_search(saved)
            self.backend.audit(p, AuditAction.SAVED_SEARCH_DELETE, _ENTITY, str(saved.id))

    def run(self, p: r.Principal, raw_id: str) -> list[r.SearchHit]:
        """What ``POST /api/search`` answers for the saved fields, now."""
        saved = self.get(p, raw_id)
        return self.backend.search(p, search_body(saved))

    def _saved(self, tenant_id: int, search_id: int) -> r.SavedSearch:
        found = (
            self.store.saved_search(tenant_id, search_id) if wire.id_in_range(search_id) else None
        )
        if found is None:
            raise not_found(_msgs.SAVED_SEARCH_NOT_FOUND.format(id=search_id))
        return found

    def _ensure_name_free(self, tenant_id: int, name: str, own_id: int | None) -> None:
        holder = self.store.saved_search_by_name(tenant_id, name)
        if holder is not None and holder.id != own_id:
            raise ApiError(
                _msgs.SAVED_SEARCH_NAME_TAKEN,
                _msgs.SAVED_SEARCH_NAME_TAKEN_MSG.format(name=name, id=holder.id),
                name=name,
            )
