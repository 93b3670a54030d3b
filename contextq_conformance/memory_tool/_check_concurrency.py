"""``concurrency.*``: several instances in threads, seeded so that a failure can be run
again (the seed is in the report): random commands, one path created by all at once, and
str_replace edits of one file, whose lost updates are counted."""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable
from typing import Final

from contextq_conformance.memory_tool._calls import Command, CommandTimeout, Handle, shown
from contextq_conformance.memory_tool._context import Context, Verdict
from contextq_conformance.memory_tool._views import files, snapshot

#: Few names, so that commands of different instances meet on them.
_PATHS: Final = (
    "/memories/a.md",
    "/memories/b.md",
    "/memories/d/x.md",
    "/memories/d/y.md",
    "/memories/e/x.md",
    "/memories/d",
    "/memories/e",
    "/memories/d/x.md/z.md",
)


def _in_threads(jobs: list[Callable[[], None]], timeout: float) -> list[str]:
    """Run the jobs at once; what each raised (a timeout, a crash of the kit's own)."""
    errors: list[str] = []
    start = threading.Barrier(len(jobs))

    def run(job: Callable[[], None]) -> None:
        try:
            start.wait(timeout)
            job()
        except CommandTimeout as exc:
            errors.append(f"a command timed out: {exc}")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout * 50)
        if thread.is_alive():
            errors.append("a thread did not finish")
    return errors


def _random_command(rng: random.Random, token: str) -> Command:
    path, other = rng.choice(_PATHS), rng.choice(_PATHS)
    kind = rng.choice(("create", "create", "rename", "rename", "delete", "str_replace", "view"))
    if kind == "create":
        return {"command": "create", "path": path, "file_text": f"{token}\n"}
    if kind == "rename":
        return {"command": "rename", "old_path": path, "new_path": other}
    if kind == "str_replace":
        return {"command": "str_replace", "path": path, "old_str": "t", "new_str": f"{token}-"}
    return {"command": kind, "path": path}


def _inconsistencies(stored: dict[str, str], listed: set[str]) -> list[str]:
    out = []
    by_content: dict[str, list[str]] = {}
    for path, content in stored.items():
        by_content.setdefault(content, []).append(path)
    out += [f"one file at two paths {paths}" for paths in by_content.values() if len(paths) > 1]
    out += [f"{p} is a file and a directory" for p in listed if p + "/" in listed]
    return out


def check_consistent(ctx: Context) -> Verdict:
    sizes = ctx.sizes
    handles = [ctx.fresh(name="instance 1")]
    handles += [ctx.instance(name=f"instance {i + 1}") for i in range(1, sizes.instances)]
    verdict = Verdict(figures={"seed": ctx.seed, "instances": sizes.instances})
    tokens = itertools.count()
    token_lock = threading.Lock()
    crashes: list[str] = []

    def worker(handle: Handle, rng: random.Random) -> Callable[[], None]:
        def job() -> None:
            for _ in range(sizes.commands):
                with token_lock:
                    token = f"t{next(tokens)}"
                command = _random_command(rng, token)
                outcome = handle.call(command)
                if outcome.kind == "crash":  # the results rules judge these; counted here
                    crashes.append(f"{shown(command)} raised {outcome.text}")

        return job

    for round_ in range(sizes.rounds):
        rngs = [random.Random(f"{ctx.seed}-{round_}-{i}") for i in range(len(handles))]
        errors = _in_threads(
            [worker(h, r) for h, r in zip(handles, rngs, strict=True)], ctx.timeout
        )
        listed = set(snapshot(handles[0]))
        found = errors + _inconsistencies(files(handles[0]), listed)
        if found:
            verdict.problems += [f"after round {round_ + 1} (seed {ctx.seed}):", *found]
            break
    verdict.figures["crashes"] = len(crashes)
    if crashes:
        verdict.notes.append(f"{len(crashes)} command(s) raised other than ToolError: {crashes[0]}")
    return verdict


def check_one_create(ctx: Context) -> Verdict:
    sizes = ctx.sizes
    handles = [ctx.fresh(name="instance 1")]
    handles += [ctx.instance(name=f"instance {i + 1}") for i in range(1, sizes.instances)]
    back_off = ctx.declarations.creates_may_all_back_off
    verdict = Verdict(figures={"seed": ctx.seed, "rounds": sizes.rounds * 3})
    for round_ in range(sizes.rounds * 3):
        path = f"/memories/race/{round_}.md"
        winners: list[int] = []

        def job(
            i: int, handle: Handle, path: str = path, winners: list[int] = winners
        ) -> Callable[[], None]:
            def create() -> None:
                made = handle.call({"command": "create", "path": path, "file_text": f"by {i}\n"})
                if made.kind == "ok":
                    winners.append(i)
                elif made.kind == "crash":
                    raise RuntimeError(f"{handle.name} raised {made.text}")

            return create

        errors = _in_threads([job(i, h) for i, h in enumerate(handles)], ctx.timeout)
        stored = handles[0].call({"command": "view", "path": path})
        allowed = {0, 1} if back_off else {1}
        if errors or len(winners) not in allowed:
            verdict.problems += [
                *errors,
                f"{len(winners)} of {len(handles)} concurrent creates of {path} succeeded",
            ]
        elif winners and f"by {winners[0]}" not in stored.text:
            verdict.problems.append(f"{path} does not hold its one winner's text: {stored.show()}")
        elif not winners and stored.kind == "ok":
            verdict.problems.append(f"every create of {path} backed off, yet it exists")
        if verdict.problems:
            break
    return verdict


def check_lost_updates(ctx: Context) -> Verdict:
    sizes = ctx.sizes
    handles = [ctx.fresh(name="instance 1")]
    handles += [ctx.instance(name=f"instance {i + 1}") for i in range(1, sizes.instances)]
    per = max(sizes.commands // 3, 1)
    path = "/memories/edits.md"
    markers = [[f"m-{i:02d}-{j:03d}" for j in range(per)] for i in range(len(handles))]
    text = "".join(f"{m}\n" for row in markers for m in row)
    made = handles[0].call({"command": "create", "path": path, "file_text": text})
    if made.kind != "ok":
        return Verdict([f"create of {path} gave {made.show()}"])
    done: list[str] = []

    def job(handle: Handle, row: list[str]) -> Callable[[], None]:
        def edit() -> None:
            for marker in row:
                out = handle.call(
                    {
                        "command": "str_replace",
                        "path": path,
                        "old_str": marker,
                        "new_str": f"done{marker}",
                    }
                )
                if out.kind == "ok":
                    done.append(marker)
                elif out.kind == "crash":
                    raise RuntimeError(f"{handle.name} raised {out.text}")

        return edit

    errors = _in_threads(
        [job(h, row) for h, row in zip(handles, markers, strict=True)], ctx.timeout
    )
    final = files(handles[0]).get(path, "")
    lost = [m for m in done if f"done{m}" not in final]
    verdict = Verdict(
        figures={"edits": len(markers) * per, "succeeded": len(done), "lost": len(lost)}
    )
    verdict.notes.append(f"{len(lost)} of {len(done)} str_replace updates reported done were lost")
    verdict.problems += errors
    if lost:
        verdict.problems.append(
            f"{len(lost)} of {len(done)} successful str_replace updates were lost "
            f"(e.g. {', '.join(lost[:5])})"
        )
    return verdict


CHECKS: Final = {
    "concurrency.consistent": check_consistent,
    "concurrency.one-create-wins": check_one_create,
    "concurrency.lost-updates": check_lost_updates,
}

__all__ = ["CHECKS"]
