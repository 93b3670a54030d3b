"""``AsyncSQLiteMemoryTool``: the async twin, each command run by the sync tool in a worker
thread, so that both give the same answers by construction."""

from __future__ import annotations

import asyncio

from anthropic.lib.tools import BetaAsyncAbstractMemoryTool
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from sqlite_memory.tool import SQLiteMemoryTool


class AsyncSQLiteMemoryTool(BetaAsyncAbstractMemoryTool):
    def __init__(self, database: str) -> None:
        super().__init__()
        self.sync = SQLiteMemoryTool(database)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await asyncio.to_thread(self.sync.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await asyncio.to_thread(self.sync.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await asyncio.to_thread(self.sync.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await asyncio.to_thread(self.sync.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await asyncio.to_thread(self.sync.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await asyncio.to_thread(self.sync.rename, command)

    async def clear_all_memory(self) -> str:
        return await asyncio.to_thread(self.sync.clear_all_memory)

    async def aclose(self) -> None:
        self.sync.close()
