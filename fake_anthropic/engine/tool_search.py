"""Tool search: tools declared with ``defer_loading: true`` stay out of the model's view
until a ``tool_reference`` loads them, as the API plays it.

A reference loads a tool for the rest of the conversation wherever it stands: in a
server tool search's ``tool_search_tool_result`` (``tool_search_tool_regex`` /
``tool_search_tool_bm25``) or in a client ``tool_result`` (how Claude Code's ``ToolSearch``
loads tools, with no server search tool declared), earlier in the conversation or earlier
in the same reply. The request checks are the API's 400s; a scripted turn that calls a
tool nothing loaded, or whose search finds a tool that is not deferred, is a script
problem. Each refusal is its own function; the engine calls ``Loading`` per turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import Refusal, invalid, problem
from fake_anthropic.script import search_results as scripted

Json = dict[str, Any]

SEARCH_TOOL_TYPES: Final = {
    "tool_search_tool_regex_20251119": "tool_search_tool_regex",
    "tool_search_tool_regex": "tool_search_tool_regex",
    "tool_search_tool_bm25_20251119": "tool_search_tool_bm25",
    "tool_search_tool_bm25": "tool_search_tool_bm25",
}
"""The server tool search's ``type`` values and the ``name`` each must have (SDK 2.14)."""

TOOLSET_TYPE: Final = "mcp_toolset"
RESULT_TYPE: Final = scripted.RESULT_TYPE


@dataclass(frozen=True)
class Deferral:
    """Which of a request's tools are deferred, and what can load them."""

    declared: frozenset[str] = frozenset()
    deferred: frozenset[str] = frozenset()
    searchers: tuple[str, ...] = ()
    """The server tool search tools the request declares."""
    client_searchers: tuple[str, ...] = ()
    """Client tools whose name says search (``ToolSearch``): probably what loads tools."""
    mcp: dict[str, tuple[bool, dict[str, bool]]] = field(default_factory=dict)
    """Per MCP server: whether its tools are deferred by default, and per-tool overrides."""

    def is_deferred(self, name: str) -> bool:
        return name in self.deferred

    def deferred_anywhere(self, name: str) -> bool:
        """Deferred as a client tool or as a tool of any MCP toolset."""
        return name in self.deferred or any(self.mcp_deferred(s, name) for s in self.mcp)

    def mcp_deferred(self, server: str, tool: str) -> bool:
        default, overrides = self.mcp.get(server, (False, {}))
        return overrides.get(tool, default)

    def may_name(self, name: str) -> bool:
        """Whether a ``tool_reference`` may name ``name``: a declared tool, or a tool of an
        MCP toolset (whose listing the fake does not fetch to check; assumed)."""
        return name in self.declared or any(
            default or overrides.get(name) is not None for default, overrides in self.mcp.values()
        )


