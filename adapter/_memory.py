"""The memory tool's command logic, written once, free of I/O.

Each command is a generator that yields ``_api.Call``s (the request plans both ContextQ
clients execute) and gets their results back, or their ``ContextQError`` thrown in; it
returns the tool's result string or raises ``ToolError``. The sync and async tools only
drive these generators with the sync or the async client (the sans-I/O split h11 uses).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeAlias, TypeVar

from anthropic.lib.tools import ToolError
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from adapter import _api, errors, paths
from adapter._api import Call
from adapter.listing import format_size, tree
from adapter.paths import ROOT, Location
from adapter.types import Context
from adapter.wire import (
    CONTEXT_TYPES,
    LIST_MAX_LIMIT,
    MAX_CONTENT_BYTES,
    MAX_TAG_CHARS,
    MAX_WORKSPACE_SLUG_CHARS,
    SEARCH_MAX_LIMIT,
    WORKSPACE_SLUG_RE,
    has_forbidden_char,
)

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))
DEFAULT_MAX_FILE_BYTES = 32 * 1024
DEFAULT_MAX_VIEW_CHARS = 16_000
SIZE_KEY = "bytes"  # metadata key holding a file's UTF-8 size, so listings need no fetch
DIGEST_CHARS = 20
DIR_TAG_EXTRA = len(":dir:") + DIGEST_CHARS  # a directory tag: the tag, ':dir:', a digest
SHOWN_OCCURRENCES = 10  # line numbers a str_replace error lists before 'and N more'
# A renamed file's source is read again after its copy is checked: edited meanwhile, the
# copy takes the new text and the source is read once more, this many times at most.
SOURCE_RECHECKS = 3


T = TypeVar("T")

# A command, or a step of one: yields request plans, is sent their results, returns a T.
Plan: TypeAlias = Generator[Call[Any], Any, T]


def _do(call: Call[T]) -> Plan[T]:
    """One request, typed: ``x = yield from _do(_api.get_context(7))`` makes ``x`` a
    ``Context``, where a bare ``yield`` would give ``Any``."""
    result: T = yield call
    return result


@dataclass(frozen=True, slots=True)
class Row:
    """One memory file as a listing shows it."""

    rest: str  # the path inside the workspace
    id: int
    size: int | None


def byte_size(text: str) -> int:
    return len(text.encode("utf-8"))


def numbered(lines: Iterable[str], start: int) -> list[str]:
    return [f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]


def occurrence_lines(content: str, old: str, shown: int) -> tuple[list[int], int]:
    """The line numbers of the first ``shown`` occurrences of ``old`` in ``content`` and
    how many there are, counted as the SDK's tool lists them (each match searched from one
    past the last, so overlapping matches count), in time linear in the content: the SDK
    counts the newlines before every match afresh, quadratic in a file of many matches."""
    if not old:  # matches at every position, the end included
        positions: Iterable[int] = range(min(shown, len(content) + 1))
        total = len(content) + 1
    elif not (fail := _borders(old))[-1]:  # no border: matches cannot overlap
        total = content.count(old)
        positions = _first_matches(content, old, shown)
    else:
        positions, total = _overlapping_matches(content, old, fail, shown)
    lines: list[int] = []
    line, last = 1, 0
    for pos in positions:
        line += content.count("\n", last, pos)
        last = pos
        lines.append(line)
    return lines, total


def _first_matches(content: str, old: str, shown: int) -> list[int]:
    out: list[int] = []
    pos = content.find(old)
    while pos != -1 and len(out) < shown:
        out.append(pos)
        pos = content.find(old, pos + len(old))
    return out


def _borders(old: str) -> list[int]:
    """Knuth-Morris-Pratt's table: the longest border (a prefix that is also a suffix) of
    each prefix of ``old``."""
    fail = [0] * len(old)
    k = 0
    for i in range(1, len(old)):
        while k and old[i] != old[k]:
            k = fail[k - 1]
        if old[i] == old[k]:
            k += 1
        fail[i] = k
    return fail


def _overlapping_matches(
    content: str, old: str, fail: list[int], shown: int
) -> tuple[list[int], int]:
    """Every match of a needle that overlaps itself, by Knuth-Morris-Pratt: linear where
    repeated ``find`` would re-read the overlap at each match."""
    first: list[int] = []
    total = k = 0
    for i, ch in enumerate(content):
        while k and ch != old[k]:
            k = fail[k - 1]
        if ch == old[k]:
            k += 1
        if k == len(old):
            total += 1
            if len(first) < shown:
                first.append(i - k + 1)
            k = fail[k - 1]
    return first, total


_STR, _INT, _INTS = "a string", "an integer", "a list of integers"
# command -> field -> (what it must be, required)
_INPUT: dict[str, dict[str, tuple[str, bool]]] = {
    "view": {"path": (_STR, True), "view_range": (_INTS, False)},
    "create": {"path": (_STR, True), "file_text": (_STR, True)},
    # new_str is required, as the SDK's command type has it: a model's call without it is a
    # mistake, and reading it as "" would silently delete old_str
    "str_replace": {"path": (_STR, True), "old_str": (_STR, True), "new_str": (_STR, True)},
    "insert": {"path": (_STR, True), "insert_line": (_INT, True), "insert_text": (_STR, True)},
    "delete": {"path": (_STR, True)},
    "rename": {"old_path": (_STR, True), "new_path": (_STR, True)},
}
# Fields whose text becomes a file's content, which ContextQ cannot hold NUL in.
_STORED = frozenset({"file_text", "new_str", "insert_text"})
# The SDK builds a command by validating the input against its command models (pydantic,
# lax), so it reads insert_line "1", 1.0 or true as 1 and view_range ["1", "2"] as [1, 2];
# numbers are read here exactly as that validation reads them.
_NUMBERS: dict[str, TypeAdapter[Any]] = {_INT: TypeAdapter(int), _INTS: TypeAdapter(list[int])}
_MISFIT = object()


def _read(value: Any, kind: str) -> Any:
    """``value`` as the SDK's command would hold it, or ``_MISFIT``."""
    if kind == _STR:
        return value if isinstance(value, str) else _MISFIT
    try:
        return _NUMBERS[kind].validate_python(value)
    except PydanticValidationError:
        return _MISFIT


