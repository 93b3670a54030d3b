"""adapter.ContextQClient / AsyncContextQClient against the in-process fake."""

from __future__ import annotations

import asyncio
import functools
import logging

import httpx2
import pytest

import adapter
from adapter import AsyncContextQClient, ContextInput, ContextQClient
from adapter import client as client_module
from fake_contextq import FakeContextQ, Tenant


def _record(into: list[httpx2.Request], status: int, request: httpx2.Request) -> httpx2.Response:
    into.append(request)
    return httpx2.Response(status, json={"error": "x", "message": "m"})


@pytest.fixture
def api(fake: FakeContextQ, key: str) -> ContextQClient:
    return ContextQClient(key, http_client=fake.client(), retry_backoff=0.001)


def test_typed_results_round_trip(api: ContextQClient, fake: FakeContextQ, tenant: Tenant) -> None:
    fake.create_workspace(tenant, "acme")
    made = api.create_context(
        "lesson",
        "Title",
        "Body text",
        external_id="a/b",
        tags=["x"],
        workspace="acme",
        metadata={"k": 1},
    )
    assert isinstance(made, adapter.Context)
    assert (made.type, made.workspace, made.tags, made.metadata) == (
        "lesson",
        "acme",
        ("x",),
        {"k": 1},
    )
    assert made.created_at.tzinfo is not None
    assert api.get_context(made.id) == made
    assert api.get_context_by_external_id("a/b") == made
    keys, total = api.list_context_keys(workspace="acme", tag="x")
    assert (keys, total) == ([(made.id, "a/b", {"k": 1})], 1)
    page = api.list_contexts(workspace="acme")
    assert page.total == 1 and isinstance(page.items[0], adapter.ContextSummary)
    assert not hasattr(page.items[0], "content")
    updated = api.update_context(made.id, content="New", external_id=None)
    assert (updated.content, updated.external_id) == ("New", None)
    [hit] = api.search("new", workspace="acme")
    assert hit.context.id == made.id and hit.score > 0
    api.delete_context(made.id)
    with pytest.raises(adapter.NotFoundError):
        api.get_context(made.id)


def test_bulk_upsert_and_paging(api: ContextQClient, fake: FakeContextQ, tenant: Tenant) -> None:
    fake.set_plan(tenant, "enterprise")
    items = [ContextInput("reference", f"t{i}", "c", external_id=f"e{i}") for i in range(7)]
    result = api.bulk_upsert(items)
    assert (result.created, result.updated) == (7, 0)
    assert [c.external_id for c in api.iter_contexts(page_size=3)] == [f"e{i}" for i in range(7)]
    assert (
        api.bulk_upsert(
            [{"type": "reference", "title": "t", "content": "d", "external_id": "e0"}]
        ).updated
        == 1
    )


def test_workspaces(api: ContextQClient) -> None:
    ws = api.create_workspace("acme", "Acme")
    assert isinstance(ws, adapter.Workspace) and ws.name == "Acme"
    assert api.archive_workspace("acme").archived
    assert [w.slug for w in api.list_workspaces()] == ["acme"]
    with pytest.raises(adapter.WorkspaceTakenError):
        api.create_workspace("acme")
    api.create_context("reference", "t", "c", workspace="acme")
    with pytest.raises(adapter.WorkspaceNotEmptyError):
        api.delete_workspace("acme")


@pytest.mark.parametrize(
    ("setup", "cls", "attrs"),
    [
        (
            "quota",
            adapter.QuotaExceededError,
            {"limit": 100, "plan": "free", "resource": "contexts"},
        ),
        ("scope", adapter.ScopeDeniedError, {"required": "write"}),
        ("taken", adapter.ExternalIdTakenError, {}),
        ("invalid", adapter.ValidationError, {}),
        ("unauthorized", adapter.AuthenticationError, {}),
    ],
)
def test_errors_are_typed(
    fake: FakeContextQ,
    tenant: Tenant,
    key: str,
    setup: str,
    cls: type[adapter.ContextQError],
    attrs: dict[str, object],
) -> None:
    api = ContextQClient(key, http_client=fake.client())
    if setup == "quota":
        api.bulk_upsert(
            [ContextInput("reference", "t", "c", external_id=f"q{i}") for i in range(100)]
        )
    if setup == "scope":
        api = ContextQClient(fake.mint_key(tenant, ("read",)), http_client=fake.client())
    if setup == "taken":
        api.create_context("reference", "t", "c", external_id="dup")
    if setup == "unauthorized":
        fake.revoke_key(key)
    with pytest.raises(cls) as caught:
        api.create_context(
            "bogus" if setup == "invalid" else "reference",
            "t",
            "c",
            external_id="dup" if setup == "taken" else None,
        )
    for name, value in attrs.items():
        assert getattr(caught.value, name) == value
    assert caught.value.method == "POST" and caught.value.path == "/api/contexts"
    assert "POST /api/contexts" in str(caught.value)


