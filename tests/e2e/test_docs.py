"""Every code block of the documentation runs as a test: the site (``docs/``), the README,
each example's (``examples/*/README.md``). Each block carries, on the line before it, a
comment saying how it is tested:

- ``<!-- test: pytest -->``: a test module, run by pytest with the plugin; every test in
  it passes. ``conftest``: a ``conftest.py``, which must load the plugin by itself.
- ``<!-- test: exec [served] [model=PATH] -->``: a script, executed; ``served`` sets
  ``CONTEXT_API_URL`` / ``CONTEXT_API_KEY`` to a served fake (workspace ``acme``),
  ``model=`` sets ``ANTHROPIC_BASE_URL`` to a served scripted model playing the JSON script
  at PATH, which must be played whole.
- ``<!-- test: commands -->``: shell lines, each checked against what it names without
  running it: ``pip install`` extras against pyproject.toml, options against the commands'
  own parsers (and pytest's, with the plugin loaded), ``dev.py`` commands against dev.py.
- ``<!-- test: run [served] -->``: shell lines, run by bash (``served``: against a served
  fake with the control routes, ``FAKE_CONTEXTQ_CONTROL_TOKEN`` set); exit status 0.
- ``<!-- test: output command="..." -->``: a console sample; the command is run and each
  line of the sample that is not a ``$`` command must appear in its output, in order
  (``…`` matches anything).
- ``<!-- test: json [schema=script|recording] -->``: JSON, valid under that schema.
- ``<!-- test: schema-file PATH -->``: the block is the text of PATH, a JSON Schema the
  package ships, exactly.
- ``<!-- test: example PATH -->``: the block is the text of PATH exactly, a file of
  ``examples/`` that is itself tested (run by pytest, type-checked, loaded by a test).
- ``<!-- test: covered-by PATH -->``: a test module at PATH reads this page's block and runs
  it (with what only it can set up: a live stack, a recording round trip).

No page includes a file (``--8<-- "PATH"``, ``::: name``) without saying it in words: a
page reads as plain Markdown on the repository host, where the README links it, as well as
on the site.
"""

from __future__ import annotations

import difflib
import fnmatch
import importlib
import importlib.util
import inspect
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml

from tests.support.helpers import pytest_help

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *(ROOT / "examples").glob("*/README.md"),
        *(ROOT / "docs").rglob("*.md"),
    ]
)
BIN = Path(sys.executable).parent
_FENCE = re.compile(r"^(```+)([\w-]*)\s*$")
_DIRECTIVE = re.compile(r"^<!-- test: ([a-z-]+)(.*?) -->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    kind: str | None
    args: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}:{self.kind}"

    def option(self, name: str) -> str | None:
        found = re.search(rf'\b{name}=("([^"]*)"|(\S+))', self.args)
        if found is None:
            return None
        return found.group(2) if found.group(2) is not None else found.group(3)

    def flag(self, name: str) -> bool:
        return name in self.args.split()


def blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        lines = page.read_text("utf-8").splitlines()
        i = 0
        while i < len(lines):
            fence = _FENCE.match(lines[i])
            if fence is None:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j] == fence.group(1))
            directive = _DIRECTIVE.match(lines[i - 1]) if i else None
            kind, args = (directive.group(1), directive.group(2)) if directive else (None, "")
            text = "\n".join(lines[i + 1 : end]) + "\n"
            found.append(Block(page, i + 1, fence.group(2), kind, args, text))
            i = end + 1
    return found


BLOCKS = blocks()


#: Kinds that start processes: the whole suite runs them, --quick does not.
_SUBPROCESS_KINDS = ("run", "output")


def of(*kinds: str) -> list[Any]:
    return [
        pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.kind in _SUBPROCESS_KINDS else [])
        for b in BLOCKS
        if b.kind in kinds
    ]


