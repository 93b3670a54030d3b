"""ContextQ's MCP server on the official ``mcp`` SDK: the contract's tools, their arguments
checked as the TypeScript SDK's ``McpServer`` checks them (an unknown tool or arguments its
schema refuses are ``isError`` results, not protocol errors), each call handed to
``tools.run_tool``.

Where the caller's key comes from is the transport's business (``rest_for``): bound once
for an in-process or stdio server, read from each HTTP request for the served endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from adapter import wire
from fake_contextq import _msgs
from fake_contextq._version import __version__
from fake_contextq.mcp import zod
from fake_contextq.mcp.json_schema import listed
from fake_contextq.mcp.tools import Rest, run_tool
from fake_contextq.mcp.versions import SUPPORTED_PROTOCOL_VERSIONS, InitializeVersion
from fake_contextq.service.operations import MCP_TOOLS
from fake_contextq.service.tool_shapes import MCP_ALIASES_UNTIL, McpTool

RestFor = Callable[[ServerRequestContext[Any, Any]], Rest]


class Refused(Exception):
    """A tool call ``McpServer`` refuses before its handler runs: the text of the
    ``isError`` result, ``MCP error -32602: …`` (``_msgs.MCP_ERROR_OF``)."""

    def __init__(self, message: str) -> None:
        super().__init__(_msgs.MCP_ERROR_OF.format(code=types.INVALID_PARAMS, message=message))


def _bad_arguments(tool: McpTool, found: list[dict[str, Any]]) -> Refused:
    return Refused(_msgs.MCP_BAD_ARGUMENTS.format(name=tool.name, problem=zod.message(found)))


def renamed(tool: McpTool, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments with each former parameter name (``McpTool.aliases``) given alone
    renamed to its parameter; one given with its parameter is ``Refused`` naming the one to
    use, as a Zod refine on the alias would ([assumed])."""
    if not tool.aliases:
        return args
    clashes = [(old, new) for old, new in tool.aliases.items() if old in args and new in args]
    if clashes:
        found = [
            {
                "code": "custom",
                "path": [old],
                "message": _msgs.MCP_ALIAS_AND_NAME.format(
                    name=new, alias=old, until=MCP_ALIASES_UNTIL
                ),
            }
            for old, new in clashes
        ]
        raise _bad_arguments(tool, found)
    return {tool.aliases.get(k, k): v for k, v in args.items()}


def check_arguments(tool: McpTool, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments if the tool's Zod schema (as ``mcp.zod`` reads its input schema)
    takes them, as Zod's parse returns them (names it does not list dropped), else
    ``Refused`` with Zod 4's issues. Text that is not valid Unicode is
    made so first (``wire.well_formed``), as REST makes a body's; a former parameter name
    is its parameter's (``renamed``). Rules the schema does not state (a string's length, a
    workspace that exists) are ContextQ's: REST checks them and its refusal comes back as a
    tool error, word for word ([assumed])."""
    args = renamed(tool, dict(arguments or {}))
    within, well = wire.well_formed_within(args)  # one walk for both
    if not within:
        too_deep = _msgs.MCP_TOO_DEEP.format(depth=wire.MAX_JSON_DEPTH)
        raise _bad_arguments(tool, [{"code": "custom", "path": [], "message": too_deep}])
    args = well  # [assumed] a lone surrogate is U+FFFD, as in REST
    found = zod.issues(tool.input_schema, args)
    if found:
        raise _bad_arguments(tool, found)
    return dict(zod.stripped(tool.input_schema, args))


def refusal(text: str) -> types.CallToolResult:
    """What ``McpServer.createToolError`` returns: the text, ``isError``, nothing more."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def tool_listing(tools: Sequence[McpTool] = MCP_TOOLS) -> list[types.Tool]:
    return [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=listed(t.input_schema, output=False),
            output_schema=listed(t.output_schema, output=True),
            annotations=types.ToolAnnotations(
                read_only_hint=t.scope == wire.READ,
                destructive_hint=t.destructive,
            ),
        )
        for t in tools
    ]


def build_server(
    rest_for: RestFor,
    tools: Sequence[McpTool] = MCP_TOOLS,
    versions: Sequence[str] = SUPPORTED_PROTOCOL_VERSIONS,
) -> Server[Any]:
    """A low-level ``mcp`` server with ``tools`` (ContextQ's, from the table of operations);
    ``rest_for(ctx)`` is the REST API as the caller of that request sees it; ``versions``
    the protocol versions ``initialize`` negotiates among (``mcp.versions``)."""
    listing = types.ListToolsResult(tools=tool_listing(tools))
    by_name = {t.name: t for t in tools}

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        try:
            if tool is None:
                raise Refused(_msgs.MCP_UNKNOWN_TOOL.format(name=params.name))
            args = check_arguments(tool, params.arguments)
        except Refused as exc:
            return refusal(str(exc))
        return await run_tool(rest_for(ctx), tool, args)

    def input_schema(name: str) -> Mapping[str, Any] | None:
        tool = by_name.get(name)
        return None if tool is None else tool.input_schema

    server: Server[Any] = Server(
        wire.MCP_SERVER_NAME,
        version=__version__,
        instructions="ContextQ, a shared context database (a strict fake of it).",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        # the header checks of the 2026-07-28 HTTP path read a tool's schema here instead of
        # building (and serialising) the whole listing for every call
        get_tool_input_schema=input_schema,
    )
    # no telemetry into its host process's set-up; initialize answered from ``versions``
    server.middleware = [InitializeVersion(versions)]
    return server


def bound_server(
    rest: Rest,
    tools: Sequence[McpTool] = MCP_TOOLS,
    versions: Sequence[str] = SUPPORTED_PROTOCOL_VERSIONS,
) -> Server[Any]:
    """A server whose every call is made as one caller (in-process, stdio)."""
    return build_server(lambda _ctx: rest, tools, versions)
