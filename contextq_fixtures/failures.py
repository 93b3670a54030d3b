"""A failure the scripted model caused, reported once and cause first.

When a test fails because the scripted model answered a problem (a used-up script, a drift
from a recording, a turn the request forbids), the exception is the SDK's 500 and its
traceback runs through the SDK's and the fakes' frames: a hundred lines between the test
and the one sentence that says what happened. The report then opens with the model's
problems, shows the test's own frames only, and the teardown does not repeat it.
"""

from __future__ import annotations

import dataclasses
import sys
import sysconfig
from pathlib import Path
from typing import Any

# the report's parts: pytest has no public types for them
from _pytest._code.code import ExceptionChainRepr, ReprEntry

#: Packages whose frames say nothing about a test that the model failed.
LIBRARY_PACKAGES = ("anthropic", "httpx2", "httpcore", "fake_anthropic", "anyio")


def _message(error: BaseException) -> str | None:
    body = getattr(error, "body", None)
    inner = body.get("error") if isinstance(body, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else None
    return message if isinstance(message, str) else None


def caused_by_model(error: BaseException, problems: list[str]) -> bool:
    """Whether ``error`` is the SDK raising the answer to one of the model's ``problems``
    (each ``request N: <what>``, answered as ``<model>: <what>``)."""
    message = _message(error)
    if message is None:
        return False
    return any(p.partition(": ")[2] and p.partition(": ")[2] in message for p in problems)


def _library_dirs() -> list[Path]:
    found = [Path(sysconfig.get_paths()["stdlib"]).resolve()]
    for name in LIBRARY_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            found.append(Path(path).resolve().parent)
    return found


def _is_library(entry: Any, dirs: list[Path]) -> bool:
    where = getattr(getattr(entry, "reprfileloc", None), "path", None)
    if not isinstance(where, str):
        return False
    path = Path(where).resolve()
    return any(path.is_relative_to(d) for d in dirs)


def trim_library_frames(longrepr: Any) -> None:
    """Drop the libraries' frames from pytest's report of the failure, keeping the test's
    own; the frame that raised keeps only its exception lines. (Filtering the traceback
    beforehand does not work: pytest cuts it at the test's frame by rebuilding it from the
    raw traceback.)"""
    dirs = _library_dirs()
    for traceback, _crash, _description in getattr(longrepr, "chain", ()):
        entries = list(traceback.reprentries)
        if len(entries) < 2:
            continue
        *before, last = entries
        kept = [e for e in before if not _is_library(e, dirs)]
        if _is_library(last, dirs) and isinstance(last, ReprEntry):
            raised = [line for line in last.lines if line.startswith("E ")]
            last = dataclasses.replace(
                last, lines=raised, reprfuncargs=None, reprlocals=None, style="short"
            )
        traceback.reprentries = [*kept, last]


def cause_first(problems: list[str], advice: str | None, longrepr: Any) -> Any:
    """The failure's report with the model's problems first: their lines open the first
    traceback (they print before the test's frames), and the first one is the crash
    message, which the short summary shows. The report stays pytest's own kind, so
    pytest-xdist carries it to the controller as it carries any other."""
    first, *rest = problems
    lines = [f"scripted model problems: {first}".replace("\n", "\n  ")]
    lines += [f"- {p}".replace("\n", "\n  ") for p in rest]
    if advice:
        lines.append(advice)
    text = "\n".join(lines).splitlines()
    chain = getattr(longrepr, "chain", None)
    if not chain or not isinstance(longrepr, ExceptionChainRepr):
        return "\n".join([*text, "", str(longrepr)])
    opening = ReprEntry([*text, ""], None, None, None, "short")
    first_traceback = chain[0][0]
    first_traceback.reprentries = [opening, *first_traceback.reprentries]
    summary = f"scripted model problems: {first.splitlines()[0]}"
    *earlier, (last_traceback, last_crash, last_description) = longrepr.chain
    if last_crash is not None:
        last_crash = dataclasses.replace(last_crash, message=summary)
    rebuilt = ExceptionChainRepr([*earlier, (last_traceback, last_crash, last_description)])
    rebuilt.sections = list(longrepr.sections)
    return rebuilt
