"""One turn of the agent: Claude answers, reading and writing its memory files in
ContextQ through the memory tool, and searching them with ``memory_recall``."""

from __future__ import annotations

import anthropic
from anthropic.types.beta import BetaTextBlock

from adapter import ContextQMemoryTool

MODEL = "claude-sonnet-4-5"
SYSTEM = (
    "You are a support agent. Check your memory before answering, and keep what users "
    "tell you about themselves there."
)


def answer(client: anthropic.Anthropic, memory: ContextQMemoryTool, question: str) -> str:
    """Claude's answer to ``question``, after as many memory commands as it needs."""
    final = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=1024,
        system=SYSTEM,
        tools=[memory, memory.recall_tool()],
        messages=[{"role": "user", "content": question}],
    ).until_done()
    return "".join(block.text for block in final.content if isinstance(block, BetaTextBlock))
