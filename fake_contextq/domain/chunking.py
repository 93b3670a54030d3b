"""How a context's content is cut into the chunks it is embedded by (``ctx_chunks``).

ContextQ embeds long entries in pieces (pgvector holds one vector per piece); how it cuts
them is not public, so the rule is this project's ([assumed], ``wire.CHUNK_MAX_CHARS``):
deterministic, so a test can state the chunks of a text, and each chunk an exact slice of
the content, so a client can map a chunk back to where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from adapter.wire import CHUNK_MAX_CHARS, CHUNK_OVERLAP_CHARS
from fake_contextq.domain.records import Chunk

__all__ = ["chunk_content"]

#: A blank line (only whitespace on it) ends a paragraph.
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
#: The last whitespace character of a text (greedy: found from the end).
_LAST_SPACE = re.compile(r".*\s", re.DOTALL)
_NON_SPACE = re.compile(r"\S")
_WORD_AFTER_SPACE = re.compile(r"\s\S")


def chunk_content(
    content: str, max_chars: int = CHUNK_MAX_CHARS, overlap: int = CHUNK_OVERLAP_CHARS
) -> list[Chunk]:
    """The chunks of ``content``: its paragraphs packed in order while a chunk's own text
    (from its first paragraph's start to its last one's end) stays within ``max_chars``;
    each chunk after the first starts up to ``overlap`` characters into the one before, at
    a word's start after that one's own start. No text (or only whitespace): no chunks."""
    packed: list[tuple[int, int]] = []
    for start, end in _pieces(content, max_chars):
        if packed and end - packed[-1][0] <= max_chars:
            packed[-1] = (packed[-1][0], end)
        else:
            packed.append((start, end))
    chunks: list[Chunk] = []
    for index, (start, end) in enumerate(packed):
        begin = start
        if index and overlap > 0:
            own_start, own_end = packed[index - 1]
            begin = _word_start(content, max(own_start + 1, own_end - overlap))
            begin = min(begin, start)
        chunks.append(Chunk(index, begin, end, content[begin:end]))
    return chunks


def _pieces(content: str, max_chars: int) -> Iterator[tuple[int, int]]:
    """Each paragraph's span without its surrounding whitespace, a paragraph longer than
    ``max_chars`` cut in pieces of at most that many."""
    at = 0
    for blank in _BLANK_LINE.finditer(content):
        yield from _cut(content, at, blank.start(), max_chars)
        at = blank.end()
    yield from _cut(content, at, len(content), max_chars)


def _cut(content: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    start = _skip_space(content, start, end)
    end = _trim_end(content, start, end)
    while start < end:
        if end - start <= max_chars:
            yield start, end
            return
        # the last whitespace at most max_chars in (so the piece before it fits), if any
        found = _LAST_SPACE.match(content, start + 1, start + max_chars + 1)
        cut = found.end() - 1 if found else start + max_chars
        piece_end = _trim_end(content, start, cut)
        if piece_end > start:
            yield start, piece_end
        start = _skip_space(content, cut, end)


def _skip_space(content: str, at: int, end: int) -> int:
    found = _NON_SPACE.search(content, at, end)
    return end if found is None else found.start()


def _trim_end(content: str, start: int, end: int) -> int:
    while end > start and content[end - 1].isspace():
        end -= 1
    return end


def _word_start(content: str, at: int) -> int:
    """``at`` if a word starts there, else the start of the next word."""
    if at == 0 or (not content[at].isspace() and content[at - 1].isspace()):
        return at
    found = _WORD_AFTER_SPACE.search(content, at)
    return len(content) if found is None else found.start() + 1
