"""The memory tool's path rules at their edges: each limit accepted exactly at its value and
refused one past it with its own sentence, the ``/memories`` prefix for short paths, and
the exact reason each unsafe path is refused for."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.lib.tools import ToolError

from adapter import ContextQMemoryTool
from adapter.paths import (
    MAX_DEPTH,
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    ROOT,
    decode_external_id,
    external_id,
    locate,
    segments,
)
from fake_contextq import FakeContextQ, Tenant


@pytest.fixture
def tool(fake: FakeContextQ, tenant: Tenant, key: str) -> ContextQMemoryTool:
    fake.create_workspace(tenant, "acme")
    return ContextQMemoryTool(key, http_client=fake.client(), workspace="acme")


def call(tool: ContextQMemoryTool, command: str, **kw: Any) -> str:
    result = tool.call({"command": command, **kw})
    assert isinstance(result, str)
    return result


def refusal(path: str) -> str:
    with pytest.raises(ToolError) as caught:
        segments(path)
    return str(caught.value)


def path_of(*names: str) -> str:
    return "/".join([ROOT, *names])


# ----- the limits: accepted at the value, refused one past it -------------------------------


def test_the_limits_are_the_documented_ones() -> None:
    assert (ROOT, MAX_NAME_BYTES, MAX_PATH_BYTES, MAX_DEPTH) == ("/memories", 128, 240, 16)


def test_a_name_of_max_name_bytes_is_stored_and_one_byte_more_is_refused(
    tool: ContextQMemoryTool,
) -> None:
    longest = path_of("n" * 128)
    call(tool, "create", path=longest, file_text="edge\n")
    assert "edge" in call(tool, "view", path=longest)
    too_long = path_of("n" * 129)
    with pytest.raises(ToolError) as caught:
        call(tool, "create", path=too_long, file_text="x")
    assert str(caught.value) == f"Path {too_long} has a name longer than 128 bytes."


def test_names_are_measured_in_utf8_bytes_not_characters() -> None:
    assert segments(path_of("é" * 64)) == ("é" * 64,)  # 128 bytes
    over = path_of("é" * 65)  # 65 characters, 130 bytes
    assert refusal(over) == f"Path {over} has a name longer than 128 bytes."


def test_a_path_of_max_path_bytes_is_stored_and_one_byte_more_is_refused(
    tool: ContextQMemoryTool,
) -> None:
    longest = path_of("a" * 100, "b" * 100, "c" * 28)  # 3 levels, no name over the limit
    assert len(longest.encode()) == 240
    call(tool, "create", path=longest, file_text="edge\n")
    assert "edge" in call(tool, "view", path=longest)
    too_long = path_of("a" * 100, "b" * 100, "c" * 29)  # over-long, but only 3 deep
    with pytest.raises(ToolError) as caught:
        call(tool, "create", path=too_long, file_text="x")
    assert str(caught.value) == f"Path {too_long} is longer than 240 bytes."


def test_path_length_counts_utf8_bytes() -> None:
    fits = path_of("é" * 50, "é" * 50, "é" * 15)  # 10 + 100 + 1 + 100 + 1 + 30 = 242 bytes
    assert refusal(fits) == f"Path {fits} is longer than 240 bytes."
    assert segments(path_of("é" * 50, "é" * 50, "é" * 14)) == ("é" * 50, "é" * 50, "é" * 14)


def test_a_path_max_depth_levels_deep_is_stored_and_one_more_is_refused(
    tool: ContextQMemoryTool,
) -> None:
    deepest = path_of(*["d"] * 15, "f.md")
    assert len(segments(deepest)) == 16
    call(tool, "create", path=deepest, file_text="deep\n")
    assert "deep" in call(tool, "view", path=deepest)
    too_deep = path_of(*["d"] * 16, "f.md")
    with pytest.raises(ToolError) as caught:
        call(tool, "create", path=too_deep, file_text="x")
    assert str(caught.value) == f"Path {too_deep} is more than 16 levels deep."


def test_a_path_both_too_long_and_too_deep_is_reported_as_too_long() -> None:
    both = path_of(*["d" * 13] * 17)
    assert refusal(both) == f"Path {both} is longer than 240 bytes."


# ----- the /memories prefix ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/",
        "/tmp",
        "/memorie",
        "memories/a",
        "/abcdefgh/x",
        "/memoriesx",
        "/memories_/a",
        "x/memories",
    ],
)
def test_a_path_outside_memories_is_refused_with_the_sdk_sentence(path: str) -> None:
    assert refusal(path) == f"Path must start with /memories, got: {path}"


def test_the_tool_refuses_a_short_path_outside_memories(tool: ContextQMemoryTool) -> None:
    for path in ("/", "/tmp", "/abcdefgh/x"):
        with pytest.raises(ToolError) as caught:
            call(tool, "view", path=path)
        assert str(caught.value) == f"Path must start with /memories, got: {path}"


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("/memories", ()),
        ("/memories/", ()),
        ("/memories/a", ("a",)),
        ("/memories/a/", ("a",)),
        ("/memories/a/b.md", ("a", "b.md")),
        ("/memories/a..b/c.d", ("a..b", "c.d")),
        ("/memories/%41", ("%41",)),
    ],
)
def test_safe_paths_give_their_names(path: str, names: tuple[str, ...]) -> None:
    assert segments(path) == names


# ----- each unsafe path refused for its own reason -----------------------------------------


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/..", "would escape /memories directory"),
        ("/memories/a/../../x", "would escape /memories directory"),
        ("/memories/a/./../../x", "would escape /memories directory"),
        ("/memories/a//../../x", "would escape /memories directory"),
        ("/memories/a/..", "has a '..' segment; write the path without it."),
        ("/memories/a/../b", "has a '..' segment; write the path without it."),
        ("/memories/./a", "has a '.' segment; write the path without it."),
        ("/memories/a//b", "has an empty name ('//')."),
        ("/memories/a/.git/x", "names a hidden file or directory (.git); names may not start "
         "with '.'."),
        ("/memories/a\\b", "contains a backslash; separate names with '/'."),
        ("/memories/a%2e%2e", "contains the percent-encoded character %2e; write names plainly."),
        ("/memories/a%2Fb", "contains the percent-encoded character %2F; write names plainly."),
        ("/memories/a%5cb", "contains the percent-encoded character %5c; write names plainly."),
        ("/memories/a%00", "contains the percent-encoded character %00; write names plainly."),
    ],
)  # fmt: skip
def test_an_unsafe_path_is_refused_for_its_own_reason(path: str, reason: str) -> None:
    assert refusal(path) == f"Path {path} {reason}"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/memories/\uff0e\uff0e/x.md", "has a segment '\uff0e\uff0e' that reads as '..'"),
        ("/memories/a/\u2025/x.md", "has a segment '\u2025' that reads as '..'"),
        ("/memories/\ufe52/x.md", "has a segment '\ufe52' that reads as '.'"),
        ("/memories/\uff0egit/x", "has a name '\uff0egit' that reads as a hidden name"),
        ("/memories/a\uff0fb.md", "holds U+FF0F (FULLWIDTH SOLIDUS), which reads as a path"),
        ("/memories/a\uff3cb.md", "holds U+FF3C (FULLWIDTH REVERSE SOLIDUS), which reads"),
        ("/memories/a\u2215b.md", "holds U+2215 (DIVISION SLASH), which reads as a path"),
        ("/memories/a\u2044b.md", "holds U+2044 (FRACTION SLASH), which reads as a path"),
    ],
)  # fmt: skip
def test_a_look_alike_of_a_dot_segment_or_a_slash_is_refused(path: str, reason: str) -> None:
    """A model reads two fullwidth full stops as a parent directory: such a path is refused,
    not stored under a name that only looks like one."""
    assert refusal(path).startswith(f"Path {path!r} {reason}")


def test_look_alike_letters_inside_an_ordinary_name_are_names() -> None:
    assert segments("/memories/\uff41bc.md") == ("\uff41bc.md",)
    assert segments("/memories/caf\u00e9/a\uff0eb.md") == ("caf\u00e9", "a\uff0eb.md")


def test_the_tool_refuses_a_fullwidth_parent_segment_and_stores_nothing(
    tool: ContextQMemoryTool, fake: FakeContextQ, tenant: Tenant
) -> None:
    with pytest.raises(ToolError, match=r"reads as '\.\.'"):
        call(tool, "create", path="/memories/\uff0e\uff0e/x.md", file_text="x")
    assert fake.memory_files(tenant, "acme") == {}


@pytest.mark.parametrize("char", ["\x00", "\x01", "\n", "\x1f", "\x7f"])
def test_a_control_character_is_refused_and_shown_escaped(char: str) -> None:
    path = f"/memories/a{char}b"
    assert refusal(path) == (
        f"Path {path!r} contains the control character U+{ord(char):04X}; names may not hold "
        "control or invisible format characters."
    )


def test_printable_neighbours_of_the_control_characters_are_names() -> None:
    assert segments("/memories/a b~") == ("a b~",)


# ----- where a path lives, and external ids ------------------------------------------------


def test_locate_in_pinned_and_default_modes() -> None:
    pinned = locate("/memories/Notes/a.md", "acme")
    assert (pinned.workspace, pinned.rest) == ("acme", "Notes/a.md")
    assert not pinned.is_store_root and not pinned.is_workspace_root
    assert locate("/memories", "acme").is_workspace_root
    root = locate("/memories/", None)
    assert (root.path, root.workspace, root.rest, root.is_store_root) == (
        "/memories/",
        None,
        "",
        True,
    )
    assert not root.is_workspace_root
    default = locate("/memories/ACME/d/a.md", None)
    assert (default.path, default.workspace, default.rest) == (
        "/memories/ACME/d/a.md",
        "acme",
        "d/a.md",
    )
    assert locate("/memories/Acme", None).is_workspace_root


def test_external_ids_round_trip_and_other_rows_are_not_ours() -> None:
    made = external_id("mem-tool", "acme", "d/a.md")
    assert made == "mem-tool:acme/d/a.md"
    assert decode_external_id("mem-tool", made) == ("acme", "d/a.md")
    assert decode_external_id("mem-tool", "mem-tool:acme/") == ("acme", "")
    assert decode_external_id("mem-tool", "mem-tool:acme") is None
    assert decode_external_id("mem-tool", "other:acme/a.md") is None
    assert decode_external_id("mem-tool", "xmem-tool:acme/a.md") is None
    assert decode_external_id("mem-tool", None) is None


# ----- the characters a name may not hold, and workspace names that are not slugs ---------

SLUG_SENTENCE = (
    "A workspace name must already be the slug, in lowercase ASCII letters, digits and "
    "single hyphens."
)


@pytest.mark.parametrize(
    ("char", "described"),
    [
        ("\x9b", "the control character U+009B"),  # a C1 control: no Unicode name
        ("\u200b", "the invisible format character U+200B (ZERO WIDTH SPACE)"),
        ("\u2028", "the line separator character U+2028 (LINE SEPARATOR)"),
        ("\u2029", "the paragraph separator character U+2029 (PARAGRAPH SEPARATOR)"),
        ("\U000e0001", "the invisible format character U+E0001 (LANGUAGE TAG)"),
    ],
)
def test_a_refused_character_is_named_by_kind_code_point_and_unicode_name(
    char: str, described: str
) -> None:
    path = f"/memories/a{char}b"
    assert refusal(path) == (
        f"Path {path!r} contains {described}; names may not hold control or invisible "
        "format characters."
    )


def test_the_first_refused_character_is_the_one_reported() -> None:
    path = "/memories/é\u200b\x01"
    assert refusal(path).startswith(
        f"Path {path!r} contains the invisible format character U+200B (ZERO WIDTH SPACE);"
    )


def test_an_unassigned_character_is_not_refused_below_the_workspace() -> None:
    # U+0378 has no category worth refusing (Cn) and no Unicode name: no crash either way
    assert segments("/memories/acme/a\u0378b") == ("acme", "a\u0378b")
    assert locate("/memories/a\u0378b", "acme").rest == "a\u0378b"


@pytest.mark.parametrize(
    ("name", "holds"),
    [
        ("acm\u00e9", "U+00E9 (LATIN SMALL LETTER E WITH ACUTE)"),
        ("\u212aeep", "U+212A (KELVIN SIGN)"),
        ("a\u0378b", "U+0378"),  # unassigned: no name, so no suffix and no crash
        ("x\u00fc\u00e9", "U+00FC (LATIN SMALL LETTER U WITH DIAERESIS)"),  # the first one
    ],
)
def test_a_workspace_name_that_is_not_ascii_is_refused_with_its_first_odd_character(
    name: str, holds: str
) -> None:
    path = f"/memories/{name}/a.md"
    with pytest.raises(ToolError) as caught:
        locate(path, None)
    assert str(caught.value) == (
        f"Path {path!r}: the workspace name {name!r} is not a ContextQ workspace slug, and is "
        f"not folded into one: it holds {holds}. {SLUG_SENTENCE}"
    )


def test_the_tool_refuses_an_unassigned_character_in_a_workspace_name_clearly(
    fake: FakeContextQ, key: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client())
    name = "\u0378"
    path = f"/memories/{name}/a.md"
    with pytest.raises(ToolError) as caught:
        call(tool, "view", path=path)
    assert str(caught.value) == (
        f"Path {path!r}: the workspace name {name!r} is not a ContextQ workspace slug, and is "
        f"not folded into one: it holds U+0378. {SLUG_SENTENCE}"
    )


def test_only_ascii_letters_fold_into_a_slug() -> None:
    assert locate("/memories/AbC-9/x", None).workspace == "abc-9"
    assert locate("/memories/ZZ", None).workspace == "zz"
