"""The command scripts of the ``results.*`` rules, and running a script on a backend and on
the oracle side by side. A script holds commands only: every expected text is the SDK's.

A step is ``(command, compare)``: a compared step must give the SDK's outcome exactly; a
set-up step (``compare=False``) must only succeed or fail as the SDK's did, so that one
changed string fails the one rule about it and not every rule that makes a file first.
"""

from __future__ import annotations

import difflib
from typing import Any, Final

from contextq_conformance.memory_tool._calls import Command, Handle, Outcome, shown
from contextq_conformance.memory_tool._oracle import Oracle
from contextq_conformance.memory_tool._views import mask_directory_sizes
from contextq_conformance.memory_tool.declarations import Declarations

Step = tuple[Command, bool]


def create(path: str, text: str, *, compare: bool = False) -> Step:
    return {"command": "create", "path": path, "file_text": text}, compare


def view(path: str, view_range: list[int] | None = None) -> Step:
    command: Command = {"command": "view", "path": path}
    if view_range is not None:
        command["view_range"] = view_range
    return command, True


def do(command: str, **args: Any) -> Step:
    return {"command": command, **args}, True


SCRIPTS: Final[dict[str, list[Step]]] = {
    "results.view-file": [
        create("/memories/notes.md", "alpha\nbeta\ngamma\ndelta\nepsilon\n"),
        view("/memories/notes.md"),
        view("/memories/notes.md", [2, 4]),
        view("/memories/notes.md", [1, -1]),
        view("/memories/notes.md", [3, -1]),
        view("/memories/notes.md", [4, 100]),
        view("/memories/notes.md", [0, 2]),
        view("/memories/notes.md", [4, 2]),
        view("/memories/notes.md", [9, 12]),
        create("/memories/dir/plain.txt", "one\r\ntwo\tcolumns\nno newline at the end"),
        view("/memories/dir/plain.txt"),
        create("/memories/empty.md", ""),
        view("/memories/empty.md"),
        create("/memories/unicode é.md", "naïve ☃\n"),
        view("/memories/unicode é.md"),
    ],
    "results.view-directory": [
        view("/memories"),
        create("/memories/a.md", "a\n"),
        create("/memories/b.txt", "bb\nbb\n"),
        create("/memories/d/x.md", "x" * 1500),
        create("/memories/d/e/y.md", "y\n"),
        create("/memories/d/e/f/z.md", "deeper than two levels\n"),
        create("/memories/d/e/f/g/w.md", "deeper still\n"),
        create("/memories/k/only.md", "k\n"),
        view("/memories"),
        view("/memories/d"),
        view("/memories/d/e"),
        view("/memories/d/e/f"),
        view("/memories/k"),
    ],
    "results.missing": [
        create("/memories/here/file.md", "present\n"),
        view("/memories/nope.md"),
        view("/memories/nodir/nope.md"),
        do("str_replace", path="/memories/nope.md", old_str="a", new_str="b"),
        do("insert", path="/memories/nope.md", insert_line=0, insert_text="x"),
        do("delete", path="/memories/nope.md"),
        do("delete", path="/memories/here/nope.md"),
        do("rename", old_path="/memories/nope.md", new_path="/memories/here/moved.md"),
        view("/memories/here"),
    ],
    "results.create": [
        create("/memories/a.md", "hello\n", compare=True),
        create("/memories/a.md", "again\n", compare=True),
        view("/memories/a.md"),
        create("/memories/new/deep/b.md", "deep\n", compare=True),
        view("/memories/new/deep/b.md"),
        create("/memories/new", "a directory\n", compare=True),
        create("/memories/blank.md", "", compare=True),
        view("/memories/blank.md"),
    ],
    "results.str-replace": [
        create("/memories/s.md", "one two\nthree two\nfour\nfive\nsix\nseven\n"),
        do("str_replace", path="/memories/s.md", old_str="four", new_str="FOUR"),
        do("str_replace", path="/memories/s.md", old_str="zzz", new_str="y"),
        do("str_replace", path="/memories/s.md", old_str="two", new_str="2"),
        view("/memories/s.md"),
        do("str_replace", path="/memories/s.md", old_str="one two\nthree", new_str="1-2\n3"),
        do("str_replace", path="/memories/s.md", old_str="six\n", new_str=""),
        view("/memories/s.md"),
        create("/memories/sd/f.md", "f\n"),
        do("str_replace", path="/memories/sd", old_str="f", new_str="g"),
    ],
    "results.insert": [
        create("/memories/i.md", "a\nb\nc\n"),
        do("insert", path="/memories/i.md", insert_line=0, insert_text="top"),
        do("insert", path="/memories/i.md", insert_line=2, insert_text="mid\n"),
        do("insert", path="/memories/i.md", insert_line=5, insert_text="end"),
        do("insert", path="/memories/i.md", insert_line=-1, insert_text="x"),
        do("insert", path="/memories/i.md", insert_line=7, insert_text="x"),
        view("/memories/i.md"),
        create("/memories/j.md", "x\ny"),
        do("insert", path="/memories/j.md", insert_line=2, insert_text="two\nlines\n"),
        view("/memories/j.md"),
    ],
    "results.delete": [
        create("/memories/del/a.md", "a\n"),
        create("/memories/del/b.md", "b\n"),
        create("/memories/del/sub/c.md", "c\n"),
        create("/memories/keep.md", "keep\n"),
        do("delete", path="/memories/del/a.md"),
        view("/memories/del"),
        do("delete", path="/memories/del"),
        view("/memories"),
        do("delete", path="/memories"),
        do("delete", path="/memories/"),
        view("/memories/keep.md"),
    ],
    "results.rename": [
        create("/memories/r/a.md", "a\n"),
        create("/memories/r/b.md", "b\n"),
        create("/memories/other.md", "other\n"),
        do("rename", old_path="/memories/r/a.md", new_path="/memories/r/c.md"),
        do("rename", old_path="/memories/r/c.md", new_path="/memories/other.md"),
        do("rename", old_path="/memories/missing.md", new_path="/memories/r/m.md"),
        do("rename", old_path="/memories", new_path="/memories/x"),
        do("rename", old_path="/memories/r", new_path="/memories/moved/r"),
        view("/memories"),
        view("/memories/moved/r/c.md"),
        do("rename", old_path="/memories/other.md", new_path="/memories/moved/r"),
        do("rename", old_path="/memories/other.md", new_path="/memories/moved/o.md"),
        view("/memories/moved"),
    ],
}


