"""A support agent that remembers what users tell it, in ContextQ."""

from support_agent.agent import MODEL, SYSTEM, answer

__all__ = ["MODEL", "SYSTEM", "answer"]
