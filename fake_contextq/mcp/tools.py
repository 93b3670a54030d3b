"""Each MCP tool as the one REST call it maps onto, and the REST answer as a tool result.

The real server's tools are thin shells over its REST API (seed 003: ``mcp/src/tools.ts``),
so this module does the same: it never touches the fake's domain. Every rule the REST side
enforces (scopes, the quota, the unique external id, the search type enum, the silent
workspace fallback) therefore holds through MCP without being restated, and the same code
bridges stdio to any ContextQ, fake or real.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import httpx2
import mcp_types as types

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain._validate import json_type_name
from fake_contextq.mcp.masking import scrubbed, shown_url, url_secrets
from fake_contextq.service.exchange import declared_length
from fake_contextq.service.tool_shapes import MCP_SAVE_DEFAULT_TYPE, McpTool, mcp_save_title

Answer = tuple[int, Any]

#: The largest REST answer a tool reads: four times the largest request body, more than any
#: ContextQ answer holds (a bulk upsert's echoes what was sent); past it, an unusable answer.
MAX_ANSWER_BYTES = 4 * wire.MAX_BODY_BYTES


class Link(Protocol):
    """A ContextQ in this process, reached without an HTTP client: one request as plain
    data in, its (status, body) out, journaled and faulted as any request, raising the
    ``httpx2`` errors its transport raises (``http.transport.AsyncInProcessTransport``)."""

    async def exchange(
        self,
        method: str,
        raw_path: str,
        query: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: float | None,
    ) -> tuple[int, bytes]: ...


@dataclass(frozen=True, slots=True)
class Rest:
    """A ContextQ REST API as one caller sees it: a client, that caller's key, and for the
    stdio bridge a ``deadline``: the seconds a whole tool call (every REST call it makes,
    every byte of their answers) may take before it is a tool error. ``link``: the same
    ContextQ in this process, the client's own transport, which then takes each call as
    the client would have sent it, without building an HTTP request and response."""

    client: httpx2.AsyncClient
    authorization: str | None
    deadline: float | None = None
    link: Link | None = None

    @property
    def url(self) -> str:
        """The base URL as a message may show it (``masking.shown_url``)."""
        return shown_url(str(self.client.base_url))

    def secrets(self) -> list[str]:
        """What a message must never show: the URL's credentials, the key and its header."""
        header = self.authorization or ""
        return url_secrets(str(self.client.base_url), (header, header.partition(" ")[2]))

    async def call(
        self,
        route: wire.Route,
        *,
        path: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
    ) -> Answer:
        """(status, decoded JSON body or None for an empty one), or ``Unreachable`` when no
        answer came, ``Unusable`` when the answer cannot be read as ContextQ's JSON."""
        target = route.path(**(path or {}))
        authorization = self.authorization
        if authorization is None:
            authorization = self.client.headers.get("authorization")
        try:
            # httpx2 refuses a header that is not ASCII: only its own path says how
            if self.link is not None and (authorization is None or authorization.isascii()):
                status, raw = await self._exchange(
                    self.link, route, target, params, body, authorization
                )
            else:
                status, raw = await self._stream(route, target, params, body)
        except httpx2.HTTPError as exc:
            reason = scrubbed(str(exc) or type(exc).__name__, self.secrets())
            raise Unreachable(self.url, reason) from exc
        if not raw:
            return status, None
        try:
            return status, _answer_json(raw)
        except ValueError as exc:
            raise self._unusable(route, status, str(exc)) from None

    async def _stream(
        self, route: wire.Route, target: str, params: Mapping[str, Any] | None, body: Any
    ) -> tuple[int, bytes]:
        """The call through the client, its answer read no further than it may be long."""
        headers = {} if self.authorization is None else {"Authorization": self.authorization}
        content = None
        if body is not None:  # as httpx2's json= encodes it, a number it cannot refused
            content = self._json_body(body)
            headers["Content-Type"] = wire.JSON_MEDIA_TYPE
        async with self.client.stream(
            route.method, target, params=dict(params or {}), content=content, headers=headers
        ) as response:
            status = response.status_code
            declared = declared_length(response.headers)
            if declared is not None and declared > MAX_ANSWER_BYTES:
                raise self._unusable(route, status, _too_large(declared))
            raw = bytearray()
            async for chunk in response.aiter_bytes():
                raw += chunk
                if len(raw) > MAX_ANSWER_BYTES:
                    raise self._unusable(route, status, _too_large(len(raw)))
        return status, bytes(raw)

    async def _exchange(
        self,
        link: Link,
        route: wire.Route,
        target: str,
        params: Mapping[str, Any] | None,
        body: Any,
        authorization: str | None,
    ) -> tuple[int, bytes]:
        """The call as ``_stream``'s client would send it (its base path, query and JSON
        encodings, key and read timeout: what the service reads of a request), by ``link``."""
        client = self.client
        headers = {} if authorization is None else {"authorization": authorization}
        content = b""
        if body is not None:  # httpx2's encode_json, byte for byte
            content = self._json_body(body)
            headers["content-length"] = str(len(content))
            headers["content-type"] = wire.JSON_MEDIA_TYPE
        elif route.method in ("POST", "PUT", "PATCH"):
            headers["content-length"] = "0"
        query = str(client.params.merge(params)) if params else str(client.params)
        raw_path = client.base_url.raw_path.decode("ascii") + target.lstrip("/")
        status, raw = await link.exchange(
            route.method, raw_path, query, headers, content, client.timeout.read
        )
        if len(raw) > MAX_ANSWER_BYTES:
            raise self._unusable(route, status, _too_large(len(raw)))
        return status, raw

    def _json_body(self, body: Any) -> bytes:
        """``body`` as httpx2's ``json=`` encodes it, or ``Unsendable`` for arguments that
        held NaN or Infinity, which no JSON body can carry (``_msgs.MCP_NOT_JSON_NUMBER``)."""
        try:
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:
            raise Unsendable(_msgs.MCP_NOT_JSON_NUMBER.format(url=self.url)) from None
        return text.encode()

    def _unusable(self, route: wire.Route, status: int, what: str) -> Unusable:
        return Unusable(self.url, route, status, what)


