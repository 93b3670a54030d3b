"""Tests of the fake ContextQ: REST, MCP, stores, dashboard, audit, quotas."""
