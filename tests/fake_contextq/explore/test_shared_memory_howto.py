"""The how-to "Test agents that share memory": its failure text is what the explorer
prints for its own example (the example itself runs as a pytest block of the page)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fake_contextq import FakeContextQ
from fake_contextq.explore import Explorer

PAGE = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "shared-memory.md"


def _block(language: str, after: str) -> str:
    text = PAGE.read_text("utf-8")
    found = re.search(rf"```{language}\n(.*?)```", text[text.index(after) :], re.S)
    assert found, f"no {language} block after {after!r}"
    return found.group(1)


def test_the_failure_shown_is_the_examples_own() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block("python", "## Two agents"), str(PAGE), "exec"), namespace)
    editor = namespace["editor"]
    fake = FakeContextQ()  # as the fixtures make it: a tenant, its key, workspace memories
    tenant = fake.create_tenant("test-tenant")
    key = fake.mint_key(tenant)
    fake.create_workspace(tenant, "memories")
    fake.seed_files(key, {"/memories/notes.md": "owner: ?\nstatus: ?\n"}, workspace="memories")
    explorer = Explorer(
        fake,
        [editor("owner: ?", "owner: ana"), editor("status: ?", "status: done")],
        tenant=tenant,
        api_key=key,
        workspace="memories",
    )
    found = explorer.explore()
    assert str(found) + "\n" == _block("text", "## Reading a failure")
    replayed = explorer.replay([0, 1, 1, 0])
    assert [v.invariant for v in replayed.violations] == ["lost update"]
