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
