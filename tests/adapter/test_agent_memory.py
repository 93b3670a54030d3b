"""Long-term agent memory behind one port: each backend (local files, ContextQ over REST,
in-process and served, ContextQ over MCP) stores and reads runs the same way, on every
store, and no ContextQ failure ever raises into the agent."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from adapter import ContextQClient, ContextQError, wire
from adapter.agent_memory import (
    AgentMemory,
    ContextQAgentMemory,
    LocalAgentMemory,
    McpAgentMemory,
    NoAgentMemory,
    RemoteAgentMemory,
    RunRecord,
    strip_preamble,
)
from adapter.mcp_client import SyncMcpClient
from fake_contextq import FakeContextQ, Tenant

pytestmark = pytest.mark.all_stores

WORKSPACE = "agents"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
BACKENDS = ["local", "contextq", "contextq-served", "mcp"]
REMOTE = BACKENDS[1:]


def run(run_id: str, minutes: int = 0, **fields: Any) -> RunRecord:
    fields.setdefault("task", f"task of {run_id}")
    return RunRecord(
        run_id,
        started_at=T0 + timedelta(minutes=minutes),
        ended_at=T0 + timedelta(minutes=minutes + 1),
        **fields,
    )


class Backends:
    """Makes each kind of backend on the test's fake, and closes them all."""

    def __init__(self, fake: FakeContextQ, tenant: Tenant, tmp_path: Path) -> None:
        self.fake, self.tenant, self.tmp_path = fake, tenant, tmp_path
        self.closers: list[Callable[[], None]] = []
        self._served: Any = None

    def url(self) -> str:
        if self._served is None:
            self._served = self.fake.serve()
            self.closers.append(self._served.stop)
        return str(self._served.url)

    def make(self, kind: str, *, key: str | None = None, strict: bool = False,
             workspace: str | None = WORKSPACE, **client: Any) -> Any:  # fmt: skip
        key = key or self.fake.mint_key(self.tenant, wire.SCOPES)
        if kind == "local":
            return LocalAgentMemory(self.tmp_path / "memory", strict=strict)
        if kind == "mcp":
            session = SyncMcpClient(self.fake.mcp_server(key)).open()
            self.closers.append(session.close)
            return McpAgentMemory(session, workspace, strict=strict)
        if kind == "contextq-served":
            api = ContextQClient(key, base_url=self.url(), max_retries=0, **client)
        else:
            api = ContextQClient(key, http_client=self.fake.client(), max_retries=0, **client)
        self.closers.append(api.close)
        return ContextQAgentMemory(api, workspace, strict=strict)

    def close(self) -> None:
        for close in reversed(self.closers):
            close()


@pytest.fixture
def backends(fake: FakeContextQ, tenant: Tenant, tmp_path: Path) -> Iterator[Backends]:
    fake.create_workspace(tenant, WORKSPACE)
    made = Backends(fake, tenant, tmp_path)
    yield made
    made.close()


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, backends: Backends) -> Any:
    return backends.make(request.param)


@pytest.fixture(params=REMOTE)
def remote(request: pytest.FixtureRequest, backends: Backends) -> RemoteAgentMemory:
    made: RemoteAgentMemory = backends.make(request.param)
    return made


def _rest(fake: FakeContextQ, tenant: Tenant) -> httpx2.Client:
    return fake.client(fake.mint_key(tenant, wire.SCOPES))


# ----- the required methods, on every backend ------------------------------------------------


def test_a_run_written_reads_back_the_same(memory: Any) -> None:
    record = run("r1", task="ship the release", accomplished=("tests pass",),
                 next=("write notes",), issues=("flaky e2e",), metadata={"k": 1})  # fmt: skip
    assert memory.write_record(record) == record
    assert memory.get_record("r1") == record
    assert memory.list_records() == [record]
    assert memory.latest_record() == record
    assert memory.get_record("unknown") is None
    assert memory.failures == []


def test_three_runs_keep_their_lineage(memory: Any) -> None:
    first = run("r1")
    second = run("r2", 10, parent_run_id="r1", previous_run_id="r1", root_run_id="r1")
    third = run("r3", 20, parent_run_id="r2", chat_session_id="chat-7", root_run_id="r1")
    for record in (first, second, third):
        memory.write_record(record)
    assert memory.list_records() == [first, second, third]
    assert memory.latest_record() == third
    assert memory.get_record("r3").lineage == third.lineage