def check_input(value: object) -> dict[str, Any]:
    """The tool input as the SDK's command would read it, or a ToolError the model can act
    on: the SDK does not refuse what it cannot read, so Python errors would escape."""
    if not isinstance(value, dict):
        raise ToolError(
            f"The memory tool's input must be an object with a 'command', got {value!r:.80}."
        )
    command = value.get("command")
    fields = _INPUT.get(command) if isinstance(command, str) else None
    if fields is None:
        raise ToolError(
            f"Unknown memory command {command!r:.40}; the commands are {', '.join(_INPUT)}."
        )
    checked = dict(value)
    for name, (kind, required) in fields.items():
        if name not in value or value[name] is None:
            if required:
                raise ToolError(f"The {command} command needs '{name}' ({kind}).")
            continue
        item = _read(value[name], kind)
        if item is _MISFIT:
            raise ToolError(
                f"'{name}' of the {command} command must be {kind}, got {value[name]!r:.60}."
            )
        checked[name] = item
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ToolError(
                    f"'{name}' of the {command} command holds an unpaired surrogate "
                    "(half of a UTF-16 pair), which cannot be stored as text."
                ) from None
            if name in _STORED and has_forbidden_char(item):
                raise ToolError(
                    f"'{name}' of the {command} command holds a NUL character (U+0000), "
                    "which ContextQ cannot store in a memory file; remove it."
                )
    return checked


def explain(exc: errors.ContextQError) -> ToolError:
    """A ContextQ failure in words the model can act on."""
    if isinstance(exc, errors.QuotaExceededError):
        plan = exc.plan or "current"
        limit = f"allows {exc.limit} {exc.resource or 'contexts'}" if exc.limit else "is full"
        return ToolError(
            f"ContextQ quota exceeded: the {plan} plan {limit}. Delete memory files that "
            "are no longer needed, or merge small ones, before creating more."
        )
    if isinstance(exc, errors.ScopeDeniedError):
        need = exc.required or "another"
        return ToolError(
            f"ContextQ refused: this API key lacks the '{need}' scope, so this memory "
            "command is not allowed (files may still be viewed if it has 'read')."
        )
    if isinstance(exc, errors.AuthenticationError):
        return ToolError(f"ContextQ rejected the API key (401): {exc.message}")
    if isinstance(exc, errors.ContextQTimeoutError):
        return ToolError(
            "ContextQ did not answer in time; the memory command may not have "
            "happened. Check with view before retrying."
        )
    if isinstance(exc, errors.ContextQConnectionError):
        return ToolError(f"Could not reach ContextQ: {exc.message}")
    if isinstance(exc, errors.UnavailableError):
        return ToolError(
            f"ContextQ is unavailable ({exc.status}): {exc.message.rstrip('. ')}. Try again later."
        )
    return ToolError(f"ContextQ error: {exc}")


