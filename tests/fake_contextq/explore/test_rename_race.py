"""A rename racing an edit of its source, in chosen orders: the edit made between the
rename's first read and its re-read moves with the file; a source that keeps changing
is left where it was, its copy removed."""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools import ToolError

from fake_contextq import FakeContextQ
from fake_contextq.explore import AgentHandle, Explorer

NOTES, MOVED = "/memories/notes.md", "/memories/moved.md"


def renamer(handle: AgentHandle) -> str:
    tool = handle.memory_tool()
    try:
        return str(tool.call({"command": "rename", "old_path": NOTES, "new_path": MOVED}))
    except ToolError as exc:
        return f"refused: {exc}"


def editor(times: int) -> Any:
    def agent(handle: AgentHandle) -> None:
        tool = handle.memory_tool()
        for i in range(times):
            old = "beta" if i == 0 else f"B{i - 1}"
            try:
                tool.call(
                    {"command": "str_replace", "path": NOTES, "old_str": old, "new_str": f"B{i}"}
                )
            except ToolError:
                return

    return agent


def explorer(times: int) -> tuple[FakeContextQ, Explorer]:
    fake = FakeContextQ()
    tenant = fake.create_tenant("t")
    key = fake.mint_key(tenant)
    fake.create_workspace(tenant, "team")
    fake.seed_files(key, {"/memories/team/notes.md": "alpha\nbeta\n"})
    return fake, Explorer(
        fake, [renamer, editor(times)], tenant=tenant, api_key=key, workspace="team"
    )


def test_an_edit_after_the_renames_read_moves_with_the_file() -> None:
    fake, ex = explorer(1)
    # rename: GET source, POST copy, the destination's check; the edit (GET, PUT); then
    # the rename reads its source again, updates the copy, reads again, deletes
    run = ex.replay([0, 0, 0, 1, 1, 0, 0, 0, 0])
    assert [(s.agent, s.method, s.status) for s in run.steps][5:] == [
        (0, "GET", 200),
        (0, "PUT", 200),
        (0, "GET", 200),
        (0, "DELETE", 204),
    ]
    assert not run.failed, run.describe()
    assert run.results[0] == f"Successfully renamed {NOTES} to {MOVED}"
    assert fake.memory_files(ex.tenant_id) == {"/memories/team/moved.md": "alpha\nB0\n"}


def test_a_source_that_keeps_changing_stays_where_it_is() -> None:
    fake, ex = explorer(3)
    edit = [1, 1]
    schedule = [0, *edit, 0, 0, 0, 0, *edit, 0, 0, *edit, 0, 0, 0]
    run = ex.replay(schedule)
    assert not run.failed, run.describe()
    assert run.results[0] == (
        f"refused: Renaming {NOTES} failed before anything moved: another writer kept "
        "editing it while it was being moved."
    )
    assert fake.memory_files(ex.tenant_id) == {"/memories/team/notes.md": "alpha\nB2\n"}
