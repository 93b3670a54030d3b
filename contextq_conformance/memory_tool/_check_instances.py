"""``parity.*`` and ``persistence.*``: instances of one backend against each other (sync
against async; a second instance, and one made after the first is closed)."""

from __future__ import annotations

from typing import Final

from contextq_conformance.memory_tool._calls import Command, Handle, shown
from contextq_conformance.memory_tool._context import Context, NotRun, Verdict
from contextq_conformance.memory_tool._oracle import Oracle
from contextq_conformance.memory_tool._scenarios import SCRIPTS, diff, normalise


def check_parity(ctx: Context) -> Verdict:
    if ctx.factory is None or ctx.async_factory is None:
        raise NotRun("needs both a sync and an async factory")
    for rule_id, steps in SCRIPTS.items():
        sync = ctx.fresh(asynchronous=False)
        sync_outcomes = [sync.call(command) for command, _ in steps]
        asynchronous = ctx.fresh(asynchronous=True)
        for number, ((command, _), want) in enumerate(zip(steps, sync_outcomes, strict=True), 1):
            got = asynchronous.call(command)
            a = normalise(want, None, ctx.declarations)
            b = normalise(got, None, ctx.declarations)
            if a != b:
                return Verdict(
                    [
                        f"the script of {rule_id}, step {number}: {shown(command)}",
                        *diff(a, b, a="sync", b="async"),
                    ]
                )
    return Verdict()


def _compare(
    verdict: Verdict, oracle: Oracle, who: str, outcome_text: str, command: Command
) -> None:
    expected = oracle.call(command)
    if expected.show() != outcome_text:
        verdict.problems += [
            f"{who}: {shown(command)} is not what was written",
            *diff(expected.show(), outcome_text),
        ]


def check_shared(ctx: Context) -> Verdict:
    verdict = Verdict()
    one = ctx.fresh(name="instance A")
    two = ctx.instance(name="instance B")
    a_file, b_file = "/memories/shared/from-a.md", "/memories/shared/from-b.md"
    with Oracle() as oracle:
        steps: list[tuple[str, Handle, Command]] = [
            ("A", one, {"command": "create", "path": a_file, "file_text": "written by A\n"}),
            (
                "B",
                two,
                {"command": "str_replace", "path": a_file, "old_str": "A", "new_str": "A, B"},
            ),
            ("B", two, {"command": "create", "path": b_file, "file_text": "written by B\n"}),
            ("A", one, {"command": "insert", "path": b_file, "insert_line": 1, "insert_text": "A"}),
        ]
        for who, handle, command in steps:
            done = handle.call(command)
            if done.kind != "ok":
                verdict.problems.append(f"{who}: {shown(command)} gave {done.show()}")
                return verdict
            oracle.call(command)
            for reader, other in (("A", one), ("B", two)):
                for path in (a_file, b_file):
                    view: Command = {"command": "view", "path": path}
                    if oracle.call(view).kind == "ok":
                        _compare(
                            verdict, oracle, f"read by {reader}", other.call(view).show(), view
                        )
            if verdict.problems:
                return verdict
        gone = two.call({"command": "delete", "path": a_file})
        still = one.call({"command": "view", "path": a_file})
        if gone.kind == "ok" and still.kind != "error":
            verdict.problems.append(f"B deleted {a_file}, and A still reads it: {still.show()}")
    return verdict


def check_reopen(ctx: Context) -> Verdict:
    verdict = Verdict()
    first = ctx.fresh(name="first instance")
    command = {
        "command": "create",
        "path": "/memories/kept/over-a-restart.md",
        "file_text": "kept\n",
    }
    done = first.call(command)
    if done.kind != "ok":
        return Verdict([f"{shown(command)} gave {done.show()}"])
    first.close()
    later = ctx.instance(name="instance made after the first was closed")
    view: Command = {"command": "view", "path": "/memories/kept/over-a-restart.md"}
    with Oracle() as oracle:
        oracle.call(command)
        _compare(verdict, oracle, "the later instance", later.call(view).show(), view)
    return verdict


CHECKS: Final = {
    "parity.sync-async": check_parity,
    "persistence.shared": check_shared,
    "persistence.reopen": check_reopen,
}

__all__ = ["CHECKS"]
