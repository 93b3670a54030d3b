"""A hint, and nothing else, in every pytest session of a project that installed the
``pytest`` extra (entry point ``pytest11``): a test that asks for a fixture of
``contextq_fixtures`` in a session that did not load that plugin fails saying how to
load it, not only "fixture not found". It imports pytest alone and registers no fixture;
``-p no:contextq_hint`` turns it off.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Final

import pytest

PLUGIN: Final = "contextq_fixtures"
#: Every fixture ``contextq_fixtures`` provides (a test holds this to the plugin's own).
FIXTURES: Final = frozenset(
    {
        "agent_memory",
        "agent_memory_env",
        "agent_memory_factory",
        "async_contextq_client",
        "async_memory_tool",
        "contextq_api_key",
        "contextq_client",
        "contextq_live",
        "contextq_live_tenant",
        "contextq_live_tenants",
        "contextq_mcp",
        "contextq_mcp_server",
        "contextq_mcp_url",
        "contextq_server",
        "contextq_tenant",
        "contextq_workspace",
        "fake_contextq",
        "interleavings",
        "memory_tool",
        "scripted_model",
    }
)


def hint(argname: str) -> str:
    return (
        f"fixture {argname!r} comes from the {PLUGIN} plugin, which this session did not "
        f"load: run pytest -p {PLUGIN}, or put pytest_plugins = [{PLUGIN!r}] in the "
        "conftest.py at your tests' root (or -p contextq_fixtures in addopts)"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    outcome: Any = yield
    if call.when != "setup" or call.excinfo is None:
        return
    error = call.excinfo.value
    argname = getattr(error, "argname", None)
    if not isinstance(error, pytest.FixtureLookupError) or argname not in FIXTURES:
        return
    if item.config.pluginmanager.has_plugin(PLUGIN):
        return
    report: pytest.TestReport = outcome.get_result()
    longrepr = report.longrepr
    if isinstance(getattr(longrepr, "errorstring", None), str):
        # pytest prints the error string after 'E': the hint belongs there, beside the cause
        longrepr.errorstring = f"{hint(argname)}\n{longrepr.errorstring}"  # type: ignore[union-attr]
    else:
        report.sections.append(("contextq_hint", hint(argname)))
