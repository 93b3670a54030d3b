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


def check_beta(betas: Sequence[str]) -> str:
    """The connector beta in force; the connector without one is refused."""
    if assumed.MCP_BETA in betas:
        return assumed.MCP_BETA
    if assumed.MCP_BETA_LEGACY in betas:
        return assumed.MCP_BETA_LEGACY
    raise invalid(
        "mcp_servers: the MCP connector requires the beta header 'anthropic-beta: "
        f"{assumed.MCP_BETA}' (or the older '{assumed.MCP_BETA_LEGACY}')"
    )


def check_url(url: object, where: str) -> str:
    """https, or http on a loopback host (where a served fake listens)."""
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


def check_definitions(body: Json) -> list[Json]:
    """Each ``mcp_servers`` entry: ``type`` url, a name, a URL, a string token."""
    servers = body.get("mcp_servers")
    if servers is None:
        raise invalid("tools: an mcp_toolset needs its server in `mcp_servers`, and none is given")
    if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
        raise invalid("mcp_servers: must be a list of MCP server definitions")
    for i, server in enumerate(servers):
        where = f"mcp_servers.{i}"
        if server.get("type") != "url":
            raise invalid(f"{where}.type: Input should be 'url'")
        name = server.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"{where}.name: Field required")
        check_url(server.get("url"), where)
        token = server.get("authorization_token")
        if token is not None and not isinstance(token, str):
            raise invalid(f"{where}.authorization_token: must be a string")
    return servers


def check_unique_names(servers: Sequence[Json]) -> None:
    seen: set[str] = set()
    for i, server in enumerate(servers):
        if server["name"] in seen:
            raise invalid(
                f"mcp_servers.{i}.name: MCP server names must be unique; "
                f"{server['name']!r} is repeated"
            )
        seen.add(server["name"])


def check_toolsets_name_servers(
    servers: Sequence[Json], tools: Sequence[Json] | None
) -> dict[str, tuple[int, Json]]:
    """Every toolset names a server of ``mcp_servers``, and no server twice; returns each
    server's toolset and its index in ``tools``."""
    names = sorted(s["name"] for s in servers)
    configured: dict[str, tuple[int, Json]] = {}
    for i, entry in enumerate(tools or []):
        if entry.get("type") != TOOLSET_TYPE:
            continue
        name = entry.get("mcp_server_name")
        if not isinstance(name, str) or not name:
            raise invalid(f"tools.{i}.mcp_server_name: Field required")
        if name not in names:
            raise invalid(
                f"tools.{i}.mcp_server_name: {name!r} names no server of `mcp_servers` "
                f"(its servers: {names})"
            )
        if name in configured:
            raise invalid(f"tools.{i}: MCP server {name!r} already has an mcp_toolset")
        configured[name] = (i, entry)
    return configured


def check_every_server_has_a_toolset(
    servers: Sequence[Json], configured: Mapping[str, object]
) -> None:
    for i, server in enumerate(servers):
        if server["name"] not in configured:
            raise invalid(
                f"mcp_servers.{i}: MCP server {server['name']!r} has no mcp_toolset in "
                "`tools`; each server needs exactly one"
            )


def check_no_tool_configuration(servers: Sequence[Json]) -> None:
    """The newer beta moved tool configuration into the toolset."""
    for i, server in enumerate(servers):
        if server.get("tool_configuration") is not None:
            raise invalid(
                f"mcp_servers.{i}.tool_configuration: not accepted under {assumed.MCP_BETA}; "
                "configure the server's tools with an mcp_toolset entry of `tools`"
            )


def check_no_toolsets(tools: Sequence[Json] | None) -> None:
    """The older beta has no toolsets."""
    if toolsets(tools):
        raise invalid(
            f"tools: mcp_toolset entries need the beta '{assumed.MCP_BETA}'; under "
            f"'{assumed.MCP_BETA_LEGACY}' configure tools with `tool_configuration`"
        )


def _enabled_of(config: object, where: str) -> bool | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        raise invalid(f"{where}: must be an object")
    enabled = config.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise invalid(f"{where}.enabled: must be a boolean")
    return enabled


def _from_toolset(server: Json, index: int, entry: Json) -> McpServer:
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
    token = server.get("authorization_token")
    return McpServer(server["name"], server["url"], token, default is not False, enabled)


def _from_tool_configuration(server: Json, index: int) -> McpServer:
    where = f"mcp_servers.{index}.tool_configuration"
    config = server.get("tool_configuration")
    enabled = _enabled_of(config, where)
    allowed = config.get("allowed_tools") if isinstance(config, dict) else None
    if allowed is not None and not (
        isinstance(allowed, list) and all(isinstance(a, str) for a in allowed)
    ):
        raise invalid(f"{where}.allowed_tools: a list of names")
    return McpServer(
        server["name"],
        server["url"],
        server.get("authorization_token"),
        enabled is not False,
        {},
        None if allowed is None else tuple(allowed),
    )


def check_connector(
    body: Json, betas: Sequence[str], tools: Sequence[Json] | None
) -> list[McpServer]:
    """The request's MCP servers with their tool configuration, or the API's 400."""
    if body.get("mcp_servers") is None and not toolsets(tools):
        return []
    beta = check_beta(betas)
    servers = check_definitions(body)
    check_unique_names(servers)
    if beta == assumed.MCP_BETA_LEGACY:
        check_no_toolsets(tools)
        return [_from_tool_configuration(s, i) for i, s in enumerate(servers)]
    configured = check_toolsets_name_servers(servers, tools)
    check_no_tool_configuration(servers)
    check_every_server_has_a_toolset(servers, configured)
    return [_from_toolset(s, *configured[s["name"]]) for s in servers]


def unreachable(server: McpServer, reason: str) -> Refusal:
    return Refusal(
        assumed.MCP_UNREACHABLE_STATUS,
        "invalid_request_error",
        f"MCP server {server.name!r} at {server.url} could not be used: {reason}",
    )
