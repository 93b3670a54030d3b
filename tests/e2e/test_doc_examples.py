"""Doc examples that need more than the docs harness gives (``tests/e2e/test_docs.py``): the
``FakeContextQ`` life-cycle block, the ``ToolError`` import the prose names, the agent memory
loop on each backend, and the Anthropic SDK version the docs say the suite runs with."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fake_contextq import FakeContextQ

DOCS = Path(__file__).resolve().parents[2] / "docs"
FAKE_PAGE = DOCS / "reference" / "fake-contextq.md"
TOOL_PAGE = DOCS / "reference" / "memory-tool.md"
AGENT_PAGE = DOCS / "how-to" / "agent-memory.md"
MODEL_PAGE = DOCS / "reference" / "scripted-model.md"


def _block_after(page: Path, marker: str) -> str:
    text = page.read_text()
    match = re.search(r"```python\n(.*?)```", text[text.index(marker) :], re.S)
    assert match, f"no python block after {marker!r}"
    return match.group(1)


def test_the_fake_as_a_context_manager_works_as_written() -> None:
    """The "Life" block runs, and leaving it closes the fake."""
    closed: list[FakeContextQ] = []

    class Recording(FakeContextQ):
        def close(self) -> None:
            closed.append(self)
            super().close()

    namespace: dict[str, Any] = {"FakeContextQ": Recording}
    exec(compile(_block_after(FAKE_PAGE, "**Life.**"), str(FAKE_PAGE), "exec"), namespace)
    assert closed == [namespace["fake"]]


def test_a_direct_call_raises_the_sdks_tool_error_from_where_the_docs_say() -> None:
    text = TOOL_PAGE.read_text()
    # the prose names the import once, in backticks (code blocks may import it too)
    [statement] = re.findall(r"`(from \S+ import ToolError)`", text)
    namespace: dict[str, Any] = {}
    exec(statement, namespace)
    from adapter import ContextQMemoryTool

    with FakeContextQ() as fake:
        tenant = fake.create_tenant()
        fake.create_workspace(tenant, "acme")
        memory = ContextQMemoryTool(
            fake.mint_key(tenant), http_client=fake.client(), workspace="acme"
        )
        with pytest.raises(namespace["ToolError"], match="does not exist"):
            memory.call({"command": "view", "path": "/memories/nope.md"})
        with pytest.raises(namespace["ToolError"]):
            memory.recall("")


def _agent_memory_example() -> str:
    match = re.search(r"```python\n(.*?)```", AGENT_PAGE.read_text(), re.S)
    assert match, "the agent memory page has no python block"
    return match.group(1)


@pytest.mark.parametrize("backend", ["local", "contextq", "mcp"])
def test_the_agent_memory_loop_runs_as_written(
    backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two runs of the docs' loop: the second one's preamble holds what the first did."""
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "agents")
    with fake.serve() as served:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("CONTEXTQ_MEMORY_BACKEND", backend)
        monkeypatch.setenv("CONTEXT_API_URL", served.url)
        monkeypatch.setenv("CONTEXT_API_KEY", fake.mint_key(tenant, ("read", "write")))
        monkeypatch.setenv("CONTEXTQ_WORKSPACE", "agents")
        namespace: dict[str, Any] = {}
        exec(compile(_agent_memory_example(), str(AGENT_PAGE), "exec"), namespace)
        memory = namespace["memory"]
        first = namespace["run_agent"]("run-1", "migrate the schema", ["plan", "apply"])
        assert memory.get_record("run-1") == first
        assert "migrate the schema" in memory.build_preamble("migrate the schema")
        namespace["run_agent"]("run-2", "migrate the schema", ["verify"])
        assert [r.run_id for r in memory.list_records()] == ["run-1", "run-2"]
        assert memory.failures == []
        if backend != "local":
            resumed = memory.resume("run-2")
            assert resumed is not None and resumed.checkpoint is not None
            assert resumed.checkpoint.state == {"step": 1, "done": ["verify"]}
            memory.close()
    fake.close()


def test_the_tested_with_version_is_the_installed_one() -> None:
    """The docs name the Anthropic SDK the suite runs with; when pip resolves a newer
    minor release, this fails until the docs (and a look at what changed) catch up."""
    from importlib.metadata import version

    stated = re.search(r"Tested with `anthropic` (\d+\.\d+)", MODEL_PAGE.read_text())
    assert stated, "the scripted model's page names no tested-with anthropic version"
    installed = ".".join(version("anthropic").split(".")[:2])
    assert stated.group(1) == installed, (
        f"the docs say anthropic {stated.group(1)}, the suite runs {version('anthropic')}"
    )
