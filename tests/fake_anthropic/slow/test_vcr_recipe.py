"""The docs' recipe (docs/how-to/record-and-replay.md) for a suite that uses pytest-recording
for its other HTTP and this project's marker for the model: recorded once with both record
modes, then replayed with every server gone."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_anthropic import ScriptedModel, load_recording, text
from fake_server import ServedApp

PAGE = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "record-and-replay.md"
FORECAST = b'{"forecast": "sun, sun and more sun"}'


async def weather(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})  # fmt: skip
    await send({"type": "http.response.body", "body": FORECAST})


def recipe() -> tuple[str, str]:
    """The recipe's conftest.py and test module, as the docs show them."""
    section = PAGE.read_text().split("**Both in one suite.**", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    conftest, test = blocks[0], blocks[1]
    assert conftest.startswith("# conftest.py\n") and test.startswith("# test_forecast.py\n")
    return conftest, test


@pytest.mark.plugin_autoload  # pytest-recording loads as it would in the user's project
def test_the_recipe_records_both_once_then_replays_both_offline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    conftest, test = recipe()
    model = ScriptedModel()
    model.script(text("Sunny all week."))
    with ServedApp(weather, name="weather") as forecast, model.serve() as served:
        forecast.start()
        url = f"{forecast.url}/api/today"
        pytester.makeconftest(conftest)
        pytester.makepyfile(test_forecast=test.replace("https://weather.example/api/today", url))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-recipe-key-0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", served.url)
        first = pytester.runpytest_subprocess(
            "--record-mode=once", "--anthropic-record-mode=once", "-p", "no:randomly"
        )
        first.assert_outcomes(passed=1)
    model.verify()
    cassette = (
        pytester.path
        / "cassettes"
        / "test_forecast"
        / ("test_the_agent_summarises_the_forecast.yaml")
    )
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    # the weather, and the model's request to the local recording proxy (never played)
    assert interactions[0]["request"]["uri"] == url
    assert [i["request"]["uri"].endswith("/v1/messages") for i in interactions] == [False, True]
    recording = (
        pytester.path
        / "recordings"
        / "test_forecast"
        / "test_the_agent_summarises_the_forecast.json"
    )
    assert [e.endpoint for e in load_recording(recording)] == ["POST /v1/messages"]
    assert "sk-ant-recipe-key" not in recording.read_text() + cassette.read_text()

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    again = pytester.runpytest_subprocess("-p", "no:randomly")  # both servers are gone
    again.assert_outcomes(passed=1)
    assert json.loads(FORECAST)["forecast"] in recording.read_text()
