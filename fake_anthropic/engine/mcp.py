"""The MCP connector of the Messages API: the request's ``mcp_servers``, ``mcp_toolset``
tools and ``mcp_tool_listing`` blocks checked as the API checks them (each refusal its own
function), and the port the engine calls an MCP server through (``McpConnector``), so the
engine stays free of I/O.

Three betas: ``mcp-client-2025-04-04`` (``tool_configuration`` on the server),
``mcp-client-2025-11-20`` (``mcp_toolset`` tools) and ``mcp-client-2026-09-15`` (toolsets
that may pin the server's listing in ``tools``, and the ``mcp_tool_listing`` block a reply
carries and the next request sends back, so the server is listed once a conversation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from fake_anthropic.engine import assumptions as assumed
from fake_anthropic.engine.errors import Refusal, invalid
from fake_anthropic.redact import masked_url, scrub_url

Json = dict[str, Any]

TOOLSET_TYPE = "mcp_toolset"
LISTING_TYPE = "mcp_tool_listing"


@dataclass(frozen=True)
class McpServer:
    """One entry of ``mcp_servers`` with the tool configuration that applies to it."""

    name: str
    url: str
    authorization_token: str | None
    default_enabled: bool = True
    enabled: Mapping[str, bool] = field(default_factory=dict)  # per-tool overrides
    allowed: tuple[str, ...] | None = None  # legacy tool_configuration.allowed_tools
    default_deferred: bool = False
    deferred: Mapping[str, bool] = field(default_factory=dict)  # per-tool defer_loading
    listing: tuple[Json, ...] | None = None
    """The server's tools known without asking it: the toolset's pinned ``tools``, or the
    latest ``mcp_tool_listing`` of this server the conversation sent back."""
    pinned: bool = False
    lists_before_sampling: bool = False
    """``mcp-client-2026-09-15`` with no listing: the server is listed before the turn is
    played, and the reply carries the listing (``mcp_tool_listing``)."""

    def allows(self, tool: str) -> bool:
        if self.allowed is not None and tool not in self.allowed:
            return False
        return self.enabled.get(tool, self.default_enabled)

    def defers(self, tool: str) -> bool:
        """Whether the toolset defers ``tool`` (``defer_loading``): tool search loads it."""
        return self.deferred.get(tool, self.default_deferred)


@dataclass(frozen=True)
class McpOutcome:
    """What ``tools/call`` answered: the ``mcp_tool_result`` block's ``is_error`` and
    ``content`` (text blocks)."""

    is_error: bool
    content: list[Json]


class McpUnreachable(Exception):
    """The server could not be reached, refused the token, or failed to list its tools."""


class McpConnector(Protocol):
    def list_tools(self, server: McpServer) -> list[Json]:
        """The server's tools as the API lists them: ``name``, ``input_schema`` and
        ``description`` (when the server gives one)."""
        ...

    def call_tool(
        self, server: McpServer, name: str, arguments: Mapping[str, Any]
    ) -> McpOutcome: ...


def toolsets(tools: Sequence[Json] | None) -> list[Json]:
    return [t for t in tools or [] if t.get("type") == TOOLSET_TYPE]


def client_tools(tools: Sequence[Json] | None) -> list[Json]:
    """The request's tools other than MCP toolsets (which have no ``name``)."""
    return [t for t in tools or [] if t.get("type") != TOOLSET_TYPE]


