"""Each MCP tool as the one REST call it maps onto, and the REST answer as a tool result.

The real server's tools are thin shells over its REST API (seed 003: ``mcp/src/tools.ts``),
so this module does the same: it never touches the fake's domain. Every rule the REST side
enforces (scopes, the quota, the unique external id, the search type enum, the silent
workspace fallback) therefore holds through MCP without being restated, and the same code
bridges stdio to any ContextQ, fake or real.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
import mcp_types as types

from adapter import wire
from fake_contextq import _msgs

Answer = tuple[int, Any]


@dataclass(frozen=True, slots=True)
class Rest:
    """A ContextQ REST API as one caller sees it: a client, and that caller's key."""

    client: httpx2.AsyncClient
    authorization: str | None

    async def call(
        self,
        route: wire.Route,
        *,
        path: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Answer:
        """(status, decoded JSON body or None), or an ``Unreachable`` error."""
        headers = {} if self.authorization is None else {"Authorization": self.authorization}
        try:
            response = await self.client.request(
                route.method,
                route.path(**(path or {})),
                params=dict(params or {}),
                json=body,
                headers=headers,
            )
        except httpx2.HTTPError as exc:
            raise Unreachable(str(self.client.base_url), str(exc) or type(exc).__name__) from exc
        if not response.content:
            return response.status_code, None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {
                "error": "http_error",
                "message": _msgs.MCP_NOT_JSON.format(status=response.status_code),
            }


class Unreachable(Exception):
    def __init__(self, url: str, reason: str) -> None:
        super().__init__(_msgs.MCP_UNREACHABLE.format(url=url, reason=reason))


class ToolError(Exception):
    """A REST refusal, carried up to become a tool result with ``isError``."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(wire.mcp_error_text(status, body))
        self.status = status
        self.body = dict(body)


def _ok(answer: Answer) -> Any:
    status, body = answer
    if status >= 400:
        raise ToolError(status, body if isinstance(body, Mapping) else {"error": str(status)})
    return body


def _fields(args: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: args[k] for k in names if k in args}


def _path_names(route: wire.Route) -> tuple[str, ...]:
    return tuple(part.split("}")[0] for part in route.template.split("{")[1:])


async def _generic(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    """Path parameters from the arguments named in the route; the rest is the body (or
    the query of a GET)."""
    route = tool.route
    names = _path_names(route)
    path = {n: args[n] for n in names}
    rest_args = {k: v for k, v in args.items() if k not in names}
    if route.method == "GET":
        return _ok(await rest.call(route, path=path, params=rest_args))
    return _ok(await rest.call(route, path=path, body=rest_args))


async def _save(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    body = _fields(args, wire.CONTEXT_FIELDS)
    body.setdefault("type", wire.MCP_SAVE_DEFAULT_TYPE)
    if "title" not in body and isinstance(body.get("content"), str):
        body["title"] = wire.mcp_save_title(body["content"])
    return _ok(await rest.call(tool.route, body=body))


async def _get(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    if "externalId" in args:
        route = wire.Routes.GET_CONTEXT_BY_EXTERNAL
        return _ok(await rest.call(route, path={"external_id": args["externalId"]}))
    return _ok(await rest.call(tool.route, path={"context_id": args["id"]}))


async def _update(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    body = _fields(args, wire.CONTEXT_FIELDS)
    return _ok(await rest.call(tool.route, path={"context_id": args["id"]}, body=body))


async def _delete(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    _ok(await rest.call(tool.route, path={"context_id": args["id"]}))
    return {"deleted": True, "id": args["id"]}  # [assumed] REST answers 204, no body


async def _list(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    """One tag is REST's own filter; more are applied to every page of the first tag's
    listing, so ``total`` and the page stay exact ([assumed] every tag must be carried)."""
    params = _fields(args, ("workspace", "type", "limit", "offset"))
    tags: list[str] = list(args.get("tags", ()))
    if len(tags) <= 1:
        if tags:
            params["tag"] = tags[0]
        return _ok(await rest.call(tool.route, params=params))
    limit = int(params.pop("limit", wire.LIST_DEFAULT_LIMIT))
    offset = int(params.pop("offset", 0))
    wanted = set(tags[1:])
    kept: list[Any] = []
    seen = 0
    while True:
        page = _ok(
            await rest.call(
                tool.route,
                params={**params, "tag": tags[0], "limit": wire.LIST_MAX_LIMIT, "offset": seen},
            )
        )
        rows, total, _, _ = wire.read_page(page)
        kept += [row for row in rows if wanted <= set(row.get("tags", ()))]
        seen += len(rows)
        if not rows or seen >= total:
            break
    return {
        "items": kept[offset : offset + limit],
        "total": len(kept),
        "limit": limit,
        "offset": offset,
    }


async def _stats(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> Any:
    base = _fields(args, ("workspace",))
    by_type: dict[str, int] = {}
    _, total, _, _ = wire.read_page(_ok(await rest.call(tool.route, params={**base, "limit": 1})))
    for type_ in wire.CONTEXT_TYPES:
        page = _ok(await rest.call(tool.route, params={**base, "type": type_, "limit": 1}))
        by_type[type_] = wire.read_page(page)[1]
    return {"total": total, "byType": by_type}  # [assumed] the shape of ctx_stats


Call = Callable[[Rest, wire.McpTool, Mapping[str, Any]], Awaitable[Any]]

CALLS: Mapping[str, Call] = {
    wire.McpTools.CTX_SAVE.name: _save,
    wire.McpTools.CTX_GET.name: _get,
    wire.McpTools.CTX_UPDATE.name: _update,
    wire.McpTools.CTX_DELETE.name: _delete,
    wire.McpTools.CTX_LIST.name: _list,
    wire.McpTools.CTX_STATS.name: _stats,
}


async def run_tool(rest: Rest, tool: wire.McpTool, args: Mapping[str, Any]) -> types.CallToolResult:
    """The tool's REST call(s) and the result a TypeScript MCP server most likely returns:
    [assumed] the REST answer's JSON as one text block and as ``structuredContent``; a REST
    refusal as ``isError`` with the status, code and message in the text and the error body
    as ``structuredContent``."""
    call = CALLS.get(tool.name, _generic)
    try:
        answer = await call(rest, tool, args)
    except ToolError as exc:
        return _result(str(exc), exc.body, error=True)
    except Unreachable as exc:
        return _result(str(exc), {"error": "unreachable", "message": str(exc)}, error=True)
    structured = answer if isinstance(answer, dict) else {"result": answer}
    return _result(json.dumps(answer, ensure_ascii=False), structured, error=False)


def _result(text: str, structured: dict[str, Any], *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )
