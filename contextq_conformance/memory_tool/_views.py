"""Reading a backend through its own ``view``: directory listings, numbered file views, the
hints of a cut view, and a whole snapshot of storage. Only the shapes the SDK's own views
have are assumed (a header line, then ``size<TAB>path`` or ``number<TAB>text`` lines)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from contextq_conformance.memory_tool._calls import Handle

ROOT = "/memories"
_NUMBERED = re.compile(r"^ *(\d+)\t(.*)$", re.DOTALL)
_LISTED = re.compile(r"^([^\t]+)\t(/memories.*)$")
#: A continuation hint: ``view_range`` and then a ``[first, last]`` pair, in any wording.
_HINT = re.compile(r"view_range\D{0,40}?\[\s*(\d+)\s*,\s*(-?\d+)\s*\]")


def listing(text: str) -> list[tuple[str, str]] | None:
    """(size, path) of each line of a directory view, or None if ``text`` is not one."""
    header, _, rest = text.partition("\n")
    if not header.startswith("Here're the files and directories"):
        return None
    out = []
    for line in rest.split("\n"):
        match = _LISTED.match(line)
        if match is None:
            return None
        out.append((match[1], match[2]))
    return out


def mask_directory_sizes(text: str) -> str:
    """A listing with every directory's size (its first line, and each path ending in '/')
    replaced by ``<dir>``: what the SDK prints there is an inode's size."""
    entries = listing(text)
    if entries is None:
        return text
    header = text.partition("\n")[0]
    lines = [header]
    for i, (size, path) in enumerate(entries):
        lines.append(f"{'<dir>' if i == 0 or path.endswith('/') else size}\t{path}")
    return "\n".join(lines)


@dataclass
class Page:
    """One view of a file: its header, its numbered lines, and the hint to go on, if cut."""

    header: str
    lines: list[tuple[int, str]]
    hint: tuple[int, int] | None
    text: str


def page(text: str) -> Page | None:
    header, _, rest = text.partition("\n")
    if not header.startswith("Here's the content of"):
        return None
    lines: list[tuple[int, str]] = []
    hint = None
    for line in rest.split("\n") if rest or text.endswith("\n") else []:
        match = _NUMBERED.match(line)
        if match is not None and hint is None:
            lines.append((int(match[1]), match[2]))
            continue
        found = _HINT.search(line)
        if found is not None:
            hint = (int(found[1]), int(found[2]))
    return Page(header, lines, hint, text)


@dataclass
class ReadBack:
    """A file read through views and their hints: the pages, and every line number shown."""

    pages: list[Page]
    problem: str = ""

    @property
    def numbers(self) -> list[int]:
        return [n for p in self.pages for n, _ in p.lines]

    def content(self) -> str:
        return "\n".join(text for p in self.pages for _, text in p.lines)


def read_back(handle: Handle, path: str, *, max_pages: int = 10_000) -> ReadBack:
    """View ``path`` from the top, following every hint to continue, as a model would."""
    pages: list[Page] = []
    command: dict[str, object] = {"command": "view", "path": path}
    for _ in range(max_pages):
        outcome = handle.call(command)
        if outcome.kind != "ok":
            return ReadBack(pages, f"view {command} gave {outcome.show()}")
        found = page(outcome.text)
        if found is None:
            return ReadBack(
                pages, f"view of {path} is not a numbered file view: {outcome.text[:200]!r}"
            )
        pages.append(found)
        if found.hint is None:
            return ReadBack(pages)
        command = {"command": "view", "path": path, "view_range": list(found.hint)}
    return ReadBack(pages, f"more than {max_pages} pages: the hints do not reach the end")


def snapshot(handle: Handle) -> dict[str, str]:
    """Everything the backend shows below /memories: each listed path (directories ending in
    '/') and, for a file, its view. Directory sizes are left out."""
    seen: dict[str, str] = {}
    todo = [ROOT]
    while todo:
        directory = todo.pop()
        outcome = handle.call({"command": "view", "path": directory})
        entries = listing(outcome.text) if outcome.kind == "ok" else None
        if entries is None:
            seen[directory + "/"] = outcome.show()
            continue
        for size, path in entries[1:]:
            if path.endswith("/"):
                seen.setdefault(path, "<dir>")
                if path.rstrip("/").count("/") - directory.count("/") >= 2:
                    todo.append(path.rstrip("/"))  # its children were not listed
            else:
                seen[path] = f"{size}\n" + handle.call({"command": "view", "path": path}).show()
    return dict(sorted(seen.items()))


def files(handle: Handle) -> dict[str, str]:
    """path -> content of every file the backend shows (each read through its hints)."""
    out: dict[str, str] = {}
    for path in snapshot(handle):
        if not path.endswith("/"):
            out[path] = read_back(handle, path).content()
    return out


__all__ = [
    "ROOT",
    "Page",
    "ReadBack",
    "files",
    "listing",
    "mask_directory_sizes",
    "page",
    "read_back",
    "snapshot",
]
