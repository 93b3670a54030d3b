"""The envelope a preamble travels in, and the function that takes it out again, so the
memory injected into a run never comes back in that run's record."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

OPEN: Final = "MEMORY ("
CLOSE: Final = "END MEMORY"
_ENVELOPE: Final = re.compile(r"MEMORY \([^\n]*\)\n.*?\nEND MEMORY\n?", re.DOTALL)


def render(source: str, sections: Sequence[tuple[str, Sequence[str]]], max_chars: int) -> str:
    """``MEMORY (source)``, each non-empty section's lines, ``END MEMORY``, at most
    ``max_chars`` in all (lines beyond the budget are left out, never cut); '' when there is
    nothing to say."""
    head, tail = f"{OPEN}{source})\n", f"{CLOSE}\n"
    budget = max_chars - len(head) - len(tail)
    body: list[str] = []
    for title, lines in sections:
        kept = [f"- {' '.join(line.split())}" for line in lines if line.strip()]
        if not kept:
            continue
        block = [f"{title}:"]
        for line in kept:
            cost = sum(len(x) + 1 for x in [*body, *block, line])
            if cost > budget:
                break
            block.append(line)
        if len(block) > 1:
            body.extend(block)
    if not body:
        return ""
    return head + "\n".join(body) + "\n" + tail


def strip(text: str) -> str:
    """``text`` without the envelopes ``render`` made (and nothing else)."""
    return _ENVELOPE.sub("", text)
