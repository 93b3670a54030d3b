"""``limits.*``: the largest file at its declared size and one byte past it (or 1 MiB when
nothing is declared, probing for the limit if that fails), and a long view read through its
hints from the top."""

from __future__ import annotations

from typing import Final

from contextq_conformance.memory_tool._calls import Handle
from contextq_conformance.memory_tool._context import Context, Verdict
from contextq_conformance.memory_tool._oracle import Oracle
from contextq_conformance.memory_tool._views import page, read_back

MIB: Final = 1024 * 1024
#: The longest file the long-view rule writes when no limit is declared.
LONG_VIEW_BYTES: Final = 200_000
_LINE: Final = 64  # bytes per line of a made text, its newline included


def text_of(size: int) -> str:
    """ASCII text of exactly ``size`` bytes, in numbered lines of 64 bytes, so that a lost or
    repeated line shows."""
    lines, rest = divmod(size, _LINE)
    body = "".join(f"line {i:08d} " + "x" * (_LINE - 15) + "\n" for i in range(lines))
    return body + "y" * rest


def _round_trip(handle: Handle, path: str, text: str) -> str:
    """'' when ``text`` is stored at ``path`` and read back whole, else what went wrong."""
    created = handle.call({"command": "create", "path": path, "file_text": text})
    if created.kind != "ok":
        return f"create of {len(text.encode())} bytes gave {created.show()[:300]}"
    back = read_back(handle, path)
    if back.problem:
        return back.problem
    expected = text.split("\n")
    if back.numbers != list(range(1, len(expected) + 1)) or back.content() != text:
        return (
            f"{len(text.encode())} bytes stored, but the views show lines "
            f"{_ranges(back.numbers)} of 1-{len(expected)}, or other text"
        )
    return ""


def _ranges(numbers: list[int]) -> str:
    if not numbers:
        return "none"
    parts, start, prev = [], numbers[0], numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}-{prev}" if start != prev else str(start))
        if n is not None:
            start = prev = n
    return ", ".join(parts)


def _probe(handle: Handle, ceiling: int) -> int:
    """The largest size a create accepts, below ``ceiling`` (refused): growing sizes, then
    halving the gap."""
    accepted, refused, size = 0, ceiling, 1024
    while size < refused:
        ok = handle.call(
            {"command": "create", "path": f"/memories/probe/{size}.md", "file_text": text_of(size)}
        )
        if ok.kind != "ok":
            refused = size
            break
        accepted, size = size, size * 2
    while refused - accepted > 1:
        middle = (accepted + refused) // 2
        ok = handle.call(
            {
                "command": "create",
                "path": f"/memories/probe/{middle}.md",
                "file_text": text_of(middle),
            }
        )
        accepted, refused = (middle, refused) if ok.kind == "ok" else (accepted, middle)
    return accepted


def check_file_size(ctx: Context) -> Verdict:
    handle = ctx.fresh()
    limit = ctx.declarations.max_file_bytes
    verdict = Verdict()
    if limit is None:
        problem = _round_trip(handle, "/memories/limits/one-mib.md", text_of(MIB))
        if problem:
            found = _probe(handle, MIB)
            verdict.problems.append(f"no limit is declared, and a 1 MiB file failed: {problem}")
            verdict.notes.append(f"found by probing: the largest file stored is {found} bytes")
            verdict.figures["found_max_file_bytes"] = found
        return verdict
    problem = _round_trip(handle, "/memories/limits/at.md", text_of(limit))
    if problem:
        verdict.problems.append(f"at the declared limit ({limit} bytes): {problem}")
    over = handle.call(
        {"command": "create", "path": "/memories/limits/over.md", "file_text": text_of(limit + 1)}
    )
    if over.kind != "error":
        verdict.problems.append(
            f"one byte over the declared limit ({limit + 1} bytes) was not refused as a "
            f"ToolError: {over.show()[:300]}"
        )
    stored = handle.call({"command": "view", "path": "/memories/limits/over.md"})
    if over.kind == "error" and stored.kind == "ok":
        verdict.problems.append("the file refused for its size was stored all the same")
    return verdict


def check_long_view(ctx: Context) -> Verdict:
    handle = ctx.fresh()
    declared = ctx.declarations.max_view_chars
    size = min(ctx.declarations.max_file_bytes or LONG_VIEW_BYTES, LONG_VIEW_BYTES)
    if declared is not None:
        size = min(ctx.declarations.max_file_bytes or 4 * declared, 4 * declared)
    text = text_of(size - size % _LINE)
    path = "/memories/limits/long.md"
    verdict = Verdict(figures={"file_bytes": len(text)})
    created = handle.call({"command": "create", "path": path, "file_text": text})
    if created.kind != "ok":
        verdict.problems.append(f"create of {len(text)} bytes gave {created.show()[:300]}")
        return verdict
    with Oracle() as oracle:
        oracle.call({"command": "create", "path": path, "file_text": text})
        whole = oracle.call({"command": "view", "path": path})
    sdk = page(whole.text)
    assert sdk is not None, whole  # the oracle's own view
    back = read_back(handle, path)
    if back.problem:
        verdict.problems.append(back.problem)
        return verdict
    verdict.figures["pages"] = len(back.pages)
    if len(back.pages) == 1:
        if back.pages[0].text != whole.text:
            verdict.problems.append("a view not cut is not the SDK's whole view")
        if declared is not None and len(whole.text) > declared:
            verdict.problems.append(
                f"a view of {len(whole.text)} characters was not cut at the declared "
                f"max_view_chars ({declared})"
            )
        return verdict
    expected = dict(sdk.lines)
    numbers = back.numbers
    if sorted(numbers) != list(range(1, len(expected) + 1)) or len(set(numbers)) != len(numbers):
        verdict.problems.append(
            f"following the hints from the top shows lines {_ranges(numbers)}, not every "
            f"line of 1-{len(expected)} once"
        )
    wrong = [n for p in back.pages for n, line in p.lines if expected.get(n) != line]
    if wrong:
        verdict.problems.append(f"lines {_ranges(wrong[:20])} are not the SDK's lines")
    if any(p.header != sdk.header for p in back.pages):
        verdict.problems.append("a page's header is not the SDK's")
    longest = max(len(_numbered_part(p.text)) for p in back.pages)
    verdict.figures["longest_page_chars"] = longest
    if declared is None:
        verdict.notes.append(f"found: views are cut at about {longest} characters")
    else:
        for p in back.pages[:-1]:
            body = _numbered_part(p.text)
            following = f"{p.lines[-1][0] + 1:>6}\t{expected.get(p.lines[-1][0] + 1, '')}"
            if len(body) > declared or len(body) + 1 + len(following) <= declared:
                verdict.problems.append(
                    f"a page of {len(body)} characters ends at line {p.lines[-1][0]}: not cut "
                    f"at the declared max_view_chars ({declared})"
                )
                break
    return verdict


def _numbered_part(text: str) -> str:
    """A page without the hint after its numbered lines."""
    kept = []
    for i, line in enumerate(text.split("\n")):
        if i > 0 and not line.lstrip(" ")[:1].isdigit():
            break
        kept.append(line)
    return "\n".join(kept)


CHECKS: Final = {"limits.file-size": check_file_size, "limits.long-view": check_long_view}

__all__ = ["CHECKS", "text_of"]
