"""``contextq-demo``: the whole loop in one command, offline, with no key.

A scripted model asks the memory tool to view ``/memories``, create a file, edit it and
view it; the tool stores it in an in-process fake ContextQ; the transcript, the requests
ContextQ served and the rows that landed are printed.
"""

from __future__ import annotations

from typing import TextIO

from adapter import ContextQMemoryTool
from fake_anthropic import ScriptedModel, memory, text
from fake_contextq import FakeContextQ

USER = "Remember that I prefer TypeScript, and that my editor is Helix."


def run_demo(out: TextIO) -> int:
    with FakeContextQ() as fake:
        tenant = fake.create_tenant("demo")
        fake.create_workspace(tenant, "demo")
        key = fake.mint_key(tenant)
        tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="demo")
        model = ScriptedModel()
        model.script(
            memory.view("/memories"),
            memory.create("/memories/preferences.md", "- Language: TypeScript\n"),
            memory.str_replace(
                "/memories/preferences.md",
                "- Language: TypeScript\n",
                "- Language: TypeScript\n- Editor: Helix\n",
            ),
            memory.view("/memories/preferences.md"),
            text("Noted: TypeScript, and Helix as your editor."),
        )
        final = model.client.beta.messages.tool_runner(
            model="claude-demo",
            max_tokens=1024,
            tools=[tool],
            messages=[{"role": "user", "content": USER}],
        ).until_done()
        model.verify()
        print("== Conversation (scripted model) ==", file=out)
        print(model.transcript(), file=out)
        print("\n== Requests the memory tool sent to ContextQ ==", file=out)
        print(fake.journal.table(), file=out)
        print("\n== What landed in ContextQ ==", file=out)
        for row in fake.contexts(tenant):
            print(
                f"context {row.id}  externalId={row.external_id}  workspace={row.workspace}",
                file=out,
            )
            print("  " + row.content.replace("\n", "\n  ").rstrip(), file=out)
        print(f"\nFinal answer: {final.content[-1].text}", file=out)  # type: ignore[union-attr]
        tool.close()
    return 0
