"""The README's quick start runs as written: a served fake ContextQ, a replayed model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from fake_contextq import FakeContextQ

README = Path(__file__).resolve().parent.parent / "README.md"


def quick_start() -> str:
    text = README.read_text()
    section = text[text.index("## The memory tool") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the memory tool section has no python block"
    return match.group(1)


def test_the_quick_start_works_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    turns: list[list[dict[str, Any]]] = [
        [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "memory",
                "input": {
                    "command": "create",
                    "path": "/memories/prefs.md",
                    "file_text": "Prefers TypeScript.\n",
                },
            }
        ],
        [{"type": "text", "text": "I'll remember that."}],
    ]
    seen: list[dict[str, Any]] = []

    def model(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        content = turns[len(seen) - 1]
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(seen)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    real = anthropic.Anthropic

    def offline_anthropic(**kwargs: Any) -> anthropic.Anthropic:
        return real(
            max_retries=0,
            base_url="http://model.test",
            http_client=httpx2.Client(transport=httpx2.MockTransport(model)),
            **kwargs,
        )

    with FakeContextQ() as fake:
        tenant = fake.create_tenant()
        fake.create_workspace(tenant, "acme")
        key = fake.mint_key(tenant, ("read", "write"))
        with fake.serve() as served:
            monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
            monkeypatch.setenv("CONTEXT_API_KEY", key)
            monkeypatch.setenv("CONTEXT_API_URL", served.url)
            monkeypatch.setattr(anthropic, "Anthropic", offline_anthropic)
            exec(compile(quick_start(), "README.md", "exec"), {})
        assert capsys.readouterr().out == "I'll remember that.\n"
        [row] = fake.contexts(tenant)
        assert (row.external_id, row.content) == ("mem-tool:acme/prefs.md", "Prefers TypeScript.\n")
        names = [t.get("name") for t in seen[0]["tools"]]
        assert names == ["memory", "memory_recall"]
        assert (
            seen[1]["messages"][-1]["content"][0]["content"]
            == "File created successfully at: /memories/prefs.md"
        )


def _block_after(marker: str) -> str:
    text = README.read_text()
    match = re.search(r"```python\n(.*?)```", text[text.index(marker) :], re.S)
    assert match, f"no python block after {marker!r}"
    return match.group(1)


def test_the_fake_as_a_context_manager_works_as_written() -> None:
    """The README's "Life" block runs, and leaving it closes the fake."""
    closed: list[FakeContextQ] = []

    class Recording(FakeContextQ):
        def close(self) -> None:
            closed.append(self)
            super().close()

    namespace: dict[str, Any] = {"FakeContextQ": Recording}
    exec(compile(_block_after("**Life.**"), "README.md", "exec"), namespace)
    assert closed == [namespace["fake"]]


def test_a_direct_call_raises_the_sdks_tool_error_from_where_the_readme_says() -> None:
    text = README.read_text()
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
    text = README.read_text()
    section = text[text.index("## Long-term memory for Python agents") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the agent memory section has no python block"
    return match.group(1)


@pytest.mark.parametrize("backend", ["local", "contextq", "mcp"])
def test_the_agent_memory_loop_runs_as_written(
    backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two runs of the README's loop: the second one's preamble holds what the first did."""
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
        exec(compile(_agent_memory_example(), "README.md", "exec"), namespace)
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
    """The README names the Anthropic SDK the suite runs with; when pip resolves a newer
    minor release, this fails until the README (and a look at what changed) catch up."""
    from importlib.metadata import version

    stated = re.search(r"Tested with `anthropic` (\d+\.\d+)", README.read_text())
    assert stated, "the README names no tested-with anthropic version"
    installed = ".".join(version("anthropic").split(".")[:2])
    assert stated.group(1) == installed, (
        f"the README says anthropic {stated.group(1)}, the suite runs {version('anthropic')}"
    )
