"""Long-term memory for Python agents on ContextQ's Agent Memory Layer, behind a port the
agent core depends on alone (``AgentMemory``): a local default and two ContextQ backends
(REST and MCP), chosen by configuration, each best-effort (an outage is "no memory",
never a failed run)."""

from adapter.agent_memory.aio import AsyncAgentMemory, select_async_agent_memory
from adapter.agent_memory.local import LocalAgentMemory, NoAgentMemory
from adapter.agent_memory.port import AgentMemory, Failure
from adapter.agent_memory.preamble import strip as strip_preamble
from adapter.agent_memory.records import Capabilities, IssueEvent, RunRecord
from adapter.agent_memory.remote_memory import (
    ContextQAgentMemory,
    McpAgentMemory,
    RemoteAgentMemory,
)
from adapter.agent_memory.select import select_agent_memory

__all__ = [
    "AgentMemory",
    "AsyncAgentMemory",
    "Capabilities",
    "ContextQAgentMemory",
    "Failure",
    "IssueEvent",
    "LocalAgentMemory",
    "McpAgentMemory",
    "NoAgentMemory",
    "RemoteAgentMemory",
    "RunRecord",
    "select_agent_memory",
    "select_async_agent_memory",
    "strip_preamble",
]
