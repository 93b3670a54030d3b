"""The reference pages agree with the code, both ways: every option of every command is in
``docs/reference/cli.md`` and every option there exists; every fixture, marker option and
command-line option of the plugin is in ``docs/reference/fixtures.md``, and nothing else;
every public name of ``adapter.agent_memory`` is in ``docs/reference/agent-memory.md`` with
its parameters, and so are the port's methods, the variables and the logger."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from datetime import datetime
from pathlib import Path

import pytest

import adapter.agent_memory as agent_memory
import contextq_hint
from adapter import wire
from adapter.agent_memory import port, select
from contextq_conformance.__main__ import _parser as conformance_parser
from contextq_conformance.memory_tool.cli import _parser as memory_kit_parser
from contextq_demo.__main__ import _parser as demo_parser
from contextq_fixtures._state import MARKER_OPTIONS
from e2e.live_memory_roundtrip import _parser as live_parser
from fake_anthropic.cli import _parser as anthropic_parser
from fake_contextq.cli.main import _parser as contextq_parser
from tests.support.helpers import pytest_help

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reference"


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise KeyError(name)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option not in ("--help", "--version")
    }


COMMANDS = {
    "fake-contextq serve": _subcommand(contextq_parser(), "serve"),
    "fake-contextq mcp": _subcommand(contextq_parser(), "mcp"),
    "fake-anthropic serve SCRIPT": _subcommand(anthropic_parser(), "serve"),
    "fake-anthropic record": _subcommand(anthropic_parser(), "record"),
    "fake-anthropic import-cassette CASSETTE": _subcommand(anthropic_parser(), "import-cassette"),
    "contextq-demo": demo_parser(),
    "contextq-conformance": conformance_parser(),
    "python -m contextq_conformance memory-tool": memory_kit_parser(),
    "python -m e2e.live_memory_roundtrip": live_parser(),
}


def _sections(page: Path) -> dict[str, str]:
    text = page.read_text("utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_a_command_is_in_its_section_and_no_other(command: str) -> None:
    sections = _sections(DOCS / "cli.md")
    [body] = [b for heading, b in sections.items() if heading.split("`")[1:2] == [command]]
    written = set(re.findall(r"`(--[a-z][a-z-]*)", body))
    assert written == _options(COMMANDS[command]), command


def test_every_command_has_a_section() -> None:
    headings = {h.split("`")[1] for h in _sections(DOCS / "cli.md") if "`" in h}
    assert set(COMMANDS) <= headings


def _first_column(table: str) -> set[str]:
    names: set[str] = set()
    for line in table.splitlines():
        if line.startswith("| `"):
            cell = line.split("|")[1]
            names |= set(re.findall(r"`@?(?:pytest\.mark\.)?([\w-]+)", cell))
    return names


def test_the_fixture_table_is_the_plugins_fixtures() -> None:
    sections = _sections(DOCS / "fixtures.md")
    assert _first_column(sections["Fixtures"]) == set(contextq_hint.FIXTURES)


def test_the_marker_table_names_every_marker_option() -> None:
    body = _sections(DOCS / "fixtures.md")["Markers"]
    line = next(line for line in body.splitlines() if "pytest.mark.contextq(" in line)
    signature = re.search(r"contextq\(([^)]*)\)", line)
    assert signature
    assert [o.strip().rstrip("=") for o in signature.group(1).split(",")] == list(MARKER_OPTIONS)


def test_the_option_table_is_the_plugins_options() -> None:
    shown = pytest_help()
    group = shown.split("ContextQ fixtures (contextq_fixtures):", 1)[1].split("\n\n", 1)[0]
    plugin_options = set(re.findall(r"^\s+(--[a-z-]+)", group, re.M))
    body = _sections(DOCS / "fixtures.md")["Command-line options"]
    assert set(re.findall(r"^\| `(--[a-z-]+)", body, re.M)) == plugin_options


# ----- docs/reference/agent-memory.md and adapter.agent_memory -------------------------------

AGENT_PAGE = DOCS / "agent-memory.md"
_HEADING = re.compile(r"^### `(\w+)(?:\((.*)\))?`", re.M)
_METHOD_ROW = re.compile(r"^\| `(\w+)\((.*?)\)` \|", re.M)


def _documented_names() -> dict[str, str | None]:
    """Each ``### `Name(params)``` heading of the page: the name and its parameters."""
    return {m.group(1): m.group(2) for m in _HEADING.finditer(AGENT_PAGE.read_text("utf-8"))}


def _shown(signature: inspect.Signature) -> list[str]:
    """The parameters as the page writes them: ``name`` or ``name=default``, ``*`` before
    the keyword-only ones, no annotations."""
    shown: list[str] = []
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in shown:
            shown.append("*")
        shown.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return shown


