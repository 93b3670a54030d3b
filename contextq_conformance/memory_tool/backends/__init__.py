"""Factories the kit is run with in this project's CI: the SDK's own local filesystem tool
(``sdk``) and ``ContextQMemoryTool`` on the in-process fake (``contextq``), each with its
declarations file beside it."""

from __future__ import annotations

from pathlib import Path
from typing import Final

HERE: Final = Path(__file__).resolve().parent
#: The declarations files, by backend.
DECLARATIONS: Final = {"sdk": HERE / "sdk.toml", "contextq": HERE / "contextq.toml"}

__all__ = ["DECLARATIONS"]
