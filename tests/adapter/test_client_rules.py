"""The clients' rules a caller relies on, each pinned exactly: how many times a call is
tried and which answers earn a retry, how long it waits (nothing before the first attempt),
what each failure becomes, what every request carries, how the options resolve and are
refused, paging, and who closes the HTTP client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

import httpx2
import pytest

import adapter
from adapter import AsyncContextQClient, ContextQClient, wire
from adapter import client as client_module

KEY = "sk_live_" + "0123456789abcdef" * 2 + "01234567"  # an obviously fake, well-formed key
ROW: dict[str, Any] = {
    "workspace": None,
    "type": "reference",
    "title": "t",
    "tags": [],
    "externalId": None,
    "metadata": {},
    "createdAt": "2026-01-01T00:00:00.000Z",
    "updatedAt": "2026-01-01T00:00:00.000Z",
}
WORKSPACE = {
    "id": 1,
    "slug": "acme",
    "name": "Acme",
    "archived": False,
    "createdAt": ROW["createdAt"],
}

Answer = httpx2.Response | Exception


class Server:
    """A scripted server: answers in turn (the last one repeats), every request recorded."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.seen: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def client(self, **options: Any) -> ContextQClient:
        http = httpx2.Client(transport=httpx2.MockTransport(self), base_url="http://x")
        return ContextQClient(KEY, http_client=http, **options)

    def async_client(self, **options: Any) -> AsyncContextQClient:
        http = httpx2.AsyncClient(transport=httpx2.MockTransport(self), base_url="http://x")
        return AsyncContextQClient(KEY, http_client=http, **options)


def status(code: int, **headers: str) -> httpx2.Response:
    return httpx2.Response(code, json={"error": "x", "message": "m"}, headers=headers)