def _same_default(written: str, value: object) -> bool:
    if written == repr(value) or written.strip('"') == str(value):
        return True
    return isinstance(value, datetime) and written == "now"  # a default_factory of now


def _assert_params_match(what: str, written: str, signature: inspect.Signature) -> None:
    code = _shown(signature)
    page = [p.strip() for p in written.split(",")] if written.strip() else []
    assert [p.split("=")[0] for p in page] == [p.split("=")[0] for p in code], (what, page, code)
    for on_page, in_code in zip(page, code, strict=True):
        if "=" in in_code or "=" in on_page:
            name = in_code.split("=")[0]
            assert "=" in on_page and "=" in in_code, f"{what}: {name} has a default in one only"
            value = _default_value(what, name, signature.parameters[name].default)
            assert _same_default(on_page.split("=", 1)[1], value), (
                f"{what}: {on_page} but the code has {in_code}"
            )


def _default_value(what: str, name: str, default: object) -> object:
    """A dataclass field's ``default_factory`` shows as ``<factory>``: its value instead."""
    if repr(default) != "<factory>":
        return default
    cls = getattr(agent_memory, what)
    [found] = [f for f in dataclasses.fields(cls) if f.name == name]
    assert callable(found.default_factory)
    return found.default_factory()


def test_every_public_name_of_agent_memory_has_a_heading_and_every_heading_a_name() -> None:
    assert set(_documented_names()) == set(agent_memory.__all__)


@pytest.mark.parametrize("name", sorted(agent_memory.__all__))
def test_a_documented_signature_is_the_codes(name: str) -> None:
    written = _documented_names()[name]
    obj = getattr(agent_memory, name)
    if getattr(obj, "_is_protocol", False):
        assert written is None, f"{name} is a protocol: no parameters to show"
        return
    assert written is not None, f"{name}'s heading shows no parameters"
    _assert_params_match(name, written, inspect.signature(obj))


def _port_methods() -> list[str]:
    port = agent_memory.AgentMemory
    return sorted(
        name
        for name in dir(port)
        if not name.startswith("_") and callable(getattr(port, name, None))
    )


def test_the_method_table_is_the_ports_methods_with_their_signatures() -> None:
    rows = {m.group(1): m.group(2) for m in _METHOD_ROW.finditer(AGENT_PAGE.read_text("utf-8"))}
    assert sorted(rows) == _port_methods()
    backends = [
        agent_memory.AgentMemory,
        agent_memory.LocalAgentMemory,
        agent_memory.NoAgentMemory,
        agent_memory.RemoteAgentMemory,
        agent_memory.ContextQAgentMemory,
        agent_memory.McpAgentMemory,
        agent_memory.AsyncAgentMemory,
    ]
    for cls in backends:
        for method, written in rows.items():
            function = getattr(cls, method)
            signature = inspect.signature(function)
            without_self = signature.replace(parameters=list(signature.parameters.values())[1:])
            _assert_params_match(f"{cls.__name__}.{method}", written, without_self)
            if cls is agent_memory.AsyncAgentMemory:
                assert inspect.iscoroutinefunction(function), method


def test_the_attribute_table_is_every_backends(tmp_path: Path) -> None:
    body = AGENT_PAGE.read_text("utf-8").split("| Attribute |", 1)[1].split("\n\n", 1)[0]
    attributes = re.findall(r"^\| `(\w+)` \|", body, re.M)
    assert attributes == ["capabilities", "failures", "strict"]
    for memory in (agent_memory.NoAgentMemory(), agent_memory.LocalAgentMemory(tmp_path)):
        assert all(hasattr(memory, a) for a in attributes)
    assert not hasattr(agent_memory.AsyncAgentMemory(agent_memory.NoAgentMemory()), "strict")


def test_the_variable_table_is_what_select_agent_memory_reads() -> None:
    body = _sections(AGENT_PAGE)["Environment variables"]
    written = set(re.findall(r"^\| `([A-Z_]+)` \|", body, re.M))
    assert written == {
        select.BACKEND_ENV,
        select.SWITCH_ENV,
        select.WORKSPACE_ENV,
        select.MCP_URL_ENV,
        select.TIMEOUT_ENV,
        wire.MCP_API_URL_ENV,
        wire.MCP_API_KEY_ENV,
    }
    assert set(re.findall(r"`(local|contextq|mcp)`", body)) == set(select.BACKENDS)


def test_the_logger_named_is_the_one_agent_memory_logs_on() -> None:
    body = _sections(AGENT_PAGE)["Logger"]
    [named] = set(re.findall(r"logger `([\w.]+)`", body))
    assert named == port.LOG.name
