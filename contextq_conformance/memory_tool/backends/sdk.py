"""The SDK's own ``BetaLocalFilesystemMemoryTool`` (and its async twin) as a backend: every
instance of one process on one temporary directory, removed at exit."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache

from anthropic.lib.tools._beta_builtin_memory_tool import (
    BetaAsyncLocalFilesystemMemoryTool,
    BetaLocalFilesystemMemoryTool,
)


@cache
def _storage() -> str:
    path = tempfile.mkdtemp(prefix="memory-tool-sdk-backend-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def local_filesystem() -> BetaLocalFilesystemMemoryTool:
    return BetaLocalFilesystemMemoryTool(base_path=_storage())


def async_local_filesystem() -> BetaAsyncLocalFilesystemMemoryTool:
    return BetaAsyncLocalFilesystemMemoryTool(base_path=_storage())


__all__ = ["async_local_filesystem", "local_filesystem"]
