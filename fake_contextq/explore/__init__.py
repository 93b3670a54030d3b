"""A deterministic explorer of the orders in which k agents' requests reach the fake.

``explore(fake, [agent_a, agent_b])`` runs the agents (callables given an
``AgentHandle``; sync or async) with each request held until the explorer releases it,
one in flight at a time, over every order within a bound or a seeded PCT sample beyond
it, and checks invariants (lost update, no file at two paths, ...) after each order.
"""

from fake_contextq.explore.agents import AgentHandle
from fake_contextq.explore.explorer import DEFAULT_BOUND, Agent, Explorer, explore
from fake_contextq.explore.invariants import (
    AUDIT_CHAIN,
    BUILT_IN,
    LOST_UPDATE,
    NO_DUPLICATE_EXTERNAL_ID,
    NO_FILE_AND_DIRECTORY,
    NO_FILE_AT_TWO_PATHS,
    Invariant,
    Outcome,
    invariant,
    lost_writes,
)
from fake_contextq.explore.records import Exploration, Failure, Run, Step, Violation
from fake_contextq.explore.strategies import Diverged, orders_of

__all__ = [
    "AUDIT_CHAIN",
    "BUILT_IN",
    "DEFAULT_BOUND",
    "LOST_UPDATE",
    "NO_DUPLICATE_EXTERNAL_ID",
    "NO_FILE_AND_DIRECTORY",
    "NO_FILE_AT_TWO_PATHS",
    "Agent",
    "AgentHandle",
    "Diverged",
    "Exploration",
    "Explorer",
    "Failure",
    "Invariant",
    "Outcome",
    "Run",
    "Step",
    "Violation",
    "explore",
    "invariant",
    "lost_writes",
    "orders_of",
]
