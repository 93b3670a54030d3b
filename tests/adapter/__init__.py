"""Tests of the production adapter: the memory tool, the clients, the agent-memory port."""
