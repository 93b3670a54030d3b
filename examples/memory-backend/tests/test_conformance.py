"""The memory-tool conformance kit against sqlite_memory: one test per rule."""

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlite_memory import AsyncSQLiteMemoryTool, SQLiteMemoryTool

from contextq_conformance.memory_tool import Declarations, load_declarations
from contextq_conformance.memory_tool.suite import test_memory_tool_rule

__all__ = ["test_memory_tool_rule"]  # the kit's test, collected here once per rule


@pytest.fixture
def memory_tool_factory(tmp_path: Path) -> Callable[[], SQLiteMemoryTool]:
    """Each call: one more instance on the same database, a new one for each rule."""
    return lambda: SQLiteMemoryTool(str(tmp_path / "memory.db"))


@pytest.fixture
def memory_tool_async_factory(tmp_path: Path) -> Callable[[], AsyncSQLiteMemoryTool]:
    return lambda: AsyncSQLiteMemoryTool(str(tmp_path / "memory.db"))


@pytest.fixture
def memory_tool_declarations() -> Declarations:
    return load_declarations(Path(__file__).parents[1] / "memory-tool.toml")
