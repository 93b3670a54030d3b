"""Differential test: ``ContextQMemoryTool`` (pinned to one workspace, on the fake) against
the SDK's own ``BetaLocalFilesystemMemoryTool`` (on a temporary directory).

``MemoryDifferential`` runs random sequences of the six memory commands (view with and
without ``view_range``, create, str_replace, insert, delete, rename) on both tools, drawn
from a small alphabet of paths and short texts so that commands collide: files and
directories of the same names, str_replace finding 0, 1 or several matches, insert lines
in and out of range. After every command it checks that

* both tools succeed with the same result string, or both raise ``ToolError`` with the
  same message, and
* the stored state agrees: the files (relative path -> content) under the SDK's
  ``memories`` directory equal this tool's contexts in the fake (external id
  ``mem-tool:acme/<relative path>``).

The deliberate, documented differences are normalised or skipped explicitly; each is
marked ``Difference N`` below:

1. directory sizes in view listings (masked; file sizes must match exactly);
2. ContextQ holds no empty directories (empty directories are pruned from the SDK's
   temporary directory after every step);
3. where the SDK crashes with an ``OSError``, the adapter must raise a ``ToolError``
   (messages are not compared);
4. paths the adapter refuses for safety but the SDK accepts (sent to the adapter only,
   which must refuse them without sending ContextQ any request);
5. views over 16,000 characters are cut by the adapter (texts are kept far shorter);
6. a str_replace refused for several matches names the first ``SHOWN_OCCURRENCES`` lines
   and how many more, where the SDK lists every one (the SDK's message is cut the same
   way before comparing; up to that many, the messages are the same).
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from adapter import wire
from adapter._memory import SHOWN_OCCURRENCES
from adapter.tool import ContextQMemoryTool
from fake_contextq import FakeContextQ

WORKSPACE = "acme"
TAG = "mem-tool"
EXTERNAL_PREFIX = f"{TAG}:{WORKSPACE}/"

# Paths both tools accept (or both refuse with the SDK's own message). FILES are where
# files get made (some with names a URL or a case-insensitive store might mangle);
# OTHER_PATHS are directories (with and without a trailing slash), a file
# path with a trailing slash, a file below a file, and the two refusals whose messages
# the adapter copies from the SDK. /memories/d/e/f/z.md is deeper than a listing shows.
FILES = (
    "/memories/a.md",
    "/memories/b.md",
    "/memories/d/x.md",
    "/memories/d/e/y.md",
    "/memories/d/e/f/z.md",
    "/memories/A.md",  # case matters, as on the SDK's (Linux) file system
    "/memories/é ü.md",  # non-ASCII and a space
    "/memories/q?#%.md",  # characters a URL must escape
)
OTHER_PATHS = (
    "/memories",
    "/memories/",
    "/memories/a.md/",
    "/memories/d",
    "/memories/d/",
    "/memories/d/e",
    "/memories/a.md/x.md",
    "/etc/passwd",
    "/memories/../x",
    "/memories/d/../../x",
)
# Difference 4: paths the adapter refuses for safety before any request, though the SDK
# accepts them ('..' that stays inside, a hidden name, an empty name, '/memoriesX').
# They go to the adapter only, which must refuse them; the SDK is not asked.
REFUSED_PATHS = (
    "/memories/d/../a.md",
    "/memories/.hidden.md",
    "/memories//a.md",
    "/memoriesX",
    "/memoriesX/a.md",
)
# Weighted towards file paths, so that edits often meet an existing file.
any_paths = st.sampled_from(FILES * 4 + OTHER_PATHS * 2 + REFUSED_PATHS)

# Difference 5: every text is a few short lines, so no view ever nears the adapter's
# 16,000-character cut within one example's steps.
LINES = ("foo", "bar", "foo bar", "", "baz foo", "é ü", "x\r")
texts = st.tuples(st.lists(st.sampled_from(LINES), max_size=4), st.booleans()).map(
    lambda drawn: "\n".join(drawn[0]) + ("\n" if drawn[1] else "")
)
old_strs = st.sampled_from(
    ("foo", "bar", "foo bar", "baz", "o", "\n", "é", "ü", "zzz", "", "x\r\n", "bar\nfoo")
)
new_strs = st.sampled_from(("", "qux", "foo", "a\nb", "é"))
insert_texts = st.sampled_from(("new", "new\n", "", "two\nlines\n", "foo"))


def loosely(numbers: st.SearchStrategy[int]) -> st.SearchStrategy[object]:
    """A line number as a model may send it: the SDK reads "3", " 3", 3.0 and true as
    numbers (pydantic's lax validation), and the adapter must read them the same."""
    return st.one_of(
        numbers,
        numbers.flatmap(lambda n: st.sampled_from((str(n), f" {n}", float(n)))),
        st.booleans(),
    )


line_numbers = loosely(st.integers(-1, 7))
view_ranges = st.one_of(
    st.none(),
    st.lists(st.integers(-1, 6), min_size=2, max_size=2),
    st.lists(st.integers(-1, 6), min_size=1, max_size=3),
    st.lists(loosely(st.integers(-1, 6)), min_size=2, max_size=2),
)

# One line of a directory listing: "<size>\t<path>".
_LISTING_HEADER = "Here're the files and directories up to 2 levels deep in "
_LISTING_LINE = re.compile(r"^(?P<size>[^\t]+)\t(?P<path>.*)$")


def mask_directory_sizes(result: str) -> str:
    """Difference 1: the SDK prints a directory's inode size (4K), the adapter the sum of
    its files' sizes. Mask the size of every directory line of a listing: the first line
    (the listed directory itself) and every entry ending in '/'. File sizes are kept."""
    if not result.startswith(_LISTING_HEADER):
        return result
    header, *lines = result.split("\n")
    out = [header]
    for i, line in enumerate(lines):
        match = _LISTING_LINE.match(line)
        assert match is not None, f"not a listing line: {line!r} in {result!r}"
        if i == 0 or match["path"].endswith("/"):
            line = f"<dir>\t{match['path']}"
        out.append(line)
    return "\n".join(out)


_MULTIPLE = re.compile(
    r"^(?P<head>No replacement was performed\. Multiple occurrences of old_str `.*` in "
    r"lines: )(?P<lines>[0-9, ]+)(?P<tail>\. Please ensure it is unique)$",
    re.DOTALL,
)


def cap_occurrences(message: str) -> str:
    """Difference 6: the SDK lists the line of every match; the adapter the first
    ``SHOWN_OCCURRENCES`` and 'and N more'. Cut the SDK's list the same way."""
    match = _MULTIPLE.match(message)
    if match is None:
        return message
    lines = match["lines"].split(", ")
    if len(lines) <= SHOWN_OCCURRENCES:
        return message
    shown = ", ".join(lines[:SHOWN_OCCURRENCES])
    more = len(lines) - SHOWN_OCCURRENCES
    return f"{match['head']}{shown} and {more} more{match['tail']}"


def prune_empty_directories(root: Path) -> None:
    """Difference 2: ContextQ has no directories, only files whose paths have slashes, so a
    directory exists in the adapter exactly while a file is below it. The SDK keeps a
    directory once its last file is deleted or renamed away (and its rename and create make
    parents before failing). Remove every empty directory below ``root`` after each step,
    so that both stores mean the same thing."""
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        path = Path(dirpath)
        if path != root and not any(path.iterdir()):
            path.rmdir()


def text(result: object) -> str:
    """A memory command's result, which for both tools is a plain string."""
    assert isinstance(result, str), f"not a string result: {result!r}"
    return result


def sdk_files(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            full = Path(dirpath) / name
            files[full.relative_to(root).as_posix()] = full.read_bytes().decode("utf-8")
    return files


class MemoryDifferential(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.sdk = BetaLocalFilesystemMemoryTool(base_path=self.tmp.name)
        self.root = Path(self.tmp.name) / "memories"
        self.fake = FakeContextQ()
        self.tenant = self.fake.create_tenant(plan="enterprise")
        self.fake.create_workspace(self.tenant, WORKSPACE)
        key = self.fake.mint_key(self.tenant, wire.SCOPES)
        self.http = self.fake.client()
        self.tool = ContextQMemoryTool(key, http_client=self.http, workspace=WORKSPACE)

    def teardown(self) -> None:
        self.tool.close()
        self.http.close()
        self.fake.close()
        self.tmp.cleanup()

    # ----- the comparison -----

    def adapter_files(self) -> dict[str, str]:
        files: dict[str, str] = {}
        for context in self.fake.contexts(self.tenant):
            ext = context.external_id or ""
            assert ext.startswith(EXTERNAL_PREFIX), f"a context not of this tool: {context!r}"
            rest = ext[len(EXTERNAL_PREFIX) :]
            assert rest not in files, f"two contexts for {rest!r}"
            files[rest] = context.content
        return files

    def run(self, command: dict[str, Any]) -> None:
        path_args = [command[k] for k in ("path", "old_path", "new_path") if k in command]
        if any(p in REFUSED_PATHS for p in path_args):
            # Difference 4: the adapter refuses these before sending any request; the SDK
            # is not asked (it would act on them), so its store stays as it is.
            requests = len(self.fake.journal)
            try:
                result = self.tool.call(command)
            except ToolError:
                pass
            else:
                raise AssertionError(f"adapter accepted {command!r}: {result!r}")
            assert len(self.fake.journal) == requests, f"{command!r} reached ContextQ"
            return

        expected: tuple[str, str] | None
        try:
            expected = ("ok", text(self.sdk.call(command)))
        except ToolError as exc:
            expected = ("error", cap_occurrences(str(exc)))  # Difference 6
        except OSError:
            expected = None  # Difference 3: the SDK crashed, not a ToolError.
        try:
            actual = ("ok", text(self.tool.call(command)))
        except ToolError as exc:
            actual = ("error", str(exc))
        prune_empty_directories(self.root)  # Difference 2

        if expected is None:
            # Difference 3: the adapter must give a ToolError where the SDK crashes; its
            # message is its own, so it is not compared.
            assert actual[0] == "error", f"SDK crashed but adapter gave {actual!r}"
            return
        if expected[0] == "ok" and command["command"] == "view":
            # Difference 1: directory sizes differ by design; file sizes must match.
            expected = ("ok", mask_directory_sizes(expected[1]))
            actual = ("ok", mask_directory_sizes(actual[1])) if actual[0] == "ok" else actual
        assert actual == expected, f"{command!r}: adapter {actual!r}, SDK {expected!r}"

    @invariant()
    def stores_agree(self) -> None:
        assert self.adapter_files() == sdk_files(self.root)

    # ----- the commands -----

    @initialize(files=st.lists(st.tuples(st.sampled_from(FILES), texts), max_size=4))
    def seed(self, files: list[tuple[str, str]]) -> None:
        """Start with a few files (through both tools, compared like any step), so that
        edits, views and renames meet existing files often."""
        for path, file_text in files:
            self.run({"command": "create", "path": path, "file_text": file_text})

    @rule(path=any_paths, view_range=view_ranges)
    def view(self, path: str, view_range: list[object] | None) -> None:
        command: dict[str, Any] = {"command": "view", "path": path}
        if view_range is not None:
            command["view_range"] = view_range
        self.run(command)

    @rule(path=any_paths, file_text=texts)
    def create(self, path: str, file_text: str) -> None:
        self.run({"command": "create", "path": path, "file_text": file_text})

    @rule(path=any_paths, old_str=old_strs, new_str=new_strs)
    def str_replace(self, path: str, old_str: str, new_str: str) -> None:
        self.run({"command": "str_replace", "path": path, "old_str": old_str, "new_str": new_str})

    @rule(path=any_paths, insert_line=line_numbers, insert_text=insert_texts)
    def insert(self, path: str, insert_line: object, insert_text: str) -> None:
        self.run(
            {
                "command": "insert",
                "path": path,
                "insert_line": insert_line,
                "insert_text": insert_text,
            }
        )

    @rule(path=any_paths)
    def delete(self, path: str) -> None:
        self.run({"command": "delete", "path": path})

    @rule(old_path=any_paths, new_path=any_paths)
    def rename(self, old_path: str, new_path: str) -> None:
        self.run({"command": "rename", "old_path": old_path, "new_path": new_path})

    # The same commands aimed at a file that exists now, so that edits mostly get past
    # "does not exist" and reach the matching and line-range logic.

    def existing_file(self, data: st.DataObject) -> str:
        return "/memories/" + data.draw(st.sampled_from(sorted(sdk_files(self.root))))

    @precondition(lambda self: bool(sdk_files(self.root)))
    @rule(data=st.data(), view_range=view_ranges)
    def view_existing(self, data: st.DataObject, view_range: list[object] | None) -> None:
        self.view(self.existing_file(data), view_range)

    @precondition(lambda self: bool(sdk_files(self.root)))
    @rule(data=st.data(), old_str=old_strs, new_str=new_strs)
    def str_replace_existing(self, data: st.DataObject, old_str: str, new_str: str) -> None:
        self.str_replace(self.existing_file(data), old_str, new_str)

    @precondition(lambda self: bool(sdk_files(self.root)))
    @rule(data=st.data(), insert_line=line_numbers, insert_text=insert_texts)
    def insert_existing(self, data: st.DataObject, insert_line: object, insert_text: str) -> None:
        self.insert(self.existing_file(data), insert_line, insert_text)


MemoryDifferential.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMemoryDifferential = MemoryDifferential.TestCase
