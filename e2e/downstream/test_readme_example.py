from fake_anthropic import memory, text


def test_claude_remembers_a_preference(scripted_model, memory_tool, fake_contextq, contextq_tenant):
    scripted_model.script(
        memory.view("/memories"),
        memory.create("/memories/prefs.md", "Prefers TypeScript.\n"),
        text("Noted."),
    )
    final = scripted_model.client.beta.messages.tool_runner(
        model="claude-opus-4-1",
        max_tokens=1024,
        tools=[memory_tool],
        messages=[{"role": "user", "content": "Remember that I prefer TypeScript."}],
    ).until_done()

    assert final.content[0].text == "Noted."
    assert [r.is_error for r in scripted_model.tool_results] == [False, False]
    [row] = fake_contextq.contexts(contextq_tenant)
    assert row.content == "Prefers TypeScript.\n"
