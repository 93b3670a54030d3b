"""Memory paths: the safety rules every path passes before storage is touched, and the
mapping from a path to a ContextQ workspace and external id."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from anthropic.lib.tools import ToolError

ROOT = "/memories"
MAX_NAME_BYTES = 128
MAX_PATH_BYTES = 240
MAX_DEPTH = 16
_ENCODED = re.compile(r"%(2e|2f|5c|00)", re.IGNORECASE)
# C0 and C1 controls and DEL (category Cc), and characters that steer or hide text:
# format characters (Cf: bidi overrides, zero-width joiners and spaces...) and the line
# and paragraph separators (Zl, Zp). None belongs in a name, and some make two different
# names look alike in a listing.
_REFUSED_CATEGORIES = {
    "Cc": "control",
    "Cf": "invisible format",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}
# Characters that read as a path separator without being one: those whose compatibility
# form (NFKC) holds '/' or '\\' (fullwidth and small solidus), and the slashes Unicode gives
# no such form (division slash, fraction slash, big solidus, set minus).
_SLASH_LIKE = frozenset("\u2215\u2044\u29f8\u29f9\u2216")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _refused_character(path: str) -> str | None:
    """'the control character U+009B' for the first character a name may not hold."""
    for ch in path:
        if " " <= ch <= "~":  # printable ASCII, nearly every character: skip the lookup
            continue
        kind = _REFUSED_CATEGORIES.get(unicodedata.category(ch))
        if kind is not None:
            name = unicodedata.name(ch, "")
            return f"the {kind} character U+{ord(ch):04X}" + (f" ({name})" if name else "")
    return None


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
    refused = _refused_character(path)
    if refused is not None:
        raise ToolError(
            f"Path {path!r} contains {refused}; names may not hold control or invisible "
            "format characters."
        )
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
        _check_look_alikes(path, name)
        if name.startswith("."):
            raise ToolError(
                f"Path {path} names a hidden file or directory ({name}); names may not start "
                "with '.'."
            )
        if len(name.encode()) > MAX_NAME_BYTES:
            raise ToolError(f"Path {path} has a name longer than {MAX_NAME_BYTES} bytes.")
    return tuple(names)


def _check_look_alikes(path: str, name: str) -> None:
    """A name a model (or a person) would read as '.', '..', a hidden name or a name with a
    separator in it is refused: two fullwidth full stops (U+FF0E) or a two dot leader
    (U+2025) read as a parent directory. Look-alike letters inside an ordinary name are left
    alone."""
    if name.isascii():
        return
    folded = unicodedata.normalize("NFKC", name)
    if folded in (".", ".."):
        raise ToolError(
            f"Path {path!r} has a segment {name!r} that reads as '{folded}'; write the path "
            "without it."
        )
    if folded.startswith("."):
        raise ToolError(
            f"Path {path!r} has a name {name!r} that reads as a hidden name ('{folded[:20]}'); "
            "names may not start with '.' or a character like it."
        )
    for ch in name:
        if ch in _SLASH_LIKE or (
            not ch.isascii() and any(c in "/\\" for c in unicodedata.normalize("NFKC", ch))
        ):
            what = unicodedata.name(ch, "")
            raise ToolError(
                f"Path {path!r} holds U+{ord(ch):04X}"
                + (f" ({what})" if what else "")
                + ", which reads as a path separator; separate names with '/' only."
            )


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


def fold_slug(name: str) -> str:
    """A workspace name as the slug it names: ASCII letters lowercased, nothing else folded,
    so a name that only looks like a slug (the Kelvin sign U+212A for 'k', fullwidth
    letters) stays what it is and is refused, never mapped onto another workspace."""
    return name.translate(_ASCII_LOWER)


def locate(path: str, pinned: str | None) -> Location:
    """Where a safe path lives. In the default mode the first name is the workspace, its
    ASCII letters lowercased; a name with any other character is refused here, and
    whether an ASCII name is a valid slug is checked by the caller, which can then name
    the workspaces that do exist."""
    names = segments(path)
    if pinned is not None:
        return Location(path, pinned, "/".join(names))
    if not names:
        return Location(path, None, "")
    if not names[0].isascii():
        odd = next(ch for ch in names[0] if not ch.isascii())
        name = unicodedata.name(odd, "")
        raise ToolError(
            f"Path {path!r}: the workspace name {names[0]!r} is not a ContextQ workspace "
            f"slug, and is not folded into one: it holds U+{ord(odd):04X}"
            + (f" ({name})" if name else "")
            + ". A workspace name must already be the slug, in lowercase ASCII letters, "
            "digits and single hyphens."
        )
    return Location(path, fold_slug(names[0]), "/".join(names[1:]))


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
