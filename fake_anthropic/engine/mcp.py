"""The MCP connector of the Messages API: the request's ``mcp_servers`` and ``mcp_toolset``
tools checked as the API checks them (each refusal its own function), and the port the
engine calls an MCP server through (``McpConnector``), so the engine stays free of I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import Refusal, invalid

Json = dict[str, Any]

TOOLSET_TYPE = "mcp_toolset"


@dataclass(frozen=True)
class McpServer:
    """One entry of ``mcp_servers`` with the tool configuration that applies to it."""

    name: str
    url: str
    authorization_token: str | None
    default_enabled: bool = True
    enabled: Mapping[str, bool] = field(default_factory=dict)  # per-tool overrides
    allowed: tuple[str, ...] | None = None  # legacy tool_configuration.allowed_tools

    def allows(self, tool: str) -> bool:
        if self.allowed is not None and tool not in self.allowed:
            return False
        return self.enabled.get(tool, self.default_enabled)


@dataclass(frozen=True)
class McpOutcome:
    """What ``tools/call`` answered: the ``mcp_tool_result`` block's ``is_error`` and
    ``content`` (text blocks)."""

    is_error: bool
    content: list[Json]


class McpUnreachable(Exception):
    """The server could not be reached, refused the token, or failed to list its tools."""


class McpConnector(Protocol):
    def list_tools(self, server: McpServer) -> list[str]: ...

    def call_tool(
        self, server: McpServer, name: str, arguments: Mapping[str, Any]
    ) -> McpOutcome: ...


def toolsets(tools: Sequence[Json] | None) -> list[Json]:
    return [t for t in tools or [] if t.get("type") == TOOLSET_TYPE]


def client_tools(tools: Sequence[Json] | None) -> list[Json]:
    """The request's tools other than MCP toolsets (which have no ``name``)."""
    return [t for t in tools or [] if t.get("type") != TOOLSET_TYPE]


def _beta(body: Json, betas: Sequence[str], tools: Sequence[Json] | None) -> str | None:
    """The connector beta in force; refused when the request uses the connector without one."""
    used = body.get("mcp_servers") is not None or bool(toolsets(tools))
    if not used:
        return None
    if assumed.MCP_BETA in betas:
        return assumed.MCP_BETA
    if assumed.MCP_BETA_LEGACY in betas:
        return assumed.MCP_BETA_LEGACY
    raise invalid(
        "mcp_servers: the MCP connector requires the beta header 'anthropic-beta: "
        f"{assumed.MCP_BETA}' (or the older '{assumed.MCP_BETA_LEGACY}')"
    )


def check_url(url: object, where: str) -> str:
    if not isinstance(url, str) or not url:
        raise invalid(f"{where}.url: Field required")
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in assumed.MCP_LOOPBACK_HOSTS:
        return url
    raise invalid(
        f"{where}.url: the MCP server URL must use https (got {url!r}); the scripted model "
        f"also accepts http:// on {', '.join(assumed.MCP_LOOPBACK_HOSTS)}"
    )


def _definitions(body: Json) -> list[Json]:
    servers = body.get("mcp_servers")
    if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
        raise invalid("mcp_servers: must be a list of MCP server definitions")
    names: set[str] = set()
    for i, server in enumerate(servers):
        where = f"mcp_servers.{i}"
        if server.get("type") != "url":
            raise invalid(f"{where}.type: Input should be 'url'")
        name = server.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"{where}.name: Field required")
        if name in names:
            raise invalid(f"{where}.name: MCP server names must be unique; {name!r} is repeated")
        names.add(name)
        check_url(server.get("url"), where)
        token = server.get("authorization_token")
        if token is not None and not isinstance(token, str):
            raise invalid(f"{where}.authorization_token: must be a string")
    return servers


def _enabled_of(config: object, where: str) -> bool | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        raise invalid(f"{where}: must be an object")
    enabled = config.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise invalid(f"{where}.enabled: must be a boolean")
    return enabled


