"""A conformance kit for any memory-tool backend (a ``BetaAbstractMemoryTool`` or
``BetaAsyncAbstractMemoryTool`` of the Anthropic SDK), with the SDK's own
``BetaLocalFilesystemMemoryTool`` as the oracle:
``python -m contextq_conformance memory-tool --factory package.module:callable``."""

from __future__ import annotations

from contextq_conformance.memory_tool._context import Sizes
from contextq_conformance.memory_tool.declarations import (
    DeclarationError,
    Declarations,
    load_declarations,
)
from contextq_conformance.memory_tool.factory import FactoryError, load_factory
from contextq_conformance.memory_tool.kit import Kit
from contextq_conformance.memory_tool.report import Report, RuleResult
from contextq_conformance.memory_tool.rules import RULES, MemoryRule

__all__ = [
    "RULES",
    "DeclarationError",
    "Declarations",
    "FactoryError",
    "Kit",
    "MemoryRule",
    "Report",
    "RuleResult",
    "Sizes",
    "load_declarations",
    "load_factory",
]