def test_every_block_says_how_it_is_tested() -> None:
    bare = [b.id for b in BLOCKS if b.kind is None]
    assert not bare, f"code blocks without a <!-- test: ... --> line before them: {bare}"
    known = {
        "pytest",
        "conftest",
        "exec",
        "commands",
        "run",
        "output",
        "json",
        "schema-file",
        "example",
        "covered-by",
    }
    odd = [b.id for b in BLOCKS if b.kind not in known]
    assert not odd, f"unknown test kinds: {odd}"
    assert len(BLOCKS) > 40  # the harness found the pages


def test_the_readme_quick_start_is_on_the_first_screen() -> None:
    """The quick start (install and a test) comes first and shows in 30 lines or fewer."""
    text = (ROOT / "README.md").read_text("utf-8")
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    shown = [
        line
        for line in section.splitlines()
        if line.strip() and not line.startswith(("<!--", "```"))
    ]
    assert text.index("## Quick start") < 600  # after the three-line introduction
    assert len(shown) <= 30, len(shown)
    assert "pip install" in section and "def test_" in section


# ----- pages read as plain Markdown -----

#: A line the site replaces with another file's text (pymdownx.snippets), or with the
#: docstrings of an object (mkdocstrings); on the repository host both show as they are.
_SNIPPET = re.compile(r"^\s*-{1,}8<-{1,}")
_AUTODOC = re.compile(r"^::: ([\w.]+)\n((?:    .*\n|\s*\n)*)", re.M)


def _linked_pages() -> list[Path]:
    """The pages the README links, and every page of the site's navigation."""
    readme = (ROOT / "README.md").read_text("utf-8")
    linked = [ROOT / link for link in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", readme)]
    missing = [str(p.relative_to(ROOT)) for p in linked if not p.is_file()]
    assert not missing, f"the README links pages that do not exist: {missing}"

    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                yield from walk(item)

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))["nav"]
    in_nav = [ROOT / "docs" / page for page in walk(nav)]
    assert len(in_nav) > 20 and all(p.is_file() for p in in_nav), "the nav names its pages"
    return sorted({ROOT / "README.md", *linked, *in_nav})


LINKED = _linked_pages()


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_linked_page_shows_its_examples_itself(page: Path) -> None:
    """No page the README links, and no page of the site, includes a file: on the
    repository host an include is a bare marker where the example should be."""
    included = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for number, line in enumerate(page.read_text("utf-8").splitlines(), 1)
        if _SNIPPET.match(line)
    ]
    assert not included, (
        "put the file's text in the page, marked <!-- test: example PATH --> (schema-file "
        f"for a JSON Schema), instead of including it: {included}"
    )


def test_the_sites_changelog_page_is_the_changelog() -> None:
    """``docs/changelog.md`` points at CHANGELOG.md in words (an include would be a bare
    marker on the repository host); the hook mkdocs.yml names shows the file there."""
    [hook] = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))["hooks"]
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / hook)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def shown(page: str) -> str:
        text = (ROOT / "docs" / page).read_text("utf-8")
        found = SimpleNamespace(file=SimpleNamespace(src_uri=page))
        result: str = module.on_page_markdown(text, page=found, config={}, files=[])
        return result

    assert "../CHANGELOG.md" in (ROOT / "docs" / "changelog.md").read_text("utf-8")
    assert shown("changelog.md") == (ROOT / "CHANGELOG.md").read_text("utf-8")
    assert shown("index.md") == (ROOT / "docs" / "index.md").read_text("utf-8")


def _documented(target: str, options: str) -> list[str]:
    """The names an mkdocstrings block shows: the object, and its public members (those
    its ``members`` option lists, none for ``members: false``)."""
    module_name, _, attribute = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError):
        obj = importlib.import_module(target)
    names = [target.rpartition(".")[2]]
    members = re.search(r"^\s+members:\s*(.+)$", options, re.M)
    if members is not None:
        listed = members.group(1).strip()
        return names if listed == "false" else names + re.findall(r"\w+", listed)
    if inspect.isclass(obj):
        return names + [n for n in vars(obj) if not n.startswith("_")]
    if inspect.ismodule(obj):
        return names + [
            n
            for n, value in vars(obj).items()
            if not n.startswith("_") and getattr(value, "__module__", None) == obj.__name__
        ]
    return names


