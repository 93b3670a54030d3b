"""Which memory paths this backend accepts: under /memories, plain names only."""

from __future__ import annotations

import unicodedata

from anthropic.lib.tools import ToolError

ROOT = "/memories"
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
_INVISIBLE = {"Cc", "Cf", "Zl", "Zp"}  # control, format, line and paragraph separators


def key(path: str) -> str:
    """The storage key of a safe path ('' for /memories itself), or a ToolError."""
    if not path.startswith(ROOT):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    rest = path[len(ROOT) :]
    if rest and not rest.startswith("/"):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    if len(path.encode()) > MAX_PATH_BYTES:
        raise ToolError(f"Path is longer than {MAX_PATH_BYTES} bytes: {path[:60]}...")
    names = rest.strip("/").split("/") if rest.strip("/") else []
    for name in names:
        _check_name(path, name)
    return "/".join(names)


def _check_name(path: str, name: str) -> None:
    folded = unicodedata.normalize("NFKC", name)  # as a reader sees it: U+FF0E twice reads '..'
    if name == "" or folded in (".", ".."):
        raise ToolError(f"Path {path!r} has an empty, '.' or '..' segment")
    if folded.startswith("."):
        raise ToolError(f"Path {path!r} names a hidden file or directory")
    if any(c in folded for c in "/\\%") or "\u2215" in name or "\u2044" in name:
        raise ToolError(f"Path {path!r} holds a separator, a look-alike of one, or '%'")
    if any(unicodedata.category(c) in _INVISIBLE for c in name):
        raise ToolError(f"Path {path!r} holds a control or invisible character")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise ToolError(f"Path {path!r} has a name longer than {MAX_NAME_BYTES} bytes")
