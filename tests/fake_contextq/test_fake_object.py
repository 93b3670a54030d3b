"""The FakeContextQ object: journal, faults, reset, isolation, and its clients."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
import time
from typing import Any

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant
from fake_contextq.service.journal import BODY_KEPT, Journal, JournalEntry
from tests.support.helpers import context_body

# ----- journal -----


def test_journal_records_every_request_in_order(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    client.post("/api/contexts", json=context_body())
    client.get("/api/contexts", params={"limit": 5})
    with fake.client() as anonymous:
        anonymous.get("/api/contexts")
    entries = list(fake.journal)
    assert [(e.method, e.path, e.status) for e in entries] == [
        ("POST", "/api/contexts", 201),
        ("GET", "/api/contexts", 200),
        ("GET", "/api/contexts", 401),
    ]
    assert entries[1].query == "limit=5"
    assert [e.tenant_id for e in entries] == [tenant.id, tenant.id, None]
    assert all(e.duration > 0 for e in entries)
    assert fake.journal.last is entries[-1]


def test_journal_filters_and_prints_a_table(client: httpx2.Client, fake: FakeContextQ) -> None:
    client.post("/api/contexts", json=context_body())
    client.get("/api/contexts/1")
    client.get("/api/contexts/2")
    assert len(fake.journal.filter("GET", "/api/contexts/*")) == 2
    assert fake.journal.count(status=404) == 1
    assert fake.journal.count(method="post") == 1
    table = fake.journal.table()
    lines = table.splitlines()
    assert lines[0].split() == ["#", "method", "target", "status", "tenant", "ms"]
    assert "GET     /api/contexts/2" in table and "404" in lines[-1]
    assert str(fake.journal) == table


def test_journal_keeps_each_body_and_its_answer_numbered(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    created = client.post("/api/contexts", json=context_body(title="Prefs"))
    client.get("/api/contexts/999")
    post, missing = fake.journal
    assert json.loads(post.request_body)["title"] == "Prefs"
    assert json.loads(post.response_body) == created.json()
    assert missing.request_body == b"" and json.loads(missing.response_body)["error"] == "not_found"
    assert (post.number, missing.number) == (1, 2)
    assert fake.journal.find(2) is missing and fake.journal.find(3) is None
    assert post.at <= missing.at and not post.body_cut
    shown = post.as_dict()
    assert json.loads(shown["request_body"])["title"] == "Prefs"
    json.dumps(shown)  # JSON-ready, for GET /_fake/journal


def test_a_body_past_what_the_journal_keeps_is_cut_and_says_so(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    big = "x" * (BODY_KEPT + 10)
    client.post("/api/contexts", json=context_body(content=big))
    entry = fake.journal.last
    assert len(entry.request_body) == BODY_KEPT and entry.body_cut
    assert len(entry.response_body) == BODY_KEPT  # the answer echoes the content


def test_journal_numbers_go_on_after_a_clear(client: httpx2.Client, fake: FakeContextQ) -> None:
    client.get("/api/contexts")
    fake.journal.clear()
    client.get("/api/contexts")
    assert [e.number for e in fake.journal] == [2]


def test_a_subscriber_sees_each_new_entry_until_it_unsubscribes(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    seen: list[str] = []
    client.get("/api/contexts")  # before: not seen
    stop = fake.journal.subscribe(lambda entry: seen.append(str(entry)))
    client.get("/api/contexts/1")
    client.post("/api/contexts", json=context_body())
    stop()
    client.get("/api/contexts")
    assert seen == ["GET /api/contexts/1 -> 404", "POST /api/contexts -> 201"]
    stop()  # twice is harmless


def test_an_empty_journal_says_so(fake: FakeContextQ) -> None:
    assert "(no requests)" in fake.journal.table()
    with pytest.raises(LookupError, match="empty"):
        _ = fake.journal.last


# ----- faults -----


def test_a_fault_answers_with_its_status_the_given_number_of_times(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    fault = fake.faults.inject("GET", "/api/contexts", status=503, times=2)
    assert [client.get("/api/contexts").status_code for _ in range(3)] == [503, 503, 200]
    assert fault.hits == 2
    assert len(fake.faults) == 0
    first = fake.journal[0]
    assert first.fault and first.status == 503


def test_fault_paths_are_globs_and_methods_filter(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    fake.faults.inject("DELETE", "/api/contexts/*", status=500, times=None)
    client.post("/api/contexts", json=context_body())
    assert client.get("/api/contexts/1").status_code == 200
    assert client.delete("/api/contexts/1").status_code == 500
    assert client.delete("/api/contexts/1").status_code == 500
    fake.faults.clear()
    assert client.delete("/api/contexts/1").status_code == 204


def test_a_fault_body_is_json_in_contract_shape(client: httpx2.Client, fake: FakeContextQ) -> None:
    fake.faults.inject("*", "/api/search", status=502)
    body = client.post("/api/search", json={"query": "x"}).json()
    assert body["error"] == "injected_fault"
    assert "POST /api/search" in body["message"]


def test_a_dropped_connection_is_a_transport_error(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    fake.faults.inject("GET", "/api/contexts", drop=True)
    with pytest.raises(httpx2.RemoteProtocolError, match="disconnected"):
        client.get("/api/contexts")
    assert fake.journal.last.status is None
    assert client.get("/api/contexts").status_code == 200


def test_a_delay_beyond_the_read_timeout_is_a_read_timeout(fake: FakeContextQ, key: str) -> None:
    fake.faults.inject("GET", "/api/contexts", delay=0.5)
    # the answer would come after 0.5 s: a ReadTimeout means the client did not wait for it
    with fake.client(key, timeout=0.05) as c, pytest.raises(httpx2.ReadTimeout):
        c.get("/api/contexts")


def test_stopping_a_served_fake_cuts_an_injected_delay_short(fake: FakeContextQ, key: str) -> None:
    """A stop does not wait out an injected delay (a test may inject an hour and end); the
    delayed request is still answered as the fault says."""
    fault = fake.faults.inject("GET", "/api/contexts", delay=3600, status=503)
    answers: list[int] = []
    served = fake.serve()

    def ask() -> None:
        with httpx2.Client(base_url=served.url, timeout=120) as c:
            answers.append(
                c.get("/api/contexts", headers={"Authorization": f"Bearer {key}"}).status_code
            )

    asking = threading.Thread(target=ask)
    asking.start()
    for _ in range(1000):  # until the request is in its delay
        if fault.hits:
            break
        time.sleep(0.01)
    assert fault.hits == 1
    stopping = threading.Thread(target=served.stop)
    stopping.start()
    stopping.join(60)
    assert not stopping.is_alive(), "stop() waited for the hour-long delay"
    asking.join(60)
    assert answers == [503]


def test_a_delay_within_the_timeout_just_slows_the_answer(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    fake.faults.sleep = sleep
    fake.faults.inject("GET", "/api/contexts", delay=0.05)
    assert client.get("/api/contexts").status_code == 200
    assert waited == [0.05]
    assert fake.journal.last.fault
    assert client.get("/api/contexts").status_code == 200  # times=1: the next is not delayed
    assert waited == [0.05]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "at least one of"),
        ({"status": 700}, "HTTP status code"),
        ({"status": 500, "drop": True}, "cannot both"),
        ({"delay": -1}, "delay must be"),
        ({"status": 500, "times": 0}, "times must be"),
    ],
)
def test_bad_faults_are_refused(
    fake: FakeContextQ, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        fake.faults.inject("GET", "/api/contexts", **kwargs)  # type: ignore[arg-type]


# ----- state -----


def test_reset_forgets_everything(client: httpx2.Client, fake: FakeContextQ) -> None:
    client.post("/api/contexts", json=context_body())
    fake.faults.inject("GET", "/x", status=500)
    fake.reset()
    assert fake.tenants() == []
    assert fake.audit_log() == []
    assert len(fake.faults) == 0
    assert client.get("/api/contexts").status_code == 401  # the key went with its tenant
    assert len(fake.journal) == 1


def test_two_fakes_share_nothing() -> None:
    with FakeContextQ() as a, FakeContextQ() as b:
        key = a.mint_key(a.create_tenant(), ("read", "write"))
        with a.client(key) as c:
            c.post("/api/contexts", json=context_body())
        with b.client(key) as c:
            assert c.get("/api/contexts").status_code == 401
        assert b.tenants() == [] and len(b.journal) == 1 and len(a.journal) == 1


def test_state_is_readable_for_assertions(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.create_workspace(tenant, "ws", "Work space")
    client.post("/api/contexts", json=context_body(workspace="ws", tags=["a"]))
    [context] = fake.contexts(tenant)
    assert (context.workspace, context.tags) == ("ws", ("a",))
    with pytest.raises(AttributeError):
        context.title = "changed"  # type: ignore[misc]
    assert fake.context_json(tenant)[0]["workspace"] == "ws"
    assert [w.name for w in fake.workspaces(tenant)] == ["Work space"]
    assert "1 tenant(s)" in repr(fake)


# ----- clients -----


def test_the_sync_client_works_inside_a_running_event_loop(fake: FakeContextQ, key: str) -> None:
    async def main() -> int:
        with fake.client(key) as c:  # a sync tool called from async code
            return c.post("/api/contexts", json=context_body()).status_code

    assert asyncio.run(main()) == 201


def test_the_async_client(fake: FakeContextQ, key: str) -> None:
    async def main() -> list[int]:
        async with fake.async_client(key) as c:
            made = await c.post("/api/contexts", json=context_body(externalId="a/b"))
            got = await c.get("/api/contexts/by-external/a%2Fb")
            return [made.status_code, got.status_code]

    assert asyncio.run(main()) == [201, 200]


def test_sync_clients_on_many_threads(fake: FakeContextQ, key: str) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            with fake.client(key) as c:
                for i in range(10):
                    assert (
                        c.post(
                            "/api/contexts/bulk-upsert",
                            json={"contexts": [context_body(externalId=f"{worker}-{i}")]},
                        ).status_code
                        == 200
                    )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fake.set_plan(1, "enterprise")
    assert len(fake.contexts(1)) == 40
    assert fake.verify_audit_chain() == 40


def test_the_openapi_document_is_served(client: httpx2.Client) -> None:
    doc = client.get("/openapi.json").json()
    assert "/api/contexts/by-external/{external_id}" in doc["paths"]
    assert not any(p.startswith("/_fake") for p in doc["paths"])


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_threads_that_come_and_go_leave_no_event_loops_behind(fake: FakeContextQ, key: str) -> None:
    """The sync in-process client runs each thread's requests on a loop of that thread's
    own; a thread that ends takes its loop (and the loop's file descriptors) with it."""

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    statuses: list[int] = []
    with fake.client(key) as c:
        statuses.append(c.get("/api/contexts").status_code)
        gc.collect()
        before = open_fds()
        for _ in range(30):
            thread = threading.Thread(
                target=lambda: statuses.append(c.get("/api/contexts").status_code)
            )
            thread.start()
            thread.join(timeout=60)
        gc.collect()
        assert statuses == [200] * 31
        assert open_fds() - before < 10  # a loop per thread left open would be 3 fds each


def test_fill_brings_a_tenant_to_its_quota_and_counts_what_it_added() -> None:
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme", plan="free")
    assert fake.fill(tenant, 30) == 30
    assert fake.fill(tenant) == 70
    assert len(fake.contexts(tenant)) == 100
    pro = fake.create_tenant("big", plan="pro")
    assert fake.fill(pro, 600) == 600  # more than one bulk upsert
    with pytest.raises(ValueError, match="no quota"):
        fake.fill(fake.create_tenant("ent", plan="enterprise"))
    with pytest.raises(ValueError, match="at least 0"):
        fake.fill(tenant, -1)


def test_memory_files_show_paths_as_the_tool_does() -> None:
    fake = FakeContextQ()
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "notes")
    key = fake.mint_key(tenant, ("read", "write"))
    fake.seed_files(key, {"/memories/a.md": "A\n", "/memories/dir/b.md": "B\n"}, workspace="notes")
    fake.seed_files(key, {"/memories/notes/c.md": "C\n"})  # default mode: workspace first
    assert fake.memory_files(tenant, "notes") == {
        "/memories/a.md": "A\n",
        "/memories/c.md": "C\n",
        "/memories/dir/b.md": "B\n",
    }
    assert set(fake.memory_files(tenant)) == {
        "/memories/notes/a.md", "/memories/notes/c.md", "/memories/notes/dir/b.md"
    }  # fmt: skip


