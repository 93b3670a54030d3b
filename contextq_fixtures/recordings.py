"""Recorded Claude runs for the ``scripted_model`` fixture, in pytest-recording's manner.

A test marked ``@pytest.mark.anthropic_recording`` gets, as ``scripted_model``, a model
replaying ``<test dir>/recordings/<module>/<test name>.json``
(``ScriptedModel.from_recording``), pytest-recording's layout, so same-named tests of two
modules never share a file;
``--anthropic-record-mode`` says when to record it instead, through the recording proxy
against the real API (``ANTHROPIC_API_KEY``, and ``ANTHROPIC_BASE_URL`` if set):

- ``none`` (default): replay only; a missing recording fails the test, naming the file
  and the option that records it (or, when the file stands where releases before 0.1
  kept it, ``recordings/<test name>.json``, saying where to move it); one that exists but
  cannot serve (no exchange, or not a recording) fails naming ``=all``;
- ``once``: record the recordings that do not exist yet, replay the others;
- ``all``: record every marked test again (re-recording after a drift).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from contextq_fixtures._extra import needs_extra

if TYPE_CHECKING:
    from fake_anthropic import ScriptedModel

RECORD_OPTION: Final = "--anthropic-record-mode"
RECORD_MODES: Final = ("none", "once", "all")
MARKER: Final = "anthropic_recording"
MARKER_OPTIONS: Final = ("path", "match")
RECORDINGS_DIR: Final = "recordings"
KEY_VARIABLE: Final = "ANTHROPIC_API_KEY"
UPSTREAM_VARIABLE: Final = "ANTHROPIC_BASE_URL"
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_.-]+")


def add_options(group: pytest.OptionGroup) -> None:
    group.addoption(
        RECORD_OPTION,
        choices=RECORD_MODES,
        default="none",
        help="for tests marked anthropic_recording: none replays "
        "recordings/<module>/<test>.json "
        "(default), once records the missing ones against the real API, all records them "
        f"all again (recording needs {KEY_VARIABLE})",
    )


def configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path=None, match='strict'): scripted_model replays the recording "
        f"<test dir>/{RECORDINGS_DIR}/<module>/<test name>.json (or path); {RECORD_OPTION} "
        "records it",
    )
    mode = config.getoption(RECORD_OPTION, default="none")
    if mode != "none" and not os.environ.get(KEY_VARIABLE):
        raise pytest.UsageError(
            f"{RECORD_OPTION}={mode} records against the real Anthropic API and needs an API "
            f"key: set {KEY_VARIABLE} (and {UPSTREAM_VARIABLE} for another endpoint), or "
            f"replay with {RECORD_OPTION}=none"
        )


def recording_name(node: pytest.Item) -> str:
    """The file name of a test's recording: its name (class-qualified), made path-safe."""
    cls = getattr(node, "cls", None)
    name = f"{cls.__name__}.{node.name}" if cls is not None else node.name
    return _UNSAFE.sub("-", name).strip("-") + ".json"


def recording_path(node: pytest.Item) -> Path:
    """``<test dir>/recordings/<module>/<test name>.json``, or the marker's ``path`` (relative
    to the test's directory)."""
    marker = node.get_closest_marker(MARKER)
    given = marker.kwargs.get("path") if marker is not None else None
    base = Path(node.path).parent
    if given is not None:
        return base / str(given)
    return base / RECORDINGS_DIR / Path(node.path).stem / recording_name(node)


def _old_recording_path(node: pytest.Item) -> Path:
    """Where a recording was kept before recordings were keyed by module."""
    return Path(node.path).parent / RECORDINGS_DIR / recording_name(node)


def _marker_options(node: pytest.Item) -> dict[str, object] | None:
    marker = node.get_closest_marker(MARKER)
    if marker is None:
        return None
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if marker.args or unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} takes the keyword options {', '.join(MARKER_OPTIONS)}; "
            f"got {marker.args!r} {unknown!r}"
        )
    return dict(marker.kwargs)


def model_for(request: pytest.FixtureRequest) -> ScriptedModel | None:
    """The replaying or recording model of a marked test; None for an unmarked one."""
    node = request.node
    assert isinstance(node, pytest.Item)
    options = _marker_options(node)
    if options is None:
        return None
    with needs_extra("scripted_model"):
        from fake_anthropic import ScriptedModel
        from fake_anthropic.record.proxy import DEFAULT_UPSTREAM

    path = recording_path(node)
    mode = request.config.getoption(RECORD_OPTION)
    if mode == "all" or (mode == "once" and not path.exists()):
        model = ScriptedModel.recorder(
            path,
            api_key=os.environ[KEY_VARIABLE],
            upstream=os.environ.get(UPSTREAM_VARIABLE) or DEFAULT_UPSTREAM,
        )

        def finish() -> None:
            model.close()
            if not _holds_exchanges(path):
                # nothing was recorded (the upstream never answered): no empty file that a
                # later --anthropic-record-mode=once would take for a recording
                path.unlink(missing_ok=True)

        request.addfinalizer(finish)
        return model
    if not path.exists():
        old = _old_recording_path(node)
        if old.exists() and options.get("path") is None:
            raise pytest.fail.Exception(
                f"the recording of {node.nodeid} is at {old}, where recordings were kept "
                f"before they were keyed by module; it is read from {path} now: move it "
                f"there (git mv {old} {path})",
                pytrace=False,
            )
        raise pytest.fail.Exception(
            f"no recording {path} for {node.nodeid}: record it once with "
            f"{RECORD_OPTION}=once ({KEY_VARIABLE} set), then commit it",
            pytrace=False,
        )
    match = options.get("match", "strict")
    if match not in ("strict", "order"):
        raise pytest.UsageError(f"@pytest.mark.{MARKER}: match is 'strict' or 'order'")
    try:
        model = ScriptedModel.from_recording(path, match="order" if match == "order" else "strict")
    except ValueError as exc:
        raise pytest.fail.Exception(
            f"{exc}; record it again with {RECORD_OPTION}=all ({KEY_VARIABLE} set)",
            pytrace=False,
        ) from None
    if model.remaining == 0:
        raise pytest.fail.Exception(
            f"the recording {path} holds no exchange, so it cannot replay {node.nodeid} (an "
            f"attempt that never reached the API?); {RECORD_OPTION}=once keeps an existing "
            f"file: record it again with {RECORD_OPTION}=all ({KEY_VARIABLE} set)",
            pytrace=False,
        )
    return model


def advice(node: pytest.Item) -> str | None:
    """For a replaying test whose model has problems: how to record it again."""
    if node.get_closest_marker(MARKER) is None:
        return None
    if node.config.getoption(RECORD_OPTION) == "all":
        return None
    return (
        f"if the agent's requests changed on purpose, record {recording_path(node)} again: "
        f"pytest {RECORD_OPTION}=all ({KEY_VARIABLE} set) {node.nodeid}"
    )


def _holds_exchanges(path: Path) -> bool:
    from fake_anthropic import load_recording

    try:
        return bool(load_recording(path))
    except (OSError, ValueError):
        return False


__all__ = [
    "MARKER",
    "RECORD_MODES",
    "RECORD_OPTION",
    "add_options",
    "advice",
    "configure",
    "model_for",
    "recording_name",
    "recording_path",
]