def _current(servers: list[Json], tools: Sequence[Json] | None) -> list[McpServer]:
    """``mcp-client-2025-11-20``: every server has exactly one toolset, every toolset a
    server, and the server definitions carry no ``tool_configuration``."""
    by_name = {s["name"]: s for s in servers}
    configured: dict[str, tuple[int, Json]] = {}
    for i, entry in enumerate(tools or []):
        if entry.get("type") != TOOLSET_TYPE:
            continue
        where = f"tools.{i}"
        name = entry.get("mcp_server_name")
        if not isinstance(name, str) or not name:
            raise invalid(f"{where}.mcp_server_name: Field required")
        if name not in by_name:
            raise invalid(
                f"{where}.mcp_server_name: {name!r} names no server of `mcp_servers` "
                f"(its servers: {sorted(by_name)})"
            )
        if name in configured:
            raise invalid(f"{where}: MCP server {name!r} already has an mcp_toolset")
        configured[name] = (i, entry)
    for i, server in enumerate(servers):
        if server.get("tool_configuration") is not None:
            raise invalid(
                f"mcp_servers.{i}.tool_configuration: not accepted under {assumed.MCP_BETA}; "
                "configure the server's tools with an mcp_toolset entry of `tools`"
            )
        if server["name"] not in configured:
            raise invalid(
                f"mcp_servers.{i}: MCP server {server['name']!r} has no mcp_toolset in "
                "`tools`; each server needs exactly one"
            )
    made = []
    for server in servers:
        index, entry = configured[server["name"]]
        where = f"tools.{index}"
        default = _enabled_of(entry.get("default_config"), f"{where}.default_config")
        configs = entry.get("configs") or {}
        if not isinstance(configs, dict):
            raise invalid(f"{where}.configs: must be an object keyed by tool name")
        enabled = {
            tool: value
            for tool, config in configs.items()
            if (value := _enabled_of(config, f"{where}.configs.{tool}")) is not None
        }
        made.append(
            McpServer(
                server["name"],
                server["url"],
                server.get("authorization_token"),
                True if default is None else default,
                enabled,
            )
        )
    return made


def _legacy(servers: list[Json], tools: Sequence[Json] | None) -> list[McpServer]:
    """``mcp-client-2025-04-04``: tools configured on the server definition."""
    if toolsets(tools):
        raise invalid(
            f"tools: mcp_toolset entries need the beta '{assumed.MCP_BETA}'; under "
            f"'{assumed.MCP_BETA_LEGACY}' configure tools with `tool_configuration`"
        )
    made = []
    for i, server in enumerate(servers):
        config = server.get("tool_configuration")
        enabled = _enabled_of(config, f"mcp_servers.{i}.tool_configuration")
        allowed = config.get("allowed_tools") if isinstance(config, dict) else None
        if allowed is not None and not (
            isinstance(allowed, list) and all(isinstance(a, str) for a in allowed)
        ):
            raise invalid(f"mcp_servers.{i}.tool_configuration.allowed_tools: a list of names")
        made.append(
            McpServer(
                server["name"],
                server["url"],
                server.get("authorization_token"),
                True if enabled is None else enabled,
                {},
                None if allowed is None else tuple(allowed),
            )
        )
    return made


def check_connector(
    body: Json, betas: Sequence[str], tools: Sequence[Json] | None
) -> list[McpServer]:
    """The request's MCP servers as the API accepts them, or its 400."""
    beta = _beta(body, betas, tools)
    if beta is None:
        return []
    if body.get("mcp_servers") is None:
        raise invalid("tools: an mcp_toolset needs its server in `mcp_servers`, and none is given")
    servers = _definitions(body)
    if beta == assumed.MCP_BETA:
        return _current(servers, tools)
    return _legacy(servers, tools)


def unreachable(server: McpServer, reason: str) -> Refusal:
    return Refusal(
        assumed.MCP_UNREACHABLE_STATUS,
        "invalid_request_error",
        f"MCP server {server.name!r} at {server.url} could not be used: {reason}",
    )
