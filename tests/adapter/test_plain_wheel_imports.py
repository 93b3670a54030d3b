"""The plain wheel's import graph holds no code only the fake runs: importing every module
of ``adapter`` (the wire contract, the tool, the client, the agent memory, the MCP client)
loads neither bcrypt nor the fake, no adapter module holds a name of the service's own
rules (key hashing, the audit chain, plan quotas, the MCP tool schemas), and no adapter
source imports bcrypt or the fake even inside a function, where importing alone would not
show it."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import adapter
from adapter import wire

ADAPTER = Path(adapter.__file__).parent

#: Modules only the fake, the plugin or the live fixtures may load.
NOT_IN_THE_PLAIN_WHEEL = (
    "bcrypt",
    "fake_contextq",
    "fake_anthropic",
    "fake_server",
    "contextq_fixtures",
)

#: What moved out of ``adapter.wire``, and where it lives now.
MOVED = {
    "fake_contextq.domain.keys": (
        "hash_key",
        "key_matches",
        "key_display_prefix",
        "KEY_DISPLAY_PREFIX_LENGTH",
        "KEY_HASH_BCRYPT",
        "KEY_HASH_SHA256",
        "KEY_HASH_SCHEMES",
        "DEFAULT_KEY_HASH",
        "LIVE_BCRYPT_ROUNDS",
        "BCRYPT_COSTS",
    ),
    "contextq_fixtures.live": ("KEY_HASH_ENV", "KEY_COST_ENV"),
    "fake_contextq.domain.audit": (
        "AUDIT_HASHED_FIELDS",
        "audit_hash",
        "AuditAction",
        "AgentAction",
    ),
    "fake_contextq.domain.quota": (
        "PLAN_CONTEXT_QUOTAS",
        "PLAN_ALIASES",
        "DEFAULT_PLAN",
        "QUOTA_RESOURCE_CONTEXTS",
    ),
}
MCP_SCHEMAS = ("McpTool", "McpTools", "MCP_TOOLS", "MCP_TOOLS_NOT_FAKED", "mcp_save_title")

PROBE = f"""
import importlib, json, pkgutil, sys
import adapter
modules = ["adapter"] + [m.name for m in pkgutil.walk_packages(adapter.__path__, "adapter.")]
for name in modules:
    importlib.import_module(name)
names = {{name: sorted(vars(sys.modules[name])) for name in modules}}
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in {NOT_IN_THE_PLAIN_WHEEL!r})
print(json.dumps({{"names": names, "loaded": loaded}}))
"""


@pytest.fixture(scope="module")
def plain() -> dict[str, object]:
    """Every adapter module imported in a fresh interpreter: each module's names, and which
    of the packages outside the plain wheel were loaded."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
    ).stdout
    found: dict[str, object] = json.loads(out.splitlines()[-1])
    return found


def test_the_moved_names_live_where_the_list_says() -> None:
    """So the checks below look for names that exist, not for typos."""
    for home, names in MOVED.items():
        module = importlib.import_module(home)
        assert [n for n in names if not hasattr(module, n)] == [], home


def test_importing_every_adapter_module_loads_neither_bcrypt_nor_the_fake(
    plain: dict[str, object],
) -> None:
    names = plain["names"]
    assert isinstance(names, dict)
    assert {"adapter.wire", "adapter.tool", "adapter.client", "adapter.agent_memory"} <= set(names)
    assert plain["loaded"] == []


def test_no_adapter_module_holds_key_hashing_the_audit_chain_or_plan_quotas(
    plain: dict[str, object],
) -> None:
    moved = {n for names in MOVED.values() for n in names}
    names = plain["names"]
    assert isinstance(names, dict)
    held = {module: sorted(moved & set(attrs)) for module, attrs in names.items()}
    assert {module: found for module, found in held.items() if found} == {}


def test_the_wire_contract_holds_no_mcp_tool_schemas() -> None:
    assert [n for n in MCP_SCHEMAS if hasattr(wire, n)] == []


def _imported(tree: ast.AST) -> set[str]:
    """Every module an ``import`` or ``from ... import`` anywhere in ``tree`` names."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_no_adapter_source_imports_bcrypt_or_the_fake_even_lazily() -> None:
    sources = sorted(ADAPTER.rglob("*.py"))
    assert ADAPTER / "wire.py" in sources
    offending = {
        str(path.relative_to(ADAPTER)): sorted(
            m
            for m in _imported(ast.parse(path.read_text("utf-8")))
            if m.partition(".")[0] in NOT_IN_THE_PLAIN_WHEEL
        )
        for path in sources
    }
    assert {path: found for path, found in offending.items() if found} == {}
