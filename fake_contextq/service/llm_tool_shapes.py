"""The MCP tools that need the server's LLM besides ``agent_handoff``: ``ctx_dream``,
``ctx_evolve`` and ``ctx_regenerate_mocs`` (each one's output schema is its operation's answer).

[public] the names, in the PKM group of ContextQ's docs page; [assumed] every parameter
and answer (``adapter.wire``: the limits; ``docs/explanation/wire-contract.md``).
"""

from __future__ import annotations

from typing import Final

from adapter import wire
from fake_contextq.service.tool_shapes import ID, STR, WORKSPACE, Exposure, schema

__all__ = [
    "CTX_DREAM",
    "CTX_EVOLVE",
    "CTX_REGENERATE_MOCS",
]

CTX_DREAM: Final = Exposure(
    "ctx_dream",
    "Synthesise a workspace's recent contexts into a new synthesis context (needs the "
    "server's LLM).",
    schema(
        {
            "workspace": WORKSPACE,
            "since": {
                "type": "string",
                "description": "ISO 8601 date-time: only contexts updated since then",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": wire.DREAM_MAX_SOURCES,
                "default": wire.DREAM_DEFAULT_SOURCES,
            },
        }
    ),
    "assumed",
)

CTX_EVOLVE: Final = Exposure(
    "ctx_evolve",
    "Revise a context from the newer contexts related to it (same workspace, a shared "
    "tag) and an optional instruction (needs the server's LLM).",
    schema(
        {
            "id": ID,
            "instruction": STR,
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": wire.EVOLVE_MAX_SOURCES,
                "default": wire.EVOLVE_DEFAULT_SOURCES,
            },
        },
        ["id"],
    ),
    "assumed",
)

CTX_REGENERATE_MOCS: Final = Exposure(
    "ctx_regenerate_mocs",
    "Rebuild a workspace's maps of content, one per shared tag, replacing the ones "
    "generated before (needs the server's LLM).",
    schema({"workspace": WORKSPACE}),
    "assumed",
)
