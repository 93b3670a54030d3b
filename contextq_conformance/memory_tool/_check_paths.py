"""``path-safety.hostile``: every hostile form of a path, through every command, refused as
a ToolError, with storage unchanged as the instance and a second instance see it."""

from __future__ import annotations

from typing import Final

from contextq_conformance.memory_tool._calls import Command, Handle, Outcome, shown
from contextq_conformance.memory_tool._context import Context, Verdict
from contextq_conformance.memory_tool._views import snapshot

_SEED: Final = "/memories/seed/keep.md"

#: (what it is, the path): each must be refused, whatever the command.
HOSTILE: Final = (
    ("parent segment", "/memories/../x.md"),
    ("parent segments out", "/memories/a/../../x.md"),
    ("parent segment staying inside", "/memories/seed/../x.md"),
    ("current segment", "/memories/./x.md"),
    ("parent as the whole name", "/memories/.."),
    ("fullwidth full stops as '..'", "/memories/\uff0e\uff0e/x.md"),
    ("two dot leader as '..'", "/memories/\u2025/x.md"),
    ("small full stop as '.'", "/memories/\ufe52/x.md"),
    ("fullwidth full stop as '.'", "/memories/\uff0e/x.md"),
    ("percent-encoded '..'", "/memories/%2e%2e/x.md"),
    ("percent-encoded '..', upper case", "/memories/%2E%2E/x.md"),
    ("percent-encoded '..' and '/', mixed case", "/memories/%2e%2E%2fx.md"),
    ("percent-encoded slash", "/memories/a%2fb.md"),
    ("percent-encoded slash, upper case", "/memories/a%2Fb.md"),
    ("percent-encoded backslash", "/memories/a%5cb.md"),
    ("percent-encoded backslash, upper case", "/memories/a%5Cb.md"),
    ("percent-encoded NUL", "/memories/a%00b.md"),
    ("backslash parent", "/memories/..\\x.md"),
    ("backslash", "/memories/a\\b.md"),
    ("fullwidth solidus", "/memories/a\uff0fb.md"),
    ("fullwidth reverse solidus", "/memories/a\uff3cb.md"),
    ("division slash", "/memories/a\u2215b.md"),
    ("fraction slash", "/memories/a\u2044b.md"),
    ("NUL", "/memories/a\x00b.md"),
    ("line feed", "/memories/a\nb.md"),
    ("carriage return", "/memories/a\rb.md"),
    ("tab", "/memories/a\tb.md"),
    ("escape", "/memories/a\x1bb.md"),
    ("delete", "/memories/a\x7fb.md"),
    ("C1 next line", "/memories/a\x85b.md"),
    ("C1 control sequence introducer", "/memories/a\x9bb.md"),
    ("right-to-left override", "/memories/a\u202eb.md"),
    ("zero width space", "/memories/a\u200bb.md"),
    ("byte order mark", "/memories/a\ufeffb.md"),
    ("line separator", "/memories/a\u2028b.md"),
    ("/memoriesX", "/memoriesX"),
    ("below /memoriesX", "/memoriesX/y.md"),
    ("below /memories_", "/memories_/y.md"),
    ("overlong name (300 bytes)", "/memories/" + "n" * 300 + ".md"),
    ("overlong path (5000 bytes)", "/memories/" + "/".join(["d" * 49] * 100) + "/x.md"),
    ("hidden file", "/memories/.hidden.md"),
    ("hidden directory", "/memories/.git/config"),
    ("hidden directory below", "/memories/seed/.ssh/id"),
    ("fullwidth-dot hidden name", "/memories/\uff0egit/x"),
)


def _commands(path: str) -> list[Command]:
    return [
        {"command": "create", "path": path, "file_text": "hostile\n"},
        {"command": "view", "path": path},
        {"command": "str_replace", "path": path, "old_str": "keep", "new_str": "gone"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "gone"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/seed/moved.md"},
        {"command": "rename", "old_path": _SEED, "new_path": path},
    ]


def _label(command: Command, outcome: Outcome) -> str:
    """'create' (accepted), or 'view (raised KeyError)' for an answer that is no ToolError."""
    name = str(command["command"]) + (
        " to it" if command.get("new_path") not in (None, "/memories/seed/moved.md") else ""
    )
    return name if outcome.kind == "ok" else f"{name} ({outcome.text[:80]})"


def _seeded(handle: Handle) -> dict[str, str]:
    handle.call({"command": "create", "path": _SEED, "file_text": "keep\nthis\n"})
    return snapshot(handle)


def check_hostile(ctx: Context) -> Verdict:
    verdict = Verdict()
    first = ctx.fresh()
    before = _seeded(first)
    if _SEED not in before:
        verdict.problems.append(f"could not store {_SEED} to start with: {before}")
        return verdict
    let_through: list[str] = []
    for what, path in HOSTILE:
        accepted = [
            _label(command, outcome)
            for command in _commands(path)
            if (outcome := first.call(command)).kind != "error"
        ]
        after = snapshot(first)
        problem = f"not refused by {', '.join(accepted)}" if accepted else ""
        if after != before:
            gained = sorted(set(after) - set(before))
            problem += (
                ("; " if problem else "")
                + "storage changed"
                + (f" (now holds {shown(gained[:3])})" if gained else "")
            )
            first.clear()  # start the next form from the seed again
            before = _seeded(first)
        if problem:
            let_through.append(f"{what} {shown(path)[:120]}: {problem}")
    second = ctx.instance(name="second instance")
    if snapshot(second) != before:
        verdict.problems.append("a second instance sees storage changed by refused commands")
    verdict.figures = {
        "forms": len(HOSTILE),
        "forms_let_through": len(let_through),
    }
    if let_through:
        verdict.problems.insert(
            0, f"{len(let_through)} of {len(HOSTILE)} hostile forms not refused as a ToolError:"
        )
        verdict.problems[1:1] = ["  " + line for line in let_through]
    return verdict


CHECKS: Final = {"path-safety.hostile": check_hostile}

__all__ = ["CHECKS", "HOSTILE"]