def test_issues_stay_open_until_a_later_run_reports_them_done(memory: Any) -> None:
    memory.write_record(run("r1", issues=("flaky e2e", "slow build")))
    memory.write_record(run("r2", 5, accomplished=("flaky e2e",)))
    assert [(i.run_id, i.text) for i in memory.list_open_issues()] == [("r1", "slow build")]


def test_the_preamble_round_trips_through_strip_preamble(memory: Any) -> None:
    memory.write_record(run("r1", task="deploy the api", issues=("keys expire",)))
    text = memory.build_preamble("deploy the api")
    assert text.startswith("MEMORY (") and text.endswith("END MEMORY\n")
    prompt = "Please deploy the api.\nThanks."
    assert strip_preamble(text + prompt) == prompt
    assert strip_preamble(prompt) == prompt
    assert len(memory.build_preamble("deploy the api", max_chars=120)) <= 120


def test_a_preamble_never_comes_back_in_a_record(memory: Any) -> None:
    memory.write_record(run("r1", task="deploy", issues=("keys expire",)))
    injected = memory.build_preamble("deploy") + "deploy again"
    memory.write_record(run("r2", 5, task=injected))
    assert memory.get_record("r2").task == "deploy again"


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.build_preamble("x", top_k=-1),
        lambda m: m.build_preamble("x", max_chars=0),
        lambda m: m.write_record({"run_id": "r1"}),
        lambda m: m.get_record("a/b"),
    ],
    ids=["negative-top-k", "zero-max-chars", "not-a-record", "bad-run-id"],
)
def test_bad_input_is_a_value_error_at_once(memory: Any, call: Callable[[Any], Any]) -> None:
    with pytest.raises(ValueError, match=r"top_k|max_chars|RunRecord|run_id"):
        call(memory)


@pytest.mark.parametrize("kind", BACKENDS)
def test_every_backend_closes_as_a_context_manager_and_twice(backends: Backends, kind: str) -> None:
    """Whatever ``select_agent_memory`` picked can be closed without knowing which it is:
    a client the memory made is closed (a later call is an absorbed failure), one it was
    given stays its owner's, an MCP session ends and a later call opens a new one, and a
    local directory holds nothing open."""
    memory = backends.make(kind)
    assert isinstance(memory, AgentMemory)
    with memory as entered:
        assert entered is memory
        assert memory.write_record(run("before")) == run("before")
    memory.close()  # a second close does nothing more and never raises
    after = memory.write_record(run("after"))
    if kind == "contextq-served":
        assert after is None
        assert [f.method for f in memory.failures] == ["write_record"]
    else:
        assert after == run("after")
        assert memory.failures == []


def test_no_agent_memory_closes_too() -> None:
    with NoAgentMemory() as memory:
        assert memory.write_record(run("r")) is None
    memory.close()


def test_a_record_without_a_proper_run_id_is_refused() -> None:
    for bad in ("", "a/b", "../x", " r1"):
        with pytest.raises(ValueError, match="run_id must be"):
            RunRecord(bad, task="t")
    with pytest.raises(ValueError, match="status must be one of"):
        RunRecord("r1", task="t", status="done")


# ----- the remote backends: the Agent Memory Layer ------------------------------------------


def test_an_outcome_becomes_verified_and_pending_tasks_and_lessons(
    remote: RemoteAgentMemory, fake: FakeContextQ, tenant: Tenant
) -> None:
    record = run("r1", accomplished=("tests pass",), next=("write notes",), issues=("flaky",))
    remote.write_record(record)
    [lesson] = fake.lessons(tenant)
    assert lesson.text == "flaky"
    with _rest(fake, tenant) as c:
        session_id = remote._sessions["r1"]
        session = c.get(f"/api/agent/sessions/{session_id}").json()
        tasks = c.get(f"/api/agent/sessions/{session_id}/tasks").json()["items"]
    assert session["status"] == "completed" and session["workspace"] == WORKSPACE
    assert session["metadata"]["run_id"] == "r1"
    assert sorted((t["title"], t["status"]) for t in tasks) == [
        ("tests pass", "verified"),
        ("write notes", "pending"),
    ]


