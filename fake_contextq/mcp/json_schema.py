"""A tool's schemas as ContextQ's TypeScript server lists them.

[assumed] ``McpServer`` (TypeScript SDK 1.32) lists each Zod schema through Zod 4's
``toJSONSchema`` with the draft-7 target: every schema names its dialect
(``"$schema": "http://json-schema.org/draft-07/schema#"``), and an output schema (``io:
"output"``) closes each object whose fields it declares (``additionalProperties: false``)
where an input schema leaves them open (Zod strips unknown input keys rather than refusing
them). A client that validates a result against its output schema (the Python SDK's
``ClientSession`` does, on every call) reads that dialect, so the fake lists it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["DRAFT_7", "listed"]

#: The dialect Zod 4's ``toJSONSchema`` names for the draft-7 target.
DRAFT_7: Final = "http://json-schema.org/draft-07/schema#"

_NESTED: Final = ("anyOf", "oneOf", "allOf")


def listed(schema: Mapping[str, Any], *, output: bool) -> dict[str, Any]:
    """``schema`` as ``tools/list`` shows it: its dialect named, and for an output schema
    each object with declared fields closed (one given explicitly is kept)."""
    shown = _closed(schema) if output else dict(schema)
    return {"$schema": DRAFT_7, **shown}


def _closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {name: _closed(sub) for name, sub in properties.items()}
        out.setdefault("additionalProperties", False)
    items = schema.get("items")
    if isinstance(items, Mapping):
        out["items"] = _closed(items)
    for key in _NESTED:
        branches = schema.get(key)
        if isinstance(branches, list):
            out[key] = [_closed(b) if isinstance(b, Mapping) else b for b in branches]
    return out
