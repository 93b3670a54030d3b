"""Claude's memory tool (memory_20250818) stored in ContextQ."""