def test_lineage_becomes_the_parent_session_and_metadata(
    remote: RemoteAgentMemory, fake: FakeContextQ, tenant: Tenant
) -> None:
    remote.write_record(run("r1"))
    remote.write_record(run("r2", 5, parent_run_id="r1", chat_session_id="c", root_run_id="r1"))
    with _rest(fake, tenant) as c:
        second = c.get(f"/api/agent/sessions/{remote._sessions['r2']}").json()
    assert second["parent_session_id"] == remote._sessions["r1"]
    assert second["metadata"]["chat_session_id"] == "c"
    assert second["metadata"]["root_run_id"] == "r1"


def test_a_crashed_run_resumes_from_its_last_checkpoint_in_another_process(
    backends: Backends, request: pytest.FixtureRequest
) -> None:
    for kind in REMOTE:
        first = backends.make(kind)
        run_id = f"crash-{kind}"
        assert first.begin_run(run(run_id, task="long job", status="running")) is not None
        assert first.checkpoint(run_id, {"step": 1}, summary="one") == 1
        assert first.checkpoint(run_id, {"step": 2}, summary="two") == 2
        # the process dies here; a new one knows only the run id
        second = backends.make(kind)
        resumed = second.resume(run_id)
        assert resumed is not None and resumed.checkpoint is not None
        assert (resumed.checkpoint.seq, resumed.checkpoint.state) == (2, {"step": 2})
        assert second.checkpoint(run_id, {"step": 3}) == 3
        assert second.failures == [] and first.failures == []


def test_two_writers_racing_on_seq_lose_no_checkpoint(backends: Backends) -> None:
    writers = [backends.make("contextq"), backends.make("contextq")]
    writers[0].begin_run(run("race", status="running"))
    stored: list[int] = []
    lock = threading.Lock()

    def write(memory: RemoteAgentMemory, n: int) -> None:
        for i in range(n):
            seq = memory.checkpoint("race", {"i": i})
            assert seq is not None
            with lock:
                stored.append(seq)

    threads = [threading.Thread(target=write, args=(w, 8)) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(stored) == list(range(1, 17))
    assert all(w.failures == [] for w in writers)


def test_without_a_server_llm_the_handoff_is_rendered_from_the_record(
    remote: RemoteAgentMemory,
) -> None:
    remote.write_record(run("r1", task="migrate", accomplished=("schema v2",)))
    preamble = remote.build_preamble("migrate")
    assert "Handoff:" in preamble
    assert "Last run r1 (completed): migrate. done: schema v2" in preamble
    assert remote.handoff("r1") == "Last run r1 (completed): migrate. done: schema v2"
    assert remote.failures == []


def test_with_a_server_llm_the_handoff_is_contextqs(llm_fake: FakeContextQ, tmp_path: Path) -> None:
    tenant = llm_fake.create_tenant("acme")
    llm_fake.create_workspace(tenant, WORKSPACE)
    made = Backends(llm_fake, tenant, tmp_path)
    try:
        memory = made.make("contextq")
        memory.write_record(run("r1", task="migrate", accomplished=("schema v2",)))
        written = memory.handoff("r1")
        assert written is not None and not written.startswith("Last run r1")
        assert " ".join(written.split()) in memory.build_preamble("migrate")
    finally:
        made.close()


def test_boot_without_vectors_still_gives_a_preamble(tmp_path: Path) -> None:
    fake = FakeContextQ(embeddings=False)
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, WORKSPACE)
    made = Backends(fake, tenant, tmp_path)
    try:
        memory = made.make("contextq")
        memory.write_record(run("r1", issues=("rotate the keys",)))
        assert "Lessons:\n- rotate the keys" in memory.build_preamble("anything")
    finally:
        made.close()


def test_build_preamble_is_one_request(remote: RemoteAgentMemory, fake: FakeContextQ) -> None:
    remote.write_record(run("r1"))
    before = len(fake.journal)
    remote.build_preamble("next step")
    assert [e.path for e in list(fake.journal)[before:]] == ["/api/agent/boot"]


