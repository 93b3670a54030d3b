"""The memory tool on ContextQ: both path modes, safety, scopes, failures, request counts."""

from __future__ import annotations

import asyncio
import threading
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from hypothesis import given
from hypothesis import strategies as st

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool, contextq_memory_tool
from fake_contextq import FakeContextQ, Tenant

Call = Callable[..., Any]


@pytest.fixture
def acme(fake: FakeContextQ, tenant: Tenant) -> str:
    fake.set_plan(tenant, "enterprise")
    fake.create_workspace(tenant, "acme")
    return "acme"


@pytest.fixture
def pinned(fake: FakeContextQ, key: str, acme: str) -> ContextQMemoryTool:
    return ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, retry_backoff=0.001)


@pytest.fixture
def default(fake: FakeContextQ, key: str, acme: str) -> ContextQMemoryTool:
    return ContextQMemoryTool(key, http_client=fake.client(), retry_backoff=0.001)


def run(tool: ContextQMemoryTool, command: str, **kw: Any) -> str:
    result = tool.call({"command": command, **kw})
    assert isinstance(result, str)
    return result


def fails(tool: ContextQMemoryTool, command: str, **kw: Any) -> str:
    with pytest.raises(ToolError) as caught:
        tool.call({"command": command, **kw})
    return str(caught.value)


# ----- path model -----


def test_pinned_mode_stores_what_default_mode_sees(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/notes/today.md", file_text="hello\n")
    [row] = fake.contexts(tenant)
    assert row.external_id == "mem-tool:acme/notes/today.md"
    assert (row.workspace, row.type, row.title) == ("acme", "reference", "notes/today.md")
    dir_tag = pinned.core.dir_tag
    assert row.tags == ("mem-tool", dir_tag("acme", "notes"), dir_tag("acme", "notes/today.md"))
    assert row.metadata == {"bytes": 6}
    assert "hello" in run(default, "view", path="/memories/acme/notes/today.md")
    run(default, "create", path="/memories/ACME/b.md", file_text="x")
    assert "x" in run(pinned, "view", path="/memories/b.md")


def test_default_root_lists_workspaces_and_their_files(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    run(default, "create", path="/memories/acme/a.md", file_text="12345")
    run(default, "create", path="/memories/acme/d/b.md", file_text="123")
    assert run(default, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n8B\t/memories\n8B\t/memories/acme/\n5B\t/memories/acme/a.md\n"
        "3B\t/memories/acme/d/\n0B\t/memories/beta/"
    )


def test_default_mode_errors_name_the_workspaces(default: ContextQMemoryTool) -> None:
    msg = fails(default, "create", path="/memories/notes.md", file_text="x")
    assert "not inside a workspace" in msg and "existing: acme" in msg
    msg = fails(default, "create", path="/memories/ghost/a.md", file_text="x")
    assert "'ghost', which does not exist" in msg and "existing: acme" in msg
    msg = fails(default, "view", path="/memories/ghost")
    assert "no workspace 'ghost'" in msg


def test_auto_create_workspaces(fake: FakeContextQ, tenant: Tenant, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), auto_create_workspaces=True)
    run(tool, "create", path="/memories/new-ws/a.md", file_text="x")
    assert [w.slug for w in fake.workspaces(tenant)] == ["acme", "new-ws"]


def test_auto_create_needs_the_admin_scope(fake: FakeContextQ, tenant: Tenant, acme: str) -> None:
    key = fake.mint_key(tenant, ("read", "write"))
    tool = ContextQMemoryTool(key, http_client=fake.client(), auto_create_workspaces=True)
    assert "lacks the 'admin' scope" in fails(
        tool, "create", path="/memories/nw/a.md", file_text="x"
    )


def test_listings_show_only_this_tools_rows(
    fake: FakeContextQ, tenant: Tenant, key: str, pinned: ContextQMemoryTool
) -> None:
    with fake.client(key) as http:
        http.post(
            "/api/contexts",
            json={"type": "reference", "title": "unrelated", "content": "x", "workspace": "acme"},
        )
    run(pinned, "create", path="/memories/mine.md", file_text="x")
    listing = run(pinned, "view", path="/memories")
    assert "mine.md" in listing and "unrelated" not in listing
    run(pinned, "delete", path="/memories/mine.md")
    pinned.clear_all_memory()
    assert [c.title for c in fake.contexts(tenant)] == ["unrelated"]


def test_clear_all_memory_keeps_other_tags(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str
) -> None:
    mine = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme)
    theirs = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, tag="other")
    run(mine, "create", path="/memories/a.md", file_text="x")
    run(theirs, "create", path="/memories/a.md", file_text="y")
    assert mine.clear_all_memory() == "All memory cleared"
    assert [c.external_id for c in fake.contexts(tenant)] == ["other:acme/a.md"]


