"""ContextQ's MCP server on the official ``mcp`` SDK: the contract's tools, their schemas
checked before any REST call, and each call handed to ``tools.run_tool``.

Where the caller's key comes from is the transport's business (``rest_for``): bound once
for an in-process or stdio server, read from each HTTP request for the served endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsonschema
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from adapter import wire
from fake_contextq import __version__, _msgs
from fake_contextq.mcp.tools import Rest, run_tool
from fake_contextq.service.operations import MCP_TOOLS
from fake_contextq.service.tool_shapes import McpTool

RestFor = Callable[[ServerRequestContext[Any, Any]], Rest]

SHAPE_KEYWORDS = frozenset({"required", "type"})
_VALIDATORS: dict[str, jsonschema.protocols.Validator] = {}


def _validator(tool: McpTool) -> jsonschema.protocols.Validator:
    found = _VALIDATORS.get(tool.name)
    if found is None:
        cls = jsonschema.validators.validator_for(tool.input_schema)
        found = _VALIDATORS[tool.name] = cls(tool.input_schema)
    return found


def check_arguments(tool: McpTool, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments if they have the schema's shape, else the protocol's "invalid params"
    error naming the first field that does not.

    Shape is a missing required argument or a value of the wrong JSON type. Values (an
    enum, a range, a length) are ContextQ's rules: REST checks them and its refusal comes
    back as a tool error, word for word as through REST ([assumed]). Text that is not valid
    Unicode is made so first (``wire.well_formed``), as REST makes a body's."""
    args = dict(arguments or {})
    if wire.nested_too_deep(args):
        raise MCPError(
            types.INVALID_PARAMS,
            _msgs.MCP_BAD_ARGUMENTS.format(
                name=tool.name,
                where="arguments",
                problem=_msgs.MCP_TOO_DEEP.format(depth=wire.MAX_JSON_DEPTH),
            ),
        )
    args = dict(wire.well_formed_json(args))  # [assumed] a lone surrogate is U+FFFD, as in REST
    shape = [e for e in _validator(tool).iter_errors(args) if e.validator in SHAPE_KEYWORDS]
    error = jsonschema.exceptions.best_match(shape)
    if error is not None:
        where = error.json_path if error.path else "arguments"
        raise MCPError(
            types.INVALID_PARAMS,
            _msgs.MCP_BAD_ARGUMENTS.format(name=tool.name, where=where, problem=error.message),
        )
    if tool.name == "ctx_get" and ("id" in args) == ("externalId" in args):
        raise MCPError(types.INVALID_PARAMS, _msgs.MCP_GET_NEEDS_ONE)
    return args


def tool_listing(tools: Sequence[McpTool] = MCP_TOOLS) -> list[types.Tool]:
    return [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=dict(t.input_schema),
            annotations=types.ToolAnnotations(
                read_only_hint=t.scope == wire.READ,
                destructive_hint=t.destructive,
            ),
        )
        for t in tools
    ]


def build_server(rest_for: RestFor, tools: Sequence[McpTool] = MCP_TOOLS) -> Server[Any]:
    """A low-level ``mcp`` server with ``tools`` (ContextQ's, from the table of operations);
    ``rest_for(ctx)`` is the REST API as the caller of that request sees it."""
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
        if tool is None:
            names = ", ".join(by_name)
            raise MCPError(
                types.INVALID_PARAMS, _msgs.MCP_UNKNOWN_TOOL.format(name=params.name, names=names)
            )
        args = check_arguments(tool, params.arguments)
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
    server.middleware = []  # a fake emits no telemetry into its host process's set-up
    return server


def bound_server(rest: Rest, tools: Sequence[McpTool] = MCP_TOOLS) -> Server[Any]:
    """A server whose every call is made as one caller (in-process, stdio)."""
    return build_server(lambda _ctx: rest, tools)
