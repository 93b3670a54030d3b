"""Memory paths: the safety rules every path passes before storage is touched, and the
mapping from a path to a ContextQ workspace and external id."""

from __future__ import annotations

import re
from dataclasses import dataclass

from anthropic.lib.tools import ToolError

ROOT = "/memories"
MAX_NAME_BYTES = 128
MAX_PATH_BYTES = 240
MAX_DEPTH = 16
_ENCODED = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def segments(path: str) -> tuple[str, ...]:
    """The names below ``/memories`` of a safe path, or a ``ToolError`` saying what is wrong.

    The first two checks and their messages are the SDK's own; the rest go beyond it.
    """
    if not path.startswith(ROOT):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    rest = path[len(ROOT) :]
    if rest and not rest.startswith("/"):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    names = rest.split("/")[1:] if rest else []
    if names and names[-1] == "":
        names.pop()  # one trailing slash names the same directory
    if ".." in names and _escapes(names):
        raise ToolError(f"Path {path} would escape {ROOT} directory")
    if _CONTROL.search(path):
        raise ToolError(f"Path {path!r} contains a control character; names may not.")
    if "\\" in path:
        raise ToolError(f"Path {path} contains a backslash; separate names with '/'.")
    encoded = _ENCODED.search(path)
    if encoded:
        raise ToolError(
            f"Path {path} contains the percent-encoded character {encoded.group(0)}; "
            "write names plainly."
        )
    if len(path.encode()) > MAX_PATH_BYTES:
        raise ToolError(f"Path {path} is longer than {MAX_PATH_BYTES} bytes.")
    if len(names) > MAX_DEPTH:
        raise ToolError(f"Path {path} is more than {MAX_DEPTH} levels deep.")
    for name in names:
        if name == "":
            raise ToolError(f"Path {path} has an empty name ('//').")
        if name in (".", ".."):
            raise ToolError(f"Path {path} has a '{name}' segment; write the path without it.")
        if name.startswith("."):
            raise ToolError(
                f"Path {path} names a hidden file or directory ({name}); names may not start "
                "with '.'."
            )
        if len(name.encode()) > MAX_NAME_BYTES:
            raise ToolError(f"Path {path} has a name longer than {MAX_NAME_BYTES} bytes.")
    return tuple(names)


def _escapes(names: list[str]) -> bool:
    depth = 0
    for name in names:
        depth += -1 if name == ".." else 0 if name in ("", ".") else 1
        if depth < 0:
            return True
    return False


@dataclass(frozen=True, slots=True)
class Location:
    """Where a memory path lives in ContextQ.

    ``workspace`` is None only for ``/memories`` itself in the default mode (the list of
    workspaces); ``rest`` is the path inside the workspace ('' for its root).
    """

    path: str
    workspace: str | None
    rest: str

    @property
    def is_store_root(self) -> bool:
        return self.workspace is None

    @property
    def is_workspace_root(self) -> bool:
        return self.workspace is not None and self.rest == ""


def locate(path: str, pinned: str | None) -> Location:
    """Where a safe path lives. In the default mode the first name is the workspace,
    lowercased; whether it is a valid slug is checked by the caller, which can then name
    the workspaces that do exist."""
    names = segments(path)
    if pinned is not None:
        return Location(path, pinned, "/".join(names))
    if not names:
        return Location(path, None, "")
    return Location(path, names[0].lower(), "/".join(names[1:]))


def external_id(tag: str, workspace: str, rest: str) -> str:
    """``<tag>:<workspace>/<rest>``: the workspace is in the key because external ids are
    unique per tenant, not per workspace."""
    return f"{tag}:{workspace}/{rest}"


def decode_external_id(tag: str, external_id: str | None) -> tuple[str, str] | None:
    """The (workspace, path inside it) that ``external_id`` stands for, the inverse of
    ``external_id``; None for a row that is not this tag's (another tool wrote it)."""
    prefix = f"{tag}:"
    if external_id is None or not external_id.startswith(prefix):
        return None
    workspace, slash, rest = external_id[len(prefix) :].partition("/")
    return (workspace, rest) if slash else None