_API_PAGES = [p for p in LINKED if _AUTODOC.search(p.read_text("utf-8"))]


@pytest.mark.parametrize("page", _API_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_generated_api_section_is_written_out_too(page: Path) -> None:
    """A page whose API section the site generates from docstrings (``::: name``) names,
    in its own words, each object and member that section shows: read without the
    generated part, on the repository host, it is still the reference."""
    text = page.read_text("utf-8")
    prose = _AUTODOC.sub("", re.sub(r"^(```+).*?^\1\s*$", "", text, flags=re.M | re.S))
    spans = " ".join(re.findall(r"`([^`]+)`", prose))
    unnamed = [
        f"{target}: {name}"
        for target, options in _AUTODOC.findall(text)
        for name in _documented(target, options)
        if not re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", spans)
    ]
    assert not unnamed, f"{page.relative_to(ROOT)} shows these only in generated text: {unnamed}"


# ----- python -----


@pytest.mark.parametrize("block", of("pytest"))
def test_a_test_module_block_passes(block: Block, pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(ROOT / "examples" / "agent")
    pytester.makepyfile(test_block=block.text)
    result = pytester.runpytest_inprocess("-p", "contextq_fixtures", "-p", "no:randomly", "-q")
    outcomes = result.parseoutcomes()
    assert (
        outcomes.get("passed", 0) >= 1 and not outcomes.get("failed") and not outcomes.get("errors")
    ), result.stdout.str()


@pytest.mark.parametrize("block", of("conftest"))
def test_a_conftest_block_loads_the_plugin(block: Block, pytester: pytest.Pytester) -> None:
    pytester.makeconftest(block.text)
    pytester.makepyfile("def test_fixture(memory_tool):\n    assert memory_tool is not None\n")
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-q")  # no -p: the conftest
    result.assert_outcomes(passed=1)


@pytest.fixture
def served_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from fake_contextq import FakeContextQ

    with FakeContextQ() as fake:
        tenant = fake.create_tenant("docs")
        fake.create_workspace(tenant, "acme")
        with fake.serve(control_token="fkc_docs-harness") as served:
            monkeypatch.setenv("CONTEXT_API_URL", served.url)
            monkeypatch.setenv("CONTEXT_API_KEY", fake.mint_key(tenant, ("read", "write", "admin")))
            monkeypatch.setenv("FAKE_CONTEXTQ_CONTROL_TOKEN", "fkc_docs-harness")
            yield fake


@pytest.mark.parametrize("block", of("exec"))
def test_a_script_block_runs(
    block: Block, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if block.flag("served"):
        request.getfixturevalue("served_fake")
    script = block.option("model")
    model = None
    if script is not None:
        from fake_anthropic import ScriptedModel

        model = ScriptedModel.from_json(ROOT / script)
        served = model.serve()
        request.addfinalizer(served.stop)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", served.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-docs-harness")
    exec(compile(block.text, str(block.page), "exec"), {"__name__": "__docs__"})
    if model is not None:
        model.verify()


# ----- json -----


@pytest.mark.parametrize("block", of("json"))
def test_a_json_block_is_valid(block: Block) -> None:
    from fake_anthropic.schemas import RECORDING, SCRIPT, load

    data = json.loads(block.text)
    schema = block.option("schema")
    if schema is not None:
        jsonschema.validate(data, load({"script": SCRIPT, "recording": RECORDING}[schema]))


def _same_as_file(block: Block) -> Path:
    """The file the block copies, after checking the block is its text, word for word (a
    diff says what to copy where when one of them changed)."""
    named = block.args.strip()
    assert named, f"{block.id}: the test line names the file the block copies"
    target = ROOT / named
    assert target.is_file(), f"{block.id}: no file {named}"
    text = target.read_text("utf-8")
    if block.text != text:
        diff = difflib.unified_diff(
            block.text.splitlines(), text.splitlines(), str(block.id), named, lineterm=""
        )
        raise AssertionError(
            f"{block.id} differs from {named}; copy the file into the block:\n" + "\n".join(diff)
        )
    return target


@pytest.mark.parametrize("block", of("schema-file"))
def test_a_schema_block_is_the_shipped_schema(block: Block) -> None:
    target = _same_as_file(block)
    assert target.is_relative_to(ROOT / "fake_anthropic" / "schemas"), block.id
    jsonschema.Draft202012Validator.check_schema(json.loads(block.text))


@pytest.mark.parametrize("block", of("example"))
def test_an_example_block_is_a_tested_file(block: Block) -> None:
    target = _same_as_file(block)
    assert target.is_relative_to(ROOT / "examples"), "examples/ is what CI runs and type-checks"


@pytest.mark.parametrize("block", of("covered-by"))
def test_a_covered_block_is_read_by_its_test(block: Block) -> None:
    test = ROOT / block.args.strip()
    assert test.exists(), block.id
    source = test.read_text("utf-8")
    page = block.page.relative_to(ROOT)
    assert page.name in source or page.stem in source, f"{test} does not read {page}"


# ----- shell -----


def _commands(block: Block) -> Iterator[list[str]]:
    """Each command of a shell or console block: continuations joined, comments and
    ``&&`` split off, a console's output lines left out."""
    joined = block.text.replace("\\\n", " ")
    for raw in joined.splitlines():
        line = raw.strip()
        if block.language == "console":
            if not line.startswith("$ "):
                continue
            line = line[2:]
        tokens = shlex.split(line, comments=True)
        command: list[str] = []
        for token in [*tokens, "&&"]:
            if token in ("&&", "||", ";", "|"):
                if command:
                    yield command
                command = []
            else:
                command.append(token)


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def _check_pip(args: list[str]) -> None:
    assert args[:1] == ["install"], args
    for spec in args[1:]:
        if spec.startswith("-"):
            continue
        name = spec.split("@")[0].strip()
        assert re.fullmatch(r"(\.|contextq-memory-tool|\.\./\.\.)(\[[\w,]+\])?", name), spec
        extras = re.search(r"\[([\w,]+)\]", name)
        for extra in extras.group(1).split(",") if extras else ():
            assert extra in _extras(), f"no extra {extra!r} in pyproject.toml ({spec})"


def _check_pytest(args: list[str]) -> None:
    shown = pytest_help()
    if "contextq_conformance.memory_tool.plugin" in args:  # the memory-tool kit's options
        from contextq_conformance.memory_tool import plugin

        shown += "\n" + "\n".join(v for k, v in vars(plugin).items() if k.endswith("_OPTION"))
    for arg in args:
        if arg.startswith("--"):
            option = arg.split("=", 1)[0]
            assert re.search(rf"(^|[\s,]){re.escape(option)}\b", shown, re.M), (
                f"pytest has no option {option}"
            )


def _parse(parser: Any, args: list[str]) -> None:
    try:
        parser.parse_args(args)
    except SystemExit as exc:
        raise AssertionError(f"{parser.prog} refuses {args}") from exc


def _check(command: list[str]) -> None:
    while command and re.fullmatch(r"[A-Z_]+=\S*", command[0]):
        command = command[1:]  # an environment assignment before a command
    if not command:
        return
    name, args = command[0], command[1:]
    if name == "export":
        assert all(re.fullmatch(r"[A-Z_]+=\S*", a) for a in args), command
    elif name in ("pip", "pip3"):
        _check_pip(args)
    elif name == "pytest":
        _check_pytest(args)
    elif name == "fake-contextq":
        from fake_contextq.cli.main import _parser

        _parse(_parser(), args)
    elif name == "fake-anthropic":
        from fake_anthropic.cli import _parser as anthropic_parser

        _parse(anthropic_parser(), args)
    elif name == "contextq-conformance" and args[:1] == ["memory-tool"]:
        from contextq_conformance.memory_tool.cli import _parser as kit_parser

        _parse(kit_parser(), args[1:])
    elif name == "contextq-conformance":
        from contextq_conformance.__main__ import _parser as conformance_parser

        conformance_parser().parse_known_args(args)
    elif name == "contextq-demo":
        assert not args, command
    elif name in ("python", "python3") and args[:1] == ["-m"]:
        module, rest = args[1], args[2:]
        if module == "venv":
            assert rest, command
        elif module == "contextq_conformance":
            _check(["contextq-conformance", *rest])
        elif module == "e2e.live_memory_roundtrip":
            from e2e.live_memory_roundtrip import _parser as live_parser

            _parse(live_parser(), rest)
        else:
            raise AssertionError(f"no check for python -m {module}")
    elif name in ("python", "python3") and args[:1] == ["dev.py"]:
        _check_dev(args[1:])
    elif name == "git":
        assert args[:1] == ["clone"], command
    elif name in ("cd", "."):
        assert len(args) == 1, command
    else:
        raise AssertionError(f"no check for the command {name!r}: {command}")


def _check_dev(args: list[str]) -> None:
    text = (ROOT / "dev.py").read_text()
    known = re.search(r"if command not in \(([^)]*)\)", text)
    assert known, "dev.py lists its commands"
    commands = re.findall(r'"(\w+)"', known.group(1))
    assert args and args[0] in commands, f"dev.py has no command {args[:1]}"
    if args[0] == "serve":
        _check(["fake-contextq", "serve", "--control", *args[1:]])
    elif args[0] == "test":
        _check_pytest([a for a in args[1:] if a != "--quick"])
    elif args[0] == "docs":
        assert set(args[1:]) <= {"--serve"}, args


@pytest.mark.parametrize("block", of("commands"))
def test_each_command_of_a_block_is_one_the_toolkit_takes(block: Block) -> None:
    commands = list(_commands(block))
    assert commands, block.id
    for command in commands:
        _check(command)


@pytest.mark.parametrize("block", of("run"))
def test_a_shell_block_runs(block: Block, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if block.flag("served"):
        request.getfixturevalue("served_fake")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{block.id}: {done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", of("output"))
def test_a_console_sample_is_what_the_command_prints(block: Block, tmp_path: Path) -> None:
    command = block.option("command")
    assert command, f"{block.id}: an output block names its command"
    expected = [
        line
        for line in block.text.splitlines()
        if line.strip() and not line.startswith("$ ") and line.strip() != "…"
    ]
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "XDG_DATA_HOME": str(tmp_path),
    }
    process = subprocess.Popen(
        shlex.split(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    seen: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 30
        wanted = 0
        while wanted < len(expected) and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line.rstrip("\n"))
            pattern = expected[wanted].replace("…", "*").replace("[", "[[]")
            if fnmatch.fnmatchcase(seen[-1], _shape(pattern)):
                wanted += 1
        assert wanted == len(expected), (
            f"{block.id}: no line like {expected[wanted]!r} in the output:\n" + "\n".join(seen)
        )
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()  # never leave a server behind the test run
            process.communicate()
            raise AssertionError(f"{block.id}: {command!r} did not stop on Ctrl-C") from None


def _shape(pattern: str) -> str:
    """A sample line as a pattern: what varies from run to run (ports, paths of state,
    keys, tokens) matches anything."""
    pattern = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:*", pattern)
    pattern = re.sub(r"\(state in [^;]*;", "(*;", pattern)
    return re.sub(r"(sk_live_|fkc_)\S*?(?=\*|\"|\s|$)", r"\1*", pattern)