def test_write_record_costs_n_plus_3_requests_after_begin_run(
    remote: RemoteAgentMemory, fake: FakeContextQ
) -> None:
    record = run("r1", accomplished=("a", "b"), next=("c",), issues=("d",))
    remote.begin_run(record)
    before = len(fake.journal)
    remote.write_record(record)
    assert len(fake.journal) - before == 4 + 3


def test_an_unknown_workspace_is_a_logged_fallback_not_a_silent_one(
    backends: Backends, fake: FakeContextQ, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    writer = fake.mint_key(tenant, (wire.READ, wire.WRITE))  # no admin: cannot create it
    for kind in REMOTE:
        memory = backends.make(kind, key=writer, workspace="missing")
        with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
            assert memory.write_record(run(f"w-{kind}")) is not None
        assert "workspace 'missing' is not usable" in caplog.text
        assert memory.workspace is None
        caplog.clear()
    admin = backends.make("contextq", workspace="made-here")
    admin.write_record(run("w-admin"))
    assert "made-here" in [w.slug for w in fake.workspaces(tenant)]


# ----- best effort: no ContextQ failure raises into the agent -------------------------------


def _exercise(memory: RemoteAgentMemory) -> list[Any]:
    return [
        memory.write_record(run("f1", accomplished=("x",))),
        memory.list_records(),
        memory.get_record("f1"),
        memory.latest_record(),
        memory.list_open_issues(),
        memory.build_preamble("x"),
        memory.checkpoint("f2", {"s": 1}),
        memory.resume("f2"),
        memory.add_lesson("a lesson"),
    ]


def test_503s_never_raise_and_are_counted(backends: Backends, fake: FakeContextQ) -> None:
    for kind in REMOTE:
        memory = backends.make(kind)
        fake.faults.inject("*", "/api/*", status=503, times=None)
        assert _exercise(memory) == [None, [], None, None, [], "", None, None, None]
        assert len(memory.failures) >= 8
        assert {f.code for f in memory.failures} <= {"injected_fault", "unavailable"}
        fake.faults.clear()


def test_a_read_only_key_never_raises_and_is_counted(
    backends: Backends, fake: FakeContextQ, tenant: Tenant
) -> None:
    reader = fake.mint_key(tenant, (wire.READ,))
    for kind in REMOTE:
        memory = backends.make(kind, key=reader)
        assert memory.write_record(run("ro")) is None
        assert {f.code for f in memory.failures} == {"scope_denied"}


def _fill_the_free_plan(fake: FakeContextQ, tenant: Tenant) -> None:
    with _rest(fake, tenant) as c:
        items = [{"type": "reference", "title": "t", "content": "c", "externalId": f"q{i}"}
                 for i in range(100)]  # fmt: skip
        assert c.post("/api/contexts/bulk-upsert", json={"contexts": items}).status_code == 200


def test_the_quota_402_never_raises_and_is_counted(
    backends: Backends, fake: FakeContextQ, tenant: Tenant
) -> None:
    _fill_the_free_plan(fake, tenant)
    memory = backends.make("contextq")
    assert memory.write_record(run("over")) is None
    assert [f.code for f in memory.failures] == ["quota_exceeded"]


KEY_SHAPE = "sk_live_" + "0" * 40


def test_a_failures_log_line_names_its_code_once(
    backends: Backends, fake: FakeContextQ, tenant: Tenant, caplog: pytest.LogCaptureFixture
) -> None:
    """'failed (quota_exceeded: POST ...: 402 quota_exceeded: ...)' said the code twice."""
    _fill_the_free_plan(fake, tenant)
    memory = backends.make("contextq")
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        assert memory.write_record(run("over")) is None
    [line] = [r.getMessage() for r in caplog.records if "carrying on" in r.getMessage()]
    assert line.count("quota_exceeded") == 1, line
    assert line.startswith(
        "agent memory: write_record failed (POST /api/contexts/bulk-upsert: 402 "
    )
    unreachable = ContextQAgentMemory(
        ContextQClient(KEY_SHAPE, base_url="http://127.0.0.1:9"), "ws"
    )
    unreachable.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="adapter.agent_memory"):
        assert unreachable.list_records() == []
    assert "failed (ContextQConnectionError: " in caplog.text