def normalise(outcome: Outcome, oracle: Oracle | None, declarations: Declarations) -> str:
    """An outcome as compared: directory sizes masked, or, where the backend declares byte
    sums, the oracle's listing given byte sums to compare them with."""
    text = outcome.show()
    if outcome.kind != "ok":
        return text
    if oracle is not None and declarations.directory_sizes == "byte-sums":
        return oracle.byte_sums(text)
    return mask_directory_sizes(text)


def diff(expected: str, actual: str, *, a: str = "SDK", b: str = "backend") -> list[str]:
    lines = difflib.unified_diff(
        expected.split("\n"), actual.split("\n"), fromfile=a, tofile=b, lineterm="", n=2
    )
    return ["    " + line for line in lines]


def run_side_by_side(
    steps: list[Step], backend: Handle, oracle: Oracle, declarations: Declarations
) -> list[str]:
    """Each step on both; the first step that differs, shown with the SDK-vs-backend diff
    (later steps would only repeat it)."""
    for number, (command, compare) in enumerate(steps, 1):
        expected = oracle.call(command)
        actual = backend.call(command)
        if compare:
            want = normalise(expected, oracle, declarations)
            got = (
                normalise(actual, None, declarations)
                if declarations.directory_sizes != "byte-sums"
                else actual.show()
            )
            same = want == got
        else:
            want, got = expected.kind, actual.kind
            same = want == got and actual.kind != "crash"
            if not same:
                want, got = expected.show(), actual.show()
        if not same:
            what = "step" if compare else "set-up step"
            return [
                f"{what} {number} of {len(steps)} differs: {shown(command)}",
                *diff(want, got),
            ]
    return []


__all__ = ["SCRIPTS", "Step", "create", "diff", "do", "normalise", "run_side_by_side", "view"]
