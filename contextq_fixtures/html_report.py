"""One self-contained HTML page per failing agent test: what the model and the agent said
turn by turn, each memory command with its result and the ContextQ requests it caused,
the memory files before and after the test with the changes as diffs, and the failure.

Built from what the fixtures leave on the test item (the fake, the scripted model, the
memory commands, the files before the test); written by the plugin for
``--contextq-report=DIR``. Loaded only when a report is written, never at start-up.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Json = dict[str, Any]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\[\]-]+")
_LONGEST_NAME = 150
_DIGEST_CHARS = 10


@dataclass(frozen=True)
class MemoryCall:
    """One command the memory tool fixture ran: as the model sent it, what it answered,
    and the journal numbers of the ContextQ requests it made."""

    command: Any
    result: str
    is_error: bool
    requests: tuple[int, ...]


@dataclass
class Block:
    kind: str  # text, thinking, tool_use, tool_result, server_tool, mcp, compaction, other
    text: str = ""
    name: str = ""
    detail: str = ""  # a call's input, as JSON
    result: str | None = None  # a call's result, paired with it
    is_error: bool = False


@dataclass
class Turn:
    role: str  # user, assistant, error, note
    label: str
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added, changed, removed, same
    diff: tuple[str, ...]
    content: str


def file_name(nodeid: str) -> str:
    """A file name for a test id, the same in every run: a readable part safe on every OS
    (``tests/test_a.py::test_b[x]`` gives ``tests.test_a.py--test_b[x]``) and a digest of
    the whole id, since the readable part alone is the same for ``[a/b]`` and ``[a.b]``,
    or ``[x::y]`` and ``[x--y]``."""
    readable = nodeid.replace("::", "--").replace("/", ".")
    safe = _UNSAFE.sub("-", readable).strip("-")[:_LONGEST_NAME]
    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{safe}-{digest}.html"


def memory_files(fake: Any) -> dict[str, str]:
    """Every tenant's memory files, ``{"<workspace>: <path>": content}``, each path as a
    tool pinned to its workspace shows it (the tenant named too when there are several)."""
    tenants = fake.tenants()
    out: dict[str, str] = {}
    for tenant in tenants:
        owner = "" if len(tenants) == 1 else f"[{tenant.name}] "
        for path, content in fake.memory_files(tenant).items():
            workspace, _, rest = path.removeprefix("/memories/").partition("/")
            out[f"{owner}{workspace}: /memories/{rest}"] = content
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[FileChange]:
    out = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            out.append(FileChange(path, "same", (), new or ""))
            continue
        status = "added" if old is None else "removed" if new is None else "changed"
        diff = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"before {path}",
            tofile=f"after {path}",
        )
        out.append(FileChange(path, status, tuple(line.rstrip("\n") for line in diff), new or ""))
    return out


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict):
                parts.append(str(b.get("text", "")) if b.get("type") == "text" else _json(b))
        return "\n".join(parts)
    return _json(content)


def _assistant_blocks(content: Iterable[Json], results: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    for b in content:
        kind = b.get("type")
        if kind == "text":
            blocks.append(Block("text", text=str(b.get("text", ""))))
        elif kind == "thinking":
            blocks.append(Block("thinking", text=str(b.get("thinking", ""))))
        elif kind == "redacted_thinking":
            blocks.append(Block("thinking", text="(redacted thinking)"))
        elif kind == "compaction":
            blocks.append(Block("compaction", text=_text_of(b.get("content"))))
        elif kind == "tool_use":
            paired = results.get(str(b.get("id")))
            blocks.append(
                Block(
                    "tool_use",
                    name=str(b.get("name")),
                    detail=_json(b.get("input")),
                    result=None if paired is None else paired.content,
                    is_error=bool(paired is not None and paired.is_error),
                )
            )
        elif kind in ("server_tool_use", "mcp_tool_use"):
            name = str(b.get("name"))
            if kind == "mcp_tool_use":
                name = f"{b.get('server_name')}.{name}"
            blocks.append(
                Block(
                    "mcp" if kind == "mcp_tool_use" else "server_tool",
                    name=name,
                    detail=_json(b.get("input")),
                )
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result") and blocks:
            blocks[-1].result = _text_of(b.get("content"))
            blocks[-1].is_error = b.get("is_error") is True
        else:
            blocks.append(Block("other", text=_json(b)))
    return blocks


def conversation(records: Sequence[Any]) -> list[Turn]:
    """The conversation turn by turn, each tool call shown with its result."""
    results = {t.tool_use_id: t for r in records for t in r.tool_results}
    calls: set[str] = set()
    turns: list[Turn] = []
    for r in records:
        for message in r.new_messages:
            role = str(message.get("role"))
            content = message.get("content")
            items = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks = []
            for b in items if isinstance(items, list) else []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_result" and str(b.get("tool_use_id")) in calls:
                    continue  # shown with its call
                if role == "assistant":
                    blocks += _assistant_blocks([b], results)
                elif b.get("type") == "text":
                    blocks.append(Block("text", text=str(b.get("text", ""))))
                elif b.get("type") == "tool_result":
                    blocks.append(
                        Block(
                            "tool_result",
                            name=str(b.get("tool_use_id")),
                            text=_text_of(b.get("content")),
                            is_error=b.get("is_error") is True,
                        )
                    )
                else:
                    blocks.append(Block("other", text=_json(b)))
            if blocks:
                turns.append(Turn(role, f"{role} · request {r.index}", blocks))
        for edit in r.applied_edits:
            turns.append(Turn("note", f"context editing: {edit.get('type')}", []))
        if r.error is not None:
            label = "scripted error" if r.turn is not None else "refused"
            text = f"{r.error.status} {r.error.type}: {r.error.message}"
            turns.append(Turn("error", f"{label} · request {r.index}", [Block("text", text=text)]))
        elif r.response is not None and "content" in r.response:
            content = r.response["content"]
            for b in content:
                if b.get("type") == "tool_use":
                    calls.add(str(b.get("id")))
            label = f"assistant · request {r.index} · {r.response.get('stop_reason')}"
            turns.append(Turn("assistant", label, _assistant_blocks(content, results)))
        elif r.response is not None:
            turns.append(
                Turn("note", f"count_tokens · {r.response.get('input_tokens')} input tokens", [])
            )
    return turns


@functools.cache
def _template() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("contextq_fixtures", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html")


def render(
    *,
    nodeid: str,
    outcome: str,
    failure: str,
    model: Any | None,
    fake: Any | None,
    calls: Sequence[MemoryCall],
    before: dict[str, str] | None,
    problems: Sequence[str] = (),
    explored: list[Any] | tuple[Any, ...] = (),
) -> str:
    """The page, as one string with its style inline (no request leaves it)."""
    entries = list(fake.journal) if fake is not None else []
    by_number = {e.number: e for e in entries}
    after = memory_files(fake) if fake is not None else {}
    return str(
        _template().render(
            nodeid=nodeid,
            outcome=outcome,
            failure=failure,
            failed_lines=[line for line in failure.splitlines() if line.startswith("E ")],
            problems=list(problems),
            turns=conversation(model.requests) if model is not None else None,
            calls=[(c, [by_number[n] for n in c.requests if n in by_number]) for c in calls],
            command_json=_json,
            changes=changes(before or {}, after) if fake is not None else None,
            entries=entries,
            explored=[(found.summary(), found.minimal) for found in explored],
        )
    )


def well_formed(text: str) -> str:
    """``text`` as UTF-8 can hold it: each lone surrogate (a test may hand the memory tool
    one, a store may hold one from before) U+FFFD, as the fake stores such text."""
    from adapter.wire import well_formed as replaced

    return replaced(text)


def write(directory: Path, nodeid: str, page: str) -> Path:
    """Write the page whole or not at all: into a temporary file beside it, renamed over
    the page's name once written, so no reader ever finds half a page (or an empty one)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(nodeid)
    temporary = directory / f".{path.name}.{uuid.uuid4().hex}.tmp"
    try:
        with temporary.open("x", encoding="utf-8") as out:
            out.write(well_formed(page))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    return path


__all__ = [
    "MemoryCall",
    "changes",
    "conversation",
    "file_name",
    "memory_files",
    "render",
    "well_formed",
    "write",
]
