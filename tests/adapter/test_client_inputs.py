"""What the clients refuse before sending anything: text that cannot be encoded (a lone
surrogate) in any string argument, named in the error, and options that make no sense."""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

import adapter
from adapter import AsyncContextQClient, ContextInput, ContextQClient

KEY = "sk_live_" + "0123456789abcdef" * 2 + "01234567"  # an obviously fake, well-formed key
BAD = "ok\ud800"  # a lone (high) surrogate: not valid Unicode, cannot be encoded as UTF-8

#: Every client method that takes text, with a valid value for each of its arguments.
CALLS: dict[str, dict[str, Any]] = {
    "create_context": {
        "type": "reference",
        "title": "t",
        "content": "c",
        "external_id": "e",
        "tags": ["x"],
        "workspace": "w",
        "metadata": {"k": "v"},
    },
    "list_contexts": {"workspace": "w", "tag": "x", "type": "reference"},
    "iter_contexts": {"workspace": "w", "tag": "x", "type": "reference"},
    "list_context_keys": {"workspace": "w", "tag": "x"},
    "get_context_by_external_id": {"external_id": "e"},
    "update_context": {
        "context_id": 1,
        "title": "t",
        "content": "c",
        "external_id": "e",
        "tags": ["x"],
        "workspace": "w",
        "metadata": {"k": "v"},
    },
    "bulk_upsert": {"items": [{"type": "reference", "title": "t", "content": "c"}]},
    "create_workspace": {"slug": "w", "name": "W"},
    "archive_workspace": {"slug": "w"},
    "delete_workspace": {"slug": "w"},
    "search": {"query": "q", "type": "reference", "workspace": "w", "tags": ["x"]},
    "start_session": {"workspace": "w", "metadata": {"k": "v"}},
    "end_session": {"session_id": 1, "status": "done", "summary": "s"},
    "checkpoint": {"session_id": 1, "seq": 1, "state": {"k": ["v"]}, "summary": "s"},
    "upsert_task": {
        "session_id": 1,
        "key": "k",
        "title": "t",
        "status": "open",
        "parent_key": "p",
        "evidence": "e",
    },
    "tick_task": {"task_id": 1, "evidence": "e"},
    "add_lesson": {"text": "t", "workspace": "w", "tags": ["x"]},
    "handoff": {"workspace": "w"},
    "boot": {"goal": "g", "workspace": "w"},
}
#: Methods whose arguments are all ids (nothing to encode).
ID_ONLY = {
    "get_context",
    "delete_context",
    "get_session",
    "resume",
    "list_tasks",
    "list_workspaces",
}
LIFE = {"close", "aclose", "base_url"}


def _poisoned(value: Any) -> Iterator[tuple[Any, str]]:
    """Variants of a valid argument with a lone surrogate somewhere, and where it is."""
    if isinstance(value, str):
        yield BAD, ""
    elif isinstance(value, dict):
        for key, item in value.items():
            for bad, where in _poisoned(item):
                yield {**value, key: bad}, f"[{key!r}]{where}"
        yield {**value, BAD: 1}, ""  # a key that cannot be encoded
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for bad, where in _poisoned(item):
                yield [*value[:index], bad, *value[index + 1 :]], f"[{index}]{where}"


CASES = [
    pytest.param(method, {**kwargs, arg: bad}, arg + where, id=f"{method}-{arg}{where}")
    for method, kwargs in CALLS.items()
    for arg, value in kwargs.items()
    for bad, where in _poisoned(value)
]


def test_the_table_covers_every_method_and_argument() -> None:
    """A new method or argument that takes text must be added to CALLS."""
    for cls in (ContextQClient, AsyncContextQClient):
        public = {n for n in vars(cls) if not n.startswith("_")} - LIFE
        assert public == set(CALLS) | ID_ONLY
        for name, kwargs in CALLS.items():
            params = inspect.signature(getattr(cls, name)).parameters
            takes = {
                p
                for p, spec in params.items()
                if p != "self"
                and spec.kind is not spec.VAR_KEYWORD
                and spec.annotation not in ("int", "int | None")
            }
            assert takes <= set(kwargs), (name, takes - set(kwargs))


def _record(into: list[httpx2.Request], status: int, request: httpx2.Request) -> httpx2.Response:
    into.append(request)
    return httpx2.Response(status, json={"error": "x", "message": "m"})


def _recording_client(sent: list[httpx2.Request]) -> ContextQClient:
    transport = httpx2.MockTransport(functools.partial(_record, sent, 500))
    return ContextQClient(KEY, http_client=httpx2.Client(transport=transport, base_url="http://x"))


