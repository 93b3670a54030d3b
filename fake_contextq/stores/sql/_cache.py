"""A store's in-memory copy of one tenant's contexts, for lists and searches."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fake_contextq.domain.records import Context
from fake_contextq.domain.search import SearchIndex


@dataclass(eq=False)
class TenantCache:
    """One tenant's contexts, in id order, as of ``revision``; the BM25 index is built on
    the first search and then kept up to date with them."""

    created_at: Any
    revision: int = -1
    contexts: dict[int, Context] = field(default_factory=dict)
    index: SearchIndex | None = None

    def apply(self, changed: Iterable[Context]) -> None:
        """Take in rows written since ``revision`` (new ones and new versions)."""
        contexts, index = self.contexts, self.index
        last = next(reversed(contexts), 0) if contexts else 0
        in_order = True
        for context in changed:
            if index is not None and context.id in contexts:
                index.remove(context.id)
            if context.id not in contexts:
                in_order = in_order and context.id > last
                last = max(last, context.id)
            contexts[context.id] = context
            if index is not None:
                index.add(context.id, context.title, context.content, context.tags)
        if not in_order:
            self.contexts = dict(sorted(contexts.items()))

    def keep(self, ids: set[int]) -> None:
        """Drop the contexts deleted since (every id not in ``ids``)."""
        for gone in [i for i in self.contexts if i not in ids]:
            if self.index is not None:
                self.index.remove(gone)
            del self.contexts[gone]

    def search_index(self) -> SearchIndex:
        if self.index is None:
            self.index = SearchIndex()
            for c in self.contexts.values():
                self.index.add(c.id, c.title, c.content, c.tags)
        return self.index
