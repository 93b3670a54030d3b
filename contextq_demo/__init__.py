"""``contextq-demo``: Claude's memory tool on ContextQ, end to end, offline and keyless.

It drives all three parts together (the adapter, the fake ContextQ and the scripted
model), so it lives beside them rather than inside either fake.
"""

from contextq_demo.demo import run_demo

__all__ = ["run_demo"]