def test_the_journal_shows_a_credential_named_query_value_as_stars(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    """A key or token sent in the URL (which ContextQ never reads there) is a secret all the
    same: the journal, its table and its JSON show it masked, the other parameters as sent."""
    client.get("/api/contexts", params={"limit": 5, "token": "T0KSECRET", "x_api_key": "K3Y"})
    [entry] = list(fake.journal)
    assert entry.query == "limit=5&token=***&x_api_key=***"
    shown = [str(entry), fake.journal.table(), json.dumps(entry.as_dict())]
    assert not [text for text in shown if "T0KSECRET" in text or "K3Y" in text], shown


def test_a_bounded_journal_keeps_the_newest_entries_under_their_numbers() -> None:
    with FakeContextQ(journal_keep=3) as fake, fake.client("sk_live_nope") as client:
        for n in range(5):
            client.get(f"/api/contexts/{n + 1}")
        assert len(fake.journal) == 3 and fake.journal.keep == 3
        assert [e.number for e in fake.journal] == [3, 4, 5]
        assert [e.path for e in fake.journal[0:2]] == ["/api/contexts/3", "/api/contexts/4"]
        assert fake.journal.last.path == "/api/contexts/5" == fake.journal[-1].path
        assert fake.journal.find(1) is None and fake.journal.find(4) is fake.journal[1]


def test_a_journal_bounded_by_bytes_keeps_the_newest_bodies_within_them() -> None:
    with FakeContextQ(journal_keep_bytes=3_000) as fake, fake.client("sk_live_nope") as client:
        for _ in range(6):
            client.post("/api/contexts", content=b"x" * 1_000, headers={"content-type": "a/b"})
            assert sum(len(e.request_body) + len(e.response_body) for e in fake.journal) <= 3_000
        kept = [e.number for e in fake.journal]
        assert kept[-1] == 6 and len(kept) < 6 and fake.journal.served == 6
        assert repr(fake).endswith("6 request(s) served>")
        fake.journal.clear()
        client.post("/api/contexts", content=b"y" * 2_000, headers={"content-type": "a/b"})
        assert [e.number for e in fake.journal] == [7]  # a clear gave its bytes back


def test_a_journal_bounded_by_bytes_counts_long_targets_too() -> None:
    """A GET carries no body but may carry a query as long as the server takes: without
    counting it, 10,000 such entries held about 160 MiB past a 64 MiB bound."""
    query = "q=" + "x" * 2_000
    with FakeContextQ(journal_keep_bytes=5_000) as fake, fake.client("sk_live_nope") as client:
        for _ in range(6):
            client.get(f"/api/contexts?{query}")
        held = sum(len(e.path) + len(e.query) + len(e.response_body) for e in fake.journal)
        assert held <= 5_000 and len(fake.journal) == 2
        assert [e.number for e in fake.journal] == [5, 6]


def test_a_journal_finds_an_entry_that_ended_after_later_numbered_ones() -> None:
    journal = Journal()
    first, second = journal.next_number(), journal.next_number()
    journal.record(JournalEntry("GET", "/b", "", 200, None, 0.0, number=second))
    journal.record(JournalEntry("GET", "/a", "", 200, None, 0.0, number=first))
    found = journal.find(second)
    assert found is not None and found.path == "/b"
    assert journal.find(first) is not None


@pytest.mark.parametrize("keep", [0, -1, True, 2.5, "10"])
def test_a_journal_bound_that_is_not_a_positive_count_is_refused(keep: Any) -> None:
    with pytest.raises(ValueError, match="keep must be a positive number of entries"):
        FakeContextQ(journal_keep=keep, database_url="sqlite://")