def test_a_listing_pages_past_500_files(
    fake: FakeContextQ, tenant: Tenant, key: str, pinned: ContextQMemoryTool
) -> None:
    items = [
        {
            "type": "reference",
            "title": f"f{i}",
            "content": "x",
            "tags": ["mem-tool"],
            "workspace": "acme",
            "externalId": f"mem-tool:acme/d/f{i:03}.md",
            "metadata": {"bytes": 1},
        }
        for i in range(501)
    ]
    with fake.client(key) as http:
        for batch in (items[:500], items[500:]):
            response = http.post("/api/contexts/bulk-upsert", json={"contexts": batch})
            assert response.status_code == 200
    listing = run(pinned, "view", path="/memories/d")
    assert listing.count("\n") == 502
    assert "501B\t/memories/d\n" in listing


def test_rows_without_a_size_are_measured(
    fake: FakeContextQ, key: str, pinned: ContextQMemoryTool
) -> None:
    with fake.client(key) as http:
        http.post(
            "/api/contexts",
            json={
                "type": "reference",
                "title": "t",
                "content": "héllo",
                "tags": ["mem-tool"],
                "workspace": "acme",
                "externalId": "mem-tool:acme/x.md",
            },
        )
    assert "6B\t/memories/x.md" in run(pinned, "view", path="/memories")


# ----- safety -----


ATTACKS = [
    "/etc/passwd",
    "memories/a",
    "/memoriesX/a",
    "/memories/../etc",
    "/memories/a/../../x",
    "/memories/a/../b",
    "/memories/./a",
    "/memories/.hidden",
    "/memories/d/.git/config",
    "/memories/a\\b",
    "/memories/a\x00b",
    "/memories/a\nb",
    "/memories/a\x85b",  # C1 controls: NEXT LINE, and CSI, which starts a terminal sequence
    "/memories/\x9b31mred.md",
    "/memories/notes\u202e.md",  # bidi override
    "/memories/no\u200btes.md",  # zero-width space
    "/memories/\ufeffnotes.md",  # zero-width no-break space (BOM)
    "/memories/d\u2028e/x.md",  # line separator
    "/memories/a%2e%2e/b",
    "/memories/%2E%2E/x",
    "/memories/a%2fb",
    "/memories/a%5Cb",
    "/memories/a%00",
    "/memories//a",
    "/memories/a//b",
    "/memories/" + "n" * 129,
    "/memories/" + "/".join(["d"] * 17),
    "/memories/" + "a/" * 60 + "b",
]


@pytest.mark.parametrize("path", ATTACKS)
def test_unsafe_paths_are_refused_before_any_request(
    fake: FakeContextQ, pinned: ContextQMemoryTool, path: str
) -> None:
    before = len(fake.journal)
    commands: list[tuple[str, dict[str, Any]]] = [
        ("view", {}),
        ("create", {"file_text": "x"}),
        ("str_replace", {"old_str": "a", "new_str": "b"}),
        ("insert", {"insert_line": 0, "insert_text": "x"}),
        ("delete", {}),
    ]
    for command, extra in commands:
        fails(pinned, command, path=path, **extra)
    fails(pinned, "rename", old_path=path, new_path="/memories/ok.md")
    fails(pinned, "rename", old_path="/memories/ok.md", new_path=path)
    assert len(fake.journal) == before


def test_sdk_messages_for_the_sdk_checks(pinned: ContextQMemoryTool) -> None:
    assert (
        fails(pinned, "view", path="/etc/passwd")
        == "Path must start with /memories, got: /etc/passwd"
    )
    assert (
        fails(pinned, "view", path="/memories/../secret")
        == "Path /memories/../secret would escape /memories directory"
    )


@given(st.text(min_size=1, max_size=40))
def test_generated_names_never_escape(name: str) -> None:
    from adapter.paths import segments

    path = "/memories/" + name
    try:
        names = segments(path)
    except ToolError:
        return
    for n in names:
        assert n and not n.startswith(".") and "\\" not in n and "\x00" not in n
        assert all(unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp") for c in n)


def test_control_and_format_characters_are_named_in_the_refusal(
    pinned: ContextQMemoryTool,
) -> None:
    assert fails(pinned, "create", path="/memories/a\x9bb.md", file_text="x") == (
        "Path '/memories/a\\x9bb.md' contains the control character U+009B; names may not "
        "hold control or invisible format characters."
    )
    assert fails(pinned, "view", path="/memories/notes\u202e.md") == (
        "Path '/memories/notes\\u202e.md' contains the invisible format character U+202E "
        "(RIGHT-TO-LEFT OVERRIDE); names may not hold control or invisible format characters."
    )


@pytest.mark.parametrize(
    "name",
    ["\u212aeep", "\uff41cme", "acm\u0435"],  # Kelvin sign, fullwidth a, Cyrillic e
    ids=["kelvin-sign", "fullwidth", "cyrillic"],
)
def test_a_workspace_name_is_never_folded_into_a_slug(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool, name: str
) -> None:
    fake.create_workspace(tenant, "keep")
    before = len(fake.journal)
    for command, extra in (("create", {"file_text": "x"}), ("view", {})):
        msg = fails(default, command, path=f"/memories/{name}/x.md", **extra)
        assert "is not a ContextQ workspace slug, and is not folded into one" in msg
        assert "must already be the slug" in msg
    assert len(fake.journal) == before  # refused before any request
    assert "KELVIN SIGN" in fails(default, "view", path="/memories/\u212aeep")
    with pytest.raises(ValueError, match="not a valid ContextQ workspace slug"):
        ContextQMemoryTool("sk_live_" + "a" * 40, workspace="\u212aeep")
    run(default, "create", path="/memories/KEEP/x.md", file_text="ASCII letters fold")
    assert [c.workspace for c in fake.contexts(tenant)] == ["keep"]


def test_a_str_replace_of_many_matches_names_a_few_lines_and_how_many_more(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_file_bytes=2**20)
    run(tool, "create", path="/memories/many.md", file_text="ab\n" * 80_000)
    msg = fails(tool, "str_replace", path="/memories/many.md", old_str="ab", new_str="c")
    assert msg == (
        "No replacement was performed. Multiple occurrences of old_str `ab` in lines: "
        "1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 79990 more. Please ensure it is unique"
    )
    run(tool, "create", path="/memories/few.md", file_text="aaaa\nb aa\n")
    assert fails(tool, "str_replace", path="/memories/few.md", old_str="aa", new_str="c") == (
        "No replacement was performed. Multiple occurrences of old_str `aa` in lines: "
        "1, 1, 1, 2. Please ensure it is unique"  # overlapping matches, as the SDK lists them
    )


def test_file_size_limit(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_file_bytes=10)
    run(tool, "create", path="/memories/a.md", file_text="x" * 10)
    assert "at most 10 bytes. Split it" in fails(
        tool, "create", path="/memories/b.md", file_text="x" * 11
    )
    assert "at most 10 bytes" in fails(
        tool, "insert", path="/memories/a.md", insert_line=0, insert_text="y"
    )
    assert run(tool, "view", path="/memories/a.md").endswith("x" * 10)


def test_long_views_are_cut_with_a_note(pinned: ContextQMemoryTool) -> None:
    text = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(400))
    run(pinned, "create", path="/memories/long.md", file_text=text)
    out = run(pinned, "view", path="/memories/long.md")
    assert len(out) <= 16_000 + 200
    note = out.splitlines()[-1]
    resume = int(note.split("view_range [")[1].split(",")[0])
    assert f"after line {resume - 1} of 401" in note
    assert out.splitlines()[-2].lstrip().startswith(f"{resume - 1}\t")
    rest = run(pinned, "view", path="/memories/long.md", view_range=[resume, -1])
    assert rest.splitlines()[1].lstrip().startswith(f"{resume}\t")


def test_bad_options_are_refused() -> None:
    key = "sk_live_" + "a" * 40
    with pytest.raises(ValueError, match="context_type"):
        ContextQMemoryTool(key, context_type="handoff")
    with pytest.raises(ValueError, match="workspace"):
        ContextQMemoryTool(key, workspace="Not A Slug")
    with pytest.raises(ValueError, match="max_file_bytes"):
        ContextQMemoryTool(key, max_file_bytes=10**9)
    with pytest.raises(ValueError, match="tag"):
        ContextQMemoryTool(key, tag="a:b")


# ----- ContextQ's rules surfaced as tool errors -----


def test_a_read_only_key_can_view_but_not_write(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, acme: str
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="hello")
    ro = ContextQMemoryTool(
        fake.mint_key(tenant, ("read",)), http_client=fake.client(), workspace=acme
    )
    assert "hello" in run(ro, "view", path="/memories/a.md")
    writes: list[tuple[str, dict[str, Any]]] = [
        ("create", {"path": "/memories/b.md", "file_text": "x"}),
        ("str_replace", {"path": "/memories/a.md", "old_str": "hello", "new_str": "bye"}),
        ("insert", {"path": "/memories/a.md", "insert_line": 0, "insert_text": "x"}),
        ("delete", {"path": "/memories/a.md"}),
        ("rename", {"old_path": "/memories/a.md", "new_path": "/memories/c.md"}),
    ]
    for command, extra in writes:
        assert "lacks the 'write' scope" in fails(ro, command, **extra)
    assert [c.content for c in fake.contexts(tenant)] == ["hello"]


