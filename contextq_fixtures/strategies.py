"""Hypothesis strategies for downstream property tests of memory integrations."""

from __future__ import annotations

from typing import Any

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as exc:
    raise ModuleNotFoundError(
        f"contextq_fixtures.strategies needs hypothesis ({exc.name} is not installed): "
        "pip install 'contextq-memory-tool[pytest]'",
        name=exc.name,
    ) from None

from adapter.paths import MAX_DEPTH, MAX_NAME_BYTES, MAX_PATH_BYTES, ROOT

# No controls (C0, DEL, C1), no format characters (bidi controls, zero-width ones: Cf), no
# line or paragraph separators: the path rules refuse them all.
_NAME_ALPHABET = st.characters(
    codec="utf-8",
    exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"),
    exclude_characters="/\\%",
)


def memory_names() -> st.SearchStrategy[str]:
    """One safe path name: no '/', '\\', '%', control or format characters, not hidden,
    not '.'."""
    return (
        st.text(_NAME_ALPHABET, min_size=1, max_size=24)
        .map(str.strip)
        .filter(lambda n: bool(n) and not n.startswith(".") and len(n.encode()) <= MAX_NAME_BYTES)
    )


def memory_paths(max_depth: int = 4) -> st.SearchStrategy[str]:
    """Valid memory file paths under ``/memories`` that every safety rule accepts."""
    return (
        st.lists(memory_names(), min_size=1, max_size=min(max_depth, MAX_DEPTH))
        .map(lambda names: ROOT + "/" + "/".join(names))
        .filter(lambda p: len(p.encode()) <= MAX_PATH_BYTES)
    )


def hostile_memory_paths() -> st.SearchStrategy[str]:
    """Paths a memory backend must refuse: escapes, encodings, control and invisible format
    characters, hidden names, wrong roots, oversized names and paths."""
    name = memory_names()
    attacks = st.sampled_from(
        [
            "..",
            ".",
            ".hidden",
            "a\\b",
            "a\x00b",
            "a\nb",
            "a\x9bb",  # C1: CSI
            "a\u202eb",  # a bidi override
            "a\u200bb",  # a zero-width space
            "a\u00adb",  # a soft hyphen (format, invisible)
            "%2e%2e",
            "%2F",
            "%5c",
            "%2E",
        ]
    )
    inside = st.tuples(st.lists(name, max_size=2), attacks, st.lists(name, max_size=2)).map(
        lambda t: ROOT + "/" + "/".join([*t[0], t[1], *t[2]])
    )
    return st.one_of(
        inside,
        name.map(lambda n: "/" + n.replace("memories", "mem")),
        name.map(lambda n: ROOT + n),
        st.just(ROOT + "/a//b"),
        st.just(ROOT + "/" + "n" * (MAX_NAME_BYTES + 1)),
        st.just(ROOT + "/" + "/".join(["d"] * (MAX_DEPTH + 1))),
        st.just(ROOT + "/" + "a/" * (MAX_PATH_BYTES // 2) + "b"),
    )


def _text() -> st.SearchStrategy[str]:
    line = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=30)
    return st.lists(line, max_size=5).map("\n".join)


def memory_commands(
    paths: st.SearchStrategy[str] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """Inputs of the memory tool's six commands (the ``input`` of a ``memory`` tool_use)."""
    p = paths if paths is not None else memory_paths()
    return st.one_of(
        st.builds(lambda path: {"command": "view", "path": path}, p),
        st.builds(
            lambda path, r: {"command": "view", "path": path, "view_range": r},
            p,
            st.tuples(st.integers(1, 20), st.integers(-1, 40)).map(list),
        ),
        st.builds(lambda path, t: {"command": "create", "path": path, "file_text": t}, p, _text()),
        st.builds(
            lambda path, a, b: {"command": "str_replace", "path": path, "old_str": a, "new_str": b},
            p,
            _text().filter(bool),
            _text(),
        ),
        st.builds(
            lambda path, n, t: {
                "command": "insert",
                "path": path,
                "insert_line": n,
                "insert_text": t,
            },
            p,
            st.integers(0, 10),
            _text(),
        ),
        st.builds(lambda path: {"command": "delete", "path": path}, p),
        st.builds(lambda a, b: {"command": "rename", "old_path": a, "new_path": b}, p, p),
    )


__all__ = ["hostile_memory_paths", "memory_commands", "memory_names", "memory_paths"]