def _flag(value: object, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid(f"{where}.defer_loading: Input should be a valid boolean")
    return value


def _toolset(entry: Json, i: int) -> tuple[bool, dict[str, bool]]:
    default_config = entry.get("default_config")
    default = _flag(
        default_config.get("defer_loading") if isinstance(default_config, dict) else None,
        f"tools.{i}.default_config",
    )
    configs = entry.get("configs")
    overrides = {
        str(tool): _flag(config.get("defer_loading"), f"tools.{i}.configs.{tool}")
        for tool, config in (configs.items() if isinstance(configs, dict) else [])
        if isinstance(config, dict) and config.get("defer_loading") is not None
    }
    return default, overrides


def check_request(tools: Sequence[Json] | None) -> Deferral:
    """The request's deferral, or the API's 400: ``defer_loading`` not a boolean, a search
    tool with the wrong name or itself deferred, or every tool deferred."""
    declared: set[str] = set()
    deferred: set[str] = set()
    custom: set[str] = set()
    searchers: list[str] = []
    mcp: dict[str, tuple[bool, dict[str, bool]]] = {}
    loaded_up_front = 0
    for i, entry in enumerate(tools or []):
        kind = entry.get("type")
        if kind == TOOLSET_TYPE:
            default, overrides = _toolset(entry, i)
            mcp[str(entry.get("mcp_server_name"))] = (default, overrides)
            loaded_up_front += not default or not all(overrides.values())
            continue
        name = entry.get("name")
        defer = _flag(entry.get("defer_loading"), f"tools.{i}")
        if isinstance(kind, str) and kind in SEARCH_TOOL_TYPES:
            expected = SEARCH_TOOL_TYPES[kind]
            if name != expected:
                raise invalid(f"tools.{i}.name: Input should be {expected!r}")
            if defer:
                raise search_tool_deferred(i, expected)
            searchers.append(expected)
        if not isinstance(name, str):
            continue
        declared.add(name)
        if kind in (None, "custom"):
            custom.add(name)
        if defer:
            deferred.add(name)
        else:
            loaded_up_front += 1
    if tools and loaded_up_front == 0:
        raise invalid(assumed.ALL_TOOLS_DEFERRED_MESSAGE)
    word = assumed.CLIENT_SEARCH_TOOL_WORD
    client_searchers = tuple(n for n in sorted(custom - deferred) if word in n.lower())
    return Deferral(
        frozenset(declared), frozenset(deferred), tuple(searchers), client_searchers, mcp
    )


def search_tool_deferred(index: int, name: str) -> Refusal:
    return invalid(
        f"tools.{index}.defer_loading: the tool search tool {name!r} cannot be deferred; "
        "it is what loads the deferred tools"
    )


def references(messages: Iterable[Json]) -> list[str]:
    """The tool names the ``tool_reference`` blocks of ``messages`` load, in order: those of
    server tool search results and of client tool results."""
    names: list[str] = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == scripted.RESULT_TYPE:
                names.extend(scripted.referenced(block.get("content")))
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                names.extend(
                    str(b.get("tool_name"))
                    for b in block["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_reference"
                )
    return names


def check_references(messages: Sequence[Json], deferral: Deferral) -> None:
    """A ``tool_reference`` sent back must name a tool of the request (the API's 400)."""
    for name in references(messages):
        if not deferral.may_name(name):
            raise invalid(
                f"Tool reference {name!r} has no corresponding tool definition; declare it in "
                "`tools` (with defer_loading: true)"
            )


def visible_tools(tools: list[Json] | None, messages: Sequence[Json]) -> list[Json] | None:
    """The tool definitions the model reads (and the token estimate counts): deferred
    tools only once a ``tool_reference`` loaded them (assumed; see ``assumptions``)."""
    if not tools or not any(t.get("defer_loading") is True for t in tools):
        return tools
    loaded = set(references(messages))
    return [t for t in tools if t.get("defer_loading") is not True or t.get("name") in loaded]


class Loading:
    """What a scripted turn may call: the tools loaded so far, growing as the turn's own
    tool search results load more."""

    def __init__(self, tools: Sequence[Json] | None, history: Sequence[Json]) -> None:
        self.deferral = check_request(tools)
        deferring = self.deferral.deferred or self.deferral.mcp
        self.loaded = set(references(history)) if deferring else set()

    def search(self, name: str, content: object, where: str) -> None:
        """A scripted tool search result: each tool it names must be declared and deferred;
        it loads them for the rest of the reply."""
        fault = scripted.result_fault(content)
        if fault is not None:
            raise problem(f"{where} plays a {name} result whose {fault}")
        for tool in scripted.referenced(content):
            if not self.deferral.may_name(tool):
                raise problem(
                    f"{where} plays a {name} result naming tool {tool!r}, which the request "
                    f"does not declare (its tools: {sorted(self.deferral.declared)}); name a "
                    "tool the request declares with defer_loading: true"
                )
            if not self.deferral.deferred_anywhere(tool):
                raise problem(
                    f"{where} plays a {name} result naming tool {tool!r}, which is not "
                    "deferred (the request declares it without defer_loading: true, so it is "
                    "loaded already); leave it out of the search result, or defer it"
                )
            self.loaded.add(tool)

    def call(self, tool: str, where: str) -> None:
        """A call of a client tool: deferred tools must have been loaded first."""
        if self.deferral.is_deferred(tool) and tool not in self.loaded:
            raise problem(f"{where} calls deferred tool {tool!r} {self._unloaded(tool)}")

    def mcp_call(self, server: str, tool: str, where: str) -> None:
        if self.deferral.mcp_deferred(server, tool) and tool not in self.loaded:
            raise problem(
                f"{where} calls MCP tool {tool!r} of server {server!r}, deferred by its "
                f"mcp_toolset, {self._unloaded(tool)}"
            )

    def _unloaded(self, tool: str) -> str:
        said = "before any tool_reference loaded it"
        if self.deferral.searchers:
            variant = "bm25" if self.deferral.searchers[0].endswith("bm25") else "regex"
            how = (
                f"play a tool search that finds it first, e.g. tool_search({tool!r}, [{tool!r}]"
                + (", variant='bm25'" if variant == "bm25" else "")
                + ") earlier in this turn or in an earlier one"
            )
        elif self.deferral.client_searchers:
            searcher = self.deferral.client_searchers[0]
            how = (
                f"call {searcher!r} first (e.g. tool_use({searcher!r}, "
                f"{{'query': 'select:{tool}'}})) in an earlier turn, so its tool_result "
                "returns a tool_reference to it"
            )
        else:
            how = (
                "declare a tool search tool (tool_search_tool_regex_20251119) and play "
                f"tool_search({tool!r}, [{tool!r}]) first, or have a client tool return a "
                "tool_reference to it in an earlier tool_result"
            )
        return f"{said}; {how}"

    def undeclared_hint(self, tool: str) -> str:
        """Said of a call of a tool the request does not declare, when a client search
        tool probably holds it."""
        if not self.deferral.client_searchers:
            return ""
        searcher = self.deferral.client_searchers[0]
        return (
            f"; it is probably behind the request's search tool {searcher!r}: a client "
            f"that defers tools sends them only once loaded, so the script must call "
            f"{searcher!r} first (e.g. tool_use({searcher!r}, {{'query': 'select:{tool}'}}))"
        )
