"""The memory core's rules that mutation testing showed no other test asserting: recall's
refusals, limit and filters, and the exact words of the tool's other refusals."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from anthropic.lib.tools import ToolError

from adapter import ContextQMemoryTool, errors
from adapter._memory import explain
from adapter.wire import CONTEXT_TYPES, MAX_CONTENT_BYTES
from fake_contextq import FakeContextQ, Tenant


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


@pytest.fixture
def http(fake: FakeContextQ, key: str) -> httpx2.Client:
    return fake.client(key)


def run(tool: ContextQMemoryTool, command: str, **kw: Any) -> str:
    result = tool.call({"command": command, **kw})
    assert isinstance(result, str)
    return result


def fails(tool: ContextQMemoryTool, command: str, **kw: Any) -> str:
    with pytest.raises(ToolError) as caught:
        tool.call({"command": command, **kw})
    return str(caught.value)


def recall_fails(tool: ContextQMemoryTool, query: str) -> str:
    with pytest.raises(ToolError) as caught:
        tool.recall(query)
    return str(caught.value)


def paths_of(recalled: str) -> list[str]:
    return [line.split("\t")[0] for line in recalled.splitlines()[1:]]


# ----- recall -----


@pytest.mark.parametrize("query", ["", "   \n"])
def test_recall_refuses_an_empty_query(pinned: ContextQMemoryTool, query: str) -> None:
    assert recall_fails(pinned, query) == "memory_recall needs a non-empty query."


def test_recall_refuses_an_unpaired_surrogate(pinned: ContextQMemoryTool) -> None:
    assert recall_fails(pinned, "db \ud800") == (
        "The memory_recall query holds an unpaired surrogate."
    )


def test_recall_lists_each_hit_on_its_own_line(pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="migrations migrations migrations")
    run(pinned, "create", path="/memories/b.md", file_text="migrations and other words here")
    out = pinned.recall("migrations")
    lines = out.splitlines()
    assert lines[0] == "Memory files matching 'migrations', best first:"
    assert [line.split("\t")[0] for line in lines[1:]] == ["/memories/a.md", "/memories/b.md"]
    assert all(line.split("\t")[1].startswith("(score ") for line in lines[1:])


@pytest.mark.parametrize(("limit", "shown"), [(0, 1), (1, 1), (2, 2), (10_000, 3)])
def test_recall_clamps_its_limit(pinned: ContextQMemoryTool, limit: int, shown: int) -> None:
    for name in ("a", "b", "c"):
        run(pinned, "create", path=f"/memories/{name}.md", file_text=f"migrations {name}")
    assert len(paths_of(pinned.recall("migrations", limit))) == shown


def test_recall_in_default_mode_names_the_workspace(default: ContextQMemoryTool) -> None:
    run(default, "create", path="/memories/acme/db.md", file_text="migrations")
    assert paths_of(default.recall("migrations")) == ["/memories/acme/db.md"]


def test_a_pinned_recall_searches_only_its_workspace(
    fake: FakeContextQ, key: str, acme: str, default: ContextQMemoryTool
) -> None:
    """Another workspace's better hits neither show nor use up the limit."""
    fake.create_workspace(fake.tenants()[0], "beta")
    run(default, "create", path="/memories/beta/x.md", file_text="migrations " * 20)
    mine = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme)
    run(mine, "create", path="/memories/db.md", file_text="migrations once, among other words")
    assert paths_of(mine.recall("migrations", 1)) == ["/memories/db.md"]


def test_recall_searches_only_memory_files(pinned: ContextQMemoryTool, http: httpx2.Client) -> None:
    """Better hits that are not memory files neither show nor use up the limit."""
    body = {"type": "reference", "title": "not memory", "workspace": "acme"}
    http.post("/api/contexts", json={**body, "content": "migrations " * 20})
    run(pinned, "create", path="/memories/db.md", file_text="migrations once, among other words")
    assert paths_of(pinned.recall("migrations", 1)) == ["/memories/db.md"]


