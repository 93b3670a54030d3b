"""The ContextQ endpoints as request plans: what to send and how to read the answer.

Both clients execute these plans; neither knows a route or a field name of its own.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx2

from adapter import errors, wire
from adapter.types import (
    AgentSession,
    AgentTask,
    BootPack,
    BulkUpsertResult,
    Checkpoint,
    Context,
    ContextInput,
    ContextPage,
    Handoff,
    Lesson,
    Resume,
    SearchResult,
    Workspace,
    context_body,
)

T = TypeVar("T")

RETRY_BACKOFF = 0.5  # seconds before the first retry (then doubling, with full jitter)
RETRY_BACKOFF_CAP = 8.0
RETRY_AFTER_MAX = 30.0  # a longer Retry-After is not waited for: the call fails at once
# An answer nests a stored value (metadata, a checkpoint's state: at most
# wire.MAX_JSON_DEPTH deep) a few levels down its envelope; anything deeper is refused.
MAX_ANSWER_DEPTH = wire.MAX_JSON_DEPTH + 8


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request to make, and how to turn a 2xx answer into a result."""

    method: str
    path: str
    parse: Callable[[httpx2.Response], T]
    params: Mapping[str, Any] | None = None
    json: Any = None
    # GET, PUT and DELETE may be retried; so may a search (read-only) and a bulk upsert
    # (idempotent on externalId). A create is never retried: a lost answer may hide a row.
    retryable: bool = False

    @classmethod
    def to(
        cls,
        route: wire.Route,
        parse: Callable[[httpx2.Response], T],
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        retryable: bool = False,
        **path_params: str | int,
    ) -> Call[T]:
        """A call of one endpoint of the contract's route table."""
        return cls(route.method, route.path(**path_params), parse, params, json, retryable)


def sendable(**arguments: Any) -> None:
    """Refuse text ContextQ cannot be sent: a string that is not valid Unicode (a lone
    surrogate cannot be encoded as UTF-8) anywhere in an argument, in the keys and values
    of a mapping, the items of a sequence or the fields of a ``ContextInput``, is a
    ``ValueError`` naming the argument and where in it, before anything is sent."""
    for name, value in arguments.items():
        _check_text(name, value)


