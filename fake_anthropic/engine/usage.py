"""The ``usage`` object of a reply, with every counter the API sends.

The API sends ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` as numbers
(0 when nothing was cached), ``cache_creation`` by TTL, ``server_tool_use`` with the web
search and fetch requests the reply made, and the ``service_tier``. A scripted turn's
``usage`` replaces any of them (to test cost accounting and prompt caching); the token
counts are otherwise the estimate's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

Json = dict[str, Any]

SERVICE_TIER = "standard"


def server_tool_requests(blocks: Sequence[Json]) -> Json:
    """``server_tool_use`` counts: the reply's ``server_tool_use`` blocks by tool."""

    def count(name: str) -> int:
        return sum(
            1 for b in blocks if b.get("type") == "server_tool_use" and b.get("name") == name
        )

    return {"web_search_requests": count("web_search"), "web_fetch_requests": count("web_fetch")}


def usage(
    input_tokens: int,
    output_tokens: int,
    blocks: Sequence[Json],
    scripted: Mapping[str, Any] | None = None,
) -> Json:
    """The reply's usage: the estimates, zeros where nothing is said, then ``scripted``."""
    out: Json = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "server_tool_use": server_tool_requests(blocks),
        "service_tier": SERVICE_TIER,
    }
    out.update(copy.deepcopy(dict(scripted or {})))
    return out


def iteration(kind: str, counts: Mapping[str, Any]) -> Json:
    """One ``usage.iterations`` entry (``message`` or ``compaction``)."""
    return {
        "type": kind,
        "input_tokens": counts["input_tokens"],
        "output_tokens": counts["output_tokens"],
        "cache_creation_input_tokens": counts.get("cache_creation_input_tokens", 0),
        "cache_read_input_tokens": counts.get("cache_read_input_tokens", 0),
    }


def delta_usage(full: Mapping[str, Any]) -> Json:
    """The cumulative counters a stream's ``message_delta`` carries."""
    keys = (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "server_tool_use",
        "iterations",
    )
    return {k: copy.deepcopy(full[k]) for k in keys if k in full}