def check_beta(betas: Sequence[str]) -> str:
    """The connector beta in force (the newest sent); the connector without one is refused."""
    for beta in (assumed.MCP_BETA_2026, assumed.MCP_BETA, assumed.MCP_BETA_LEGACY):
        if beta in betas:
            return beta
    raise invalid(
        "mcp_servers: the MCP connector requires the beta header 'anthropic-beta: "
        f"{assumed.MCP_BETA_2026}' (or the older '{assumed.MCP_BETA}' or "
        f"'{assumed.MCP_BETA_LEGACY}')"
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
        f"{where}.url: the MCP server URL must use https (got {masked_url(url)!r}); the "
        f"scripted model also accepts http:// on {', '.join(assumed.MCP_LOOPBACK_HOSTS)}"
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


def check_no_tool_configuration(servers: Sequence[Json], beta: str) -> None:
    """The newer betas moved tool configuration into the toolset."""
    for i, server in enumerate(servers):
        if server.get("tool_configuration") is not None:
            raise invalid(
                f"mcp_servers.{i}.tool_configuration: not accepted under {beta}; "
                "configure the server's tools with an mcp_toolset entry of `tools`"
            )


def check_no_toolsets(tools: Sequence[Json] | None) -> None:
    """The older beta has no toolsets."""
    if toolsets(tools):
        raise invalid(
            f"tools: mcp_toolset entries need the beta '{assumed.MCP_BETA}' or "
            f"'{assumed.MCP_BETA_2026}'; under "
            f"'{assumed.MCP_BETA_LEGACY}' configure tools with `tool_configuration`"
        )


def _flag(config: Json, key: str, where: str) -> bool | None:
    value = config.get(key)
    if value is not None and not isinstance(value, bool):
        raise invalid(f"{where}.{key}: Input should be a valid boolean")
    return value


def _config_of(config: object, where: str) -> tuple[bool | None, bool | None]:
    """A tool config's ``enabled`` and ``defer_loading`` (None where not given)."""
    if config is None:
        return None, None
    if not isinstance(config, dict):
        raise invalid(f"{where}: must be an object")
    return _flag(config, "enabled", where), _flag(config, "defer_loading", where)


def _enabled_of(config: object, where: str) -> bool | None:
    """``tool_configuration.enabled`` (the oldest beta, which has no ``defer_loading``)."""
    if config is None:
        return None
    if not isinstance(config, dict):
        raise invalid(f"{where}: must be an object")
    return _flag(config, "enabled", where)


def check_tool_list(tools: object, where: str) -> tuple[Json, ...]:
    """A listing of an MCP server's tools (pinned, or sent back): each an object with a
    ``name``, an ``input_schema`` object and a string ``description`` or none; each name
    once (assumed)."""
    if not isinstance(tools, list):
        raise invalid(f"{where}: Input should be a valid list")
    seen: set[str] = set()
    for j, tool in enumerate(tools):
        at = f"{where}.{j}"
        if not isinstance(tool, dict):
            raise invalid(f"{at}: Input should be an object with name and input_schema")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise invalid(f"{at}.name: Field required")
        if not isinstance(tool.get("input_schema"), dict):
            raise invalid(f"{at}.input_schema: Field required (a JSON Schema object)")
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            raise invalid(f"{at}.description: Input should be a valid string")
        if name in seen:
            raise invalid(f"{at}.name: {name!r} is listed twice; each tool is listed once")
        seen.add(name)
    return tuple(tools)


def check_listing_beta(beta: str, what: str) -> None:
    """A pinned listing and a listing sent back came with ``mcp-client-2026-09-15``."""
    if assumed.MCP_PINNED_AND_LISTING_NEED_2026 and beta != assumed.MCP_BETA_2026:
        raise invalid(
            f"{what} needs the beta 'anthropic-beta: {assumed.MCP_BETA_2026}' (the request "
            f"uses '{beta}')"
        )


def sent_listings(
    history: Sequence[Json], names: Sequence[str], beta: str | None, start: int = 0
) -> dict[str, tuple[Json, ...]]:
    """The latest ``mcp_tool_listing`` the conversation sent back for each server; each
    checked (an assistant block naming a server of ``mcp_servers``, a valid listing).
    From ``start`` on only: the messages before it hold no listing."""
    found: dict[str, tuple[Json, ...]] = {}
    for m in range(start, len(history)):
        message = history[m]
        content = message.get("content")
        for b, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict) or block.get("type") != LISTING_TYPE:
                continue
            where = f"messages.{m}.content.{b}"
            if beta is None:
                raise invalid(
                    f"{where}: an mcp_tool_listing block needs the MCP connector "
                    "(`mcp_servers`) and its beta"
                )
            check_listing_beta(beta, f"{where}: an mcp_tool_listing block")
            if message.get("role") != "assistant":
                raise invalid(
                    f"{where}: an mcp_tool_listing block stands in an assistant message, "
                    "as the reply that carried it"
                )
            server = block.get("mcp_server_name")
            if server not in names:
                raise invalid(
                    f"{where}.mcp_server_name: {server!r} names no server of `mcp_servers` "
                    f"(its servers: {sorted(names)})"
                )
            found[str(server)] = check_tool_list(block.get("tools"), f"{where}.tools")
    return found


