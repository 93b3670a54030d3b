"""The fake's embedder: deterministic, offline, 768-dimensional feature hashing.

Words and their character trigrams are hashed (crc32, stable across processes, unlike
``hash()``) into 768 signed buckets and L2-normalised, so texts that share words or word
pieces land near each other: recall by meaning works roughly, repeatably, with no model.
"""

from __future__ import annotations

import math
import operator
import re
import zlib
from collections.abc import Callable, Sequence

from adapter import wire

Embedder = Callable[[str], Sequence[float]]
_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


def hashing_embedder(text: str) -> tuple[float, ...]:
    dim = wire.EMBEDDING_DIMENSIONS
    vector = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        _add(vector, "w:" + word, _WORD_WEIGHT)
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            _add(vector, "t:" + padded[i : i + 3], _TRIGRAM_WEIGHT)
    return normalise(vector)


def _add(vector: list[float], feature: str, weight: float) -> None:
    h = zlib.crc32(feature.encode())
    vector[h % len(vector)] += weight if (h >> 16) & 1 else -weight


def normalise(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(vector) if norm == 0 else tuple(x / norm for x in vector)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (the fake's are unit length, so a dot product)."""
    total: float = sum(map(operator.mul, a, b))
    return total


def checked(embed: Embedder) -> Callable[[str], tuple[float, ...]]:
    """Wrap a caller's embedding function, refusing one of the wrong dimension at once."""
    probe = embed("dimension probe")
    if len(probe) != wire.EMBEDDING_DIMENSIONS:
        raise ValueError(
            f"the embedding function returns {len(probe)} dimensions; ContextQ stores "
            f"{wire.EMBEDDING_DIMENSIONS}-dimensional vectors"
        )

    def run(text: str) -> tuple[float, ...]:
        vector = embed(text)
        if len(vector) != wire.EMBEDDING_DIMENSIONS:
            raise ValueError(
                f"the embedding function returned {len(vector)} dimensions for "
                f"{text[:40]!r}, not {wire.EMBEDDING_DIMENSIONS}"
            )
        return normalise([float(x) for x in vector])

    return run
