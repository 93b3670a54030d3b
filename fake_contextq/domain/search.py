"""Hybrid search: BM25 over title, tags and content (an incremental inverted index),
fused by Reciprocal Rank Fusion with the ranking by embedding similarity.

ContextQ's public docs say its search runs full-text and vector similarity in parallel
and fuses the two by RRF. The fake's full-text side is BM25 with field weights (rare words
count more, repeated words saturate, long documents do not win by size alone); its vector
side is the fake's own embedder, so the whole ranking is deterministic and offline.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from fake_contextq.domain.embeddings import cosine

T = TypeVar("T")

TOKEN_RE = re.compile(r"\w+")
K1 = 1.2
B = 0.75
FIELD_WEIGHTS = {"title": 3.0, "tags": 2.0, "content": 1.0}


def tokenize(text: str) -> list[str]:
    return TOKEN_RE.findall(text.lower())


def query_terms(query: str) -> list[str]:
    """Distinct terms of a query, in order."""
    return list(dict.fromkeys(tokenize(query)))


def _weighted_terms(title: str, content: str, tags: Iterable[str]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for field, text in (("title", title), ("content", content), ("tags", " ".join(tags))):
        w = FIELD_WEIGHTS[field]
        for term in tokenize(text):
            weights[term] = weights.get(term, 0.0) + w
    return weights


class SearchIndex:
    """One tenant's inverted index: term -> {doc id: weighted term frequency}.

    Lazy: ``add`` and ``remove`` only note the document (its latest text, or its removal),
    and the next ``top`` or ``len`` tokenises what changed since, so a write costs no
    tokenising and a document rewritten between two searches is tokenised once. The
    rankings are those of an eager index: every weighted frequency and length is a sum of
    whole numbers (``FIELD_WEIGHTS``), exact in a float in any order, and ``top`` orders
    by score, then id, whatever order the postings were built in.
    """

    def __init__(self) -> None:
        self._postings: dict[str, dict[int, float]] = {}
        self._doc_terms: dict[int, dict[str, float]] = {}
        self._lengths: dict[int, float] = {}
        self._total_length = 0.0
        # doc id -> its text to index, or None to drop it; applied by ``_catch_up``
        self._pending: dict[int, tuple[str, str, tuple[str, ...]] | None] = {}

    def __len__(self) -> int:
        self._catch_up()
        return len(self._lengths)

    def add(self, doc_id: int, title: str, content: str, tags: Iterable[str]) -> None:
        """Index ``doc_id`` with this text (replacing any it had) by the next search."""
        self._pending[doc_id] = (title, content, tuple(tags))

    def remove(self, doc_id: int) -> None:
        """Drop ``doc_id`` (if indexed) by the next search."""
        self._pending[doc_id] = None

    def _catch_up(self) -> None:
        pending, self._pending = self._pending, {}
        for doc_id, text in pending.items():
            self._drop(doc_id)
            if text is not None:
                self._index(doc_id, *text)

    def _index(self, doc_id: int, title: str, content: str, tags: tuple[str, ...]) -> None:
        terms = _weighted_terms(title, content, tags)
        self._doc_terms[doc_id] = terms
        length = sum(terms.values())
        self._lengths[doc_id] = length
        self._total_length += length
        for term, tf in terms.items():
            self._postings.setdefault(term, {})[doc_id] = tf

    def _drop(self, doc_id: int) -> None:
        terms = self._doc_terms.pop(doc_id, None)
        if terms is None:
            return
        self._total_length -= self._lengths.pop(doc_id)
        for term in terms:
            posting = self._postings[term]
            del posting[doc_id]
            if not posting:
                del self._postings[term]

    def top(
        self, terms: list[str], limit: int, accept: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        """The ``limit`` best (doc id, score) pairs, best first, ties by lower id."""
        if self._pending:
            self._catch_up()
        n = len(self._lengths)
        if n == 0 or not terms:
            return []
        avg = self._total_length / n or 1.0
        scores: dict[int, float] = {}
        lengths = self._lengths
        for term in terms:
            posting = self._postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            for doc_id, tf in posting.items():
                norm = K1 * (1.0 - B + B * lengths[doc_id] / avg)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        candidates: Iterable[tuple[int, float]] = scores.items()
        if accept is not None:
            candidates = ((d, s) for d, s in candidates if accept(d))
        return heapq.nsmallest(limit, candidates, key=lambda pair: (-pair[1], pair[0]))


def snippet(content: str, title: str, terms: list[str], width: int) -> str:
    """A window of ``width`` characters around the first query term found in the content."""
    text = " ".join(content.split())
    if not text:
        return " ".join(title.split())[:width]
    start = 0
    if terms:
        pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE)
        match = pattern.search(text)
        if match:
            start = max(0, match.start() - width // 4)
            if start > 0:
                space = text.rfind(" ", 0, start)
                start = space + 1 if space >= 0 and match.start() - space < width else start
    end = min(len(text), start + width)
    if end - start < width:
        start = max(0, end - width)
    out = text[start:end]
    if start > 0:
        out = "…" + out
    if end < len(text):
        out = out + "…"
    return out


def rrf(rankings: Sequence[Sequence[int]], k: int) -> dict[int, float]:
    """Reciprocal Rank Fusion: each document scores the sum of 1 / (k + rank) over the
    rankings it appears in (ranks from 1)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


class VectorCache:
    """Embeddings of searched documents, kept while their text is unchanged (keyed by id
    and a version), the least recently used dropped beyond ``size``."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._vectors: OrderedDict[tuple[int, int, object], Sequence[float]] = OrderedDict()

    def get(
        self,
        key: tuple[int, int, object],
        text: Callable[[], str],
        embed: Callable[[str], Sequence[float]],
    ) -> Sequence[float]:
        found = self._vectors.get(key)
        if found is None:
            found = self._vectors[key] = embed(text())
            if len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        else:
            self._vectors.move_to_end(key)
        return found

    def clear(self) -> None:
        self._vectors.clear()


def fuse(
    pool: Sequence[tuple[T, float]],
    ids: Callable[[T], int],
    query_vector: Sequence[float],
    vector_of: Callable[[T], Sequence[float]],
    k: int,
    limit: int,
) -> list[tuple[T, float]]:
    """The ``limit`` best of a full-text ranking (best first) once fused by RRF with the
    same documents ranked by their similarity to the query, ties by full-text rank."""
    text_rank = [ids(doc) for doc, _ in pool]
    order = {d: i for i, d in enumerate(text_rank)}
    similarity = {ids(doc): cosine(query_vector, vector_of(doc)) for doc, _ in pool}
    by_vector = sorted(text_rank, key=lambda d: (-similarity[d], order[d]))
    fused = rrf([text_rank, by_vector], k)
    ranked = sorted(pool, key=lambda pair: (-fused[ids(pair[0])], order[ids(pair[0])]))
    return [(doc, fused[ids(doc)]) for doc, _ in ranked[:limit]]
