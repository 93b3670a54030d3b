"""Links between contexts (``ctx_link``, ``ctx_links``): [assumed] every rule here.

A link is directed (source -> target) and named by a relation; one pair may be linked
under several relations, never twice under one. Both ends are contexts of the caller's
tenant (another tenant's id is a 404, as a missing one); a context's delete removes its
links in every store (``Store.delete_context``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain import parse, shapes
from fake_contextq.domain import records as r
from fake_contextq.domain.audit import PkmAction
from fake_contextq.domain.errors import ApiError, ValidationFailed
from fake_contextq.domain.store import Store

__all__ = ["LinkLayer", "parse_link_body"]

Body = bytes | Mapping[str, Any]


class Backend(Protocol):
    """What links use of the installation (``ContextQBackend``)."""

    @property
    def store(self) -> Store: ...

    def clock(self) -> datetime: ...

    def context_in(self, tenant_id: int, context_id: int) -> r.Context: ...

    def audit(self, p: r.Principal, action: str, entity: str, entity_id: str | None) -> None: ...


def parse_link_body(raw: Body) -> tuple[int, str]:
    """``{"targetId": id, "relation"?: text}`` (``shapes.LINK``) -> (target id, relation)."""
    values = shapes.LINK.read(raw)
    return values["targetId"], values["relation"] or wire.LINK_DEFAULT_RELATION


class LinkLayer:
    """The link endpoints of one installation; shares the backend's store and audit log."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def store(self) -> Store:
        return self.backend.store

    def link(self, p: r.Principal, raw_id: str | int, body: Body) -> r.ContextLink:
        source_id = parse.parse_id(str(raw_id))
        target_id, relation = parse_link_body(body)
        if target_id == source_id:
            raise ValidationFailed([{"path": "targetId", "message": _msgs.LINK_TO_SELF}])
        with self.store.transaction():
            self.backend.context_in(p.tenant_id, source_id)
            self.backend.context_in(p.tenant_id, target_id)
            held = self.store.link_between(p.tenant_id, source_id, target_id, relation)
            if held is not None:
                message = _msgs.LINK_EXISTS_MSG.format(
                    source=source_id, target=target_id, relation=relation, id=held.id
                )
                raise ApiError(_msgs.LINK_EXISTS, message, linkId=held.id)
            link = r.ContextLink(
                id=self.store.next_id("context_link"),
                tenant_id=p.tenant_id,
                source_id=source_id,
                target_id=target_id,
                relation=relation,
                created_at=self.backend.clock(),
            )
            self.store.put_link(link)
            self.backend.audit(p, PkmAction.LINK_CREATE, "context_link", str(link.id))
            return link

    def links(self, p: r.Principal, raw_id: str | int) -> r.Links:
        context_id = parse.parse_id(str(raw_id))
        with self.store.transaction():
            context = self.backend.context_in(p.tenant_id, context_id)
            outgoing: list[tuple[r.ContextLink, r.Context]] = []
            incoming: list[tuple[r.ContextLink, r.Context]] = []
            for link in self.store.links(p.tenant_id, context_id):
                out = link.source_id == context_id
                other = self.store.context(p.tenant_id, link.target_id if out else link.source_id)
                if other is not None:  # a store removes a deleted context's links with it
                    (outgoing if out else incoming).append((link, other))
            return r.Links(context, outgoing, incoming)
