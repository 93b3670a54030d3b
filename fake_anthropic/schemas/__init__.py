"""JSON Schemas (draft 2020-12) of the files the scripted model reads: a JSON script
(``fake-anthropic serve SCRIPT``, ``ScriptedModel.from_json``) and a recording
(``fake-anthropic record``, ``ScriptedModel.from_recording``). An editor that knows JSON
Schema checks a file against them as you write it; the loaders remain the authority
(they check what a schema cannot, such as a header that frames the message, or
nesting past 128 levels)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Final

SCRIPT: Final = "script.schema.json"
RECORDING: Final = "recording.schema.json"


def load(name: str) -> dict[str, Any]:
    """One of the schemas (``SCRIPT`` or ``RECORDING``), parsed."""
    if name not in (SCRIPT, RECORDING):
        raise ValueError(f"no schema {name!r}; the schemas are {SCRIPT!r} and {RECORDING!r}")
    schema: dict[str, Any] = json.loads(
        resources.files("fake_anthropic.schemas").joinpath(name).read_text("utf-8")
    )
    return schema


__all__ = ["RECORDING", "SCRIPT", "load"]