def workspaces() -> httpx2.Response:
    return httpx2.Response(200, json={"items": [WORKSPACE]})


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits both clients asked for between attempts, recorded instead of slept."""
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(client_module, "_sleep", waits.append)
    monkeypatch.setattr(client_module, "_async_sleep", async_sleep)
    return waits


# ----- how many attempts, and which answers are retried -------------------------------------


def test_by_default_a_failing_read_is_tried_three_times(slept: list[float]) -> None:
    server = Server(status(503))
    with pytest.raises(adapter.UnavailableError) as caught:
        server.client().list_workspaces()
    assert caught.value.status == 503
    assert len(server.seen) == 3 and len(slept) == 2
    assert client_module.DEFAULT_MAX_RETRIES == 2


@pytest.mark.parametrize("retries", [0, 1, 4])
def test_max_retries_is_the_number_of_retries(retries: int, slept: list[float]) -> None:
    server = Server(status(500))
    with pytest.raises(adapter.UnavailableError):
        server.client(max_retries=retries).list_workspaces()
    assert len(server.seen) == retries + 1 and len(slept) == retries


def test_a_success_needs_no_wait_and_a_retry_stops_at_the_first_success(
    slept: list[float],
) -> None:
    server = Server(workspaces())
    assert [w.slug for w in server.client().list_workspaces()] == ["acme"]
    assert (len(server.seen), slept) == (1, [])
    server = Server(status(502, **{"retry-after": "0.25"}), workspaces())
    assert [w.slug for w in server.client(max_retries=5).list_workspaces()] == ["acme"]
    assert (len(server.seen), slept) == (2, [0.25])


@pytest.mark.parametrize("code", [500, 501, 502, 503, 504, 599])
def test_every_5xx_is_retried(code: int, slept: list[float]) -> None:
    server = Server(status(code, **{"retry-after": "0"}), workspaces())
    assert len(server.client().list_workspaces()) == 1
    assert len(server.seen) == 2


@pytest.mark.parametrize("code", [400, 401, 403, 404, 409, 422, 429, 499])
def test_no_4xx_is_retried(code: int, slept: list[float]) -> None:
    server = Server(status(code), workspaces())
    with pytest.raises(adapter.ContextQError) as caught:
        server.client(max_retries=3).list_workspaces()
    assert caught.value.status == code
    assert (len(server.seen), slept) == (1, [])


def test_a_create_is_never_retried(slept: list[float]) -> None:
    server = Server(status(503))
    with pytest.raises(adapter.UnavailableError):
        server.client(max_retries=3).create_context("reference", "t", "c")
    server = Server(httpx2.ConnectError("refused"))
    with pytest.raises(adapter.ContextQConnectionError):
        server.client(max_retries=3).create_context("reference", "t", "c")
    assert (len(server.seen), slept) == (1, [])


def test_transport_errors_are_retried_then_typed(slept: list[float]) -> None:
    server = Server(httpx2.ConnectError("refused"))
    with pytest.raises(adapter.ContextQConnectionError) as caught:
        server.client(max_retries=3, retry_backoff=0).get_context(7)
    assert len(server.seen) == 4
    assert slept == []  # a backoff of 0 waits not at all
    assert str(caught.value).startswith("GET /api/contexts/7")
    assert "no answer from ContextQ (ConnectError: refused)" in str(caught.value)
    assert (caught.value.method, caught.value.path, caught.value.status) == (
        "GET",
        "/api/contexts/7",
        None,
    )
    server = Server(httpx2.ReadTimeout("slow"), workspaces())
    assert len(server.client().list_workspaces()) == 1
    server = Server(httpx2.ReadTimeout("slow"))
    with pytest.raises(adapter.ContextQTimeoutError, match=r"ReadTimeout: slow"):
        server.client(max_retries=1).list_workspaces()
    assert len(server.seen) == 2


def test_backoff_waits_grow_from_retry_backoff_within_full_jitter(slept: list[float]) -> None:
    server = Server(status(503))
    with pytest.raises(adapter.UnavailableError):
        server.client(max_retries=5, retry_backoff=0.25).list_workspaces()
    assert len(slept) == 5
    for attempt, wait in enumerate(slept):
        assert 0 <= wait <= 0.25 * 2**attempt


def test_retries_are_logged_with_their_reason_and_count(
    slept: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapter")
    server = Server(status(503, **{"retry-after": "0.5"}), httpx2.ConnectError("x"), workspaces())
    server.client().list_workspaces()
    assert {(r.name, r.levelno) for r in caplog.records} == {("adapter", logging.INFO)}
    assert [r.getMessage() for r in caplog.records] == [
        "ContextQ GET /api/workspaces: status 503; retry 1 of 2 in 0.50s",
        f"ContextQ GET /api/workspaces: ConnectError; retry 2 of 2 in {slept[1]:.2f}s",
    ]


def test_the_async_client_retries_and_waits_alike(slept: list[float]) -> None:
    server = Server(status(503, **{"retry-after": "1.5"}), httpx2.ConnectError("x"), workspaces())
    assert len(asyncio.run(server.async_client(retry_backoff=0).list_workspaces())) == 1
    assert (len(server.seen), slept) == (3, [1.5])  # the transport error's 0 s is no wait
    server = Server(workspaces())
    asyncio.run(server.async_client().list_workspaces())
    assert (len(server.seen), slept) == (1, [1.5])
    server = Server(status(500))
    with pytest.raises(adapter.UnavailableError):
        asyncio.run(server.async_client(max_retries=0).list_workspaces())
    assert len(server.seen) == 1


def test_an_async_transport_error_is_typed(slept: list[float]) -> None:
    server = Server(httpx2.ConnectError("refused"))
    with pytest.raises(adapter.ContextQConnectionError, match=r"ConnectError: refused"):
        asyncio.run(server.async_client(max_retries=1, retry_backoff=0).get_context(1))
    assert len(server.seen) == 2


# ----- what every request carries -----------------------------------------------------------


def test_each_request_carries_the_key_json_and_its_params() -> None:
    server = Server(page(range(0), 0))
    api = server.client()
    api.list_contexts(workspace="acme", limit=5)
    [request] = server.seen
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["accept"] == "application/json"
    assert str(request.url) == "http://x/api/contexts?workspace=acme&limit=5"
    assert request.content == b""
    server.answers = [httpx2.Response(200, json={"id": 1, **ROW, "content": "c"})]
    api.create_context("reference", "t", "c")
    assert str(server.seen[1].url) == "http://x/api/contexts"  # no params: no "?"
    assert server.seen[1].method == "POST"
    assert b'"content":"c"' in server.seen[1].content.replace(b" ", b"")


def test_the_base_url_is_a_prefix_of_every_request_path() -> None:
    server = Server(workspaces())
    http = httpx2.Client(transport=httpx2.MockTransport(server))
    ContextQClient(KEY, base_url="http://ctx.example/root/", http_client=http).list_workspaces()
    assert str(server.seen[0].url) == "http://ctx.example/root/api/workspaces"
    # only the trailing slash goes: a path ending in other characters keeps them
    assert ContextQClient(KEY, base_url="http://h/X/").base_url == "http://h/X"
    assert ContextQClient(KEY, base_url="http://h/X").base_url == "http://h/X"


def timeout_of(request: httpx2.Request) -> Any:
    return request.extensions["timeout"]


def test_the_timeout_option_is_sent_and_none_leaves_the_http_clients_own() -> None:
    server = Server(workspaces())
    transport = httpx2.MockTransport(server)
    http = httpx2.Client(transport=transport, base_url="http://x", timeout=7.0)
    ContextQClient(KEY, http_client=http, timeout=2.5).list_workspaces()
    ContextQClient(KEY, http_client=http).list_workspaces()
    assert [timeout_of(r)["read"] for r in server.seen] == [2.5, 7.0]


def test_a_client_of_its_own_waits_thirty_seconds_by_default() -> None:
    assert client_module.DEFAULT_TIMEOUT == 30.0
    with ContextQClient(KEY) as api:
        assert api._http.timeout == httpx2.Timeout(30.0)
    with ContextQClient(KEY, timeout=4.0) as api:
        assert api._http.timeout == httpx2.Timeout(4.0)
    api_async = AsyncContextQClient(KEY)
    assert api_async._http.timeout == httpx2.Timeout(30.0)
    assert AsyncContextQClient(KEY, timeout=4.0)._http.timeout == httpx2.Timeout(4.0)


# ----- options: where they come from, and what is refused ------------------------------------


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("CONTEXT_API_KEY", raising=False)
    monkeypatch.delenv("CONTEXT_API_URL", raising=False)
    return monkeypatch


@pytest.mark.parametrize("cls", [ContextQClient, AsyncContextQClient])
def test_the_base_url_comes_from_the_argument_then_the_http_client_then_the_environment(
    cls: Callable[..., Any], no_env: pytest.MonkeyPatch
) -> None:
    http = httpx2.Client if cls is ContextQClient else httpx2.AsyncClient
    assert cls(KEY).base_url == "http://localhost:38200"
    no_env.setenv("CONTEXT_API_URL", "http://env.example/")
    assert cls(KEY).base_url == "http://env.example"
    assert cls(KEY, http_client=http(base_url="http://given:1/")).base_url == "http://given:1"
    assert cls(KEY, http_client=http()).base_url == "http://env.example"
    given = http(base_url="http://given:1")
    assert cls(KEY, base_url="http://arg/", http_client=given).base_url == "http://arg"


@pytest.mark.parametrize("cls", [ContextQClient, AsyncContextQClient])
def test_the_key_comes_from_the_argument_else_the_environment(
    cls: Callable[..., Any], no_env: pytest.MonkeyPatch
) -> None:
    no_env.setenv("CONTEXT_API_KEY", "not a key")
    assert cls(KEY).base_url == "http://localhost:38200"  # the argument wins
    with pytest.raises(ValueError) as caught:
        cls()
    assert str(caught.value) == (
        "The ContextQ API key does not look like one (expected 'sk_live_' and 40 lowercase "
        "hex characters); check the value of api_key / CONTEXT_API_KEY."
    )
    for missing in ("", None):
        if missing is None:
            no_env.delenv("CONTEXT_API_KEY")
        else:
            no_env.setenv("CONTEXT_API_KEY", missing)
        with pytest.raises(ValueError) as caught:
            cls()
        assert str(caught.value) == "No ContextQ API key: pass api_key= or set CONTEXT_API_KEY."
    with pytest.raises(ValueError, match="does not look like one"):
        cls(KEY.upper().replace("SK_LIVE_", "sk_live_"))  # uppercase hex is no key
    with pytest.raises(ValueError, match="No ContextQ API key"):
        cls("")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://files.example", "The ContextQ base URL 'ftp://files.example' must be an "
         "http(s) URL with a host"),
        ("http://", "The ContextQ base URL 'http://' must be an http(s) URL with a host"),
        ("https://u:secret@h.example", "The ContextQ base URL 'https://u:***@h.example' must "
         "not carry a user name or password: ContextQ authenticates with the API key alone"),
        ("https://u@h.example", "The ContextQ base URL 'https://u@h.example' must not carry a "
         "user name or password: ContextQ authenticates with the API key alone"),
        ("http://h.example/?a=1", "The ContextQ base URL 'http://h.example/?a=1' must not "
         "carry a query or a fragment: request paths are appended to it"),
        ("http://h.example/#top", "The ContextQ base URL 'http://h.example/#***' must not "
         "carry a query or a fragment: request paths are appended to it"),  # may be a token
        ("http://h.example/?token=t0k", "The ContextQ base URL 'http://h.example/?token=***' "
         "must not carry a query or a fragment: request paths are appended to it"),
        ("http://h.example/\ud800", "The ContextQ base URL 'http://h.example/\\ud800' holds an "
         "unpaired surrogate, which cannot be encoded as UTF-8"),
    ],
)  # fmt: skip
def test_a_bad_base_url_is_refused_with_its_reason(url: str, message: str) -> None:
    for cls in (ContextQClient, AsyncContextQClient):
        with pytest.raises(ValueError) as caught:
            cls(KEY, base_url=url)
        assert str(caught.value) == message


def test_an_unparsable_base_url_says_so() -> None:
    with pytest.raises(ValueError) as caught:
        ContextQClient(KEY, base_url="http://[::1")
    assert (
        str(caught.value) == "The ContextQ base URL 'http://[::1' is not a URL: Invalid port: ':1'"
    )
    assert caught.value.__suppress_context__


def test_bad_numeric_options_are_refused_with_the_whole_sentence() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"max_retries": 2.0}, "max_retries must be a whole number >= 0, got 2.0"),
        ({"max_retries": False}, "max_retries must be a whole number >= 0, got False"),
        ({"retry_backoff": True}, "retry_backoff must be a finite number of seconds >= 0, "
         "got True"),
        ({"retry_backoff": "1"}, "retry_backoff must be a finite number of seconds >= 0, "
         "got '1'"),
        ({"timeout": -1}, "timeout must be a finite number of seconds > 0 (or None for the "
         "default 30 s), got -1"),
        ({"timeout": "5"}, "timeout must be a finite number of seconds > 0 (or None for the "
         "default 30 s), got '5'"),
        ({"retry_backoff": float("inf")}, "retry_backoff must be a finite number of seconds "
         ">= 0, got inf"),
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0 (or None for the "
         "default 30 s), got 0"),
        ({"timeout": float("inf")}, "timeout must be a finite number of seconds > 0 (or None "
         "for the default 30 s), got inf"),
        ({"timeout": httpx2.Timeout(5.0, read=-1.0)}, "timeout's read limit must be a finite "
         "number of seconds > 0 or None, got -1.0"),
        ({"timeout": httpx2.Timeout(5.0, write=0)}, "timeout's write limit must be a finite "
         "number of seconds > 0 or None, got 0"),
        ({"timeout": httpx2.Timeout(5.0, pool=float("inf"))}, "timeout's pool limit must be a "
         "finite number of seconds > 0 or None, got inf"),
        ({"timeout": httpx2.Timeout(5.0, connect=float("nan"))}, "timeout's connect limit must "
         "be a finite number of seconds > 0 or None, got nan"),
    ]  # fmt: skip
    for options, message in cases:
        for cls in (ContextQClient, AsyncContextQClient):
            with pytest.raises(ValueError) as caught:
                cls(KEY, **options)
            assert str(caught.value) == message


def test_edge_numeric_options_are_accepted() -> None:
    for options in (
        {"max_retries": 0, "retry_backoff": 0.0},
        {"max_retries": 100, "retry_backoff": 1e9},
        {"timeout": 1e-9},
        {"timeout": 10**6},
        {"timeout": httpx2.Timeout(None)},
        {"timeout": httpx2.Timeout(0.5)},
        {"timeout": httpx2.Timeout(1.0, connect=None, read=2, write=3.5, pool=None)},
    ):
        assert ContextQClient(KEY, **options).base_url == "http://localhost:38200"


def test_the_http_client_must_match_the_client() -> None:
    with pytest.raises(TypeError) as caught:
        ContextQClient(KEY, http_client=httpx2.AsyncClient())  # type: ignore[arg-type]
    assert str(caught.value) == (
        "http_client must be an httpx2.Client, got <class 'httpx2.AsyncClient'>"
    )
    with pytest.raises(TypeError) as caught:
        AsyncContextQClient(KEY, http_client=httpx2.Client())  # type: ignore[arg-type]
    assert str(caught.value) == (
        "http_client must be an httpx2.AsyncClient, got <class 'httpx2.Client'>"
    )


# ----- paging -------------------------------------------------------------------------------


def page(ids: range, total: int) -> httpx2.Response:
    items = [{"id": i, **ROW} for i in ids]
    return httpx2.Response(200, json={"items": items, "total": total, "limit": 0, "offset": 0})


def test_iter_contexts_pages_by_offset_until_the_total() -> None:
    server = Server(page(range(1, 4), 7), page(range(4, 7), 7), page(range(7, 8), 7))
    got = [c.id for c in server.client().iter_contexts(tag="x", page_size=3)]
    assert got == list(range(1, 8))
    assert [str(r.url.query, "ascii") for r in server.seen] == [
        "tag=x&limit=3&offset=0",
        "tag=x&limit=3&offset=3",
        "tag=x&limit=3&offset=6",
    ]


def test_iter_contexts_stops_at_an_empty_page_even_if_the_total_says_more() -> None:
    server = Server(page(range(1, 3), 10), page(range(0), 10), page(range(90, 99), 10))
    assert [c.id for c in server.client().iter_contexts()] == [1, 2]
    assert len(server.seen) == 2
    assert server.seen[0].url.params["limit"] == str(wire.LIST_MAX_LIMIT)


def test_the_async_iter_contexts_pages_alike() -> None:
    server = Server(page(range(1, 3), 3), page(range(3, 4), 3), page(range(90, 99), 3))

    async def main() -> list[int]:
        api = server.async_client()
        return [c.id async for c in api.iter_contexts(workspace="w", page_size=2)]

    assert asyncio.run(main()) == [1, 2, 3]
    assert [r.url.params["offset"] for r in server.seen] == ["0", "2"]
    assert server.seen[0].url.params["workspace"] == "w"
    server = Server(page(range(1, 3), 10), page(range(0), 10), page(range(90, 99), 10))

    async def default_size() -> list[int]:
        return [c.id async for c in server.async_client().iter_contexts()]

    assert asyncio.run(default_size()) == [1, 2]
    assert server.seen[0].url.params["limit"] == str(wire.LIST_MAX_LIMIT)


# ----- closing, and what a client shows -----------------------------------------------------


@pytest.fixture
def given() -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url="http://x") as http:
        yield http


def test_a_client_closes_only_the_http_client_it_made(given: httpx2.Client) -> None:
    with ContextQClient(KEY, http_client=given):
        pass
    assert not given.is_closed
    with ContextQClient(KEY) as own:
        pass
    assert own._http.is_closed


def test_the_async_client_closes_only_the_http_client_it_made() -> None:
    async def main() -> tuple[bool, bool]:
        given = httpx2.AsyncClient(base_url="http://x")
        async with AsyncContextQClient(KEY, http_client=given):
            pass
        async with AsyncContextQClient(KEY) as own:
            pass
        kept = given.is_closed
        await given.aclose()
        return kept, own._http.is_closed

    assert asyncio.run(main()) == (False, True)


def test_the_repr_shows_the_url_and_hides_the_key() -> None:
    assert repr(ContextQClient(KEY, base_url="http://h:1/")) == (
        "ContextQClient(base_url='http://h:1', api_key=<hidden>)"
    )
    assert repr(AsyncContextQClient(KEY, base_url="http://h:1")) == (
        "AsyncContextQClient(base_url='http://h:1', api_key=<hidden>)"
    )


# ----- every argument of every method reaches the request -----------------------------------

#: Every method that sends a request, with a value for each argument that can be found again
#: in the request it sends (its URL or its body).
ARGUMENTS: dict[str, dict[str, Any]] = {
    "create_context": {
        "type": "reference",
        "title": "s-title",
        "content": "s-content",
        "external_id": "s-external",
        "tags": ["s-tag"],
        "workspace": "s-workspace",
        "metadata": {"mk": "s-metadata"},
    },
    "list_contexts": {
        "workspace": "s-workspace",
        "tag": "s-tag",
        "type": "reference",
        "limit": 77,
        "offset": 78,
    },
    "iter_contexts": {"workspace": "s-workspace", "tag": "s-tag", "type": "reference"},
    "list_context_keys": {"workspace": "s-workspace", "tag": "s-tag", "limit": 77, "offset": 78},
    "get_context": {"context_id": 7001},
    "get_context_by_external_id": {"external_id": "s-external"},
    "update_context": {"context_id": 7001, "title": "s-title", "tags": ["s-tag"]},
    "delete_context": {"context_id": 7001},
    "bulk_upsert": {"items": [{"type": "reference", "title": "s-title", "content": "c"}]},
    "list_workspaces": {},
    "create_workspace": {"slug": "s-slug", "name": "s-name"},
    "archive_workspace": {"slug": "s-slug"},
    "delete_workspace": {"slug": "s-slug"},
    "search": {
        "query": "s-query",
        "type": "reference",
        "workspace": "s-workspace",
        "tags": ["s-tag"],
        "limit": 77,
    },
    "start_session": {
        "workspace": "s-workspace",
        "parent_session_id": 7002,
        "metadata": {"mk": "s-metadata"},
    },
    "get_session": {"session_id": 7002},
    "end_session": {"session_id": 7002, "status": "done", "summary": "s-summary"},
    "checkpoint": {
        "session_id": 7002,
        "seq": 7004,
        "state": {"sk": "s-state"},
        "summary": "s-summary",
    },
    "resume": {"session_id": 7002},
    "upsert_task": {
        "session_id": 7002,
        "key": "s-key",
        "title": "s-title",
        "status": "open",
        "parent_key": "s-parent",
        "evidence": "s-evidence",
    },
    "tick_task": {"task_id": 7003, "evidence": "s-evidence"},
    "list_tasks": {"session_id": 7002},
    "add_lesson": {
        "text": "s-text",
        "workspace": "s-workspace",
        "session_id": 7002,
        "tags": ["s-tag"],
    },
    "handoff": {"session_id": 7002, "workspace": "s-workspace"},
    "boot": {"goal": "s-goal", "workspace": "s-workspace", "token_budget": 7006},
}


def markers(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from markers(item)
    elif isinstance(value, list):
        for item in value:
            yield from markers(item)
    else:
        yield str(value)


def invoke(api: Any, method: str, kwargs: dict[str, Any]) -> None:
    """Call a method of either client to its end (iterating and awaiting as it needs)."""
    result = getattr(api, method)(**kwargs)
    if isinstance(api, AsyncContextQClient):
        asyncio.run(consume(result))
    elif method == "iter_contexts":
        list(result)


async def consume(result: Any) -> None:
    """Await a coroutine, or run an async iterator to its end."""
    if hasattr(result, "__aiter__"):
        async for _ in result:
            pass
    else:
        await result


def sent_text(request: httpx2.Request) -> str:
    return unquote(str(request.url)) + " " + request.content.decode()


def test_the_table_names_every_method_that_sends() -> None:
    for cls in (ContextQClient, AsyncContextQClient):
        public = {n for n in vars(cls) if not n.startswith("_") and "mutmut" not in n}
        assert public - {"close", "aclose", "base_url"} == set(ARGUMENTS)


@pytest.mark.parametrize(("method", "kwargs"), ARGUMENTS.items(), ids=list(ARGUMENTS))
def test_every_argument_reaches_the_request(method: str, kwargs: dict[str, Any]) -> None:
    for make in ("client", "async_client"):
        server = Server(status(500))
        api = getattr(server, make)(max_retries=0)
        with pytest.raises(adapter.UnavailableError):
            invoke(api, method, kwargs)
        [request] = server.seen
        text = sent_text(request)
        for arg, value in kwargs.items():
            for marker in markers(value):
                assert marker in text, (make, method, arg)
