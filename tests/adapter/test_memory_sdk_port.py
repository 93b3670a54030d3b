"""The Anthropic SDK's own memory-tool suite, ported to the ContextQ adapter in pinned mode.

Source: ``tests/lib/tools/memory_tools/test_filesystem.py`` in anthropics/anthropic-sdk-python,
the version stored at commit 15a9bc3f (the one that matches the installed SDK 2.14.0: it has
the CRLF and non-UTF-8 cases). It holds 71 test functions: 35 in the sync class and 36 in
the async class. Together they are 36 distinct cases: the async class repeats the 35 sync
cases and adds one private-method case. 30 of those cases are ported here and 6 are left
out (see below).

How the port is built: each SDK case becomes one ``Case`` in ``CASES``. A case is a list of
steps, each a memory command with the exact result or ``ToolError`` message it must give,
plus the files that must exist afterwards. ``TestAdapterSync`` runs every case against
``ContextQMemoryTool`` and ``TestAdapterAsync`` against ``AsyncContextQMemoryTool``, both
pinned to workspace ``acme`` of a ``FakeContextQ`` tenant on the "enterprise" plan.
``TestSdkReference`` runs the same tables against the SDK's own
``BetaLocalFilesystemMemoryTool`` and ``BetaAsyncLocalFilesystemMemoryTool`` in ``tmp_path``.
That proves every expected string below is what the installed SDK really returns. Where a
documented difference applies, the SDK's own outcome is written next to the adapter's.

Stricter than the original: results and ``ToolError`` messages are compared whole
(the SDK uses ``in`` and ``pytest.raises(match=...)``). Every set-up ``create`` must give
its exact success string. Cases that change nothing also check that the files are unchanged.
Where the adapter refuses a path before storage is touched, the fake's request journal must
stay empty for that step.

Changed set-up only, same assertions:

* ``view_preserves_crlf_line_endings``, ``str_replace_preserves_crlf_line_endings`` and
  ``insert_preserves_crlf_line_endings`` write their CRLF file with the tool's ``create``.
  The SDK writes those bytes to disk behind the tool's back, which ContextQ cannot do.
  ``create`` stores the text verbatim in both tools, so the starting file is the same.
  The SDK does not assert the results of ``str_replace`` and ``insert`` here; the port
  asserts them too.

Documented differences (the adapter's behaviour is asserted and the SDK's is recorded):

* D1, ``view_directory``: a directory's size in a listing is the sum of its files' sizes
  (``/memories/dir`` with two 6-byte files shows as ``12B``). The SDK prints the
  directory's inode size instead (e.g. ``4K``), which depends on the filesystem. The SDK's
  line is therefore matched with ``\\S+``, and every other line is compared exactly.
* D2, ``view_error_for_files_with_too_many_lines``: the SDK's input is 1,000,000 lines of
  "line" (4,999,999 bytes). That is over ``max_file_bytes`` (32 KiB by default) and over
  ContextQ's own 1 MiB content limit, so the adapter refuses the ``create`` with a size
  message. After that, ``view`` says the path does not exist (case ``..._sdk_input``). To
  keep the SDK case's point (the 999,999-line view limit), the main case uses 999,999
  newlines instead (999,999 bytes, also 1,000,000 lines) on a tool with
  ``max_file_bytes=MAX_CONTENT_BYTES``. Both tools then give the same line-limit error.

Left out (filesystem-only; no ContextQ counterpart exists):

* ``test_mkdir_parents_not_world_writable_under_permissive_umask`` (sync and async): this
  checks POSIX umask and directory mode bits. ContextQ has no directories on disk and no
  modes.
* ``test_view_error_for_non_utf8_file`` (sync and async): this writes raw non-UTF-8 bytes to
  disk behind the tool. A ContextQ context's content is JSON text, so no stored file can be
  invalid UTF-8, and the adapter never reads bytes.
* ``test_symlink_validation_reject_symlink_pointing_outside_memories``,
  ``test_symlink_validation_reject_creating_files_through_symlink_pointing_outside`` and
  ``test_symlink_validation_reject_parent_directory_that_is_symlink_pointing_outside``
  (sync and async): these need OS symlinks. ContextQ has none, and the adapter's path
  rules refuse traversal before any request (``path_validation_*`` below).
* ``test_validate_path_returns_resolved_path_not_symlink_target`` (async only): this tests
  the private ``_validate_path`` resolving a symlink, a race between OS-level validation
  and use. The adapter has no ``_validate_path`` and no symlinks.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import (
    BetaAsyncLocalFilesystemMemoryTool,
    BetaLocalFilesystemMemoryTool,
)
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool
from adapter.wire import MAX_CONTENT_BYTES, SCOPES
from fake_contextq import FakeContextQ, Tenant

WORKSPACE = "acme"
OWN_PREFIX = f"mem-tool:{WORKSPACE}/"  # the external ids the pinned tool writes

Command = (
    BetaMemoryTool20250818ViewCommand
    | BetaMemoryTool20250818CreateCommand
    | BetaMemoryTool20250818StrReplaceCommand
    | BetaMemoryTool20250818InsertCommand
    | BetaMemoryTool20250818DeleteCommand
    | BetaMemoryTool20250818RenameCommand
)


# ----- the case tables' vocabulary -----


@dataclass(frozen=True)
class Ok:
    """The command succeeds; ``text`` is its whole result, ``pattern`` a full-match regex."""

    text: str | None = None
    pattern: str | None = None


@dataclass(frozen=True)
class Err:
    """The command raises ``ToolError`` with exactly this message."""

    message: str


Outcome = Ok | Err


@dataclass(frozen=True)
class Step:
    command: Command
    expect: Outcome
    sdk: Outcome | None = None  # the SDK's own outcome, only where a documented difference
    offline: bool = False  # adapter: refused before any request reaches ContextQ


@dataclass(frozen=True)
class Case:
    name: str  # the SDK test's name without "test_"
    steps: tuple[Step, ...]
    files: dict[str, str] | None = None  # every file afterwards, "memories/<path>": text
    sdk_files: dict[str, str] | None = None  # the SDK's files, where they differ
    options: dict[str, Any] = field(default_factory=dict)  # adapter tool options
    bug: str | None = None  # an adapter bug: its runs are strict xfails


def view(path: str, view_range: list[int] | None = None) -> BetaMemoryTool20250818ViewCommand:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def create(path: str, file_text: str) -> BetaMemoryTool20250818CreateCommand:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=file_text)


def str_replace(path: str, old: str, new: str) -> BetaMemoryTool20250818StrReplaceCommand:
    return BetaMemoryTool20250818StrReplaceCommand(
        command="str_replace", path=path, old_str=old, new_str=new
    )


def insert(path: str, line: int, text: str) -> BetaMemoryTool20250818InsertCommand:
    return BetaMemoryTool20250818InsertCommand(
        command="insert", path=path, insert_line=line, insert_text=text
    )


def delete(path: str) -> BetaMemoryTool20250818DeleteCommand:
    return BetaMemoryTool20250818DeleteCommand(command="delete", path=path)


def rename(old: str, new: str) -> BetaMemoryTool20250818RenameCommand:
    return BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)


def made(path: str, text: str) -> Step:
    """A set-up ``create`` that must succeed."""
    return Step(create(path, text), Ok(f"File created successfully at: {path}"))


def content_of(path: str) -> str:
    return f"Here's the content of {path} with line numbers:\n"


EDITED = (
    "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
)
NOT_FOUND = "The path /memories/nonexistent.txt does not exist. Please provide a valid path."
LISTING = "Here're the files and directories up to 2 levels deep in {}, excluding hidden items:"
SDK_LINES = "\n".join(["line"] * 1_000_000)  # the SDK case's own input: 4,999,999 bytes
NEWLINES = "\n" * 999_999  # 1,000,000 lines in 999,999 bytes: within ContextQ's 1 MiB
LINE_LIMIT = "File /memories/huge.txt exceeds maximum line limit of 999,999 lines."
CRLF = "line1\r\nline2\r\nline3\r\n"


# ----- the SDK's cases -----

CASES: tuple[Case, ...] = (
    Case(
        "create",
        (
            Step(
                create("/memories/test_file.txt", "Hello, World!"),
                Ok("File created successfully at: /memories/test_file.txt"),
            ),
        ),
        files={"memories/test_file.txt": "Hello, World!"},
    ),
    Case(
        "create_nested_directories",
        (
            Step(
                create("/memories/deep/nested/file.txt", "Nested file"),
                Ok("File created successfully at: /memories/deep/nested/file.txt"),
            ),
        ),
        files={"memories/deep/nested/file.txt": "Nested file"},
    ),
    Case(
        "create_error_if_file_already_exists",
        (
            made("/memories/existing.txt", "Original"),
            Step(
                create("/memories/existing.txt", "New"),
                Err("File /memories/existing.txt already exists"),
            ),
        ),
        files={"memories/existing.txt": "Original"},
    ),
    Case(
        "view_file",
        (
            made("/memories/view_test.txt", "Line 1\nLine 2\nLine 3"),
            Step(
                view("/memories/view_test.txt"),
                Ok(
                    content_of("/memories/view_test.txt")
                    + "     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
                ),
            ),
        ),
        files={"memories/view_test.txt": "Line 1\nLine 2\nLine 3"},
    ),
    Case(  # D1: a directory's size is the sum of its files
        "view_directory",
        (
            made("/memories/dir/file1.txt", "File 1"),
            made("/memories/dir/file2.txt", "File 2"),
            Step(
                view("/memories/dir"),
                Ok(
                    LISTING.format("/memories/dir") + "\n12B\t/memories/dir"
                    "\n6B\t/memories/dir/file1.txt\n6B\t/memories/dir/file2.txt"
                ),
                sdk=Ok(
                    pattern=re.escape(LISTING.format("/memories/dir")) + r"\n\S+\t/memories/dir"
                    r"\n6B\t/memories/dir/file1\.txt\n6B\t/memories/dir/file2\.txt"
                ),
            ),
        ),
        files={"memories/dir/file1.txt": "File 1", "memories/dir/file2.txt": "File 2"},
    ),
    Case(
        "view_file_with_range",
        (
            made("/memories/range_test.txt", "Line 1\nLine 2\nLine 3\nLine 4\nLine 5"),
            Step(
                view("/memories/range_test.txt", [2, 4]),
                Ok(
                    content_of("/memories/range_test.txt")
                    + "     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
                ),
            ),
        ),
    ),
    Case(
        "view_error_for_non_existent_file",
        (Step(view("/memories/nonexistent.txt"), Err(NOT_FOUND)),),
        files={},
    ),
    Case(  # D2: the line limit, reached within ContextQ's content limit
        "view_error_for_files_with_too_many_lines",
        (made("/memories/huge.txt", NEWLINES), Step(view("/memories/huge.txt"), Err(LINE_LIMIT))),
        files={"memories/huge.txt": NEWLINES},
        options={"max_file_bytes": MAX_CONTENT_BYTES},
    ),
    Case(  # D2: the SDK's own input is over max_file_bytes, refused before any request
        "view_error_for_files_with_too_many_lines_sdk_input",
        (
            Step(
                create("/memories/huge.txt", SDK_LINES),
                Err(
                    "The content for /memories/huge.txt is 4999999 bytes; a memory file may "
                    "hold at most 32768 bytes. Split it into several smaller files."
                ),
                sdk=Ok("File created successfully at: /memories/huge.txt"),
                offline=True,
            ),
            Step(
                view("/memories/huge.txt"),
                Err("The path /memories/huge.txt does not exist. Please provide a valid path."),
                sdk=Err(LINE_LIMIT),
            ),
        ),
        files={},
        sdk_files={"memories/huge.txt": SDK_LINES},
    ),
    Case(
        "str_replace",
        (
            made("/memories/replace_test.txt", "Line 1\nOld Text\nLine 3"),
            Step(
                str_replace("/memories/replace_test.txt", "Old Text", "New Text"),
                Ok(EDITED + "     1\tLine 1\n     2\tNew Text\n     3\tLine 3"),
            ),
        ),
        files={"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"},
    ),
    Case(
        "str_replace_error_when_string_not_found",
        (
            made("/memories/replace_test.txt", "Hello, World!"),
            Step(
                str_replace("/memories/replace_test.txt", "NotFound", "Python"),
                Err(
                    "No replacement was performed, old_str `NotFound` did not appear verbatim "
                    "in /memories/replace_test.txt."
                ),
            ),
        ),
        files={"memories/replace_test.txt": "Hello, World!"},
    ),
    Case(
        "str_replace_error_when_string_appears_multiple_times",
        (
            made("/memories/replace_test.txt", "Hello\nMiddle\nHello"),
            Step(
                str_replace("/memories/replace_test.txt", "Hello", "Hi"),
                Err(
                    "No replacement was performed. Multiple occurrences of old_str `Hello` in "
                    "lines: 1, 3. Please ensure it is unique"
                ),
            ),
        ),
        files={"memories/replace_test.txt": "Hello\nMiddle\nHello"},
    ),
    Case(
        "str_replace_error_for_non_existent_file",
        (Step(str_replace("/memories/nonexistent.txt", "old", "new"), Err(NOT_FOUND)),),
        files={},
    ),
    Case(
        "insert",
        (
            made("/memories/insert_test.txt", "Line 1\nLine 2"),
            Step(
                insert("/memories/insert_test.txt", 1, "Inserted Line"),
                Ok("The file /memories/insert_test.txt has been edited."),
            ),
        ),
        files={"memories/insert_test.txt": "Line 1\nInserted Line\nLine 2\n"},
    ),
    Case(
        "insert_at_beginning_of_file",
        (
            made("/memories/insert_test.txt", "Line 1\nLine 2"),
            Step(
                insert("/memories/insert_test.txt", 0, "First Line"),
                Ok("The file /memories/insert_test.txt has been edited."),
            ),
        ),
        files={"memories/insert_test.txt": "First Line\nLine 1\nLine 2\n"},
    ),
    Case(
        "insert_at_end_of_file",
        (
            made("/memories/insert_test.txt", "Line 1\nLine 2"),
            Step(
                insert("/memories/insert_test.txt", 2, "Last Line"),
                Ok("The file /memories/insert_test.txt has been edited."),
            ),
        ),
        files={"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"},
    ),
    Case(
        "view_preserves_crlf_line_endings",
        (
            made("/memories/crlf.txt", CRLF),
            Step(
                view("/memories/crlf.txt"),
                Ok(
                    content_of("/memories/crlf.txt")
                    + "     1\tline1\r\n     2\tline2\r\n     3\tline3\r\n     4\t"
                ),
            ),
        ),
        files={"memories/crlf.txt": CRLF},
    ),
    Case(
        "str_replace_preserves_crlf_line_endings",
        (
            made("/memories/crlf.txt", CRLF),
            Step(
                str_replace("/memories/crlf.txt", "line2", "LINE2"),
                Ok(EDITED + "     1\tline1\r\n     2\tLINE2\r\n     3\tline3\r\n     4\t"),
            ),
        ),
        files={"memories/crlf.txt": "line1\r\nLINE2\r\nline3\r\n"},
    ),
    Case(
        "insert_preserves_crlf_line_endings",
        (
            made("/memories/crlf.txt", CRLF),
            Step(
                insert("/memories/crlf.txt", 1, "Inserted"),
                Ok("The file /memories/crlf.txt has been edited."),
            ),
        ),
        files={"memories/crlf.txt": "line1\r\nInserted\nline2\r\nline3\r\n"},
    ),
    Case(
        "insert_error_for_non_existent_file",
        (Step(insert("/memories/nonexistent.txt", 0, "text"), Err(NOT_FOUND)),),
        files={},
    ),
    Case(
        "insert_error_for_invalid_insert_line",
        (
            made("/memories/insert_test.txt", "Line 1\nLine 2"),
            Step(
                insert("/memories/insert_test.txt", 10, "text"),
                Err("Invalid `insert_line` parameter: 10. It should be within the range [0, 2]."),
            ),
        ),
        files={"memories/insert_test.txt": "Line 1\nLine 2"},
    ),
    Case(
        "delete",
        (
            made("/memories/delete_me.txt", "To be deleted"),
            Step(
                delete("/memories/delete_me.txt"),
                Ok("Successfully deleted /memories/delete_me.txt"),
            ),
        ),
        files={},
    ),
    Case(
        "delete_directory",
        (
            made("/memories/subdir/file.txt", "Content"),
            Step(delete("/memories/subdir"), Ok("Successfully deleted /memories/subdir")),
        ),
        files={},
    ),
    Case(
        "delete_error_when_file_not_found",
        (
            Step(
                delete("/memories/nonexistent.txt"),
                Err("The path /memories/nonexistent.txt does not exist"),
            ),
        ),
        files={},
    ),
    Case(
        "delete_not_allow_deleting_memories_directory",
        (
            Step(
                delete("/memories"),
                Err("Cannot delete the /memories directory itself"),
                offline=True,
            ),
        ),
        files={},
    ),
    Case(
        "rename",
        (
            made("/memories/old_name.txt", "Original content"),
            Step(
                rename("/memories/old_name.txt", "/memories/new_name.txt"),
                Ok("Successfully renamed /memories/old_name.txt to /memories/new_name.txt"),
            ),
        ),
        files={"memories/new_name.txt": "Original content"},
    ),
    Case(
        "rename_to_nested_path",
        (
            made("/memories/file.txt", "Content"),
            Step(
                rename("/memories/file.txt", "/memories/nested/dir/file.txt"),
                Ok("Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"),
            ),
        ),
        files={"memories/nested/dir/file.txt": "Content"},
    ),
    Case(
        "rename_error_when_source_not_found",
        (
            Step(
                rename("/memories/nonexistent.txt", "/memories/new.txt"),
                Err("The path /memories/nonexistent.txt does not exist"),
            ),
        ),
        files={},
    ),
    Case(
        "rename_error_when_destination_exists",
        (
            made("/memories/file1.txt", "File 1"),
            made("/memories/file2.txt", "File 2"),
            Step(
                rename("/memories/file1.txt", "/memories/file2.txt"),
                Err("The destination /memories/file2.txt already exists"),
            ),
        ),
        files={"memories/file1.txt": "File 1", "memories/file2.txt": "File 2"},
    ),
    Case(
        "path_validation_reject_paths_not_starting_with_memories",
        (
            Step(
                create("/invalid/path.txt", "Invalid"),
                Err("Path must start with /memories, got: /invalid/path.txt"),
                offline=True,
            ),
        ),
        files={},
    ),
    Case(
        "path_validation_reject_paths_trying_to_escape_memories",
        (
            Step(
                create("/memories/../../../etc/passwd", "Escape attempt"),
                Err("Path /memories/../../../etc/passwd would escape /memories directory"),
                offline=True,
            ),
        ),
        files={},
    ),
)


# ----- running a case -----


def _describe(command: Command) -> str:
    if isinstance(command, BetaMemoryTool20250818RenameCommand):
        return f"rename {command.old_path} -> {command.new_path}"
    return f"{command.command} {command.path}"


def _check(step: Step, sdk: bool, result: Any, error: ToolError | None) -> None:
    expect = step.sdk if sdk and step.sdk is not None else step.expect
    what = _describe(step.command)
    if isinstance(expect, Err):
        assert error is not None, f"{what}: expected ToolError({expect.message!r}), got {result!r}"
        assert str(error) == expect.message, what
        return
    assert error is None, f"{what}: unexpected ToolError({str(error)!r})"
    assert isinstance(result, str), what
    if expect.text is not None:
        assert result == expect.text, what
    if expect.pattern is not None:
        assert re.fullmatch(expect.pattern, result), f"{what}: {result!r}"


def _run_sync(tool: Any, case: Case, *, sdk: bool, requests: Callable[[], int]) -> None:
    for step in case.steps:
        before = requests()
        try:
            result, error = getattr(tool, step.command.command)(step.command), None
        except ToolError as exc:
            result, error = None, exc
        _check(step, sdk, result, error)
        if step.offline and not sdk:
            assert requests() == before, f"{_describe(step.command)} reached ContextQ"


async def _run_async(tool: Any, case: Case, *, sdk: bool, requests: Callable[[], int]) -> None:
    for step in case.steps:
        before = requests()
        try:
            result, error = await getattr(tool, step.command.command)(step.command), None
        except ToolError as exc:
            result, error = None, exc
        _check(step, sdk, result, error)
        if step.offline and not sdk:
            assert requests() == before, f"{_describe(step.command)} reached ContextQ"


def _stored_files(fake: FakeContextQ, tenant: Tenant) -> dict[str, str]:
    """The tenant's contexts as the SDK's snapshot names files; stray rows show as such."""
    out: dict[str, str] = {}
    for context in fake.contexts(tenant):
        ext = context.external_id or ""
        if ext.startswith(OWN_PREFIX) and context.workspace == WORKSPACE:
            out["memories/" + ext[len(OWN_PREFIX) :]] = context.content
        else:
            out[f"<not a memory file: id={context.id} external_id={ext!r}>"] = context.content
    return out


def _disk_files(base: Path) -> dict[str, str]:
    """The SDK's snapshot, read as bytes so CR characters survive."""
    return {
        p.relative_to(base).as_posix(): p.read_bytes().decode("utf-8")
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def _params(*, adapter: bool) -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if adapter and case.bug is not None:
            marks.append(pytest.mark.xfail(strict=True, reason=f"adapter bug: {case.bug}"))
        params.append(pytest.param(case, marks=marks, id=case.name))
    return params


# ----- fixtures and the three runners -----


@dataclass(frozen=True)
class ContextQ:
    fake: FakeContextQ
    tenant: Tenant
    key: str

    def requests(self) -> int:
        return len(self.fake.journal)


@pytest.fixture
def contextq() -> Iterator[ContextQ]:
    with FakeContextQ() as fake:
        tenant = fake.create_tenant(plan="enterprise")
        fake.create_workspace(tenant, WORKSPACE)
        yield ContextQ(fake, tenant, fake.mint_key(tenant, SCOPES))


def _check_files(case: Case, found: dict[str, str], *, sdk: bool) -> None:
    expected = case.sdk_files if sdk and case.sdk_files is not None else case.files
    if expected is not None:
        assert found == expected


class TestAdapterSync:
    @pytest.mark.parametrize("case", _params(adapter=True))
    def test_case(self, case: Case, contextq: ContextQ) -> None:
        with contextq.fake.client() as http:
            tool = ContextQMemoryTool(
                contextq.key, http_client=http, workspace=WORKSPACE, **case.options
            )
            _run_sync(tool, case, sdk=False, requests=contextq.requests)
        _check_files(case, _stored_files(contextq.fake, contextq.tenant), sdk=False)


class TestAdapterAsync:
    @pytest.mark.parametrize("case", _params(adapter=True))
    def test_case(self, case: Case, contextq: ContextQ) -> None:
        async def main() -> None:
            async with contextq.fake.async_client() as http:
                tool = AsyncContextQMemoryTool(
                    contextq.key, http_client=http, workspace=WORKSPACE, **case.options
                )
                await _run_async(tool, case, sdk=False, requests=contextq.requests)

        asyncio.run(main())
        _check_files(case, _stored_files(contextq.fake, contextq.tenant), sdk=False)


class TestSdkReference:
    """The same tables against the SDK's own tools: the expected strings are the SDK's."""

    @pytest.mark.parametrize("mode", ["sync", "async"])
    @pytest.mark.parametrize("case", _params(adapter=False))
    def test_case(self, case: Case, mode: str, tmp_path: Path) -> None:
        def no_requests() -> int:
            return 0

        if mode == "sync":
            tool = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))
            _run_sync(tool, case, sdk=True, requests=no_requests)
        else:
            async_tool = BetaAsyncLocalFilesystemMemoryTool(base_path=str(tmp_path))
            asyncio.run(_run_async(async_tool, case, sdk=True, requests=no_requests))
        _check_files(case, _disk_files(tmp_path), sdk=True)


def test_every_ported_case_is_named_once() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert len(names) == 31  # 30 SDK cases, one (D2) split into two