def _call(api: Any, method: str, kwargs: dict[str, Any]) -> Any:
    kwargs = dict(kwargs)
    positional = [kwargs.pop(n) for n in ("context_id", "session_id", "task_id") if n in kwargs]
    if method in ("update_context", "end_session", "checkpoint", "tick_task"):
        return getattr(api, method)(*positional, **kwargs)
    if method == "upsert_task":
        return api.upsert_task(positional[0], kwargs.pop("key"), kwargs.pop("title"), **kwargs)
    if method == "create_context":
        return api.create_context(
            kwargs.pop("type"), kwargs.pop("title"), kwargs.pop("content"), **kwargs
        )
    return getattr(api, method)(**kwargs)


def _run(api: ContextQClient, method: str, kwargs: dict[str, Any]) -> None:
    result = _call(api, method, kwargs)
    if inspect.isgenerator(result):  # iter_contexts
        list(result)


@pytest.mark.parametrize(("method", "kwargs", "where"), CASES)
def test_unencodable_text_is_a_value_error_naming_the_argument(
    method: str, kwargs: dict[str, Any], where: str
) -> None:
    sent: list[httpx2.Request] = []
    api = _recording_client(sent)
    with pytest.raises(ValueError, match="unpaired surrogate") as caught:
        _run(api, method, kwargs)
    assert where in str(caught.value)
    assert sent == []  # refused before anything was sent


@pytest.mark.parametrize(("method", "kwargs", "where"), CASES)
def test_the_async_client_refuses_the_same(method: str, kwargs: dict[str, Any], where: str) -> None:
    sent: list[httpx2.Request] = []
    transport = httpx2.MockTransport(functools.partial(_record, sent, 500))
    api = AsyncContextQClient(
        KEY, http_client=httpx2.AsyncClient(transport=transport, base_url="http://x")
    )

    async def main() -> None:
        result = _call(api, method, kwargs)
        if inspect.isasyncgen(result):
            [_ async for _ in result]
        else:
            await result

    with pytest.raises(ValueError, match="unpaired surrogate") as caught:
        asyncio.run(main())
    assert where in str(caught.value)
    assert sent == []


def test_a_context_input_names_its_field() -> None:
    api = _recording_client([])
    good = ContextInput("reference", "t", "c")
    with pytest.raises(ValueError, match=r"items\[1\]\.title cannot be sent"):
        api.bulk_upsert([good, ContextInput("reference", BAD, "c")])
    with pytest.raises(ValueError, match=r"items\[0\]\.tags\[1\] cannot be sent"):
        api.bulk_upsert([ContextInput("reference", "t", "c", tags=("a", BAD))])


def test_valid_non_ascii_text_is_sent() -> None:
    sent: list[httpx2.Request] = []
    api = _recording_client(sent)
    with pytest.raises(adapter.ContextQError):
        api.create_context("reference", "café 🐍", "日本語", metadata={"ключ": "значение"})
    assert len(sent) == 1


BAD_OPTIONS = [
    ({"retry_backoff": -1}, "retry_backoff must be a finite number of seconds >= 0, got -1"),
    ({"retry_backoff": -0.001}, "retry_backoff"),
    ({"retry_backoff": math.nan}, "retry_backoff"),
    ({"retry_backoff": math.inf}, "retry_backoff"),
    ({"max_retries": -1}, "max_retries must be a whole number >= 0, got -1"),
    ({"max_retries": 1.5}, "max_retries"),
    ({"max_retries": True}, "max_retries"),
    ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
    ({"timeout": -5.0}, "timeout must be"),
    ({"timeout": math.nan}, "timeout must be"),
    ({"timeout": math.inf}, "timeout must be"),
    ({"timeout": httpx2.Timeout(0)}, "timeout's connect limit"),
    ({"timeout": httpx2.Timeout(5.0, read=-1.0)}, "timeout's read limit"),
    ({"base_url": "http://ctx.example/\ud800"}, "unpaired surrogate"),
]


@pytest.mark.parametrize("cls", [ContextQClient, AsyncContextQClient])
@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_nonsensical_options_are_refused_at_construction(
    cls: Callable[..., object], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        cls(KEY, **options)
    assert message in str(caught.value)


@pytest.mark.parametrize("cls", [ContextQClient, AsyncContextQClient])
def test_sensible_edge_options_are_accepted(cls: Callable[..., Any]) -> None:
    for options in (
        {"retry_backoff": 0, "max_retries": 0},
        {"timeout": 0.001},
        {"timeout": httpx2.Timeout(5.0, pool=None)},
        {"timeout": None},
    ):
        assert cls(KEY, **options).base_url == "http://localhost:38200"