def test_validation_errors_list_their_issues(api: ContextQClient) -> None:
    with pytest.raises(adapter.ValidationError, match="type: Invalid enum value") as caught:
        api.create_context("bogus", "t", "c")
    assert caught.value.issues[0]["path"] == "type"


def test_idempotent_calls_are_retried_on_5xx_and_dropped_connections(
    api: ContextQClient, fake: FakeContextQ
) -> None:
    made = api.create_context("reference", "t", "c")
    fake.faults.inject("GET", f"/api/contexts/{made.id}", status=503, times=1)
    fake.faults.inject("GET", f"/api/contexts/{made.id}", drop=True, times=1)
    assert api.get_context(made.id).id == made.id
    assert [e.status for e in fake.journal.filter("GET")] == [503, None, 200]


def test_retries_give_up_after_max_retries(fake: FakeContextQ, key: str) -> None:
    api = ContextQClient(key, http_client=fake.client(), max_retries=2, retry_backoff=0.001)
    fake.faults.inject("GET", "/api/contexts", status=502, times=None)
    with pytest.raises(adapter.UnavailableError) as caught:
        api.list_contexts()
    assert caught.value.status == 502
    assert fake.journal.count("GET") == 3


def test_creates_and_4xx_are_never_retried(api: ContextQClient, fake: FakeContextQ) -> None:
    fake.faults.inject("POST", "/api/contexts", status=503, times=1)
    with pytest.raises(adapter.UnavailableError):
        api.create_context("reference", "t", "c")
    with pytest.raises(adapter.NotFoundError):
        api.get_context(999)
    assert fake.journal.count() == 2


def test_a_dropped_create_is_a_connection_error(api: ContextQClient, fake: FakeContextQ) -> None:
    fake.faults.inject("POST", "/api/contexts", drop=True)
    with pytest.raises(adapter.ContextQConnectionError, match="no answer from ContextQ"):
        api.create_context("reference", "t", "c")


def test_timeouts_are_typed(fake: FakeContextQ, key: str) -> None:
    api = ContextQClient(key, http_client=fake.client(), timeout=0.05, max_retries=0)
    fake.faults.inject("GET", "/api/workspaces", delay=0.5)
    with pytest.raises(adapter.ContextQTimeoutError):
        api.list_workspaces()