def _too_large(size: int) -> str:
    return _msgs.MCP_ANSWER_TOO_LARGE.format(size=size, limit=MAX_ANSWER_BYTES)


def _no_constant(name: str) -> Any:
    raise ValueError(_msgs.MCP_ANSWER_NOT_JSON.format(detail=f"{name} is not JSON"))


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(_msgs.MCP_ANSWER_NOT_JSON.format(detail=f"{text} is out of range"))
    return value


def _answer_json(raw: bytes) -> Any:
    """A REST answer's JSON, read as bounded as the fake reads a request: UTF-8 only, no
    NaN or Infinity, nested at most ``wire.MAX_JSON_DEPTH`` deep; each lone surrogate then
    U+FFFD (``wire.well_formed``), as the fake stores it. ValueError saying what is wrong."""
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError:
        raise ValueError(_msgs.MCP_ANSWER_NOT_JSON.format(detail="not UTF-8")) from None
    except json.JSONDecodeError as exc:
        raise ValueError(_msgs.MCP_ANSWER_NOT_JSON.format(detail=exc.msg)) from None
    except RecursionError:
        raise ValueError(_msgs.MCP_TOO_DEEP.format(depth=wire.MAX_JSON_DEPTH)) from None
    # Both walks only where they can find something: fewer brackets than the limit cannot
    # nest past it, and a lone surrogate can only arrive escaped (the text was UTF-8).
    opened = raw.count(b"[") + raw.count(b"{")
    if opened > wire.MAX_JSON_DEPTH and wire.nested_too_deep(value):
        raise ValueError(_msgs.MCP_TOO_DEEP.format(depth=wire.MAX_JSON_DEPTH))
    return wire.well_formed_json(value) if b"\\u" in raw else value


