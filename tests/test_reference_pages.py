"""The reference pages agree with the code, both ways: every option of every command is in
``docs/reference/cli.md`` and every option there exists; every fixture, marker option and
command-line option of the plugin is in ``docs/reference/fixtures.md``, and nothing else."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import contextq_hint
from contextq_conformance.__main__ import _parser as conformance_parser
from contextq_demo.__main__ import _parser as demo_parser
from contextq_fixtures._state import MARKER_OPTIONS
from e2e.live_memory_roundtrip import _parser as live_parser
from fake_anthropic.cli import _parser as anthropic_parser
from fake_contextq.cli.main import _parser as contextq_parser
from tests.helpers import pytest_help

DOCS = Path(__file__).resolve().parent.parent / "docs" / "reference"


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