class MemoryCore:
    """Plans every memory command against ContextQ; holds options, no connections."""

    def __init__(
        self,
        *,
        tag: str,
        context_type: str,
        workspace: str | None,
        auto_create_workspaces: bool,
        max_file_bytes: int,
        max_view_chars: int | None,
    ) -> None:
        if context_type not in CONTEXT_TYPES:
            raise ValueError(
                f"context_type must be one of {', '.join(CONTEXT_TYPES)}; got {context_type!r}"
            )
        if not tag or ":" in tag or "/" in tag:
            raise ValueError(f"tag must be a non-empty name without ':' or '/', got {tag!r}")
        if len(tag) + DIR_TAG_EXTRA > MAX_TAG_CHARS:
            raise ValueError(
                f"tag must be at most {MAX_TAG_CHARS - DIR_TAG_EXTRA} characters, so that its "
                f"directory tags fit ContextQ's {MAX_TAG_CHARS}; got {len(tag)}"
            )
        if workspace is not None:
            workspace = paths.fold_slug(workspace)
            if len(workspace) > MAX_WORKSPACE_SLUG_CHARS or not WORKSPACE_SLUG_RE.fullmatch(
                workspace
            ):
                raise ValueError(
                    f"workspace {workspace!r} is not a valid ContextQ workspace slug "
                    "(lowercase ASCII letters, digits and single hyphens; other characters "
                    "are not folded into these)"
                )
        if not 0 < max_file_bytes <= MAX_CONTENT_BYTES:
            raise ValueError(
                f"max_file_bytes must be between 1 and {MAX_CONTENT_BYTES} "
                f"(ContextQ's own limit), got {max_file_bytes}"
            )
        if max_view_chars is not None and max_view_chars < 200:
            raise ValueError(f"max_view_chars must be at least 200 or None, got {max_view_chars}")
        self.tag = tag
        self.context_type = context_type
        self.pinned = workspace
        self.auto_create_workspaces = auto_create_workspaces
        self.max_file_bytes = max_file_bytes
        self.max_view_chars = max_view_chars
        self.known_workspaces: set[str] = set()

    # ----- locations -----

    def locate(self, path: str) -> Location:
        return paths.locate(path, self.pinned)

    def external_id(self, loc: Location) -> str:
        return paths.external_id(self.tag, _workspace_of(loc), loc.rest)

    def display(self, workspace: str, rest: str) -> str:
        """The path the model knows a file by (``rest`` is never empty: a file's own path)."""
        return f"{ROOT}/{rest}" if self.pinned is not None else f"{ROOT}/{workspace}/{rest}"

    # ----- reads shared by the commands -----

    def _workspaces(self) -> Plan[list[str]]:
        found = yield from _do(_api.list_workspaces())
        self.known_workspaces = {w.slug for w in found}
        return sorted(self.known_workspaces)

    def _workspace_exists(self, slug: str) -> Plan[bool]:
        if slug in self.known_workspaces:
            return True
        names = yield from self._workspaces()
        return slug in names

    def _no_such_workspace(self, loc: Location, *, reading: bool) -> Plan[NoReturn]:
        """The refusal for a workspace that does not exist (its name is a valid slug)."""
        ws = _workspace_of(loc)
        if self.pinned is not None:
            raise ToolError(
                f"The memory workspace '{ws}' does not exist in ContextQ. Create it (admin "
                "scope), or pass auto_create_workspaces=True."
            )
        if not reading and not loc.rest:
            yield from self._not_in_workspace(loc)
        names = yield from self._workspaces()
        listed = ", ".join(names) if names else "none yet"
        if reading:
            raise ToolError(
                f"The path {loc.path} does not exist: ContextQ has no workspace '{ws}' "
                f"(existing: {listed})."
            )
        raise ToolError(
            f"The path {loc.path} is in workspace '{ws}', which does not exist in ContextQ "
            f"(existing: {listed}). Use an existing workspace, or create this one first."
        )

    def _ensure_workspace(self, loc: Location) -> Plan[None]:
        ws = _workspace_of(loc)
        if (yield from self._workspace_exists(ws)):
            return None
        if not self.auto_create_workspaces:
            yield from self._no_such_workspace(loc, reading=False)
        with contextlib.suppress(errors.WorkspaceTakenError):  # created meanwhile: fine
            yield from _do(_api.create_workspace(ws, None))
        self.known_workspaces.add(ws)
        return None

    def _not_in_workspace(self, loc: Location) -> Plan[NoReturn]:
        names = yield from self._workspaces()
        listed = ", ".join(names) if names else "none yet"
        example = f"{ROOT}/{names[0] if names else '<workspace>'}/notes.md"
        raise ToolError(
            f"The path {loc.path} is not inside a workspace: here the first name under "
            f"{ROOT} is a ContextQ workspace (existing: {listed}). Use a path like {example}."
        )

    def _check_workspace_name(self, loc: Location) -> Plan[None]:
        """Default mode: the first name must be a workspace slug."""
        ws = loc.workspace
        if (
            self.pinned is None
            and ws is not None
            and not (len(ws) <= MAX_WORKSPACE_SLUG_CHARS and WORKSPACE_SLUG_RE.fullmatch(ws))
        ):
            yield from self._not_in_workspace(loc)
        return None

    def dir_tag(self, workspace: str, directory: str) -> str:
        """The tag every file under ``directory`` carries, and a file at that very path too,
        so one listing finds a subtree, or the file standing where a directory would go
        (ContextQ has no prefix filter). Hashed: a path may be longer than a tag."""
        digest = hashlib.sha1(f"{workspace}/{directory}".encode()).hexdigest()[:DIGEST_CHARS]
        return f"{self.tag}:dir:{digest}"

    def _tags(self, workspace: str, rest: str) -> list[str]:
        names = rest.split("/")
        return [self.tag] + [
            self.dir_tag(workspace, "/".join(names[:i])) for i in range(1, len(names) + 1)
        ]

    def _subtree(self, workspace: str, directory: str) -> Plan[list[Row]]:
        """The files under a directory of a workspace ('' for all of it), all pages.

        A directory that shows no files is looked for once more in the whole workspace
        listing, for rows other tools wrote without directory tags."""
        if not directory:
            return (yield from self._rows(workspace))
        found = yield from self._rows(workspace, self.dir_tag(workspace, directory))
        if not found:
            found = yield from self._rows(workspace)
        prefix = directory + "/"
        return [r for r in found if r.rest.startswith(prefix)]

    def _is_dir(self, workspace: str, rest: str) -> Plan[bool]:
        """Whether anything stands at ``rest``: a directory, or (through its own tag) a file.
        One row of its tag, the same read whatever the directory holds."""
        _, total = yield from _do(
            _api.list_context_keys(
                workspace=workspace, tag=self.dir_tag(workspace, rest), limit=1, offset=None
            )
        )
        return bool(total)

    def _rows(self, workspace: str, tag: str | None = None) -> Plan[list[Row]]:
        """Every file of this tool in one workspace, all pages."""
        by_ws = yield from self._rows_by_workspace(workspace, tag)
        return by_ws.get(workspace, [])

    def _rows_by_workspace(
        self, workspace: str | None, tag: str | None = None
    ) -> Plan[dict[str, list[Row]]]:
        """Every file of this tool in one workspace (or, for None, in all), all pages."""
        out: dict[str, list[Row]] = {}
        offset = 0
        decode = paths.decode_external_id  # not self._owner: one call a row, on every listing
        while True:
            keys, total = yield from _do(
                _api.list_context_keys(
                    workspace=workspace, tag=tag or self.tag, limit=LIST_MAX_LIMIT, offset=offset
                )
            )
            for context_id, ext, metadata in keys:
                owner = decode(self.tag, ext)
                if owner is None:
                    continue
                ws, rest = owner
                if not rest or (workspace is not None and ws != workspace):
                    continue
                size = metadata.get(SIZE_KEY) if isinstance(metadata, dict) else None
                out.setdefault(ws, []).append(
                    Row(rest, context_id, size if isinstance(size, int) else None)
                )
            offset += len(keys)
            if not keys or offset >= total:
                break
        for ws_rows in out.values():
            missing = [r for r in ws_rows if r.size is None]
            for row in missing:  # rows written by someone else: size from the content
                context = yield from _do(_api.get_context(row.id))
                ws_rows[ws_rows.index(row)] = Row(row.rest, row.id, byte_size(context.content))
        return out

    def _owner(self, external_id: str | None, workspace: str | None) -> tuple[str, str] | None:
        """The (workspace, path inside it) of one of this tool's files, or None for a row of
        another tool, one with no path, or of another workspace than ``workspace`` (unless
        that is None)."""
        owner = paths.decode_external_id(self.tag, external_id)
        if owner is None or not owner[1] or (workspace is not None and owner[0] != workspace):
            return None
        return owner

    def _fetch(self, loc: Location) -> Plan[Context | None]:
        """The context at a file path, or None."""
        try:
            return (yield from _do(_api.get_context_by_external_id(self.external_id(loc))))
        except errors.NotFoundError:
            return None

    def _check_size(self, text: str, path: str) -> None:
        size = byte_size(text)
        if size > self.max_file_bytes:
            raise ToolError(
                f"The content for {path} is {size} bytes; a memory file may hold at most "
                f"{self.max_file_bytes} bytes. Split it into several smaller files."
            )

    # ----- view -----

    def view(self, path: str, view_range: list[int] | None) -> Plan[str]:
        loc = self.locate(path)
        if loc.is_store_root:
            return (yield from self._view_store_root(path))
        yield from self._check_workspace_name(loc)
        if not loc.is_workspace_root:
            context = yield from self._fetch(loc)
            if context is not None:
                return self._format_file(path, context.content, view_range)
        ws = _workspace_of(loc)
        rows = yield from self._subtree(ws, loc.rest)
        if loc.is_workspace_root:
            if not rows and not (yield from self._workspace_exists(ws)):
                if self.pinned is not None and self.auto_create_workspaces:
                    return self._format_dir(path, [])
                yield from self._no_such_workspace(loc, reading=True)
            return self._format_dir(path, rows)
        if not rows:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return self._format_dir(path, rows, cut=len(loc.rest) + 1)

    def _view_store_root(self, path: str) -> Plan[str]:
        names = yield from self._workspaces()
        by_ws = yield from self._rows_by_workspace(None)
        entries: list[tuple[str, int]] = []
        for ws in names:
            entries += [(f"{ws}/{r.rest}", r.size or 0) for r in by_ws.get(ws, [])]
        listed = tree(entries)
        present = {rel.split("/")[0] for _, rel in listed}
        listed += [(0, f"{ws}/") for ws in names if ws not in present]  # empty workspaces
        listed.sort(key=lambda e: e[1].split("/"))
        return self._render_dir(path, listed)

    def _format_dir(self, path: str, rows: list[Row], cut: int = 0) -> str:
        return self._render_dir(path, tree((r.rest[cut:], r.size or 0) for r in rows))

    @staticmethod
    def _render_dir(path: str, entries: list[tuple[int, str]]) -> str:
        header = (
            f"Here're the files and directories up to 2 levels deep in {path}, "
            "excluding hidden items:"
        )
        total = _top_total(entries)
        lines = [f"{format_size(total)}\t{path}"]
        lines += [f"{format_size(size)}\t{path}/{rel}" for size, rel in entries]
        return header + "\n" + "\n".join(lines)

    def _format_file(self, path: str, content: str, view_range: list[int] | None) -> str:
        lines = content.split("\n")
        if len(lines) > MAX_LINES:
            raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
        shown = lines
        start = 1
        if view_range and len(view_range) == 2:
            first = max(1, view_range[0]) - 1
            end = len(lines) if view_range[1] == -1 else view_range[1]
            shown = lines[first:end]
            start = first + 1
        header = f"Here's the content of {path} with line numbers:"
        body = numbered(shown, start)
        text = header + "\n" + "\n".join(body)
        if self.max_view_chars is None or len(text) <= self.max_view_chars:
            return text
        kept: list[str] = []
        used = len(header)
        for line in body:
            if used + 1 + len(line) > self.max_view_chars:
                break
            kept.append(line)
            used += 1 + len(line)
        end = len(lines) if not (view_range and len(view_range) == 2) else view_range[1]
        if not kept:  # one line longer than the whole budget: show its beginning
            room = max(self.max_view_chars - len(header) - 1, 0)
            return (
                header + "\n" + body[0][:room] + "\n"
                f"[Line {start} alone is longer than {self.max_view_chars} characters and "
                f"is shown only in part; the file holds it whole.]"
            )
        resume = start + len(kept)
        return (
            header + "\n" + "\n".join(kept) + "\n"
            f"[Output cut at {self.max_view_chars} characters after line {resume - 1} of "
            f"{len(lines)}. View the rest with view_range [{resume}, {end}].]"
        )

    # ----- create -----

    def create(self, path: str, file_text: str) -> Plan[str]:
        loc = self.locate(path)
        exists = ToolError(f"File {path} already exists")  # the SDK's words for a directory too
        if loc.is_store_root or (loc.is_workspace_root and self.pinned is not None):
            raise exists
        ws = _workspace_of(loc)
        yield from self._check_workspace_name(loc)
        if loc.is_workspace_root:
            if (yield from self._workspace_exists(ws)):
                raise exists
            yield from self._no_such_workspace(loc, reading=False)
        self._check_size(file_text, path)
        yield from self._ensure_workspace(loc)
        try:
            created = yield from self._create_row(loc, file_text)
        except errors.ExternalIdTakenError:
            raise exists from None
        try:
            conflict = yield from self._conflict(ws, loc.rest, mine=1)
        except errors.ContextQError as exc:  # unchecked: take the row back rather than keep it
            refusal = ToolError(f"Creating {path} failed: {_cause(exc)}.")
        else:
            if conflict is None:
                return f"File created successfully at: {path}"
            refusal = (
                exists
                if conflict == ""
                else ToolError(
                    f"Cannot create {path}: {self.display(ws, conflict)} is a file, not a "
                    "directory."
                )
            )
        try:
            yield from _do(_api.delete_context(created.id))
        except errors.NotFoundError:
            pass
        except errors.ContextQError as exc:
            raise ToolError(
                f"{_cause(refusal)}; removing the file just written there failed "
                f"({_cause(exc)}), so delete {path} (context {created.id})."
            ) from None
        raise refusal

    def _conflict(self, workspace: str, rest: str, *, mine: int) -> Plan[str | None]:
        """After this tool wrote ``mine`` rows at or under ``rest``: '' if anything else stands
        there (a file, or files under it: "already exists"), else the nearest directory above
        that is a file, else None. The reads come after the write, so of two writers that
        conflict at least one sees the other, whatever the interleaving (each writes before
        it reads), and removes its own rows.

        Every file carries the tag of its own path and of each directory above it, so one
        row of ``rest``'s tag counts what stands at or under it; a file above is one keyed
        lookup per level. No read depends on how many files a directory holds."""
        _, total = yield from _do(
            _api.list_context_keys(
                workspace=workspace, tag=self.dir_tag(workspace, rest), limit=1, offset=None
            )
        )
        if total > mine:
            return ""
        above = rest.rpartition("/")[0]
        while above:
            if (yield from self._fetch(Location("", workspace, above))) is not None:
                return above
            above = above.rpartition("/")[0]
        return None

    def _stands(self, workspace: str, rest: str) -> Plan[bool]:
        """Whether a file or a directory stands at ``rest`` (one row of its tag, or a row
        another tool wrote there without tags)."""
        if (yield from self._is_dir(workspace, rest)):
            return True
        return (yield from self._fetch(Location("", workspace, rest))) is not None

    def _create_row(self, loc: Location, text: str) -> Plan[Context]:
        ws = _workspace_of(loc)
        created = yield from _do(
            _api.create_context(
                self.context_type,
                loc.rest,
                text,
                external_id=self.external_id(loc),
                tags=self._tags(ws, loc.rest),
                workspace=loc.workspace,
                metadata={SIZE_KEY: byte_size(text)},
            )
        )
        if created.workspace != loc.workspace:
            # ContextQ silently stores an unknown workspace as none: ours was deleted since
            # the tool last looked. Take the row back and say so.
            self.known_workspaces.discard(ws)
            with contextlib.suppress(errors.ContextQError):
                yield from _do(_api.delete_context(created.id))
            raise ToolError(
                f"The workspace '{loc.workspace}' no longer exists in ContextQ, so "
                f"{self.display(ws, loc.rest)} was not written."
            )
        return created

    # ----- str_replace and insert -----

    def _existing_file(self, path: str) -> Plan[Context]:
        loc = self.locate(path)
        not_found = ToolError(f"The path {path} does not exist. Please provide a valid path.")
        if loc.is_store_root or loc.is_workspace_root:
            if loc.is_store_root or self.pinned is not None:
                raise ToolError(f"The path {path} is not a file.")
            yield from self._check_workspace_name(loc)
            if (yield from self._workspace_exists(_workspace_of(loc))):
                raise ToolError(f"The path {path} is not a file.")
            raise not_found
        yield from self._check_workspace_name(loc)
        context = yield from self._fetch(loc)
        if context is not None:
            return context
        if (yield from self._is_dir(_workspace_of(loc), loc.rest)):
            raise ToolError(f"The path {path} is not a file.")
        raise not_found

    def _write_back(self, path: str, context: Context, text: str) -> Plan[None]:
        self._check_size(text, path)
        metadata = {**context.metadata, SIZE_KEY: byte_size(text)}
        try:
            yield from _do(_api.update_context(context.id, {"content": text, "metadata": metadata}))
        except errors.NotFoundError:
            raise ToolError(
                f"The file {path} no longer exists (may have been deleted or renamed concurrently)."
            ) from None
        return None

    def str_replace(self, path: str, old_str: str, new_str: str) -> Plan[str]:
        context = yield from self._existing_file(path)
        content = context.content
        count = content.count(old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old_str}` did not appear "
                f"verbatim in {path}."
            )
        if count > 1:
            lines, total = occurrence_lines(content, old_str, SHOWN_OCCURRENCES)
            more = f" and {total - len(lines)} more" if total > len(lines) else ""
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in "
                f"lines: {', '.join(map(str, lines))}{more}. Please ensure it is unique"
            )
        changed = content[: content.find(old_str)].count("\n")
        new_content = content.replace(old_str, new_str)
        yield from self._write_back(path, context, new_content)
        new_lines = new_content.split("\n")
        first = max(0, changed - 2)
        last = min(len(new_lines), changed + 3)
        snippet = numbered(new_lines[first:last], first + 1)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + "\n".join(snippet)
        )

    def insert(self, path: str, insert_line: int, insert_text: str) -> Plan[str]:
        context = yield from self._existing_file(path)
        lines = context.content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if insert_line < 0 or insert_line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be "
                f"within the range [0, {len(lines)}]."
            )
        lines.insert(insert_line, insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        if not new_content.endswith("\n"):
            new_content += "\n"
        yield from self._write_back(path, context, new_content)
        return f"The file {path} has been edited."

    # ----- delete -----

    def delete(self, path: str) -> Plan[str]:
        loc = self.locate(path)
        if loc.is_store_root or (loc.is_workspace_root and self.pinned is not None):
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        yield from self._check_workspace_name(loc)
        missing = ToolError(f"The path {path} does not exist")
        if not loc.is_workspace_root:
            context = yield from self._fetch(loc)
            if context is not None:
                # A 404 here means the row is gone: a retried DELETE whose first answer
                # was lost, or another writer. Either way the file no longer exists.
                with contextlib.suppress(errors.NotFoundError):
                    yield from _do(_api.delete_context(context.id))
                return f"Successfully deleted {path}"
        ws = _workspace_of(loc)
        under = yield from self._subtree(ws, loc.rest)
        if not under:
            if loc.is_workspace_root and (yield from self._workspace_exists(ws)):
                return f"Successfully deleted {path}"
            raise missing
        yield from self._delete_rows(path, ws, under)
        return f"Successfully deleted {path}"

    def _delete_rows(self, path: str, workspace: str, rows: list[Row]) -> Plan[None]:
        for i, row in enumerate(rows):
            try:
                yield from _do(_api.delete_context(row.id))
            except errors.NotFoundError:
                continue
            except errors.ContextQError as exc:
                left = [self.display(workspace, r.rest) for r in rows[i:]]
                raise ToolError(
                    f"Deleting {path} stopped partway: {_cause(exc)}. Deleted {i} of "
                    f"{len(rows)} files; these remain: {', '.join(left)}"
                ) from None
        return None

    # ----- rename -----

    def rename(self, old_path: str, new_path: str) -> Plan[str]:
        old = self.locate(old_path)
        new = self.locate(new_path)
        if old.is_store_root or (old.is_workspace_root and self.pinned is not None):
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        if new.is_store_root or (new.is_workspace_root and self.pinned is not None):
            raise ToolError(f"The destination {new_path} already exists")
        yield from self._check_workspace_name(old)
        yield from self._check_workspace_name(new)
        if old.is_workspace_root:
            raise ToolError(
                f"Cannot rename {old_path}: it is the ContextQ workspace "
                f"'{old.workspace}', and workspaces cannot be renamed."
            )
        if new.is_workspace_root:
            raise ToolError(f"The destination {new_path} already exists")
        assert old.workspace is not None and new.workspace is not None
        original = yield from self._fetch(old)
        contents: dict[int, str] = {}
        if original is not None:
            source, is_dir = [Row(old.rest, original.id, None)], False
            contents[original.id] = original.content
        else:
            source = yield from self._subtree(old.workspace, old.rest)
            is_dir = True
        if new.workspace != old.workspace:
            yield from self._ensure_workspace(new)
        into_itself = (
            is_dir and new.workspace == old.workspace and new.rest.startswith(old.rest + "/")
        )
        if not source or into_itself:
            # Nothing is written: the SDK names an existing destination first.
            if (yield from self._stands(new.workspace, new.rest)):
                raise ToolError(f"The destination {new_path} already exists")
            if not source:
                raise ToolError(f"The path {old_path} does not exist")
            raise ToolError(f"Cannot move the directory {old_path} into itself ({new_path}).")
        yield from self._move(old, new, source, is_dir, contents)
        return f"Successfully renamed {old_path} to {new_path}"

    def _move(
        self,
        old: Location,
        new: Location,
        source: list[Row],
        is_dir: bool,
        contents: dict[int, str],
    ) -> Plan[None]:
        """Copy every file, check the destination as a create does (after writing), then
        delete the originals; undo what can be undone on failure."""
        assert old.workspace is not None and new.workspace is not None
        copies: list[tuple[Row, Context]] = []
        cut = len(old.rest)
        refusal: ToolError | None = None
        try:
            for row in source:
                target = Location(
                    "", new.workspace, new.rest + row.rest[cut:] if is_dir else new.rest
                )
                text = contents.get(row.id)
                if text is None:
                    text = (yield from _do(_api.get_context(row.id))).content
                copies.append((row, (yield from self._create_row(target, text))))
            conflict = yield from self._conflict(new.workspace, new.rest, mine=len(copies))
        except (errors.ContextQError, ToolError) as exc:
            if isinstance(exc, errors.ExternalIdTakenError):
                refusal = ToolError(f"The destination {new.path} already exists")
            else:
                refusal = ToolError(
                    f"Renaming {old.path} failed before anything moved: {_cause(exc)}"
                )
        else:
            if conflict == "":
                refusal = ToolError(f"The destination {new.path} already exists")
            elif conflict is not None:
                refusal = ToolError(
                    f"Cannot rename to {new.path}: {self.display(new.workspace, conflict)} "
                    "is a file, not a directory."
                )
        if refusal is not None:
            left = yield from self._undo_copies(copies)
            if left:
                raise ToolError(
                    f"Renaming {old.path} to {new.path} failed partway and could not be "
                    f"fully undone: these copies remain beside their originals: "
                    f"{self._pairs(old, new, left)}. Delete the copies. Cause: "
                    f"{_cause(refusal)}"
                )
            raise refusal
        if not is_dir:
            yield from self._settle_copy(old, new, copies[0], contents[source[0].id])
        vanished: list[tuple[Row, Context]] = []
        for i, (row, copy) in enumerate(copies):
            try:
                if not (yield from self._delete_original(row.id)):
                    vanished.append((row, copy))
            except errors.ContextQError as exc:
                left = yield from self._undo_copies(vanished + copies[i:])
                moved = i - len(vanished)
                done = f" ({moved} file(s) had already moved to {new.path})" if moved else ""
                if not left:
                    raise ToolError(
                        f"Renaming {old.path} to {new.path} failed while removing the "
                        f"originals ({_cause(exc)}); the copies of the files not yet moved "
                        f"were removed again, so {old.path} keeps them{done}."
                    ) from None
                raise ToolError(
                    f"Renaming {old.path} to {new.path} failed and could not be undone: "
                    f"these files now exist at both paths: {self._pairs(old, new, left)}. "
                    f"Delete one of each{done}. Cause: {_cause(exc)}"
                ) from None
        if vanished:
            yield from self._vanished(old, new, vanished, moved=len(copies) - len(vanished))
        return None

    def _settle_copy(
        self, old: Location, new: Location, pair: tuple[Row, Context], copied: str
    ) -> Plan[None]:
        """Read a renamed file's source again just before deleting it: an edit another
        writer made since it was read is carried over to the copy, so it is not deleted
        with the source. What lands between this read and the delete is still lost:
        ContextQ offers no conditional delete, but the window is one request wide, not
        three. A source gone meanwhile is left to the delete, which reports it."""
        row, copy = pair
        try:
            for _ in range(SOURCE_RECHECKS):
                try:
                    now = (yield from _do(_api.get_context(row.id))).content
                except errors.NotFoundError:
                    return None
                if now == copied:
                    return None
                fields = {"content": now, "metadata": {SIZE_KEY: byte_size(now)}}
                yield from _do(_api.update_context(copy.id, fields))
                copied = now
            cause = "another writer kept editing it while it was being moved"
        except errors.ContextQError as exc:
            cause = _cause(exc)
        left = yield from self._undo_copies([pair])
        if left:
            raise ToolError(
                f"Renaming {old.path} to {new.path} failed and could not be undone: the file "
                f"now exists at both paths: {self._pairs(old, new, left)}. Delete one. "
                f"Cause: {cause}"
            )
        raise ToolError(f"Renaming {old.path} failed before anything moved: {cause}.")

    def _delete_original(self, row_id: int) -> Plan[bool]:
        """Delete a renamed file's original: True once done, False if it was gone already
        (another writer renamed or deleted it meanwhile). Not retried, as a retry's 404
        would look the same; if the answer is lost, one GET tells whether it happened."""
        try:
            yield from _do(dataclasses.replace(_api.delete_context(row_id), retryable=False))
        except errors.NotFoundError:
            return False
        except errors.ContextQConnectionError:
            try:
                yield from _do(_api.get_context(row_id))
            except errors.NotFoundError:
                return True  # gone: this delete's own answer was the one lost
            raise
        return True

    def _vanished(
        self, old: Location, new: Location, vanished: list[tuple[Row, Context]], *, moved: int
    ) -> Plan[NoReturn]:
        """Originals another writer renamed or deleted while they were being copied: their
        copies are removed again, so no file is left at two paths, and the error says so."""
        assert old.workspace is not None and new.workspace is not None
        left = yield from self._undo_copies(vanished)
        gone = [(r, c) for r, c in vanished if (r, c) not in left]
        also = f"; the other {moved} file(s) moved to {new.path}" if moved else ""
        words = [
            f"Renaming {old.path} to {new.path} conflicted with another writer, which "
            "renamed or deleted "
            + "; ".join(
                f"{self.display(old.workspace, r.rest)} while it was being copied to "
                f"{self.display(new.workspace, c.title)}"
                for r, c in vanished
            )
        ]
        if gone:
            words.append(
                "so the copy was removed again"
                if len(vanished) == 1
                else f"so {len(gone)} copies were removed again"
            )
        if left:
            words.append(
                "and these copies could not be removed, so each may duplicate a file the "
                "other writer moved: "
                + ", ".join(
                    f"{self.display(new.workspace, c.title)} (context {c.id})" for _, c in left
                )
                + ". Delete them"
            )
        raise ToolError(", ".join(words) + also + f". View {ROOT} to see where things are now.")

    def _pairs(self, old: Location, new: Location, left: list[tuple[Row, Context]]) -> str:
        """'old path (context a) and new path (context b)' for each duplicate left."""
        assert old.workspace is not None and new.workspace is not None
        parts = []
        for row, copy in left:
            parts.append(
                f"{self.display(old.workspace, row.rest)} (context {row.id}) and "
                f"{self.display(new.workspace, copy.title)} (context {copy.id})"
            )
        return "; ".join(parts)

    def _undo_copies(self, copies: list[tuple[Row, Context]]) -> Plan[list[tuple[Row, Context]]]:
        """Delete copies made by a failed rename; the (original, copy) pairs left over."""
        left: list[tuple[Row, Context]] = []
        for row, copy in copies:
            try:
                yield from _do(_api.delete_context(copy.id))
            except errors.NotFoundError:
                continue
            except errors.ContextQError:
                left.append((row, copy))
        return left

    # ----- clear and recall -----

    def clear_all(self) -> Plan[str]:
        if self.pinned is not None:
            rows = yield from self._rows(self.pinned)
            yield from self._delete_rows(ROOT, self.pinned, rows)
        else:
            by_ws = yield from self._rows_by_workspace(None)
            for ws, ws_rows in sorted(by_ws.items()):
                yield from self._delete_rows(ROOT, ws, ws_rows)
        return "All memory cleared"

    def recall(self, query: str, limit: int) -> Plan[str]:
        if not isinstance(query, str) or not query.strip():
            raise ToolError("memory_recall needs a non-empty query.")
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError("The memory_recall query holds an unpaired surrogate.") from None
        limit = max(1, min(int(limit), SEARCH_MAX_LIMIT))
        results = yield from _do(
            _api.search(query, type=None, workspace=self.pinned, tags=[self.tag], limit=limit)
        )
        lines: list[str] = []
        for hit in results:
            owner = self._owner(hit.context.external_id, self.pinned)
            if owner is None:
                continue
            ws, rest = owner
            lines.append(f"{self.display(ws, rest)}\t(score {hit.score:.2f})\t{hit.snippet}")
        if not lines:
            return f"No memory file matches {query!r}."
        return f"Memory files matching {query!r}, best first:\n" + "\n".join(lines)


def _workspace_of(loc: Location) -> str:
    """A location's workspace: every path but the store root's has one."""
    assert loc.workspace is not None
    return loc.workspace


def _cause(exc: Exception) -> str:
    """A failure's words, without a trailing period (the caller's sentence goes on)."""
    words = str(explain(exc) if isinstance(exc, errors.ContextQError) else exc)
    return words.removesuffix(".")


def _top_total(entries: list[tuple[int, str]]) -> int:
    """The size of a listed directory: the sum of its top-level entries."""
    return sum(size for size, rel in entries if "/" not in rel.rstrip("/"))