def test_the_key_never_shows(
    fake: FakeContextQ, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    api = ContextQClient(key, http_client=fake.client(), retry_backoff=0.001)
    caplog.set_level(logging.DEBUG)
    fake.faults.inject("GET", "/api/contexts", status=503, times=None)
    with pytest.raises(adapter.ContextQError) as caught:
        api.list_contexts()
    texts = [str(caught.value), repr(caught.value), repr(api), caplog.text]
    assert "retry 1 of 2" in caplog.text
    for text in texts:
        assert key not in text and key[8:20] not in text


def test_options_from_the_environment(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setenv("CONTEXT_API_KEY", key)
    monkeypatch.setenv("CONTEXT_API_URL", "http://ctx.example:1234/")
    with ContextQClient() as api:
        assert api.base_url == "http://ctx.example:1234"
    monkeypatch.delenv("CONTEXT_API_URL")
    with ContextQClient() as api:
        assert api.base_url == "http://localhost:38200"
    with ContextQClient(base_url="http://other") as api:
        assert api.base_url == "http://other"


def test_bad_options_are_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTEXT_API_KEY", raising=False)
    with pytest.raises(ValueError, match="No ContextQ API key"):
        ContextQClient()
    with pytest.raises(ValueError, match="does not look like one") as caught:
        ContextQClient("sk_live_secret-but-wrong")
    assert "secret" not in str(caught.value)
    with pytest.raises(ValueError, match="max_retries"):
        ContextQClient("sk_live_" + "a" * 40, max_retries=-1)


def test_the_async_client(fake: FakeContextQ, key: str) -> None:
    async def main() -> list[str]:
        async with AsyncContextQClient(
            key, http_client=fake.async_client(), retry_backoff=0.001
        ) as api:
            await api.create_workspace("acme")
            made = await api.create_context(
                "reference", "t", "hello", external_id="x/y", workspace="acme"
            )
            fake.faults.inject("GET", "/api/contexts/by-external/*", status=500, times=1)
            got = await api.get_context_by_external_id("x/y")
            hits = await api.search("hello")
            listed = [c.external_id async for c in api.iter_contexts(page_size=1)]
            with pytest.raises(adapter.NotFoundError):
                await api.get_context(made.id + 1)
            return [got.content, hits[0].snippet, *[str(e) for e in listed]]

    assert asyncio.run(main()) == ["hello", "hello", "x/y"]


def test_a_closed_client_is_a_connection_error_sync_and_async(key: str) -> None:
    """Not httpx's RuntimeError, which no caller of a ContextQ client expects (the agent
    memory promises never to raise; the memory tool turns ContextQ errors into messages)."""
    api = ContextQClient(key, base_url="http://127.0.0.1:9")  # closed before any request
    api.close()
    with pytest.raises(adapter.ContextQConnectionError, match="client is closed"):
        api.list_workspaces()

    async def main() -> None:
        client = AsyncContextQClient(key, base_url="http://127.0.0.1:9")
        await client.aclose()
        with pytest.raises(adapter.ContextQConnectionError, match="client is closed"):
            await client.list_workspaces()

    asyncio.run(main())


def test_an_unexpected_body_is_a_clear_error(key: str) -> None:
    transport = httpx2.MockTransport(lambda _request: httpx2.Response(200, json={"nope": 1}))
    api = ContextQClient(key, http_client=httpx2.Client(transport=transport, base_url="http://x"))
    with pytest.raises(adapter.ContextQError, match="unexpected answer body"):
        api.get_context(1)


def test_undecodable_bodies_and_bad_urls_are_clear(key: str) -> None:
    garbage = httpx2.MockTransport(
        lambda _r: httpx2.Response(
            200, content=b"not gzip at all", headers={"content-encoding": "gzip"}
        )
    )
    api = ContextQClient(
        key, http_client=httpx2.Client(transport=garbage, base_url="http://x"), max_retries=0
    )
    with pytest.raises(adapter.ContextQConnectionError):
        api.get_context(1)
    odd = httpx2.MockTransport(lambda _r: httpx2.Response(200, json={"items": [1]}))
    api = ContextQClient(key, http_client=httpx2.Client(transport=odd, base_url="http://x"))
    with pytest.raises(adapter.ContextQError, match="unexpected answer body"):
        api.list_workspaces()
    with pytest.raises(ValueError, match=r"not a URL|http"):
        ContextQClient(key, base_url="http://[::1")
    with pytest.raises(ValueError, match="http"):
        ContextQClient(key, base_url="ftp://files.example")


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the clients asked for between attempts, recorded instead of slept."""
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(client_module, "_sleep", waits.append)
    monkeypatch.setattr(client_module, "_async_sleep", async_sleep)
    return waits


def _busy(after: str, seen: list[httpx2.Request]) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(
            503, json={"error": "x", "message": "busy"}, headers={"retry-after": after}
        )

    return httpx2.MockTransport(handler)


def test_retry_after_is_honoured_up_to_a_limit(key: str, slept: list[float]) -> None:
    seen: list[httpx2.Request] = []
    api = ContextQClient(
        key,
        http_client=httpx2.Client(transport=_busy("0.2", seen), base_url="http://x"),
        max_retries=1,
    )
    with pytest.raises(adapter.UnavailableError):
        api.get_context(1)
    assert (len(seen), slept) == (2, [0.2])
    seen.clear()
    slept.clear()
    api = ContextQClient(
        key,
        http_client=httpx2.Client(transport=_busy("3600", seen), base_url="http://x"),
        max_retries=3,
    )
    with pytest.raises(adapter.UnavailableError):
        api.get_context(1)
    assert (len(seen), slept) == (1, [])  # a wait longer than RETRY_AFTER_MAX is not sat through


def test_the_async_client_waits_the_same_way(key: str, slept: list[float]) -> None:
    seen: list[httpx2.Request] = []
    api = AsyncContextQClient(
        key,
        http_client=httpx2.AsyncClient(transport=_busy("1.5", seen), base_url="http://x"),
        max_retries=2,
    )
    with pytest.raises(adapter.UnavailableError):
        asyncio.run(api.get_context(1))
    assert (len(seen), slept) == (3, [1.5, 1.5])


def test_backoff_grows_with_full_jitter_below_the_cap(key: str, slept: list[float]) -> None:
    seen: list[httpx2.Request] = []
    transport = httpx2.MockTransport(functools.partial(_record, seen, 502))
    api = ContextQClient(
        key,
        http_client=httpx2.Client(transport=transport, base_url="http://x"),
        max_retries=6,
        retry_backoff=1.0,
    )
    with pytest.raises(adapter.UnavailableError):
        api.list_workspaces()
    assert len(seen) == 7 and len(slept) == 6
    for attempt, wait in enumerate(slept):
        assert 0 <= wait <= min(8.0, 2**attempt)