def _from_toolset(
    server: Json, index: int, entry: Json, beta: str, sent: Mapping[str, tuple[Json, ...]]
) -> McpServer:
    where = f"tools.{index}"
    default, default_deferred = _config_of(entry.get("default_config"), f"{where}.default_config")
    configs = entry.get("configs") or {}
    if not isinstance(configs, dict):
        raise invalid(f"{where}.configs: must be an object keyed by tool name")
    parsed = {tool: _config_of(c, f"{where}.configs.{tool}") for tool, c in configs.items()}
    enabled = {tool: on for tool, (on, _) in parsed.items() if on is not None}
    deferred = {tool: later for tool, (_, later) in parsed.items() if later is not None}
    pinned = entry.get("tools")
    listing: tuple[Json, ...] | None = None
    if pinned is not None:
        check_listing_beta(beta, f"{where}.tools: a pinned tool listing")
        listing = check_tool_list(pinned, f"{where}.tools")
    elif server["name"] in sent:
        listing = sent[server["name"]]
    return McpServer(
        server["name"],
        server["url"],
        server.get("authorization_token"),
        default is not False,
        enabled,
        default_deferred=default_deferred is True,
        deferred=deferred,
        listing=listing,
        pinned=pinned is not None,
        lists_before_sampling=(
            assumed.MCP_LISTING_BEFORE_SAMPLING
            and beta == assumed.MCP_BETA_2026
            and listing is None
        ),
    )


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
    body: Json,
    betas: Sequence[str],
    tools: Sequence[Json] | None,
    history: Sequence[Json] = (),
    start: int = 0,
) -> list[McpServer]:
    """The request's MCP servers with their tool configuration, or the API's 400. The
    history's listings from ``start`` on only: the messages before it hold none."""
    if body.get("mcp_servers") is None and not toolsets(tools):
        sent_listings(history, (), None, start)  # a listing sent back without the connector
        return []
    beta = check_beta(betas)
    servers = check_definitions(body)
    check_unique_names(servers)
    sent = sent_listings(history, [s["name"] for s in servers], beta, start)
    if beta == assumed.MCP_BETA_LEGACY:
        check_no_toolsets(tools)
        return [_from_tool_configuration(s, i) for i, s in enumerate(servers)]
    configured = check_toolsets_name_servers(servers, tools)
    check_no_tool_configuration(servers, beta)
    check_every_server_has_a_toolset(servers, configured)
    return [_from_toolset(s, *configured[s["name"]], beta, sent) for s in servers]


def listing_block(server: McpServer, tools: Sequence[Json]) -> Json:
    """The ``mcp_tool_listing`` a reply carries for a server listed while producing it."""
    return {"type": LISTING_TYPE, "mcp_server_name": server.name, "tools": list(tools)}


class ServerUnusable(Refusal):
    """The API's refusal of a request whose MCP server it could not use: refused before
    any turn is sampled, so the engine puts back a turn it took for the request."""


def unreachable(server: McpServer, reason: str) -> ServerUnusable:
    return ServerUnusable(
        assumed.MCP_UNREACHABLE_STATUS,
        "invalid_request_error",
        f"MCP server {server.name!r} at {masked_url(server.url)} could not be used: "
        f"{scrub_url(reason, server.url)}",
    )