def test_a_timeout_never_raises_and_is_counted(backends: Backends, fake: FakeContextQ) -> None:
    memory = backends.make("contextq-served", timeout=0.2)
    fake.faults.inject("POST", "/api/agent/boot", delay=1.0)
    assert memory.build_preamble("slow") == ""
    assert [f.method for f in memory.failures] == ["build_preamble"]


def test_strict_raises_what_best_effort_absorbs(backends: Backends, fake: FakeContextQ) -> None:
    from adapter.errors import ContextQError

    memory = backends.make("contextq", strict=True)
    fake.faults.inject("*", "/api/*", status=503, times=None)
    with pytest.raises(ContextQError):
        memory.list_records()


def test_mcp_gives_the_same_results_as_rest(fake: FakeContextQ, tmp_path: Path) -> None:
    runs = [run("r1", issues=("flaky",)), run("r2", 5, parent_run_id="r1", accomplished=("flaky",))]
    seen = []
    for kind in ("contextq", "mcp"):
        tenant = fake.create_tenant(f"t-{kind}")
        fake.create_workspace(tenant, WORKSPACE)
        made = Backends(fake, tenant, tmp_path / kind)
        try:
            memory = made.make(kind)
            for record in runs:
                memory.write_record(record)
            seen.append((memory.list_records(), memory.list_open_issues(),
                         memory.build_preamble("flaky")))  # fmt: skip
        finally:
            made.close()
    assert seen[0] == seen[1]


# ----- answers no server should send, and servers that never finish -------------------------

KEY = "sk_live_" + "a" * 40


def _rest_on(handler: Callable[[httpx2.Request], httpx2.Response], **options: Any) -> Any:
    """A REST backend whose every request ``handler`` answers (no fake, no socket)."""
    http = httpx2.Client(transport=httpx2.MockTransport(handler), base_url="http://cq.test")
    api = ContextQClient(KEY, http_client=http, max_retries=0)
    return ContextQAgentMemory(api, WORKSPACE, **options)


def test_an_answer_nested_too_deep_is_a_clear_counted_failure() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    memory = _rest_on(lambda _: httpx2.Response(200, content=deep))
    assert _exercise(memory) == [None, [], None, None, [], "", None, None, None]
    assert memory.failures
    assert all("the answer nests deeper than" in f.message for f in memory.failures)
    with pytest.raises(ContextQError, match=r"unexpected answer body .*nests deeper than 264"):
        memory.remote.client.list_workspaces()
    nested_error = httpx2.Response(500, content=b'{"error":' * 5_000 + b"1" + b"}" * 5_000)
    with pytest.raises(ContextQError, match="500"):
        _rest_on(lambda _: nested_error).remote.client.list_workspaces()


def test_a_server_that_never_finishes_answering_is_left_at_the_deadline() -> None:
    """A byte every 0.2 s: every read is answered in time, the answer never ends (until
    the test is long over); the whole call still returns at its deadline."""

    def drip() -> Iterator[bytes]:
        for _ in range(40):
            time.sleep(0.2)
            yield b" "

    memory = _rest_on(lambda _: httpx2.Response(200, content=drip()), timeout=0.5)
    for call in (lambda: memory.write_record(run("d1")), memory.list_records):
        started = time.monotonic()
        assert call() in (None, [])
        assert time.monotonic() - started < 0.5 + 1.0
    assert [f.code for f in memory.failures] == ["ContextQTimeoutError"] * 2
    assert "did not finish within its deadline of 0.5 s" in memory.failures[0].message


def test_a_deadline_must_be_a_positive_number_of_seconds() -> None:
    for bad in (0, -1, float("inf"), float("nan"), "5", True):
        with pytest.raises(ValueError, match="timeout must be a finite number of seconds"):
            _rest_on(lambda _: httpx2.Response(200), timeout=bad)


def test_a_closed_rest_memory_counts_failures_and_never_raises(key: str) -> None:
    """A method called after ``close()`` is a failure like an outage, not httpx's
    ``RuntimeError`` escaping the best-effort port."""
    memory = ContextQAgentMemory(ContextQClient(key, base_url="http://127.0.0.1:9"), "ws")
    memory.close()
    assert memory.write_record(RunRecord("r1", task="x")) is None
    assert memory.list_records() == []
    assert [f.code for f in memory.failures] == ["ContextQConnectionError"] * 2