class Unreachable(Exception):
    def __init__(self, url: str, reason: str) -> None:
        super().__init__(_msgs.MCP_UNREACHABLE.format(url=url, reason=reason))


class Unusable(Exception):
    """An answer no tool can use: not JSON, too large or deep, or not the shape asked for."""

    def __init__(self, url: str, route: wire.Route, status: int, what: str) -> None:
        super().__init__(
            _msgs.MCP_UNUSABLE.format(
                url=url, method=route.method, path=route.template, status=status, what=what
            )
        )


class Unsendable(Exception):
    """Arguments no REST request can carry: the call is refused before it is sent."""


class ToolError(Exception):
    """A REST refusal, carried up to become a tool result with ``isError``."""

    def __init__(self, status: int, body: Mapping[str, Any]) -> None:
        super().__init__(wire.mcp_error_text(status, body))
        self.status = status
        self.body = dict(body)


def _ok(rest: Rest, route: wire.Route, answer: Answer, *, want: str | None = "object") -> Any:
    """The body of a successful answer; a refusal as ``ToolError``; an answer of the wrong
    kind (no JSON object where one was due, an error without ContextQ's error body) as
    ``Unusable``. ``want=None``: any body, or none (a 204)."""
    status, body = answer
    if status >= 400:
        if isinstance(body, Mapping) and isinstance(body.get("error"), str):
            raise ToolError(status, body)
        raise Unusable(rest.url, route, status, _msgs.MCP_NOT_AN_ERROR_BODY.format(got=_kind(body)))
    if not 200 <= status < 300:
        raise Unusable(rest.url, route, status, _msgs.MCP_NOT_SUCCESS)
    if want is not None and not isinstance(body, Mapping):
        raise Unusable(rest.url, route, status, _msgs.MCP_WRONG_KIND.format(got=_kind(body)))
    return body


def _kind(body: Any) -> str:
    return "no body" if body is None else f"a JSON {json_type_name(body)}"


def _page(rest: Rest, route: wire.Route, answer: Answer) -> tuple[list[Any], int, int, int]:
    """(rows, total, limit, offset) of a list answer, or ``Unusable`` naming what is not."""
    body = _ok(rest, route, answer)
    try:
        rows, total, limit, offset = wire.read_page(body)
        if not all(isinstance(row, Mapping) for row in rows):
            raise TypeError("a row that is not an object")
    except KeyError as exc:
        what = _msgs.MCP_NOT_A_PAGE.format(problem=f"no {exc.args[0]!r}")
        raise Unusable(rest.url, route, answer[0], what) from None
    except (TypeError, ValueError) as exc:
        what = _msgs.MCP_NOT_A_PAGE.format(problem=str(exc))
        raise Unusable(rest.url, route, answer[0], what) from None
    return rows, total, limit, offset


def _fields(args: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: args[k] for k in names if k in args}


def _path_names(route: wire.Route) -> tuple[str, ...]:
    return tuple(part.split("}")[0] for part in route.template.split("{")[1:])


async def _json(
    rest: Rest, route: wire.Route, *, want: str | None = "object", **request: Any
) -> Any:
    """One REST call's usable body (``_ok``)."""
    return _ok(rest, route, await rest.call(route, **request), want=want)