def test_recall_skips_a_tagged_row_that_is_no_memory_file(
    pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    """A row carrying the tool's tag but no memory file's external id (someone else wrote
    it) is passed over, and the hits after it still show."""
    body = {"type": "reference", "title": "stray", "workspace": "acme", "tags": ["mem-tool"]}
    http.post("/api/contexts", json={**body, "content": "migrations " * 20})
    http.post(
        "/api/contexts",
        json={**body, "content": "migrations " * 20, "externalId": "mem-tool:beta/x.md"},
    )
    run(pinned, "create", path="/memories/db.md", file_text="migrations once, among other words")
    assert paths_of(pinned.recall("migrations")) == ["/memories/db.md"]


# ----- the exact refusals of a missing workspace -----


def test_a_pinned_tool_names_its_missing_workspace(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="nowhere")
    assert fails(tool, "create", path="/memories/a.md", file_text="x") == (
        "The memory workspace 'nowhere' does not exist in ContextQ. Create it (admin scope), "
        "or pass auto_create_workspaces=True."
    )


def test_default_mode_names_a_missing_workspace(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    assert fails(default, "view", path="/memories/gamma") == (
        "The path /memories/gamma does not exist: ContextQ has no workspace 'gamma' "
        "(existing: acme, beta)."
    )
    assert fails(default, "create", path="/memories/gamma/a.md", file_text="x") == (
        "The path /memories/gamma/a.md is in workspace 'gamma', which does not exist in "
        "ContextQ (existing: acme, beta). Use an existing workspace, or create this one first."
    )


@pytest.mark.parametrize("name", ["Not_A_Slug", "s" * 65])
def test_default_mode_refuses_a_first_name_that_is_no_slug(
    default: ContextQMemoryTool, name: str
) -> None:
    assert fails(default, "view", path=f"/memories/{name}/a.md") == (
        f"The path /memories/{name}/a.md is not inside a workspace: here the first name under "
        "/memories is a ContextQ workspace (existing: acme). Use a path like "
        "/memories/acme/notes.md."
    )


def test_a_slug_of_the_longest_length_is_a_workspace_name(default: ContextQMemoryTool) -> None:
    name = "s" * 64
    assert fails(default, "view", path=f"/memories/{name}") == (
        f"The path /memories/{name} does not exist: ContextQ has no workspace '{name}' "
        "(existing: acme)."
    )
    assert fails(default, "create", path="/memories/gamma", file_text="x") == (
        "The path /memories/gamma is not inside a workspace: here the first name under "
        "/memories is a ContextQ workspace (existing: acme). Use a path like "
        "/memories/acme/notes.md."
    )


def test_a_file_at_the_top_of_the_store_is_refused_naming_no_workspace_yet(
    fake: FakeContextQ, key: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client())
    assert fails(tool, "create", path="/memories/notes.md", file_text="x") == (
        "The path /memories/notes.md is not inside a workspace: here the first name under "
        "/memories is a ContextQ workspace (existing: none yet). Use a path like "
        "/memories/<workspace>/notes.md."
    )


# ----- the store root in default mode -----


def test_the_store_root_sorts_by_path_segments_and_shows_empty_files(
    default: ContextQMemoryTool,
) -> None:
    run(default, "create", path="/memories/acme/a-b.md", file_text="12")
    run(default, "create", path="/memories/acme/a/x.md", file_text="123")
    run(default, "create", path="/memories/acme/empty.md", file_text="")
    assert run(default, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n5B\t/memories\n5B\t/memories/acme/\n3B\t/memories/acme/a/\n"
        "2B\t/memories/acme/a-b.md\n0B\t/memories/acme/empty.md"
    )


# ----- clear all -----


def test_clear_all_in_default_mode_empties_every_workspace(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool, http: httpx2.Client
) -> None:
    fake.create_workspace(tenant, "beta")
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    run(default, "create", path="/memories/beta/b.md", file_text="b")
    http.post("/api/contexts", json={"type": "reference", "title": "keep", "content": "k"})
    assert default.clear_all_memory() == "All memory cleared"
    assert [c.title for c in fake.contexts(tenant)] == ["keep"]


def test_clear_all_in_pinned_mode_empties_only_its_workspace(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    run(default, "create", path="/memories/beta/b.md", file_text="b")
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="beta")
    assert tool.clear_all_memory() == "All memory cleared"
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/a.md"]


def test_clear_all_failing_partway_names_what_remains_in_default_mode(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    for name in ("a", "b", "c"):
        run(default, "create", path=f"/memories/acme/{name}.md", file_text=name)
    first, second, _ = (c.id for c in fake.contexts(tenant))
    fake.faults.inject("DELETE", f"/api/contexts/{first}", status=404, times=None)
    fake.faults.inject("DELETE", f"/api/contexts/{second}", status=403, times=None)
    with pytest.raises(ToolError) as caught:
        default.clear_all_memory()
    assert str(caught.value) == (
        "Deleting /memories stopped partway: ContextQ refused: this API key lacks the "
        "'another' scope, so this memory command is not allowed (files may still be viewed "
        "if it has 'read'). Deleted 1 of 3 files; these remain: /memories/acme/b.md, "
        "/memories/acme/c.md"
    )


# ----- renames onto what stands, and renames another writer cut into -----


def test_renaming_a_missing_path_onto_a_directory_names_the_destination(
    pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/x.md", file_text="x")
    assert fails(pinned, "rename", old_path="/memories/nope.md", new_path="/memories/d") == (
        "The destination /memories/d already exists"
    )
    assert fails(
        default, "rename", old_path="/memories/acme/nope.md", new_path="/memories/acme/d"
    ) == ("The destination /memories/acme/d already exists")
    assert fails(pinned, "rename", old_path="/memories/nope.md", new_path="/memories/e") == (
        "The path /memories/nope.md does not exist"
    )


def test_renaming_a_missing_path_onto_an_untagged_file_names_the_destination(
    pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    """A row another tool wrote at a memory path without the directory tags still stands."""
    http.post(
        "/api/contexts",
        json={
            "type": "reference",
            "title": "f.md",
            "content": "theirs",
            "workspace": "acme",
            "externalId": "mem-tool:acme/f.md",
        },
    )
    assert fails(pinned, "rename", old_path="/memories/nope.md", new_path="/memories/f.md") == (
        "The destination /memories/f.md already exists"
    )


def test_a_rename_whose_original_is_gone_removes_its_copy_and_says_so(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    run(default, "create", path="/memories/acme/f.md", file_text="F")
    (original,) = fake.contexts(tenant)
    fake.faults.inject("DELETE", f"/api/contexts/{original.id}", status=404, times=1)
    msg = fails(default, "rename", old_path="/memories/acme/f.md", new_path="/memories/acme/a.md")
    assert msg == (
        "Renaming /memories/acme/f.md to /memories/acme/a.md conflicted with another writer, "
        "which renamed or deleted /memories/acme/f.md while it was being copied to "
        "/memories/acme/a.md, so the copy was removed again. View /memories to see where "
        "things are now."
    )
    assert [c.id for c in fake.contexts(tenant)] == [original.id]


def test_a_directory_rename_whose_originals_are_gone_in_part_says_how_many(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("x", "y", "z"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    x, y, _ = (c.id for c in fake.contexts(tenant))
    for gone in (x, y):
        fake.faults.inject("DELETE", f"/api/contexts/{gone}", status=404, times=1)
    msg = fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e")
    assert msg == (
        "Renaming /memories/d to /memories/e conflicted with another writer, which renamed "
        "or deleted /memories/d/x.md while it was being copied to /memories/e/x.md; "
        "/memories/d/y.md while it was being copied to /memories/e/y.md, so 2 copies were "
        "removed again; the other 1 file(s) moved to /memories/e. View /memories to see "
        "where things are now."
    )


def test_a_rename_whose_copy_cannot_be_removed_again_names_it(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="F")
    run(pinned, "create", path="/memories/g.md", file_text="G")
    f, g = (c.id for c in fake.contexts(tenant))
    fake.faults.inject("DELETE", f"/api/contexts/{f}", status=404, times=1)
    copy = g + 1  # the next id: the copy the rename writes
    fake.faults.inject("DELETE", f"/api/contexts/{copy}", status=403, times=None)
    msg = fails(pinned, "rename", old_path="/memories/f.md", new_path="/memories/a.md")
    assert msg == (
        "Renaming /memories/f.md to /memories/a.md conflicted with another writer, which "
        "renamed or deleted /memories/f.md while it was being copied to /memories/a.md, and "
        "these copies could not be removed, so each may duplicate a file the other writer "
        f"moved: /memories/a.md (context {copy}). Delete them. View /memories to see where "
        "things are now."
    )


def test_a_rename_that_cannot_be_undone_names_every_pair(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    run(default, "create", path="/memories/acme/d/x.md", file_text="x")
    run(default, "create", path="/memories/acme/d/y.md", file_text="y")
    x, y = (c.id for c in fake.contexts(tenant))
    fake.faults.inject("DELETE", "/api/contexts/*", status=403, times=None)
    msg = fails(default, "rename", old_path="/memories/acme/d", new_path="/memories/acme/e")
    assert msg == (
        "Renaming /memories/acme/d to /memories/acme/e failed and could not be undone: these "
        f"files now exist at both paths: /memories/acme/d/x.md (context {x}) and "
        f"/memories/acme/e/x.md (context {y + 1}); /memories/acme/d/y.md (context {y}) and "
        f"/memories/acme/e/y.md (context {y + 2}). Delete one of each. Cause: ContextQ "
        "refused: this API key lacks the 'another' scope, so this memory command is not "
        "allowed (files may still be viewed if it has 'read')"
    )


# ----- a failure in the model's words -----


def test_quota_is_named_with_plan_and_limit(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    fake.set_plan(tenant, "free")
    items = [
        {"type": "reference", "title": "t", "content": "c", "externalId": f"e{i}"}
        for i in range(100)
    ]
    assert http.post("/api/contexts/bulk-upsert", json={"contexts": items}).status_code == 200
    assert fails(pinned, "create", path="/memories/f.md", file_text="x") == (
        "ContextQ quota exceeded: the free plan allows 100 contexts. Delete memory files "
        "that are no longer needed, or merge small ones, before creating more."
    )


def test_a_quota_refusal_without_details_says_the_plan_is_full(
    fake: FakeContextQ, pinned: ContextQMemoryTool
) -> None:
    fake.faults.inject("POST", "/api/contexts", status=402, times=1)
    assert fails(pinned, "create", path="/memories/f.md", file_text="x") == (
        "ContextQ quota exceeded: the current plan is full. Delete memory files that are no "
        "longer needed, or merge small ones, before creating more."
    )


def test_a_quota_refusal_without_its_resource_counts_contexts() -> None:
    refused = errors.QuotaExceededError("over", details={"limit": 5, "plan": "pro"})
    assert str(explain(refused)).startswith(
        "ContextQ quota exceeded: the pro plan allows 5 contexts."
    )


def test_a_missing_scope_is_named(fake: FakeContextQ, tenant: Tenant, acme: str) -> None:
    read_only = fake.mint_key(tenant, ["read"])
    tool = ContextQMemoryTool(read_only, http_client=fake.client(), workspace=acme)
    assert fails(tool, "create", path="/memories/f.md", file_text="x") == (
        "ContextQ refused: this API key lacks the 'write' scope, so this memory command is not "
        "allowed (files may still be viewed if it has 'read')."
    )


def test_a_timeout_says_the_command_may_not_have_happened() -> None:
    assert str(explain(errors.ContextQTimeoutError("read timed out"))) == (
        "ContextQ did not answer in time; the memory command may not have happened. Check "
        "with view before retrying."
    )


def test_an_outage_quotes_the_answer_without_its_full_stop() -> None:
    down = errors.UnavailableError("Maintenance window X.", status=503)
    assert str(explain(down)) == (
        "ContextQ is unavailable (503): Maintenance window X. Try again later."
    )


def test_any_other_failure_is_quoted() -> None:
    odd = errors.ContextQError("teapot", status=418)
    assert str(explain(odd)) == "ContextQ error: 418 teapot"


def test_a_rename_refused_after_copying_names_the_copies_it_could_not_remove(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/x.md", file_text="x")
    run(pinned, "create", path="/memories/d/y.md", file_text="y")
    run(pinned, "create", path="/memories/e/y.md", file_text="theirs")
    x = fake.contexts(tenant)[0].id
    copy = fake.contexts(tenant)[-1].id + 1
    fake.faults.inject("DELETE", f"/api/contexts/{copy}", status=403, times=None)
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e") == (
        "Renaming /memories/d to /memories/e failed partway and could not be fully undone: "
        f"these copies remain beside their originals: /memories/d/x.md (context {x}) and "
        f"/memories/e/x.md (context {copy}). Delete the copies. Cause: The destination "
        "/memories/e already exists"
    )


# ----- the line numbers a str_replace of several matches lists -----


def reference_lines(content: str, old: str) -> list[int]:
    """Every match, overlapping ones included, searched from one past the last (the SDK)."""
    return [
        content.count("\n", 0, i) + 1 for i in range(len(content) + 1) if content.startswith(old, i)
    ]


def many(lines: list[int]) -> str:
    shown = ", ".join(map(str, lines[:10]))
    return shown + (f" and {len(lines) - 10} more" if len(lines) > 10 else "")


@pytest.mark.parametrize(
    ("content", "old"),
    [
        ("ab\ncd", ""),
        ("abcdefghijkl", ""),
        ("\nab ab", "ab"),
        ("a\na", "a"),
        ("abababab", "abab"),
        ("a" * 30, "aa"),
        ("x\n\n\n\ny", "\n\n"),
        ("aabaabaab\naabaa aabaa\nabaababaab\naaabaaab", "aabaa"),
        ("aabaabaab\naabaa aabaa\nabaababaab\naaabaaab", "abaab"),
        ("aabaabaab\naabaa aabaa\nabaababaab\naaabaaab", "aab"),
        ("aabaabaab\naabaa aabaa\nabaababaab\naaabaaab", "aaab"),
        ("aacaab aacaacaab\naacaacaacaab", "aacaab"),
        ("abacabab abacabacabab\nabacabab", "abacabab"),
        ("aabaaabaaa aabaaa", "aabaaa"),
    ],
)
def test_several_matches_are_listed_by_line_as_the_sdk_lists_them(
    pinned: ContextQMemoryTool, content: str, old: str
) -> None:
    assert content.count(old) > 1
    run(pinned, "create", path="/memories/f.md", file_text=content)
    assert fails(pinned, "str_replace", path="/memories/f.md", old_str=old, new_str="z") == (
        f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
        f"{many(reference_lines(content, old))}. Please ensure it is unique"
    )


# ----- what is not a file -----


def test_an_edit_of_what_is_not_a_file_says_so(
    pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/x.md", file_text="x")
    edit = {"old_str": "x", "new_str": "y"}
    assert fails(pinned, "str_replace", path="/memories", **edit) == (
        "The path /memories is not a file."
    )
    for path in ("/memories", "/memories/acme", "/memories/acme/d"):
        assert fails(default, "str_replace", path=path, **edit) == f"The path {path} is not a file."
    for path in ("/memories/nope", "/memories/acme/nope.md"):
        assert fails(default, "str_replace", path=path, **edit) == (
            f"The path {path} does not exist. Please provide a valid path."
        )


def test_a_rename_under_a_file_is_refused_naming_the_file(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="f")
    run(pinned, "create", path="/memories/a.md", file_text="a")
    assert fails(pinned, "rename", old_path="/memories/a.md", new_path="/memories/f.md/x.md") == (
        "Cannot rename to /memories/f.md/x.md: /memories/f.md is a file, not a directory."
    )
    assert fails(
        default, "rename", old_path="/memories/acme/a.md", new_path="/memories/acme/f.md/x.md"
    ) == (
        "Cannot rename to /memories/acme/f.md/x.md: /memories/acme/f.md is a file, not a directory."
    )
    assert sorted(c.external_id or "" for c in fake.contexts(tenant)) == [
        "mem-tool:acme/a.md",
        "mem-tool:acme/f.md",
    ]


def test_a_rename_failing_while_removing_originals_says_what_moved(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("x", "y", "z"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    _, y, _ = (c.id for c in fake.contexts(tenant))
    fake.faults.inject("DELETE", f"/api/contexts/{y}", status=403, times=None)
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e") == (
        "Renaming /memories/d to /memories/e failed while removing the originals (ContextQ "
        "refused: this API key lacks the 'another' scope, so this memory command is not "
        "allowed (files may still be viewed if it has 'read')); the copies of the files not "
        "yet moved were removed again, so /memories/d keeps them (1 file(s) had already "
        "moved to /memories/e)."
    )
    assert sorted(c.external_id or "" for c in fake.contexts(tenant)) == [
        "mem-tool:acme/d/y.md",
        "mem-tool:acme/d/z.md",
        "mem-tool:acme/e/x.md",
    ]


def test_a_rename_failing_and_not_undone_says_what_moved(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("x", "y", "z"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    _, y, z = (c.id for c in fake.contexts(tenant))
    for refused in (y, z + 2, z + 3):  # y's original, and the copies of y and z
        fake.faults.inject("DELETE", f"/api/contexts/{refused}", status=403, times=None)
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e") == (
        "Renaming /memories/d to /memories/e failed and could not be undone: these files now "
        f"exist at both paths: /memories/d/y.md (context {y}) and /memories/e/y.md (context "
        f"{z + 2}); /memories/d/z.md (context {z}) and /memories/e/z.md (context {z + 3}). "
        "Delete one of each (1 file(s) had already moved to /memories/e). Cause: ContextQ "
        "refused: this API key lacks the 'another' scope, so this memory command is not "
        "allowed (files may still be viewed if it has 'read')"
    )


# ----- malformed input -----


def test_an_unknown_command_is_refused_listing_the_commands(pinned: ContextQMemoryTool) -> None:
    listed = "view, create, str_replace, insert, delete, rename"
    for command, shown in (("fly", "'fly'"), ([1], "[1]")):
        with pytest.raises(ToolError) as caught:
            pinned.call({"command": command, "path": "/memories"})
        assert str(caught.value) == (f"Unknown memory command {shown}; the commands are {listed}.")


def test_an_unpaired_surrogate_is_refused_by_name(pinned: ContextQMemoryTool) -> None:
    assert fails(pinned, "create", path="/memories/a.md", file_text="x\ud800") == (
        "'file_text' of the create command holds an unpaired surrogate (half of a UTF-16 "
        "pair), which cannot be stored as text."
    )


# ----- listings -----


def test_a_file_and_a_directory_of_one_name_are_both_listed(
    pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    """Rows another writer made can hold a file and a directory of one name."""
    for ext, content in (("x", "12345"), ("x/y.md", "123")):
        body = {
            "type": "reference",
            "title": ext,
            "content": content,
            "workspace": "acme",
            "tags": ["mem-tool"],
            "externalId": f"mem-tool:acme/{ext}",
            "metadata": {"bytes": len(content)},
        }
        assert http.post("/api/contexts", json=body).status_code == 201
    assert run(pinned, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n8B\t/memories\n5B\t/memories/x\n3B\t/memories/x/\n3B\t/memories/x/y.md"
    )


def test_a_view_range_from_line_zero_or_to_minus_one(pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="one\ntwo\nthree\nfour")
    head = "Here's the content of /memories/f.md with line numbers:\n"
    assert run(pinned, "view", path="/memories/f.md", view_range=[0, 2]) == (
        head + "     1\tone\n     2\ttwo"
    )
    assert run(pinned, "view", path="/memories/f.md", view_range=[3, -1]) == (
        head + "     3\tthree\n     4\tfour"
    )


def test_a_workspace_deleted_behind_the_tools_back_is_looked_up_again(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool, http: httpx2.Client
) -> None:
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    run(default, "delete", path="/memories/acme/a.md")
    assert http.delete("/api/workspaces/acme").status_code == 204
    fake.faults.inject("DELETE", "/api/contexts/*", status=403, times=None)
    assert fails(default, "create", path="/memories/acme/b.md", file_text="b") == (
        "The workspace 'acme' no longer exists in ContextQ, so /memories/acme/b.md was not written."
    )
    assert fails(default, "create", path="/memories/acme/c.md", file_text="c") == (
        "The path /memories/acme/c.md is in workspace 'acme', which does not exist in "
        "ContextQ (existing: none yet). Use an existing workspace, or create this one first."
    )


# ----- views of workspace roots, edits and their write-back -----


def test_an_empty_workspace_root_is_an_empty_listing(
    fake: FakeContextQ, tenant: Tenant, key: str, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    head = "Here're the files and directories up to 2 levels deep in {p}, excluding hidden items:"
    assert run(default, "view", path="/memories/beta") == (
        head.format(p="/memories/beta") + "\n0B\t/memories/beta"
    )
    auto = ContextQMemoryTool(
        key, http_client=fake.client(), workspace="gamma", auto_create_workspaces=True
    )
    assert run(auto, "view", path="/memories") == head.format(p="/memories") + "\n0B\t/memories"


def test_an_insert_keeps_one_final_newline(fake: FakeContextQ, pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a\nb")
    assert run(pinned, "insert", path="/memories/f.md", insert_line=1, insert_text="\nnew\n\n") == (
        "The file /memories/f.md has been edited."
    )
    run(pinned, "create", path="/memories/g.md", file_text="a\n")
    run(pinned, "insert", path="/memories/g.md", insert_line=1, insert_text="z")
    contents = [c.content for c in fake.contexts(fake.tenants()[0])]
    assert contents == ["a\n\nnew\nb\n", "a\nz\n"]


def test_an_edit_shows_two_lines_either_side(pinned: ContextQMemoryTool) -> None:
    text = "\n".join(f"line {i}" for i in range(1, 11))
    run(pinned, "create", path="/memories/f.md", file_text=text)
    out = run(pinned, "str_replace", path="/memories/f.md", old_str="line 5", new_str="five")
    assert out == (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     3\tline 3\n     4\tline 4\n     5\tfive\n     6\tline 6\n     7\tline 7"
    )


def test_an_edit_updates_the_listed_size(pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a")
    run(pinned, "str_replace", path="/memories/f.md", old_str="a", new_str="abcd")
    assert run(pinned, "view", path="/memories").endswith("4B\t/memories\n4B\t/memories/f.md")


def test_an_edit_too_large_names_the_file(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_file_bytes=8)
    run(tool, "create", path="/memories/f.md", file_text="a")
    assert fails(tool, "str_replace", path="/memories/f.md", old_str="a", new_str="a" * 9) == (
        "The content for /memories/f.md is 9 bytes; a memory file may hold at most 8 bytes. "
        "Split it into several smaller files."
    )


def test_an_edit_of_a_file_deleted_meanwhile_says_so(
    fake: FakeContextQ, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a")
    fake.faults.inject("PUT", "/api/contexts/*", status=404, times=1)
    assert fails(pinned, "str_replace", path="/memories/f.md", old_str="a", new_str="b") == (
        "The file /memories/f.md no longer exists (may have been deleted or renamed concurrently)."
    )
    fake.faults.inject("PUT", "/api/contexts/*", status=404, times=1)
    assert fails(pinned, "insert", path="/memories/f.md", insert_line=0, insert_text="b") == (
        "The file /memories/f.md no longer exists (may have been deleted or renamed concurrently)."
    )


# ----- deletes -----


def test_a_directory_delete_takes_only_its_files_and_untagged_rows_under_it(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    run(pinned, "create", path="/memories/keep.md", file_text="k")
    body = {"type": "reference", "title": "d/u.md", "content": "u", "workspace": "acme"}
    untagged = {**body, "tags": ["mem-tool"], "externalId": "mem-tool:acme/d/u.md"}
    assert http.post("/api/contexts", json=untagged).status_code == 201
    assert run(pinned, "delete", path="/memories/d") == "Successfully deleted /memories/d"
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/keep.md"]


def test_an_empty_workspace_can_be_deleted_in_default_mode(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    assert run(default, "delete", path="/memories/beta") == "Successfully deleted /memories/beta"


def test_a_delete_failing_partway_names_what_remains_in_default_mode(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    for name in ("a", "b"):
        run(default, "create", path=f"/memories/acme/d/{name}.md", file_text=name)
    second = fake.contexts(tenant)[1].id
    fake.faults.inject("DELETE", f"/api/contexts/{second}", status=403, times=None)
    assert fails(default, "delete", path="/memories/acme/d") == (
        "Deleting /memories/acme/d stopped partway: ContextQ refused: this API key lacks the "
        "'another' scope, so this memory command is not allowed (files may still be viewed "
        "if it has 'read'). Deleted 1 of 2 files; these remain: /memories/acme/d/b.md"
    )


def test_clear_all_failing_partway_names_what_remains_in_pinned_mode(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="a")
    fake.faults.inject("DELETE", "/api/contexts/*", status=403, times=None)
    with pytest.raises(ToolError) as caught:
        pinned.clear_all_memory()
    assert str(caught.value).startswith("Deleting /memories stopped partway: ")
    assert str(caught.value).endswith("Deleted 0 of 1 files; these remain: /memories/a.md")


# ----- renames another writer cut into, in default mode -----


def test_copies_that_cannot_be_removed_again_are_all_named(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    for name in ("x", "y"):
        run(default, "create", path=f"/memories/acme/d/{name}.md", file_text=name)
    x, y = (c.id for c in fake.contexts(tenant))
    for gone in (x, y):
        fake.faults.inject("DELETE", f"/api/contexts/{gone}", status=404, times=1)
    for copy in (y + 1, y + 2):
        fake.faults.inject("DELETE", f"/api/contexts/{copy}", status=403, times=None)
    msg = fails(default, "rename", old_path="/memories/acme/d", new_path="/memories/acme/e")
    assert msg == (
        "Renaming /memories/acme/d to /memories/acme/e conflicted with another writer, which "
        "renamed or deleted /memories/acme/d/x.md while it was being copied to "
        "/memories/acme/e/x.md; /memories/acme/d/y.md while it was being copied to "
        "/memories/acme/e/y.md, and these copies could not be removed, so each may duplicate "
        f"a file the other writer moved: /memories/acme/e/x.md (context {y + 1}), "
        f"/memories/acme/e/y.md (context {y + 2}). Delete them. View /memories to see where "
        "things are now."
    )


def test_a_copy_already_gone_does_not_stop_the_others_being_removed(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("x", "y"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    x, y = (c.id for c in fake.contexts(tenant))
    for gone in (x, y, y + 1):  # both originals, and the first copy when it is undone
        fake.faults.inject("DELETE", f"/api/contexts/{gone}", status=404, times=1)
    assert "so 2 copies were removed again" in fails(
        pinned, "rename", old_path="/memories/d", new_path="/memories/e"
    )
    assert [c.id for c in fake.contexts(tenant)] == [x, y, y + 1]


# ----- views cut to the budget, and the line limit -----


HEAD = "Here's the content of /memories/f.md with line numbers:"


A, B, C = ("a" * 100, "b" * 100, "c" * 100)
LINES = [f"     1\t{A}", f"     2\t{B}", f"     3\t{C}"]


def cut_note(budget: int, after: int) -> str:
    return (
        f"[Output cut at {budget} characters after line {after} of 3. View the rest with "
        f"view_range [{after + 1}, 3].]"
    )


@pytest.mark.parametrize(("extra", "kept"), [(324, 3), (323, 2), (216, 2), (215, 1)])
def test_a_view_is_cut_at_its_budget_exactly(
    fake: FakeContextQ, key: str, acme: str, extra: int, kept: int
) -> None:
    """Each numbered line is 107 characters and its newline one more: the whole view is the
    header and 324 characters."""
    budget = len(HEAD) + extra
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_view_chars=budget)
    run(tool, "create", path="/memories/f.md", file_text=f"{A}\n{B}\n{C}")
    shown = "\n".join([HEAD, *LINES[:kept]])
    expected = shown if kept == 3 else shown + "\n" + cut_note(budget, kept)
    assert run(tool, "view", path="/memories/f.md") == expected


def test_a_line_longer_than_the_budget_is_cut_to_fit_exactly(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_view_chars=200)
    run(tool, "create", path="/memories/f.md", file_text="x" * 300)
    room = 200 - len(HEAD) - 1
    assert run(tool, "view", path="/memories/f.md") == (
        f"{HEAD}\n" + ("     1\t" + "x" * 300)[:room] + "\n[Line 1 alone is longer than 200 "
        "characters and is shown only in part; the file holds it whole.]"
    )


def test_a_file_of_the_most_lines_is_shown(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_file_bytes=2**20)
    run(tool, "create", path="/memories/f.md", file_text="\n" * 999_998)
    assert run(tool, "view", path="/memories/f.md", view_range=[1, 1]) == f"{HEAD}\n     1\t"
    run(tool, "create", path="/memories/g.md", file_text="\n" * 999_999)
    assert fails(tool, "view", path="/memories/g.md") == (
        "File /memories/g.md exceeds maximum line limit of 999,999 lines."
    )


# ----- inserts -----


def test_an_insert_keeps_the_texts_own_trailing_characters(
    fake: FakeContextQ, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a\n")
    run(pinned, "insert", path="/memories/f.md", insert_line=1, insert_text="x \tX\n")
    run(pinned, "insert", path="/memories/f.md", insert_line=2, insert_text="\n")
    assert [c.content for c in fake.contexts(fake.tenants()[0])] == ["a\nx \tX\n"]
    assert fails(pinned, "insert", path="/memories/f.md", insert_line=3, insert_text="z") == (
        "Invalid `insert_line` parameter: 3. It should be within the range [0, 2]."
    )


def test_an_insert_line_past_a_final_newline_is_refused(pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a\n")
    assert fails(pinned, "insert", path="/memories/f.md", insert_line=2, insert_text="z") == (
        "Invalid `insert_line` parameter: 2. It should be within the range [0, 1]."
    )


def test_an_edit_keeps_metadata_another_writer_added(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a")
    (row,) = fake.contexts(tenant)
    http.put(f"/api/contexts/{row.id}", json={"metadata": {"bytes": 1, "owner": "me"}})
    run(pinned, "str_replace", path="/memories/f.md", old_str="a", new_str="abc")
    assert fake.contexts(tenant)[0].metadata == {"bytes": 3, "owner": "me"}


# ----- listings -----


def test_a_listing_sorts_siblings_by_name_and_counts_only_top_entries(
    pinned: ContextQMemoryTool,
) -> None:
    run(pinned, "create", path="/memories/a/X", file_text="123")
    run(pinned, "create", path="/memories/a-b.md", file_text="")
    assert run(pinned, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n3B\t/memories\n3B\t/memories/a/\n3B\t/memories/a/X\n"
        "0B\t/memories/a-b.md"
    )


# ----- rename refusals -----


def test_rename_refusals_name_the_paths(
    pinned: ContextQMemoryTool, default: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/d/x.md", file_text="x")
    assert fails(pinned, "rename", old_path="/memories", new_path="/memories/a") == (
        "Cannot rename the /memories directory itself"
    )
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories") == (
        "The destination /memories already exists"
    )
    assert fails(default, "rename", old_path="/memories/acme", new_path="/memories/acme/b") == (
        "Cannot rename /memories/acme: it is the ContextQ workspace 'acme', and workspaces "
        "cannot be renamed."
    )
    assert fails(default, "rename", old_path="/memories/acme/d", new_path="/memories/acme") == (
        "The destination /memories/acme already exists"
    )
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories/d/e") == (
        "Cannot move the directory /memories/d into itself (/memories/d/e)."
    )


# ----- rows other writers wrote -----


def write_row(http: httpx2.Client, external_id: str, content: str, **extra: Any) -> None:
    body: dict[str, Any] = {"type": "reference", "title": "t", "content": content}
    body |= {"workspace": "acme", "tags": ["mem-tool"], "externalId": external_id, **extra}
    assert http.post("/api/contexts", json=body).status_code == 201


def test_a_directory_of_untagged_rows_is_renamed(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    write_row(http, "mem-tool:acme/d/u.md", "u")
    assert run(pinned, "rename", old_path="/memories/d", new_path="/memories/e") == (
        "Successfully renamed /memories/d to /memories/e"
    )
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/e/u.md"]
    assert run(pinned, "view", path="/memories/e/u.md") == (
        "Here's the content of /memories/e/u.md with line numbers:\n     1\tu"
    )


@pytest.mark.parametrize("size", ["3", 3.0, None, [3]])
def test_a_size_that_is_not_an_integer_is_measured_from_the_content(
    pinned: ContextQMemoryTool, http: httpx2.Client, size: object
) -> None:
    write_row(http, "mem-tool:acme/u.md", "héllo", metadata={"bytes": size})
    assert run(pinned, "view", path="/memories").endswith("6B\t/memories\n6B\t/memories/u.md")


def test_a_row_with_an_empty_path_is_not_listed(
    pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    write_row(http, "mem-tool:acme/", "x")
    run(pinned, "create", path="/memories/f.md", file_text="ab")
    assert run(pinned, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n2B\t/memories\n2B\t/memories/f.md"
    )


# ----- construction -----


def test_a_workspace_slug_of_64_characters_is_used(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str
) -> None:
    slug = "w" * 64
    fake.create_workspace(tenant, slug)
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=slug)
    run(tool, "create", path="/memories/f.md", file_text="a")
    assert [c.external_id for c in fake.contexts(tenant)] == [f"mem-tool:{slug}/f.md"]
    with pytest.raises(ValueError, match="not a valid ContextQ workspace slug"):
        ContextQMemoryTool(key, http_client=fake.client(), workspace="w" * 65)


@pytest.mark.parametrize("tag", ["", "a:b", "a/b"])
def test_a_tag_with_a_separator_or_none_is_refused(fake: FakeContextQ, key: str, tag: str) -> None:
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), tag=tag)
    assert str(caught.value) == f"tag must be a non-empty name without ':' or '/', got {tag!r}"


def test_a_tag_must_leave_room_for_its_directory_tags(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str
) -> None:
    longest = "t" * 75  # 100 characters with ':dir:' and a 20-character digest
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, tag=longest)
    run(tool, "create", path="/memories/d/f.md", file_text="a")
    assert [c.external_id for c in fake.contexts(tenant)] == [f"{longest}:acme/d/f.md"]
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), tag="t" * 76)
    assert str(caught.value) == (
        "tag must be at most 75 characters, so that its directory tags fit ContextQ's 100; got 76"
    )


# ----- inserts keep trailing whitespace -----


def test_an_insert_keeps_trailing_spaces(fake: FakeContextQ, pinned: ContextQMemoryTool) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="a\n")
    run(pinned, "insert", path="/memories/f.md", insert_line=1, insert_text="x \t")
    assert [c.content for c in fake.contexts(fake.tenants()[0])] == ["a\nx \t\n"]


# ----- a rename failing after an original vanished -----


def test_a_rename_failing_after_an_original_vanished_counts_what_moved(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    for name in ("x", "y", "z"):
        run(pinned, "create", path=f"/memories/d/{name}.md", file_text=name)
    x, _, z = (c.id for c in fake.contexts(tenant))
    fake.faults.inject("DELETE", f"/api/contexts/{x}", status=404, times=1)
    fake.faults.inject("DELETE", f"/api/contexts/{z}", status=403, times=None)
    assert fails(pinned, "rename", old_path="/memories/d", new_path="/memories/e").endswith(
        "were removed again, so /memories/d keeps them (1 file(s) had already moved to "
        "/memories/e)."
    )


# ----- a header longer than the view budget -----


def test_a_header_longer_than_the_budget_shows_no_line(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    path = "/memories/" + "a" * 100 + "/" + "b" * 100
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_view_chars=200)
    run(tool, "create", path=path, file_text="x" * 300)
    assert run(tool, "view", path=path) == (
        f"Here's the content of {path} with line numbers:\n\n[Line 1 alone is longer than 200 "
        "characters and is shown only in part; the file holds it whole.]"
    )


# ----- options at their bounds -----


def test_the_smallest_file_limit_is_one_byte(fake: FakeContextQ, key: str, acme: str) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme, max_file_bytes=1)
    assert run(tool, "create", path="/memories/a.md", file_text="a").startswith("File created")
    assert fails(tool, "create", path="/memories/b.md", file_text="ab") == (
        "The content for /memories/b.md is 2 bytes; a memory file may hold at most 1 bytes. "
        "Split it into several smaller files."
    )
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), max_file_bytes=0)
    assert str(caught.value) == (
        f"max_file_bytes must be between 1 and {MAX_CONTENT_BYTES} (ContextQ's own limit), got 0"
    )


def test_the_smallest_view_budget_is_200_characters_or_none(fake: FakeContextQ, key: str) -> None:
    ContextQMemoryTool(key, http_client=fake.client(), max_view_chars=None)
    ContextQMemoryTool(key, http_client=fake.client(), max_view_chars=200)
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), max_view_chars=199)
    assert str(caught.value) == "max_view_chars must be at least 200 or None, got 199"


def test_an_unknown_context_type_is_refused_listing_the_types(fake: FakeContextQ, key: str) -> None:
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), context_type="handoff")
    assert str(caught.value) == (
        f"context_type must be one of {', '.join(CONTEXT_TYPES)}; got 'handoff'"
    )


def test_a_workspace_that_folds_to_no_slug_is_refused_saying_why(
    fake: FakeContextQ, key: str
) -> None:
    with pytest.raises(ValueError) as caught:
        ContextQMemoryTool(key, http_client=fake.client(), workspace="Not A Slug")
    assert str(caught.value) == (
        "workspace 'not a slug' is not a valid ContextQ workspace slug (lowercase ASCII "
        "letters, digits and single hyphens; other characters are not folded into these)"
    )


# ----- workspaces in default mode -----


def test_an_auto_created_workspace_is_not_looked_up_again(fake: FakeContextQ, key: str) -> None:
    listings: list[str] = []

    def note(request: httpx2.Request) -> None:
        if request.method == "GET" and request.url.path == "/api/workspaces":
            listings.append(request.url.path)

    http = fake.client(event_hooks={"request": [note]})
    tool = ContextQMemoryTool(key, http_client=http, auto_create_workspaces=True)
    run(tool, "create", path="/memories/fresh/a.md", file_text="a")
    run(tool, "create", path="/memories/fresh/b.md", file_text="b")
    assert listings == ["/api/workspaces"]


def test_auto_creation_does_not_make_a_missing_workspace_viewable(
    fake: FakeContextQ, key: str, acme: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), auto_create_workspaces=True)
    assert fails(tool, "view", path="/memories/gamma") == (
        "The path /memories/gamma does not exist: ContextQ has no workspace 'gamma' "
        "(existing: acme)."
    )


def test_a_name_that_is_no_slug_lists_every_workspace(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    assert fails(default, "create", path="/memories/Not_A_Slug/a.md", file_text="x") == (
        "The path /memories/Not_A_Slug/a.md is not inside a workspace: here the first name "
        "under /memories is a ContextQ workspace (existing: acme, beta). Use a path like "
        "/memories/acme/notes.md."
    )


@pytest.mark.parametrize("path", ["/memories", "/memories/acme"])
def test_creating_the_store_or_a_workspace_root_is_already_exists(
    default: ContextQMemoryTool, path: str
) -> None:
    assert fails(default, "create", path=path, file_text="x") == f"File {path} already exists"


def test_a_listing_skips_rows_of_other_tools_wherever_they_stand(
    pinned: ContextQMemoryTool, http: httpx2.Client
) -> None:
    write_row(http, "notes-app:1", "other")
    run(pinned, "create", path="/memories/f.md", file_text="ab")
    write_row(http, "notes-app:2", "other")
    assert run(pinned, "view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n2B\t/memories\n2B\t/memories/f.md"
    )


def test_recall_skips_a_row_with_an_empty_path(
    default: ContextQMemoryTool, http: httpx2.Client
) -> None:
    write_row(http, "mem-tool:acme/", "kestrel")
    run(default, "create", path="/memories/acme/f.md", file_text="kestrel")
    assert paths_of(default.recall("kestrel")) == ["/memories/acme/f.md"]


# ----- a refused create that cannot take its row back -----


def test_a_refused_create_whose_row_cannot_be_removed_names_it(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/f.md", file_text="f")
    written = fake.contexts(tenant)[0].id + 1  # the row the refused create writes
    fake.faults.inject("DELETE", f"/api/contexts/{written}", status=403, times=None)
    assert fails(pinned, "create", path="/memories/f.md/x.md", file_text="x") == (
        "Cannot create /memories/f.md/x.md: /memories/f.md is a file, not a directory; "
        "removing the file just written there failed (ContextQ refused: this API key lacks "
        "the 'another' scope, so this memory command is not allowed (files may still be "
        f"viewed if it has 'read')), so delete /memories/f.md/x.md (context {written})."
    )


# ----- renames across and onto roots -----


def test_a_rename_onto_the_store_root_is_already_exists(default: ContextQMemoryTool) -> None:
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    assert fails(default, "rename", old_path="/memories/acme/a.md", new_path="/memories") == (
        "The destination /memories already exists"
    )


def test_a_rename_onto_a_name_that_is_no_slug_says_it_is_no_workspace(
    default: ContextQMemoryTool,
) -> None:
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    assert fails(
        default, "rename", old_path="/memories/acme/a.md", new_path="/memories/Not_A_Slug"
    ) == (
        "The path /memories/Not_A_Slug is not inside a workspace: here the first name under "
        "/memories is a ContextQ workspace (existing: acme). Use a path like "
        "/memories/acme/notes.md."
    )


def test_a_file_renamed_under_itself_is_refused_as_under_a_file(
    fake: FakeContextQ, tenant: Tenant, pinned: ContextQMemoryTool
) -> None:
    run(pinned, "create", path="/memories/a.md", file_text="a")
    assert fails(pinned, "rename", old_path="/memories/a.md", new_path="/memories/a.md/b.md") == (
        "Cannot rename to /memories/a.md/b.md: /memories/a.md is a file, not a directory."
    )
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/a.md"]


def test_a_rename_into_another_workspace_moves_the_file(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    fake.create_workspace(tenant, "beta")
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    run(default, "rename", old_path="/memories/acme/a.md", new_path="/memories/beta/b.md")
    assert [(c.workspace, c.external_id) for c in fake.contexts(tenant)] == [
        ("beta", "mem-tool:beta/b.md")
    ]


def test_a_rename_into_a_missing_workspace_is_refused_before_copying(
    fake: FakeContextQ, tenant: Tenant, default: ContextQMemoryTool
) -> None:
    run(default, "create", path="/memories/acme/a.md", file_text="a")
    assert fails(
        default, "rename", old_path="/memories/acme/a.md", new_path="/memories/gamma/a.md"
    ) == (
        "The path /memories/gamma/a.md is in workspace 'gamma', which does not exist in "
        "ContextQ (existing: acme). Use an existing workspace, or create this one first."
    )
    assert [c.external_id for c in fake.contexts(tenant)] == ["mem-tool:acme/a.md"]


def test_a_rename_into_a_missing_workspace_creates_it_when_asked(
    fake: FakeContextQ, tenant: Tenant, key: str, acme: str
) -> None:
    tool = ContextQMemoryTool(key, http_client=fake.client(), auto_create_workspaces=True)
    run(tool, "create", path="/memories/acme/a.md", file_text="a")
    run(tool, "rename", old_path="/memories/acme/a.md", new_path="/memories/gamma/a.md")
    assert [w.slug for w in fake.workspaces(tenant)] == ["acme", "gamma"]
    assert [(c.workspace, c.external_id) for c in fake.contexts(tenant)] == [
        ("gamma", "mem-tool:gamma/a.md")
    ]
