"""Claude's memory tool (``memory_20250818``) stored in ContextQ, and a typed ContextQ client.

Names load on first use, so ``adapter.wire`` (the wire contract, which the fakes read too)
imports neither the Anthropic SDK nor httpx2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapter._lazy import lazy_names

if TYPE_CHECKING:
    from adapter.client import AsyncContextQClient, ContextQClient
    from adapter.errors import (
        AuthenticationError,
        ConflictError,
        ContextQConnectionError,
        ContextQError,
        ContextQTimeoutError,
        EvidenceRequiredError,
        ExternalIdTakenError,
        LLMUnavailableError,
        NotFoundError,
        NoWorkspaceError,
        PayloadTooLargeError,
        QuotaExceededError,
        ScopeDeniedError,
        SeqConflictError,
        UnavailableError,
        ValidationError,
        WorkspaceNotEmptyError,
        WorkspaceTakenError,
    )
    from adapter.tool import AsyncContextQMemoryTool, ContextQMemoryTool, contextq_memory_tool
    from adapter.types import (
        AgentSession,
        AgentTask,
        BootPack,
        BulkUpsertResult,
        Checkpoint,
        Context,
        ContextInput,
        ContextPage,
        ContextSummary,
        Handoff,
        Lesson,
        Resume,
        SearchResult,
        Workspace,
    )

_HOMES = {
    "AsyncContextQClient": "client",
    "ContextQClient": "client",
    "AuthenticationError": "errors",
    "ConflictError": "errors",
    "ContextQConnectionError": "errors",
    "ContextQError": "errors",
    "ContextQTimeoutError": "errors",
    "EvidenceRequiredError": "errors",
    "ExternalIdTakenError": "errors",
    "LLMUnavailableError": "errors",
    "NotFoundError": "errors",
    "NoWorkspaceError": "errors",
    "PayloadTooLargeError": "errors",
    "QuotaExceededError": "errors",
    "ScopeDeniedError": "errors",
    "SeqConflictError": "errors",
    "UnavailableError": "errors",
    "ValidationError": "errors",
    "WorkspaceNotEmptyError": "errors",
    "WorkspaceTakenError": "errors",
    "AsyncContextQMemoryTool": "tool",
    "ContextQMemoryTool": "tool",
    "contextq_memory_tool": "tool",
    "AgentSession": "types",
    "AgentTask": "types",
    "BootPack": "types",
    "BulkUpsertResult": "types",
    "Checkpoint": "types",
    "Context": "types",
    "ContextInput": "types",
    "ContextPage": "types",
    "ContextSummary": "types",
    "Handoff": "types",
    "Lesson": "types",
    "Resume": "types",
    "SearchResult": "types",
    "Workspace": "types",
}

__all__ = [
    "AgentSession",
    "AgentTask",
    "AsyncContextQClient",
    "AsyncContextQMemoryTool",
    "AuthenticationError",
    "BootPack",
    "BulkUpsertResult",
    "Checkpoint",
    "ConflictError",
    "Context",
    "ContextInput",
    "ContextPage",
    "ContextQClient",
    "ContextQConnectionError",
    "ContextQError",
    "ContextQMemoryTool",
    "ContextQTimeoutError",
    "ContextSummary",
    "EvidenceRequiredError",
    "ExternalIdTakenError",
    "Handoff",
    "LLMUnavailableError",
    "Lesson",
    "NoWorkspaceError",
    "NotFoundError",
    "PayloadTooLargeError",
    "QuotaExceededError",
    "Resume",
    "ScopeDeniedError",
    "SearchResult",
    "SeqConflictError",
    "UnavailableError",
    "ValidationError",
    "Workspace",
    "WorkspaceNotEmptyError",
    "WorkspaceTakenError",
    "contextq_memory_tool",
]


__getattr__, __dir__ = lazy_names(__name__, globals(), _HOMES)
