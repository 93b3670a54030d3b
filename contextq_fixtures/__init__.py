"""pytest plugin: a strict fake ContextQ, the memory tool bound to it, and a scripted model.

Load it with ``pytest -p contextq_fixtures`` or ``pytest_plugins = ["contextq_fixtures"]``;
it is not loaded into projects that do not ask for it. Loading it imports pytest-facing
code only: the fakes, the adapter and the live machinery load when a fixture first needs
them, so a session that uses none of them pays nothing for the plugin.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any

import pytest

from contextq_fixtures import failures, live_fixtures, recordings, report
from contextq_fixtures._extra import needs_extra
from contextq_fixtures._state import CALL_FAILED, MARKER, MARKER_OPTIONS, MODEL_KEY
from contextq_fixtures.fixtures import (
    AgentMemoryEnv,
    AgentMemoryFactory,
    ContextQServer,
    Interleavings,
    agent_memory,
    agent_memory_env,
    agent_memory_factory,
    async_contextq_client,
    async_memory_tool,
    contextq_api_key,
    contextq_client,
    contextq_mcp,
    contextq_mcp_server,
    contextq_mcp_url,
    contextq_server,
    contextq_tenant,
    contextq_workspace,
    fake_contextq,
    interleavings,
    memory_tool,
)
from contextq_fixtures.live_fixtures import (
    contextq_live,
    contextq_live_tenant,
    contextq_live_tenants,
)

if TYPE_CHECKING:
    from contextq_fixtures.live import LiveConfig, LiveStack, LiveTenant
    from fake_anthropic import ScriptedModel


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("contextq", "ContextQ fixtures (contextq_fixtures)")
    report.add_options(group)
    live_fixtures.add_options(group)
    recordings.add_options(group)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}({', '.join(f'{o}=...' for o in MARKER_OPTIONS)}): configure the "
        "fake_contextq fixture of this test (plan of the tenant, its name, the workspace "
        "slug, embeddings on/off, an LLM for handoffs, the scopes of contextq_api_key) and "
        "the interleavings fixture's bound and seed",
    )
    live_fixtures.configure(config)
    recordings.configure(config)
    report.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    live_fixtures.require_stack(config, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    live_fixtures.skip_unless_live(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    report.before_call(item)
    yield


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = live_fixtures.summary_lines(config)
    if lines:
        terminalreporter.section("contextq live")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[ScriptedModel]:
    """A fake Anthropic Messages API playing the turns given to ``.script(...)``; its
    ``client`` / ``async_client`` need no network and no key. At teardown it fails the test
    if a request came after the script ended, or if turns were left unplayed (unless
    ``allow_unused()`` was called)."""
    with needs_extra("scripted_model"):
        from fake_anthropic import ScriptedModel

    model = recordings.model_for(request) or ScriptedModel()
    request.node.stash[MODEL_KEY] = model
    yield model
    if not request.node.stash.get(CALL_FAILED, False):
        model.verify()  # a failed test already carries the problems in its report


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    model: Any = item.stash.get(MODEL_KEY, None)
    found: list[str] = []
    caused = False
    if call.when == "call" and call.excinfo is not None and model is not None:
        found = model.problems()
        caused = failures.caused_by_model(call.excinfo.value, found)
    outcome = yield
    made: pytest.TestReport = outcome.get_result()
    if made.when == "call" and made.failed:
        item.stash[CALL_FAILED] = True
        again = recordings.advice(item) if found else None
        if caused:
            failures.trim_library_frames(made.longrepr)
            made.longrepr = failures.cause_first(found, again, made.longrepr)
        elif found:  # one report of the cause: the teardown's verify() would only repeat it
            made.sections.append(
                ("scripted model problems", "\n".join([*found, *([again] if again else [])]))
            )
    if made.failed and report.sections_on(item.config):
        for title, text in report.sections(item):
            made.sections.append((title, text))
    report.after_report(item, made)


#: Public names whose modules import the adapter: loaded on first use, not with the plugin.
_LAZY = dict.fromkeys(("LiveConfig", "LiveStack", "LiveTenant"), "contextq_fixtures.live")


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'contextq_fixtures' has no attribute {name!r}")
    return getattr(import_module(home), name)


__all__ = [
    "AgentMemoryEnv",
    "AgentMemoryFactory",
    "ContextQServer",
    "Interleavings",
    "LiveConfig",
    "LiveStack",
    "LiveTenant",
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
]