def _check_text(where: str, value: Any) -> None:
    if isinstance(value, str):
        if value.isascii():
            return
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"{where} cannot be sent to ContextQ: it holds an unpaired surrogate "
                f"({value[exc.start]!r} at index {exc.start}), which is not valid Unicode "
                "text and cannot be encoded as UTF-8"
            ) from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _check_text(f"a key of {where}", key)
            _check_text(f"{where}[{key!r}]", item)
    elif isinstance(value, list | tuple | set | frozenset):
        for index, item in enumerate(value):
            _check_text(f"{where}[{index}]", item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _check_text(f"{where}.{f.name}", getattr(value, f.name))


def _none(_: httpx2.Response) -> None:
    return None


def loads(raw: bytes | str) -> Any:
    """An answer's JSON, its nesting bounded (``MAX_ANSWER_DEPTH``): ``ValueError`` when it
    is not JSON or nests deeper, never the ``RecursionError`` Python's json raises for
    nesting past its recursion limit. Both clients read every answer through here, and the
    MCP client reads a tool's text through here."""
    try:
        value = json.loads(raw)
    except RecursionError:
        value = None
    else:
        if not wire.nested_too_deep(value, MAX_ANSWER_DEPTH):
            return value
    raise ValueError(f"the answer nests deeper than {MAX_ANSWER_DEPTH} levels")


def _json(response: httpx2.Response) -> Any:
    return loads(response.content)


# ----- contexts -----


def create_context(
    type: str,
    title: str,
    content: str,
    *,
    external_id: str | None,
    tags: Sequence[str],
    workspace: str | None,
    metadata: Mapping[str, Any] | None,
) -> Call[Context]:
    sendable(
        type=type,
        title=title,
        content=content,
        external_id=external_id,
        tags=tags,
        workspace=workspace,
        metadata=metadata,
    )
    body = context_body(
        type=type,
        title=title,
        content=content,
        external_id=external_id,
        tags=tags,
        workspace=workspace,
        metadata=None if metadata is None else dict(metadata),
    )
    return Call.to(wire.Routes.CREATE_CONTEXT, lambda r: Context.from_wire(_json(r)), json=body)


def list_contexts(
    *,
    workspace: str | None,
    tag: str | None,
    type: str | None,
    limit: int | None,
    offset: int | None,
) -> Call[ContextPage]:
    sendable(workspace=workspace, tag=tag, type=type)
    params = wire.list_params(workspace=workspace, tag=tag, type=type, limit=limit, offset=offset)
    return Call.to(
        wire.Routes.LIST_CONTEXTS,
        lambda r: ContextPage.from_wire(_json(r)),
        params=params,
        retryable=True,
    )


def list_context_keys(
    *, workspace: str | None, tag: str | None, limit: int | None, offset: int | None
) -> Call[tuple[list[tuple[int, str | None, Any]], int]]:
    sendable(workspace=workspace, tag=tag)
    """A listing read for its keys only (id, externalId, metadata), for the memory tool."""
    params = wire.list_params(workspace=workspace, tag=tag, type=None, limit=limit, offset=offset)
    return Call.to(
        wire.Routes.LIST_CONTEXTS,
        lambda r: wire.read_keys(_json(r)),
        params=params,
        retryable=True,
    )


def get_context(context_id: int) -> Call[Context]:
    return Call.to(
        wire.Routes.GET_CONTEXT,
        lambda r: Context.from_wire(_json(r)),
        retryable=True,
        context_id=int(context_id),
    )


def get_context_by_external_id(external_id: str) -> Call[Context]:
    sendable(external_id=external_id)
    return Call.to(
        wire.Routes.GET_CONTEXT_BY_EXTERNAL,
        lambda r: Context.from_wire(_json(r)),
        retryable=True,
        external_id=external_id,
    )


def update_context(context_id: int, fields: Mapping[str, Any]) -> Call[Context]:
    sendable(**fields)
    body = context_body(**dict(fields), keep_none=("external_id", "workspace", "metadata"))
    return Call.to(
        wire.Routes.UPDATE_CONTEXT,
        lambda r: Context.from_wire(_json(r)),
        json=body,
        retryable=True,
        context_id=int(context_id),
    )


def delete_context(context_id: int) -> Call[None]:
    return Call.to(wire.Routes.DELETE_CONTEXT, _none, retryable=True, context_id=int(context_id))


def bulk_upsert(items: Iterable[ContextInput | Mapping[str, Any]]) -> Call[BulkUpsertResult]:
    items = list(items)
    sendable(items=items)
    rows = [i.to_wire() if isinstance(i, ContextInput) else context_body(**i) for i in items]
    return Call.to(
        wire.Routes.BULK_UPSERT,
        lambda r: BulkUpsertResult.from_wire(_json(r)),
        json=wire.bulk_body(rows),
        retryable=True,
    )


# ----- workspaces -----


def list_workspaces() -> Call[list[Workspace]]:
    return Call.to(
        wire.Routes.LIST_WORKSPACES,
        lambda r: [Workspace.from_wire(w) for w in wire.read_items(_json(r))],
        retryable=True,
    )


def create_workspace(slug: str, name: str | None) -> Call[Workspace]:
    sendable(slug=slug, name=name)
    body = wire.workspace_body(slug, name)
    return Call.to(wire.Routes.CREATE_WORKSPACE, lambda r: Workspace.from_wire(_json(r)), json=body)


def archive_workspace(slug: str) -> Call[Workspace]:
    sendable(slug=slug)
    return Call.to(
        wire.Routes.ARCHIVE_WORKSPACE,
        lambda r: Workspace.from_wire(_json(r)),
        retryable=True,
        slug=slug,
    )


def delete_workspace(slug: str) -> Call[None]:
    sendable(slug=slug)
    return Call.to(wire.Routes.DELETE_WORKSPACE, _none, retryable=True, slug=slug)


# ----- search -----


def search(
    query: str,
    *,
    type: str | None,
    workspace: str | None,
    tags: Sequence[str] | None,
    limit: int | None,
) -> Call[list[SearchResult]]:
    sendable(query=query, type=type, workspace=workspace, tags=tags)
    body = wire.search_body(query, type=type, workspace=workspace, tags=tags, limit=limit)
    return Call.to(
        wire.Routes.SEARCH,
        lambda r: SearchResult.many_from_wire(_json(r)),
        json=body,
        retryable=True,
    )


# ----- answers, errors and retries -----


def finish(call: Call[T], response: httpx2.Response) -> T:
    """The parsed result of a 2xx answer, or the typed error of any other."""
    if 200 <= response.status_code < 300:
        try:
            return call.parse(response)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise errors.ContextQError(
                f"unexpected answer body ({type(exc).__name__}: {exc})",
                status=response.status_code,
                method=call.method,
                path=call.path,
            ) from None
    raise error_for(call, response)


def error_for(call: Call[Any], response: httpx2.Response) -> errors.ContextQError:
    body: Any
    try:
        body = _json(response)
    except ValueError:  # UnicodeDecodeError is one
        body = None
    code: str | None = None
    message = response.reason_phrase or "error"
    details: dict[str, Any] = {}
    if isinstance(body, dict):
        code = body.get("error") if isinstance(body.get("error"), str) else None
        if isinstance(body.get("message"), str):
            message = body["message"]
        details = {k: v for k, v in body.items() if k not in ("error", "message")}
    elif response.content:
        message = response.text[:200]
    cls = errors.error_class(response.status_code, code)
    return cls(
        message,
        status=response.status_code,
        code=code,
        details=details,
        method=call.method,
        path=call.path,
    )


def transport_error(call: Call[Any], exc: httpx2.RequestError) -> errors.ContextQError:
    cls = (
        errors.ContextQTimeoutError
        if isinstance(exc, httpx2.TimeoutException)
        else errors.ContextQConnectionError
    )
    return cls(
        f"no answer from ContextQ ({type(exc).__name__}: {exc})", method=call.method, path=call.path
    )


def may_retry(
    call: Call[Any], attempt: int, max_retries: int, response: httpx2.Response | None
) -> bool:
    """Retry a retryable call on a transport error (``response`` None) or a 5xx, unless
    the server asks for a longer wait than ``RETRY_AFTER_MAX``."""
    if not call.retryable or attempt >= max_retries:
        return False
    if response is None:
        return True
    return response.status_code >= 500 and (_retry_after(response) or 0.0) <= RETRY_AFTER_MAX


def _retry_after(response: httpx2.Response) -> float | None:
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def retry_delay(
    attempt: int, response: httpx2.Response | None, backoff: float, rng: random.Random
) -> float:
    """Exponential backoff with full jitter; a numeric ``Retry-After`` (at most
    ``RETRY_AFTER_MAX``, see ``may_retry``) is waited for as asked."""
    after = None if response is None else _retry_after(response)
    if after is not None:
        return after
    return rng.uniform(0, min(RETRY_BACKOFF_CAP, backoff * 2**attempt))


# ----- Agent Memory Layer -----


def _body(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def start_session(
    workspace: str | None, parent_session_id: int | None, metadata: Mapping[str, Any] | None
) -> Call[AgentSession]:
    sendable(workspace=workspace, metadata=metadata)
    body = _body(
        workspace=workspace,
        parent_session_id=parent_session_id,
        metadata=None if metadata is None else dict(metadata),
    )
    return Call.to(wire.Routes.START_SESSION, lambda r: AgentSession.from_wire(_json(r)), json=body)


def get_session(session_id: int) -> Call[AgentSession]:
    return Call.to(
        wire.Routes.GET_SESSION,
        lambda r: AgentSession.from_wire(_json(r)),
        retryable=True,
        session_id=int(session_id),
    )


def end_session(session_id: int, status: str, summary: str | None) -> Call[AgentSession]:
    sendable(status=status, summary=summary)
    return Call.to(
        wire.Routes.END_SESSION,
        lambda r: AgentSession.from_wire(_json(r)),
        json=_body(status=status, summary=summary),
        session_id=int(session_id),
    )


def checkpoint(
    session_id: int, seq: int, state: Mapping[str, Any], summary: str | None
) -> Call[Checkpoint]:
    sendable(state=state, summary=summary)
    # Never retried: a lost answer to a stored checkpoint would come back as seq_conflict.
    return Call.to(
        wire.Routes.CHECKPOINT,
        lambda r: Checkpoint.from_wire(_json(r)),
        json=_body(seq=seq, state=dict(state), summary=summary),
        session_id=int(session_id),
    )


def resume(session_id: int) -> Call[Resume]:
    return Call.to(
        wire.Routes.RESUME,
        lambda r: Resume.from_wire(_json(r)),
        retryable=True,
        session_id=int(session_id),
    )


def upsert_task(
    session_id: int,
    key: str,
    title: str,
    status: str | None,
    parent_key: str | None,
    evidence: str | None,
) -> Call[AgentTask]:
    sendable(key=key, title=title, status=status, parent_key=parent_key, evidence=evidence)
    return Call.to(
        wire.Routes.UPSERT_TASK,
        lambda r: AgentTask.from_wire(_json(r)),
        json=_body(
            session_id=session_id,
            key=key,
            title=title,
            status=status,
            parent_key=parent_key,
            evidence=evidence,
        ),
        retryable=True,
    )  # keyed by (session, key): repeating it changes nothing


def tick_task(task_id: int, evidence: str) -> Call[AgentTask]:
    sendable(evidence=evidence)
    return Call.to(
        wire.Routes.TICK_TASK,
        lambda r: AgentTask.from_wire(_json(r)),
        json={"evidence": evidence},
        retryable=True,
        task_id=int(task_id),
    )


def list_tasks(session_id: int) -> Call[list[AgentTask]]:
    return Call.to(
        wire.Routes.LIST_TASKS,
        lambda r: [AgentTask.from_wire(t) for t in wire.read_items(_json(r))],
        retryable=True,
        session_id=int(session_id),
    )


def add_lesson(
    text: str, workspace: str | None, session_id: int | None, tags: Sequence[str]
) -> Call[Lesson]:
    sendable(text=text, workspace=workspace, tags=tags)
    return Call.to(
        wire.Routes.ADD_LESSON,
        lambda r: Lesson.from_wire(_json(r)),
        json=_body(text=text, workspace=workspace, session_id=session_id, tags=list(tags) or None),
    )


def handoff(session_id: int | None, workspace: str | None) -> Call[Handoff]:
    sendable(workspace=workspace)
    return Call.to(
        wire.Routes.HANDOFF,
        lambda r: Handoff.from_wire(_json(r)),
        json=_body(session_id=session_id, workspace=workspace),
    )


def boot(goal: str, workspace: str | None, token_budget: int | None) -> Call[BootPack]:
    sendable(goal=goal, workspace=workspace)
    return Call.to(
        wire.Routes.BOOT,
        lambda r: BootPack.from_wire(_json(r)),
        json=_body(goal=goal, workspace=workspace, token_budget=token_budget),
        retryable=True,
    )  # read-only
