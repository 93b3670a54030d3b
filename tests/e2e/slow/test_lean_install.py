"""A lean install: the adapter alone imports none of the fakes, the plugin imports nothing
heavy until a fixture needs it, and every entry point whose extra is missing says, in one
line and without a traceback, which extra to install.

Missing packages are simulated in a fresh interpreter: a generated ``sitecustomize.py``
on ``PYTHONPATH`` installs an import finder that refuses the named top-level packages,
as an environment without them would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

FAKE_EXTRA = ("fastapi", "starlette", "uvicorn", "sqlalchemy", "mcp")
#: What a production process, or a session that uses none of the fixtures, must not load.
HEAVY = (
    "anthropic",
    "httpx2",
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "mcp",
    "adapter",
    "fake_contextq",
    "fake_anthropic",
    "fake_server",
    "docker",
    "psycopg",
)
LIVE_MACHINERY = (
    "contextq_fixtures.live",
    "contextq_fixtures.database",
    "contextq_fixtures.tenant_sql",
)

BLOCKER = """
import sys

BLOCKED = frozenset({blocked!r})


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""


def _env_without(tmp_path: Path, blocked: tuple[str, ...], **extra: str) -> dict[str, str]:
    """An environment whose Python cannot import the ``blocked`` packages."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=tuple(blocked)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTQ_", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    env.update(extra)
    return env


def _script(name: str) -> str:
    """Python code that runs the console script ``name`` as its installed wrapper does."""
    [entry] = entry_points(group="console_scripts", name=name)
    module, _, attr = entry.value.partition(":")
    return f"import sys\nfrom {module} import {attr} as main\nsys.exit(main())"


def _run(code: str, *args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line_naming(result: subprocess.CompletedProcess[str], extra: str) -> str:
    """The single line a CLI printed, checked to name ``extra`` with exit status 2."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert f"pip install 'contextq-memory-tool[{extra}]'" in lines[0], output
    assert result.returncode == 2, output
    return lines[0]


def _loaded(code: str, *, env: dict[str, str] | None = None) -> list[str]:
    """The ``HEAVY`` packages loaded after running ``code`` in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.partition('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    ).stdout
    loaded: list[str] = json.loads(out.splitlines()[-1])
    return loaded


# ----- the adapter alone ---------------------------------------------------------------


def test_the_adapter_imports_none_of_the_fakes() -> None:
    loaded = _loaded(
        "import adapter\n"
        "from adapter import AsyncContextQMemoryTool, ContextQClient, ContextQMemoryTool\n"
        "import adapter.tool, adapter.client\n"
    )
    assert set(loaded) == {"adapter", "anthropic", "httpx2"}


def test_the_agent_memory_imports_neither_the_fakes_nor_mcp() -> None:
    loaded = _loaded(
        "import adapter.agent_memory\n"
        "from adapter.agent_memory import ContextQAgentMemory, McpAgentMemory, "
        "select_agent_memory\n"
    )
    assert set(loaded) <= {"adapter", "anthropic", "httpx2"}  # no fake, no mcp


def test_the_mcp_agent_memory_without_mcp_falls_back_saying_what_to_install(
    tmp_path: Path,
) -> None:
    code = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format='%(message)s')\n"
        "from adapter.agent_memory import LocalAgentMemory, select_agent_memory\n"
        "env = {'CONTEXTQ_MEMORY_BACKEND': 'mcp', 'CONTEXT_API_URL': 'http://127.0.0.1:9',\n"
        "       'CONTEXT_API_KEY': 'sk_live_' + 'a' * 40, 'CONTEXTQ_WORKSPACE': 'w'}\n"
        f"m = select_agent_memory(env, directory={str(tmp_path)!r})\n"
        "assert isinstance(m, LocalAgentMemory)\n"
    )
    result = _run(code, env=_env_without(tmp_path, ("mcp",)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "the mcp backend needs mcp: pip install 'contextq-memory-tool[mcp]'" in result.stdout


def test_the_memory_tool_works_without_the_fake_extra(tmp_path: Path) -> None:
    code = (
        "import httpx2\n"
        "from adapter import ContextQMemoryTool, wire\n"
        "def answer(request):\n"
        "    return httpx2.Response(200, json={'items': [], 'total': 0, 'page': 1})\n"
        "tool = ContextQMemoryTool(wire.KEY_PREFIX + '0' * 40, workspace='m',\n"
        "    http_client=httpx2.Client(transport=httpx2.MockTransport(answer),\n"
        "                              base_url='http://contextq.test'))\n"
        "print(type(tool).__name__)\n"
        "tool.close()\n"
    )
    result = _run(code, env=_env_without(tmp_path, FAKE_EXTRA), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ContextQMemoryTool"


# ----- the plugin costs nothing until used ---------------------------------------------

SESSION_PROBE = f"""
import json, sys