def test_quota_is_surfaced_in_contextq_terms(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    fake.set_plan(tenant, "free")
    for i in range(100):
        run(pinned, "create", path=f"/memories/f{i}.md", file_text="x")
    msg = fails(pinned, "create", path="/memories/f100.md", file_text="x")
    assert msg.startswith("ContextQ quota exceeded: the free plan allows 100 contexts")


def test_transient_failures_are_retried(fake: FakeContextQ, pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="hello")
    fake.faults.inject("GET", "/api/contexts/by-external/*", status=503, times=1)
    fake.faults.inject("PUT", "/api/contexts/*", drop=True, times=1)
    assert "edited" in run(
        pinned, "str_replace", path="/memories/a.md", old_str="hello", new_str="bye"
    )
    assert "bye" in run(pinned, "view", path="/memories/a.md")


def test_an_outage_is_a_tool_error(fake: FakeContextQ, pinned: ContextQMemoryTool) -> None:
    fake.faults.inject("*", "/api/*", status=503, times=None)
    assert fails(pinned, "view", path="/memories").startswith("ContextQ is unavailable (503)")
    fake.faults.clear()
    fake.faults.inject("*", "/api/*", drop=True, times=None)
    assert fails(pinned, "view", path="/memories").startswith("Could not reach ContextQ")


def test_a_rename_whose_delete_fails_leaves_exactly_the_source(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="keep me")
    source_id = fake.contexts(tenant)[0].id
    fake.faults.inject("DELETE", f"/api/contexts/{source_id}", status=500, times=None)
    msg = fails(pinned, "rename", old_path="/memories/a.md", new_path="/memories/b.md")
    assert "removed again" in msg
    assert [(c.external_id, c.content) for c in fake.contexts(tenant)] == [
        ("mem-tool:acme/a.md", "keep me")
    ]


def test_a_rename_that_cannot_be_undone_names_both_paths(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="x")
    source_id = fake.contexts(tenant)[0].id
    fake.faults.inject("DELETE", "/api/contexts/*", status=500, times=None)
    msg = fails(pinned, "rename", old_path="/memories/a.md", new_path="/memories/b.md")
    assert "/memories/a.md" in msg and "/memories/b.md" in msg
    assert f"context {source_id}" in msg and "both paths" in msg


def test_a_directory_delete_failing_partway_names_what_remains(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("a", "b", "c"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    second = fake.contexts(tenant)[1].id
    fake.faults.inject("DELETE", f"/api/contexts/{second}", status=500, times=None)
    msg = fails(pinned, "delete", path="/memories/d")
    assert "Deleted 1 of 3 files" in msg
    assert "these remain: /memories/d/b.md, /memories/d/c.md" in msg
    assert [c.external_id for c in fake.contexts(tenant)] == [
        "mem-tool:acme/d/b.md",
        "mem-tool:acme/d/c.md",
    ]


def test_the_key_never_shows_in_tool_errors(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, retry_backoff=0.001)
    texts = [repr(tool)]
    fake.faults.inject("*", "/api/*", status=503, times=None)
    texts.append(fails(tool, "view", path="/memories"))
    fake.faults.clear()
    fake.revoke_key(key)
    texts.append(fails(tool, "view", path="/memories"))
    assert all(key not in t and key[8:] not in t for t in texts)


def test_concurrent_edits_through_one_tool_lose_nothing(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/log.md", file_text="")

    def append(n: int) -> None:
        for i in range(10):
            run(pinned, "insert", path="/memories/log.md", insert_line=0, insert_text=f"t{n}-{i}")

    threads = [threading.Thread(target=append, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fake.contexts(tenant)[0].content.splitlines()) == 40


# ----- request counts (the table of docs/reference/memory-tool.md) -----


@pytest.mark.parametrize(
    ("command", "kw", "most"),
    [
        ("view", {"path": "/memories/f.md"}, 1),
        ("view", {"path": "/memories/dir"}, 2),
        ("view", {"path": "/memories"}, 2),
        ("create", {"path": "/memories/new.md", "file_text": "x"}, 2),
        ("str_replace", {"path": "/memories/f.md", "old_str": "one", "new_str": "1"}, 2),
        ("insert", {"path": "/memories/f.md", "insert_line": 0, "insert_text": "x"}, 2),
        ("delete", {"path": "/memories/f.md"}, 2),
        # the source read again before its delete, so an edit made meanwhile moves too
        ("rename", {"old_path": "/memories/f.md", "new_path": "/memories/g.md"}, 5),
    ],
)
def test_request_counts(
    fake: FakeContextQ, pinned: ContextQMemoryTool, command: str, kw: dict[str, Any], most: int
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="one\ntwo\n")
    for i in range(200):
        run(pinned, "create", path=f"/memories/dir/{i:03}.md", file_text="x")
    fake.journal.clear()
    run(pinned, command, **kw)
    assert len(fake.journal) <= most, fake.journal.table()


# ----- recall -----


def test_recall_finds_memory_files_by_wording(
    pinned: ContextQMemoryTool, fake: FakeContextQ, key: str
) -> None:
    run(pinned, "create", path="/memories/db.md", file_text="Run database migrations nightly.")
    run(pinned, "create", path="/memories/css.md", file_text="Primary colour is teal.")
    with fake.client(key) as http:
        http.post(
            "/api/contexts",
            json={
                "type": "reference",
                "title": "not memory",
                "content": "database migrations",
                "workspace": "acme",
            },
        )
    out = pinned.recall("database migrations")
    assert out.splitlines()[1].startswith("/memories/db.md\t(score ")
    assert "not memory" not in out and "css.md" not in out
    tool = pinned.recall_tool()
    assert tool.name == "memory_recall"
    assert "/memories/db.md" in str(tool.call({"query": "migrations", "limit": 3}))
    assert pinned.recall("zzz-nothing") == "No memory file matches 'zzz-nothing'."


def test_a_str_replace_without_new_str_changes_nothing_sync_or_async(
    fake: FakeContextQ, key: str, acme: str, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    """A model's malformed call must not read as 'replace with nothing' and delete text."""
    run(pinned, "create", path="/memories/a.md", file_text="keep this\n")
    call = {"command": "str_replace", "path": "/memories/a.md", "old_str": "keep"}
    with pytest.raises(ToolError, match="needs 'new_str'"):
        pinned.call(call)

    async def main() -> None:
        tool = AsyncContextQMemoryTool(key, http_client=fake.async_client(), workspace=acme)
        with pytest.raises(ToolError, match="needs 'new_str'"):
            await tool.call(call)

    asyncio.run(main())
    assert fake.memory_files(tenant, acme) == {"/memories/a.md": "keep this\n"}


# ----- async shell -----


def test_the_async_tool_behaves_the_same(fake: FakeContextQ, key: str, acme: str) -> None:
    async def main() -> list[str]:
        tool = AsyncContextQMemoryTool(key, http_client=fake.async_client(), workspace=acme)
        out = [
            await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "hello\n"})
        ]
        await asyncio.gather(
            *[
                tool.call(
                    {
                        "command": "insert",
                        "path": "/memories/a.md",
                        "insert_line": 0,
                        "insert_text": f"l{i}",
                    }
                )
                for i in range(10)
            ]
        )
        out.append(await tool.call({"command": "view", "path": "/memories/a.md"}))
        out.append(await tool.recall("hello"))
        with pytest.raises(ToolError, match="already exists"):
            await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
        out.append(str(await tool.recall_tool().call({"query": "hello"})))
        return out

    created, viewed, recalled, via_tool = asyncio.run(main())
    assert created == "File created successfully at: /memories/a.md"
    assert viewed.count("\n") == 12
    assert "/memories/a.md" in recalled and "/memories/a.md" in via_tool


def test_the_factory(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = contextq_memory_tool(api_key=key, http_client=fake.client(), workspace=acme)
    assert isinstance(tool, ContextQMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}


def test_directory_reads_touch_only_their_subtree(
    fake: FakeContextQ, pinned: ContextQMemoryTool
) -> None:
    for i in range(30):
        run(pinned, "create", path=f"/memories/big/{i}.md", file_text="x")
    run(pinned, "create", path="/memories/small/a.md", file_text="x")
    fake.journal.clear()
    run(pinned, "view", path="/memories/small")
    run(pinned, "create", path="/memories/small/b.md", file_text="y")
    listed = [e for e in fake.journal if e.method == "GET" and e.path == "/api/contexts"]
    assert all("tag=mem-tool%3Adir%3A" in e.query for e in listed), fake.journal.table()


def test_conflicts_found_without_a_workspace_listing(pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/file.md", file_text="x")
    run(pinned, "create", path="/memories/dir/a.md", file_text="x")
    assert fails(pinned, "create", path="/memories/dir", file_text="x") == (
        "File /memories/dir already exists"
    )
    assert "is a file, not a directory" in fails(
        pinned, "create", path="/memories/file.md/deeper/x.md", file_text="x"
    )
    assert fails(pinned, "rename", old_path="/memories/dir", new_path="/memories/file.md") == (
        "The destination /memories/file.md already exists"
    )
    assert fails(pinned, "rename", old_path="/memories/nope.md", new_path="/memories/file.md") == (
        "The destination /memories/file.md already exists"
    )
    assert fails(pinned, "rename", old_path="/memories/nope.md", new_path="/memories/x.md") == (
        "The path /memories/nope.md does not exist"
    )


# ----- found by review: concurrency, vanished workspaces, failure reports, bad input -----


def test_an_edit_never_lands_between_a_renames_copy_and_delete(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/n.md", file_text="alpha\n")
    fake.faults.inject("POST", "/api/contexts", delay=0.3)  # widen the rename's window
    renamer = threading.Thread(
        target=run,
        args=(pinned, "rename"),
        kwargs={"old_path": "/memories/n.md", "new_path": "/memories/m.md"},
    )
    renamer.start()
    threading.Event().wait(0.1)
    try:
        run(pinned, "str_replace", path="/memories/n.md", old_str="alpha", new_str="BETA")
        edited = True
    except ToolError:
        edited = False
    renamer.join()
    [row] = fake.contexts(tenant)
    assert row.external_id == "mem-tool:acme/m.md"
    assert row.content == ("BETA\n" if edited else "alpha\n")


def test_a_workspace_deleted_behind_the_tools_back_is_not_written_into(
    fake: FakeContextQ, tenant: Tenant, key: str, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="x")
    pinned.clear_all_memory()
    with fake.client(key) as http:
        assert http.delete("/api/workspaces/acme").status_code == 204
    assert "no longer exists" in fails(pinned, "create", path="/memories/b.md", file_text="y")
    assert fake.contexts(tenant) == []


def test_a_rename_whose_undo_fails_names_the_copies_left(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/a.md", file_text="a")
    run(pinned, "create", path="/memories/d/b.md", file_text="b")
    first_copy_id = max(c.id for c in fake.contexts(tenant)) + 1
    posts = {"n": 0}
    original_take = fake.faults.take

    def take(method: str, path: str) -> Any:  # let the first copy through, fail the second
        if method == "POST" and path == "/api/contexts":
            posts["n"] += 1
            if posts["n"] == 2:
                return fake.faults.inject("POST", "/api/contexts", status=500)
        return original_take(method, path)

    fake.faults.inject("DELETE", f"/api/contexts/{first_copy_id}", status=500, times=None)
    fake.faults.take = take  # type: ignore[method-assign]
    msg = fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e")
    assert "could not be fully undone" in msg
    assert f"/memories/e/a.md (context {first_copy_id})" in msg
    assert ".." not in msg


def test_a_delete_whose_row_is_already_gone_succeeds(
    fake: FakeContextQ, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="x")
    fake.faults.inject("DELETE", "/api/contexts/*", status=404)  # as after a lost answer
    assert run(pinned, "delete", path="/memories/a.md") == "Successfully deleted /memories/a.md"


@pytest.mark.parametrize(
    ("tool_input", "fragment"),
    [
        ({"command": "view"}, "needs 'path'"),
        ({"command": "view", "path": 5}, "'path' of the view command must be a string"),
        ({"command": "view", "path": "/memories", "view_range": "12"}, "list of integers"),
        ({"command": "view", "path": "/memories", "view_range": [1.5, 2]}, "list of integers"),
        ({"command": "create", "path": "/memories/a.md"}, "needs 'file_text'"),
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": "x", "insert_text": "x"},
            "must be an integer",
        ),
        (
            {"command": "insert", "path": "/memories/a.md", "insert_line": 1.5, "insert_text": "x"},
            "must be an integer",
        ),
        ({"command": "create", "path": "/memories/a.md", "file_text": "a\x00b"}, "NUL character"),
        (
            {
                "command": "insert",
                "path": "/memories/a.md",
                "insert_line": 0,
                "insert_text": "\x00",
            },
            "'insert_text' of the insert command holds a NUL character",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": "\x00"},
            "'new_str' of the str_replace command holds a NUL character",
        ),
        ({"command": "str_replace", "path": "/memories/a.md", "new_str": "x"}, "needs 'old_str'"),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "a"},
            "The str_replace command needs 'new_str' \\(a string\\)",
        ),
        (
            {"command": "str_replace", "path": "/memories/a.md", "old_str": "a", "new_str": None},
            "needs 'new_str'",
        ),
        ({"command": "create", "path": "/memories/a.md", "file_text": "\ud800"}, "surrogate"),
        ({"command": "explode"}, "Unknown memory command"),
        ("view /memories", "must be an object"),
    ],
)
def test_malformed_input_is_a_tool_error(
    pinned: ContextQMemoryTool, tool_input: Any, fragment: str
) -> None:
    with pytest.raises(ToolError, match=fragment):
        pinned.call(tool_input)


@pytest.mark.parametrize("line", ["1", " 1", "1.0", 1.0, True])
def test_a_line_number_is_read_as_the_sdk_reads_it(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, line: object
) -> None:
    """The SDK validates its commands leniently (pydantic), so a model's "1" or 1.0 works
    there; it must work here too, with the same result."""
    run(pinned, "create", path="/memories/a.md", file_text="one\ntwo\n")
    assert run(
        pinned, "insert", path="/memories/a.md", insert_line=line, insert_text="between"
    ) == ("The file /memories/a.md has been edited.")
    assert [c.content for c in fake.contexts(tenant)] == ["one\nbetween\ntwo\n"]
    shown = run(pinned, "view", path="/memories/a.md", view_range=[line, "2"])
    assert shown.splitlines()[1:] == ["     1\tone", "     2\tbetween"]


def test_the_async_tool_reads_line_numbers_as_the_sync_one(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    async def main() -> str:
        tool = AsyncContextQMemoryTool(key, http_client=fake.async_client(), workspace=acme)
        await tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
        result: str = await tool.call(
            {"command": "insert", "path": "/memories/a.md", "insert_line": "0", "insert_text": "z"}
        )
        with pytest.raises(ToolError, match="must be an integer, got 'zero'"):
            await tool.call(
                {
                    "command": "insert",
                    "path": "/memories/a.md",
                    "insert_line": "zero",
                    "insert_text": "z",
                }
            )
        return result

    assert asyncio.run(main()) == "The file /memories/a.md has been edited."


@pytest.mark.parametrize(
    "command",
    [
        {"command": "create", "path": "/memories/b.md", "file_text": "a\x00b"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "x", "new_str": "\x00"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "\x00"},
    ],
)
def test_nul_in_file_text_is_refused_by_the_tool_before_any_request(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, command: dict[str, Any]
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="x\n")
    before = len(fake.journal)
    message = fails(pinned, **command)
    assert "holds a NUL character (U+0000), which ContextQ cannot store" in message
    assert "ContextQ error" not in message and "400" not in message
    assert len(fake.journal) == before
    assert [c.content for c in fake.contexts(tenant)] == ["x\n"]


def test_a_line_longer_than_the_view_budget_is_shown_in_part(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_view_chars=200)
    run(tool, "create", path="/memories/a.md", file_text="y" * 1000 + "\nshort\n")
    out = run(tool, "view", path="/memories/a.md")
    assert len(out) < 400 and "shown only in part" in out
    ranged = run(
        tool,
        "create",
        path="/memories/b.md",
        file_text="".join(f"line {i} " + "z" * 30 + "\n" for i in range(40)),
    )
    assert ranged.startswith("File created")
    cut = run(tool, "view", path="/memories/b.md", view_range=[10, 20])
    assert "View the rest with view_range [13, 20]" in cut


def test_options_that_cannot_work_are_refused() -> None:
    import httpx2

    key = "sk_live_" + "a" * 40
    with pytest.raises(ValueError, match="tag must be at most"):
        ContextQMemoryTool(key, tag="t" * 80)
    with pytest.raises(TypeError, match=r"httpx2\.AsyncClient"):
        AsyncContextQMemoryTool(key, http_client=httpx2.Client())  # type: ignore[arg-type]


# ----- create: write, then the same few small reads in a directory of any size -----


def _listings(fake: FakeContextQ) -> list[dict[str, list[str]]]:
    from urllib.parse import parse_qs

    return [
        parse_qs(e.query) for e in fake.journal if e.method == "GET" and e.path == "/api/contexts"
    ]


def test_a_create_costs_the_same_requests_in_a_directory_of_any_size(
    fake: FakeContextQ, key: str, acme: str, pinned: ContextQMemoryTool
) -> None:
    """POST, one row of the path's own tag, one keyed lookup per directory level above:
    2 at the top, 3 one level down, whether the directory holds 510 files, one, or none,
    and whether this tool instance has written there before (it remembers nothing)."""
    for i in range(510):  # more than one listing page
        run(pinned, "create", path=f"/memories/big/{i:03}.md", file_text="x")
    run(pinned, "create", path="/memories/small/a.md", file_text="x")
    counts: dict[str, int] = {}
    for tool_name, tool in (
        ("seen", pinned),
        ("unseen", ContextQMemoryTool(key, http_client=fake.client(), workspace=acme)),
    ):
        run(tool, "create", path=f"/memories/{tool_name}.md", file_text="y")  # knows acme
        for name, path in (
            ("top", f"/memories/top-{tool_name}.md"),
            ("big", f"/memories/big/{tool_name}.md"),
            ("small", f"/memories/small/{tool_name}.md"),
            ("new", f"/memories/new-{tool_name}/a.md"),
            ("deeper", f"/memories/big/sub-{tool_name}/a.md"),
        ):
            fake.journal.clear()
            assert run(tool, "create", path=path, file_text="y") == (
                f"File created successfully at: {path}"
            )
            counts[f"{tool_name} {name}"] = len(fake.journal)
            assert next(e.method for e in fake.journal) == "POST", fake.journal.table()
            assert all(q["limit"] == ["1"] for q in _listings(fake)), fake.journal.table()
    for tool_name in ("seen", "unseen"):
        assert {k.split()[1]: v for k, v in counts.items() if k.startswith(tool_name)} == {
            "top": 2,
            "big": 3,
            "small": 3,
            "new": 3,
            "deeper": 4,
        }


@pytest.mark.parametrize("unseen", [False, True], ids=["seen-directory", "unseen-directory"])
def test_refused_creates_keep_the_sdk_texts_and_leave_the_store_as_it_was(
    fake: FakeContextQ,
    tenant: Tenant,
    key: str,
    acme: str,
    pinned: ContextQMemoryTool,
    unseen: bool,
) -> None:
    run(pinned, "create", path="/memories/d/f.md", file_text="file\n")
    run(pinned, "create", path="/memories/d/sub/g.md", file_text="g\n")
    for i in range(20):
        run(pinned, "create", path=f"/memories/d/{i}.md", file_text="x")
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme) if unseen else pinned
    before = [(c.id, c.external_id, c.content, c.tags) for c in fake.contexts(tenant)]
    for path in ("/memories/d/f.md", "/memories/d/sub", "/memories/d"):
        assert fails(tool, "create", path=path, file_text="new") == f"File {path} already exists"
    for path in ("/memories/d/f.md/x.md", "/memories/d/f.md/deep/er/x.md"):
        assert fails(tool, "create", path=path, file_text="new") == (
            f"Cannot create {path}: /memories/d/f.md is a file, not a directory."
        )
    assert [(c.id, c.external_id, c.content, c.tags) for c in fake.contexts(tenant)] == before


def test_a_directory_the_tool_turned_into_a_file_is_not_created_under(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/e/a.md", file_text="x")
    run(pinned, "delete", path="/memories/d")
    run(pinned, "create", path="/memories/d", file_text="now a file")
    assert fails(pinned, "create", path="/memories/d/e/b.md", file_text="x") == (
        "Cannot create /memories/d/e/b.md: /memories/d is a file, not a directory."
    )
    run(pinned, "create", path="/memories/r/a.md", file_text="x")
    run(pinned, "rename", old_path="/memories/r/a.md", new_path="/memories/moved.md")
    run(pinned, "rename", old_path="/memories/moved.md", new_path="/memories/r")
    assert fails(pinned, "create", path="/memories/r/b.md", file_text="x") == (
        "Cannot create /memories/r/b.md: /memories/r is a file, not a directory."
    )
    fake.create_workspace(tenant, "beta")  # the same name, a file in another workspace
    run(default, "create", path="/memories/beta/w", file_text="a file")
    run(default, "create", path="/memories/acme/w/a.md", file_text="x")
    assert fails(default, "create", path="/memories/beta/w/b.md", file_text="x") == (
        "Cannot create /memories/beta/w/b.md: /memories/beta/w is a file, not a directory."
    )
    assert not [c for c in fake.contexts(tenant) if (c.external_id or "").endswith("/b.md")]


def test_a_create_whose_check_fails_takes_its_row_back(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/first.md", file_text="x")  # knows acme
    fake.faults.inject("GET", "/api/contexts", status=503, times=None)
    msg = fails(pinned, "create", path="/memories/d/a.md", file_text="x")
    assert msg.startswith("Creating /memories/d/a.md failed: ContextQ is unavailable (503)")
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/first.md"]


def test_a_rename_whose_original_delete_answer_is_lost_keeps_the_move(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str
) -> None:
    """The original's DELETE is not retried (a retry's 404 would look like another writer
    having moved the file); when its answer is lost, one GET tells that it happened."""
    import httpx2

    inner = fake.transport()
    lost: list[str] = []

    class LosesDeleteAnswers(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            response = inner.handle_request(request)  # the request does reach ContextQ
            if request.method == "DELETE":
                lost.append(request.url.path)
                raise httpx2.ReadError("connection reset", request=request)
            return response

    http = httpx2.Client(transport=LosesDeleteAnswers(), base_url=fake.base_url)
    tool = ContextQMemoryTool(key, http_client=http, workspace=acme, retry_backoff=0.001)
    run(tool, "create", path="/memories/a.md", file_text="A")
    assert run(tool, "rename", old_path="/memories/a.md", new_path="/memories/b.md") == (
        "Successfully renamed /memories/a.md to /memories/b.md"
    )
    assert len(lost) == 1  # not retried
    assert [(c.external_id, c.content) for c in fake.contexts(tenant)] == [
        ("mem-tool:acme/b.md", "A")
    ]
