"""A whole tool-runner loop: the SDK's runner, this memory tool, and the fake ContextQ.

The Anthropic client talks to a small replaying transport (no network, no key): the
first turn asks for memory commands, the last one ends the turn. The runner must send
the tool's definition, run each tool_use through the adapter, and return the results
(errors as ``is_error``) on the next request.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx2
import pytest

from adapter import AsyncContextQMemoryTool, ContextQMemoryTool
from fake_contextq import FakeContextQ, Tenant

TURNS: list[list[dict[str, Any]]] = [
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
        },
        {
            "type": "tool_use",
            "id": "toolu_2",
            "name": "memory",
            "input": {"command": "view", "path": "/memories/../../etc/passwd"},
        },
    ],
    [
        {
            "type": "tool_use",
            "id": "toolu_3",
            "name": "memory",
            "input": {"command": "view", "path": "/memories/prefs.md"},
        }
    ],
    [{"type": "text", "text": "Noted: you prefer TypeScript."}],
]


class Replay:
    """Answers each Messages request with the next scripted turn; keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        content = TURNS[len(self.requests) - 1]
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        )

    def tool_results(self, index: int) -> dict[str, dict[str, Any]]:
        last = self.requests[index]["messages"][-1]
        return {
            block["tool_use_id"]: block
            for block in last["content"]
            if block.get("type") == "tool_result"
        }


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(c["text"] for c in content)


def _check(replay: Replay, fake: FakeContextQ, tenant: Tenant, final: Any) -> None:
    assert len(replay.requests) == 3
    assert {"type": "memory_20250818", "name": "memory"} in replay.requests[0]["tools"]
    first = replay.tool_results(1)
    assert _text(first["toolu_1"]) == "File created successfully at: /memories/prefs.md"
    assert not first["toolu_1"].get("is_error")
    assert first["toolu_2"]["is_error"] is True
    assert "would escape /memories" in _text(first["toolu_2"])
    second = replay.tool_results(2)
    assert "     1\tPrefers TypeScript." in _text(second["toolu_3"])
    assert final.content[0].text == "Noted: you prefer TypeScript."
    [row] = fake.contexts(tenant)
    assert (row.external_id, row.content) == ("mem-tool:acme/prefs.md", "Prefers TypeScript.\n")


@pytest.fixture
def acme(fake: FakeContextQ, tenant: Tenant) -> str:
    fake.create_workspace(tenant, "acme")
    return "acme"


def test_sync_tool_runner(fake: FakeContextQ, tenant: Tenant, key: str, acme: str) -> None:
    replay = Replay()
    client = anthropic.Anthropic(
        api_key="test-key",
        base_url="http://anthropic.test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(replay)),
    )
    memory = ContextQMemoryTool(key, http_client=fake.client(), workspace=acme)
    final = client.beta.messages.tool_runner(
        model="claude-opus-4-1",
        max_tokens=1024,
        tools=[memory],
        messages=[{"role": "user", "content": "Remember that I prefer TypeScript."}],
    ).until_done()
    _check(replay, fake, tenant, final)


def test_async_tool_runner(fake: FakeContextQ, tenant: Tenant, key: str, acme: str) -> None:
    replay = Replay()

    async def main() -> Any:
        async def handler(request: httpx2.Request) -> httpx2.Response:
            await request.aread()
            return replay(request)

        client = anthropic.AsyncAnthropic(
            api_key="test-key",
            base_url="http://anthropic.test",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
        )
        memory = AsyncContextQMemoryTool(key, http_client=fake.async_client(), workspace=acme)
        return await client.beta.messages.tool_runner(
            model="claude-opus-4-1",
            max_tokens=1024,
            tools=[memory],
            messages=[{"role": "user", "content": "Remember that I prefer TypeScript."}],
        ).until_done()

    _check(replay, fake, tenant, asyncio.run(main()))