def pytest_sessionfinish(session):
    heavy = sorted({{m.partition(".")[0] for m in sys.modules}} & {set(HEAVY)!r})
    live = sorted(m for m in {LIVE_MACHINERY!r} if m in sys.modules)
    print("\\nLOADED " + json.dumps({{
        "plugin": "contextq_fixtures" in sys.modules, "heavy": heavy, "live": live}}))
"""


def _session_loaded(result: pytest.RunResult) -> dict[str, object]:
    [line] = [ln for ln in result.outlines if ln.startswith("LOADED ")]
    loaded: dict[str, object] = json.loads(line.removeprefix("LOADED "))
    return loaded


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    assert _loaded("import contextq_fixtures") == []
    assert _loaded("import contextq_fixtures.fixtures, contextq_fixtures.live_fixtures") == []


def test_a_session_that_uses_no_fixture_loads_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SESSION_PROBE)
    pytester.makepyfile("""
        import pytest

        def test_plain():
            assert 1 + 1 == 2

        @pytest.mark.contextq_live
        def test_marked_live():
            pass

        def test_live_fixture_while_live_is_off(contextq_live_tenant):
            pass
    """)
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "-s", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, skipped=2)
    assert _session_loaded(result) == {"plugin": True, "heavy": [], "live": []}


def test_a_session_that_uses_the_fixtures_loads_them_and_they_work(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(SESSION_PROBE)
    pytester.makepyfile("""
        from fake_anthropic import text

        def test_memory(memory_tool, fake_contextq, contextq_tenant):
            memory_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
            assert [c.content for c in fake_contextq.contexts(contextq_tenant)] == ["x"]

        def test_model(scripted_model):
            scripted_model.script(text("hi"))
            reply = scripted_model.client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
            assert reply.content[0].text == "hi"
    """)
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "-s", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    heavy = _session_loaded(result)["heavy"]
    assert isinstance(heavy, list)
    assert {"adapter", "fake_contextq", "fake_anthropic", "fastapi"} <= set(heavy)


def test_the_public_names_of_the_plugin_load_on_first_use() -> None:
    code = (
        "import contextq_fixtures\n"
        "missing = [n for n in contextq_fixtures.__all__ if not hasattr(contextq_fixtures, n)]\n"
        "assert missing == [], missing\n"
        "from contextq_fixtures import ContextQServer, LiveConfig, LiveStack, LiveTenant\n"
        "assert LiveConfig.__module__ == 'contextq_fixtures.live'\n"
        "try:\n"
        "    contextq_fixtures.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    assert "adapter" in _loaded(code)


# ----- missing extras: one line naming the extra -----------------------------------------


def test_fake_contextq_without_the_fake_extra(tmp_path: Path) -> None:
    env = _env_without(tmp_path, FAKE_EXTRA)
    assert _run(_script("fake-contextq"), "--help", env=env, cwd=tmp_path).returncode == 0
    result = _run(
        _script("fake-contextq"), "serve", "--memory", "--port", "0", env=env, cwd=tmp_path
    )
    line = _one_line_naming(result, "fake")
    assert re.match(
        r"fake-contextq: serving needs (fastapi|starlette|uvicorn|sqlalchemy|mcp);", line
    )


def test_fake_contextq_mcp_without_the_fake_extra(tmp_path: Path) -> None:
    env = _env_without(tmp_path, ("mcp",))
    env["CONTEXT_API_KEY"] = "sk_live_" + "a" * 40
    result = _run(_script("fake-contextq"), "mcp", env=env, cwd=tmp_path)
    line = _one_line_naming(result, "fake")
    assert line.startswith("fake-contextq: serving needs mcp;")


def test_the_plain_install_requires_neither_mcp_nor_fastapi() -> None:
    """The production wheel's own requirements: the fakes' stack comes only with extras."""
    from importlib.metadata import requires

    plain = [r for r in requires("contextq-memory-tool") or [] if "extra ==" not in r]
    names = {re.split(r"[<>=!~ \[;]", r, maxsplit=1)[0].lower() for r in plain}
    assert names == {"anthropic", "httpx2"}


def test_fake_contextq_on_postgres_without_psycopg(tmp_path: Path) -> None:
    env = _env_without(tmp_path, ("psycopg", "psycopg2"))
    result = _run(
        _script("fake-contextq"),
        "serve",
        "--database-url",
        "postgresql://user:hunter2@127.0.0.1:9/db",
        "--port",
        "0",
        env=env,
        cwd=tmp_path,
    )
    line = _one_line_naming(result, "postgres")
    assert "psycopg" in line
    assert "hunter2" not in result.stdout + result.stderr


def test_fake_contextq_object_on_postgres_without_psycopg(tmp_path: Path) -> None:
    code = (
        "from fake_contextq import FakeContextQ\n"
        "try:\n"
        "    FakeContextQ(database_url='postgresql://user@127.0.0.1:9/db')\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name, '|', exc)\n"
    )
    result = _run(code, env=_env_without(tmp_path, ("psycopg",)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "ModuleNotFoundError psycopg | a postgresql:// database needs psycopg, which is not "
        "installed: pip install 'contextq-memory-tool[postgres]'"
    )


def test_the_demo_without_the_fake_extra(tmp_path: Path) -> None:
    result = _run(_script("contextq-demo"), env=_env_without(tmp_path, FAKE_EXTRA), cwd=tmp_path)
    line = _one_line_naming(result, "fake")
    assert line.startswith("contextq-demo: needs ")


def test_fake_anthropic_serve_without_the_fake_extra(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[[{"type": "text", "text": "hi"}]]')
    result = _run(
        _script("fake-anthropic"),
        "serve",
        str(script),
        env=_env_without(tmp_path, FAKE_EXTRA),
        cwd=tmp_path,
    )
    line = _one_line_naming(result, "fake")
    assert line.startswith("fake-anthropic: serving needs ")


@pytest.mark.parametrize("missing", [("pytest",), FAKE_EXTRA])
def test_the_conformance_suite_without_the_pytest_extra(
    tmp_path: Path, missing: tuple[str, ...]
) -> None:
    result = _run(
        _script("contextq-conformance"), env=_env_without(tmp_path, missing), cwd=tmp_path
    )
    line = _one_line_naming(result, "pytest")
    assert line.startswith(f"contextq-conformance: needs {missing[0]}")


def test_the_strategies_without_hypothesis(tmp_path: Path) -> None:
    code = (
        "try:\n"
        "    import contextq_fixtures.strategies\n"
        "except ImportError as exc:\n"
        "    print(exc.name, '|', exc)\n"
    )
    result = _run(code, env=_env_without(tmp_path, ("hypothesis",)), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "hypothesis | contextq_fixtures.strategies needs hypothesis (hypothesis is not "
        "installed): pip install 'contextq-memory-tool[pytest]'"
    )


def _pytest_without(
    tmp_path: Path, blocked: tuple[str, ...], test: str, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_it.py").write_text(test)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "contextq_fixtures", "-p", "no:cacheprovider",
         "-q", *args],
        env=_env_without(tmp_path, blocked, **env),
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def test_a_fixture_without_the_pytest_extra_fails_saying_so(tmp_path: Path) -> None:
    result = _pytest_without(
        tmp_path,
        FAKE_EXTRA,
        "def test_a(memory_tool):\n    pass\n\ndef test_b():\n    pass\n",
    )
    output = result.stdout + result.stderr
    assert "1 passed, 1 error" in output, output
    assert re.search(
        r"contextq_fixtures: the fake_contextq fixture needs (fastapi|starlette|uvicorn|"
        r"sqlalchemy), which is not installed: pip install 'contextq-memory-tool\[pytest\]'",
        output,
    ), output
    assert "Traceback" not in output
    assert "fixtures.py:" not in output  # no stack of the plugin's own frames


def test_a_live_dsn_without_psycopg_fails_saying_so(tmp_path: Path) -> None:
    result = _pytest_without(
        tmp_path,
        ("psycopg",),
        "def test_live(contextq_live_tenant):\n    pass\n",
        "--contextq-live",
        CONTEXTQ_DB_DSN="postgresql://user@127.0.0.1:9/db",
        CONTEXT_API_URL="http://127.0.0.1:9",
    )
    output = result.stdout + result.stderr
    assert "1 error" in output, output
    assert (
        "contextq live: CONTEXTQ_DB_DSN needs psycopg: pip install 'contextq-memory-tool[live]'"
        in output
    )
    assert "Traceback" not in output