async def _generic(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    """The arguments by their REST names (``wire.rest_fields``: ``sessionId`` is the
    path's ``session_id``); path parameters from those the route names; the rest is the
    body (or the query of a GET)."""
    route = tool.route
    names = _path_names(route)
    fields = wire.rest_fields(args)
    path = {n: fields[n] for n in names}
    rest_args = {k: v for k, v in fields.items() if k not in names}
    if route.method == "GET":
        return await _json(rest, route, path=path, params=rest_args)
    return await _json(rest, route, path=path, body=rest_args)


async def _get(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    if "externalId" in args:
        route = wire.Routes.GET_CONTEXT_BY_EXTERNAL
        return await _json(rest, route, path={"external_id": args["externalId"]})
    return await _json(rest, tool.route, path={"context_id": args["id"]})


async def _update(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    body = _fields(args, wire.CONTEXT_FIELDS)
    return await _json(rest, tool.route, path={"context_id": args["id"]}, body=body)


async def _evolve(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    body = _fields(args, ("instruction", "limit"))
    return await _json(rest, tool.route, path={"context_id": args["id"]}, body=body)


async def _delete(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    await _json(rest, tool.route, want=None, path={"context_id": args["id"]})
    return {"deleted": True, "id": args["id"]}  # [assumed] REST answers 204, no body


async def _list(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    """One tag is REST's own filter. More are applied to every page of the first tag's
    listing, so ``total`` and the page stay exact ([assumed] every tag must be carried);
    the first request carries the caller's ``limit`` and ``offset`` as given, so REST's
    own rules hold them (the same 400 as with one tag), and its page says which apply."""
    route = tool.route
    params = _fields(args, ("workspace", "type", "limit", "offset"))
    tags: list[str] = list(args.get("tags", ()))
    if len(tags) <= 1:
        if tags:
            params["tag"] = tags[0]
        return await _json(rest, route, params=params)
    filters = {**_fields(args, ("workspace", "type")), "tag": tags[0]}
    wanted = set(tags[1:])
    rows, total, limit, offset = _page(
        rest, route, await rest.call(route, params={**params, "tag": tags[0]})
    )
    if offset != 0 or len(rows) < total:  # not every row of the first tag yet: walk them
        rows, seen = [], 0
        while True:
            answer = await rest.call(
                route, params={**filters, "limit": wire.LIST_MAX_LIMIT, "offset": seen}
            )
            page, total, _, _ = _page(rest, route, answer)
            rows += page
            seen += len(page)
            if not page or seen >= total:
                break
    kept = [row for row in rows if wanted <= set(_tags_of(row))]
    return {
        "items": kept[offset : offset + limit],
        "total": len(kept),
        "limit": limit,
        "offset": offset,
    }


def _tags_of(row: Mapping[str, Any]) -> list[str]:
    tags = row.get("tags", ())
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


async def _stats(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    route = tool.route
    base = _fields(args, ("workspace",))
    by_type: dict[str, int] = {}
    total = _page(rest, route, await rest.call(route, params={**base, "limit": 1}))[1]
    for type_ in wire.CONTEXT_TYPES:
        answer = await rest.call(route, params={**base, "type": type_, "limit": 1})
        by_type[type_] = _page(rest, route, answer)[1]
    return {"total": total, "byType": by_type}  # [assumed] the shape of ctx_stats


def _saved_item(item: Any) -> Any:
    """An item as ``ctx_save`` sends one: the default type and a title from the content
    when not given (an item that is not an object goes as it is, for REST to refuse)."""
    if not isinstance(item, Mapping):
        return item
    body = _fields(item, wire.CONTEXT_FIELDS)
    body.setdefault("type", MCP_SAVE_DEFAULT_TYPE)
    if "title" not in body and isinstance(body.get("content"), str):
        body["title"] = mcp_save_title(body["content"])
    return body


async def _save(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    return await _json(rest, tool.route, body=_saved_item(args))


async def _import(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    """[assumed] Each item filled as ``ctx_save`` fills one, then one import; the result
    is the counts and the id each item landed as, in the order sent."""
    items = [_saved_item(item) for item in args["contexts"]]
    route = tool.route
    answer = await rest.call(route, body=wire.bulk_body(items))
    body = _ok(rest, route, answer)
    try:
        return _imported(body)
    except KeyError as exc:
        what = _msgs.MCP_NOT_AN_IMPORT.format(problem=f"no {exc.args[0]!r}")
        raise Unusable(rest.url, route, answer[0], what) from None
    except TypeError as exc:
        what = _msgs.MCP_NOT_AN_IMPORT.format(problem=exc)
        raise Unusable(rest.url, route, answer[0], what) from None


def _imported(body: Mapping[str, Any]) -> dict[str, Any]:
    """The import's counts and each item's id; ``KeyError`` naming what is missing,
    ``TypeError`` saying what is of the wrong kind."""
    counts = {name: body[name] for name in ("created", "updated")}
    rows = body["items"]
    if not all(type(n) is int for n in counts.values()):
        raise TypeError("a count that is not an integer")
    if not isinstance(rows, list) or not all(isinstance(row, Mapping) for row in rows):
        raise TypeError("items that are not a list of objects")
    ids = [row["id"] for row in rows]
    if not all(type(i) is int for i in ids):
        raise TypeError("an id that is not an integer")
    return {**counts, "ids": ids}


def _by_id(path_name: str) -> Call:
    """A tool whose ``id`` argument is the route's one path parameter; the other arguments
    are the body (a GET or DELETE has none). A DELETE's 204 says what it deleted."""

    async def call(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
        route = tool.route
        path = {path_name: args["id"]}
        if route.method == "DELETE":
            await _json(rest, route, want=None, path=path)
            return {"deleted": True, "id": args["id"]}  # [assumed] REST answers 204, no body
        if route.method == "GET":
            return await _json(rest, route, path=path)
        body = {k: v for k, v in args.items() if k != "id"}
        return await _json(rest, route, path=path, body=body)

    return call


async def _link(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    body = _fields(args, ("targetId", "relation"))
    return await _json(rest, tool.route, path={"context_id": args["id"]}, body=body)


async def _links(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    return await _json(rest, tool.route, path={"context_id": args["id"]})


async def _ingest_status(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> Any:
    return await _json(rest, tool.route, path={"job_id": args["jobId"]})


Call = Callable[[Rest, McpTool, Mapping[str, Any]], Awaitable[Any]]

_SAVED_SEARCH = _by_id("search_id")
CALLS: Mapping[str, Call] = {
    "ctx_save": _save,
    "ctx_get": _get,
    "ctx_update": _update,
    "ctx_delete": _delete,
    "ctx_list": _list,
    "ctx_stats": _stats,
    "ctx_import": _import,
    "ctx_chunks": _by_id("context_id"),
    "ctx_saved_searches_get": _SAVED_SEARCH,
    "ctx_saved_searches_update": _SAVED_SEARCH,
    "ctx_saved_searches_delete": _SAVED_SEARCH,
    "ctx_saved_searches_run": _SAVED_SEARCH,
    "ctx_run_saved_search": _SAVED_SEARCH,
    "ctx_evolve": _evolve,
    "ctx_link": _link,
    "ctx_links": _links,
    "ctx_ingest_status": _ingest_status,
}


async def run_tool(rest: Rest, tool: McpTool, args: Mapping[str, Any]) -> types.CallToolResult:
    """The tool's REST call(s) and the result a TypeScript MCP server most likely returns:
    [assumed] the REST answer's JSON as one text block and as ``structuredContent``; a REST
    refusal as ``isError`` with the status, code and message in the text and the error body
    as ``structuredContent``."""
    call = CALLS.get(tool.name, _generic)
    try:
        if rest.deadline is None:
            answer = await call(rest, tool, args)
        else:
            with anyio.fail_after(rest.deadline):
                answer = await call(rest, tool, args)
    except ToolError as exc:
        return _failure(str(exc))
    except (Unreachable, Unusable, Unsendable) as exc:
        return _failure(str(exc))
    except TimeoutError:
        text = _msgs.MCP_DEADLINE.format(url=rest.url, seconds=rest.deadline, tool=tool.name)
        return _failure(text)
    structured = answer if isinstance(answer, dict) else {"result": answer}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))],
        structured_content=structured,
    )


def _failure(text: str) -> types.CallToolResult:
    """A tool error as ``McpServer`` returns a thrown one: its text and ``isError``, no
    ``structuredContent`` ([assumed]: a TypeScript client checks any structuredContent,
    an error's too, against the tool's output schema; v1.29.0 ``src/client/index.ts``)."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
