"""Two memory-tool instances on one ContextQ store: two agents, or two processes.

Writes through one instance run one at a time; between instances nothing coordinates but
ContextQ itself (a unique external id per tenant, no conflict detection). These tests
interleave two instances' commands request by request (every point at which the second
can cut in), and at random in threads, in-process and served, and require that no file is
ever at two paths and no name is ever both a file and a directory. A lost edit between two
instances stays possible (the docs say so) and is not checked here.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from anthropic.lib.tools import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter import ContextQMemoryTool, errors, wire
from adapter._memory import Plan, explain
from fake_contextq import FakeContextQ, Tenant

WORKSPACE = "acme"
PREFIX = f"mem-tool:{WORKSPACE}/"


def fresh(fake: FakeContextQ) -> tuple[Tenant, str]:
    tenant = fake.create_tenant(plan="enterprise")
    fake.create_workspace(tenant, WORKSPACE)
    return tenant, fake.mint_key(tenant, wire.SCOPES)


def tool_on(fake: FakeContextQ, key: str) -> ContextQMemoryTool:
    return ContextQMemoryTool(key, http_client=fake.client(), workspace=WORKSPACE)


def files(fake: FakeContextQ, tenant: Tenant) -> dict[str, str]:
    """path inside the workspace -> content, for every memory file in the store."""
    out: dict[str, str] = {}
    for context in fake.contexts(tenant):
        ext = context.external_id or ""
        assert ext.startswith(PREFIX), context
        out[ext[len(PREFIX) :]] = context.content
    return out


def assert_consistent(stored: dict[str, str]) -> None:
    """No content at two paths (every file is written with content of its own, and moves
    keep it), and no path both a file and a directory."""
    contents = sorted(stored.values())
    twice = {c for c, d in itertools.pairwise(contents) if c == d}
    assert not twice, f"a file at two paths: {stored}"
    for path in stored:
        under = [p for p in stored if p.startswith(path + "/")]
        assert not under, f"{path} is a file and a directory (holding {under}): {stored}"


class Stepper:
    """Runs one command of a tool's core a request at a time, as the tool's own driver
    does, so that another instance can cut in between any two requests."""

    def __init__(self, tool: ContextQMemoryTool, plan: Plan[str]) -> None:
        self.client = tool.client
        self.plan = plan
        self.outcome: str | ToolError | None = None
        self.pending: Any = None
        self._advance(lambda: self.plan.send(None))

    def _advance(self, resume: Callable[[], Any]) -> None:
        try:
            self.pending = resume()
        except StopIteration as done:
            self.pending, self.outcome = None, done.value
        except ToolError as exc:
            self.pending, self.outcome = None, exc
        except errors.ContextQError as exc:
            self.pending, self.outcome = None, explain(exc)

    @property
    def running(self) -> bool:
        return self.pending is not None

    def step(self) -> None:
        call = self.pending
        failure: errors.ContextQError | None = None
        value: Any = None
        try:
            value = self.client._send(call)
        except errors.ContextQError as exc:
            failure = exc
        if failure is not None:
            raised = failure
            self._advance(lambda: self.plan.throw(raised))
        else:
            self._advance(lambda: self.plan.send(value))

    def finish(self) -> str | ToolError:
        while self.running:
            self.step()
        assert self.outcome is not None
        return self.outcome


def outcome(fn: Callable[[], object]) -> str | ToolError:
    try:
        result = fn()
    except ToolError as exc:
        return exc
    assert isinstance(result, str)
    return result


# Each scenario: files made first, then command A (stepped) and command B (run whole
# while A is paused). A command is (name, args) of the core.
Command = tuple[str, tuple[str, ...]]
SCENARIOS: dict[str, tuple[dict[str, str], Command, Command]] = {
    "two renames of one file": (
        {"/memories/f.md": "F"},
        ("rename", ("/memories/f.md", "/memories/a.md")),
        ("rename", ("/memories/f.md", "/memories/b.md")),
    ),
    "rename racing a delete": (
        {"/memories/f.md": "F"},
        ("rename", ("/memories/f.md", "/memories/a.md")),
        ("delete", ("/memories/f.md",)),
    ),
    "two directory renames": (
        {"/memories/d/x.md": "X", "/memories/d/y.md": "Y"},
        ("rename", ("/memories/d", "/memories/e")),
        ("rename", ("/memories/d", "/memories/g")),
    ),
    "a file, then a file under it": (
        {},
        ("create", ("/memories/c", "C")),
        ("create", ("/memories/c/child.md", "child")),
    ),
    "a file under, then the file": (
        {},
        ("create", ("/memories/c/child.md", "child")),
        ("create", ("/memories/c", "C")),
    ),
    "a file deep under, then the file": (
        {},
        ("create", ("/memories/c/d/e.md", "deep")),
        ("create", ("/memories/c", "C")),
    ),
    "a rename onto a name, a file under it": (
        {"/memories/f.md": "F"},
        ("rename", ("/memories/f.md", "/memories/c")),
        ("create", ("/memories/c/child.md", "child")),
    ),
    "a file under a name, a rename onto it": (
        {"/memories/f.md": "F"},
        ("create", ("/memories/c/child.md", "child")),
        ("rename", ("/memories/f.md", "/memories/c")),
    ),
    "a directory renamed onto a name, a file at it": (
        {"/memories/d/x.md": "X"},
        ("rename", ("/memories/d", "/memories/e")),
        ("create", ("/memories/e", "E")),
    ),
}


def start(tool: ContextQMemoryTool, command: Command) -> Plan[str]:
    name, args = command
    method: Callable[..., Plan[str]] = getattr(tool.core, name)
    if name == "create":
        return method(args[0], args[1])
    return method(*args)


def run_whole(tool: ContextQMemoryTool, command: Command) -> str | ToolError:
    return Stepper(tool, start(tool, command)).finish()


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_second_instance_cutting_in_anywhere_leaves_one_consistent_store(
    scenario: str,
) -> None:
    seed, first, second = SCENARIOS[scenario]
    cuts = itertools.count()
    while True:
        cut = next(cuts)
        with FakeContextQ() as fake:
            tenant, key = fresh(fake)
            a, b = tool_on(fake, key), tool_on(fake, key)
            for path, text in seed.items():
                a.call({"command": "create", "path": path, "file_text": text})
            stepper = Stepper(a, start(a, first))
            for _ in range(cut):
                if stepper.running:
                    stepper.step()
            paused = stepper.running
            b_outcome = run_whole(b, second)
            a_outcome = stepper.finish()
            stored = files(fake, tenant)
            where = f"{scenario}, B after {cut} request(s) of A: A {a_outcome!r}, B {b_outcome!r}"
            assert_consistent(stored)
            if scenario.startswith(("two renames", "two directory")):
                assert sorted(stored.values()) == sorted(seed.values()), where
        if not paused:
            break


def test_a_rename_whose_original_vanished_removes_its_copy_and_says_so() -> None:
    with FakeContextQ() as fake:
        tenant, key = fresh(fake)
        a, b = tool_on(fake, key), tool_on(fake, key)
        a.call({"command": "create", "path": "/memories/f.md", "file_text": "F"})
        renaming = Stepper(a, a.core.rename("/memories/f.md", "/memories/a.md"))
        while renaming.pending.method != "DELETE":
            renaming.step()  # copied and checked; the original's DELETE is next
        assert files(fake, tenant) == {"f.md": "F", "a.md": "F"}
        b.call({"command": "rename", "old_path": "/memories/f.md", "new_path": "/memories/b.md"})
        result = renaming.finish()
        assert isinstance(result, ToolError), result
        assert str(result) == (
            "Renaming /memories/f.md to /memories/a.md conflicted with another writer, which "
            "renamed or deleted /memories/f.md while it was being copied to /memories/a.md, "
            "so the copy was removed again. View /memories to see where things are now."
        )
        assert files(fake, tenant) == {"b.md": "F"}


def test_a_directory_rename_whose_files_vanished_in_part_moves_the_rest() -> None:
    with FakeContextQ() as fake:
        tenant, key = fresh(fake)
        a, b = tool_on(fake, key), tool_on(fake, key)
        a.call({"command": "create", "path": "/memories/d/x.md", "file_text": "X"})
        a.call({"command": "create", "path": "/memories/d/y.md", "file_text": "Y"})
        renaming = Stepper(a, a.core.rename("/memories/d", "/memories/e"))
        while renaming.pending.method != "DELETE":
            renaming.step()
        b.call({"command": "delete", "path": "/memories/d/y.md"})
        result = renaming.finish()
        assert isinstance(result, ToolError), result
        assert "/memories/d/y.md while it was being copied to /memories/e/y.md" in str(result)
        assert "the other 1 file(s) moved to /memories/e" in str(result)
        assert files(fake, tenant) == {"e/x.md": "X"}


@pytest.mark.parametrize("after_post", [False, True], ids=["before-its-write", "after-its-write"])
def test_a_create_that_meets_a_conflict_after_writing_removes_its_row(after_post: bool) -> None:
    with FakeContextQ() as fake:
        tenant, key = fresh(fake)
        a, b = tool_on(fake, key), tool_on(fake, key)
        creating = Stepper(a, a.core.create("/memories/c", "C"))
        while creating.pending.method != "POST":
            creating.step()  # the workspace check, on this instance's first write
        if after_post:
            creating.step()
        other = outcome(
            lambda: b.call(
                {"command": "create", "path": "/memories/c/child.md", "file_text": "child"}
            )
        )
        mine = creating.finish()
        if after_post:  # A's file stood when B checked: B backs off
            assert str(other) == (
                "Cannot create /memories/c/child.md: /memories/c is a file, not a directory."
            )
            assert mine == "File created successfully at: /memories/c"
            assert files(fake, tenant) == {"c": "C"}
        else:  # B's file stood when A checked: A backs off, with the SDK's words
            assert other == "File created successfully at: /memories/c/child.md"
            assert str(mine) == "File /memories/c already exists"
            assert files(fake, tenant) == {"c/child.md": "child"}


def test_what_another_instance_did_is_seen_even_one_command_later() -> None:
    """No instance trusts what it saw before: here A wrote into d, B then made d a file."""
    with FakeContextQ() as fake:
        tenant, key = fresh(fake)
        a, b = tool_on(fake, key), tool_on(fake, key)
        a.call({"command": "create", "path": "/memories/d/x.md", "file_text": "x"})
        b.call({"command": "delete", "path": "/memories/d/x.md"})
        b.call({"command": "create", "path": "/memories/d", "file_text": "now a file"})
        assert str(
            outcome(
                lambda: a.call({"command": "create", "path": "/memories/d/y.md", "file_text": "y"})
            )
        ) == ("Cannot create /memories/d/y.md: /memories/d is a file, not a directory.")
        assert files(fake, tenant) == {"d": "now a file"}


# ----- at random, in threads: in-process and served -----

PATHS = ("/memories/c", "/memories/c/x.md", "/memories/c/y.md", "/memories/d.md", "/memories/e")
ops = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(PATHS)),
    st.tuples(st.just("delete"), st.sampled_from(PATHS)),
    st.tuples(st.just("rename"), st.sampled_from(PATHS), st.sampled_from(PATHS)),
)
_texts = itertools.count()


def as_input(op: tuple[str, ...]) -> dict[str, Any]:
    if op[0] == "create":
        return {"command": "create", "path": op[1], "file_text": f"text {next(_texts)}"}
    if op[0] == "delete":
        return {"command": "delete", "path": op[1]}
    return {"command": "rename", "old_path": op[1], "new_path": op[2]}


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeContextQ]:
    with FakeContextQ() as fake:
        yield fake


@pytest.fixture(scope="module")
def served_url(shared_fake: FakeContextQ) -> Iterator[str]:
    with shared_fake.serve() as served:
        yield served.url


def _jitter(rng: random.Random) -> Callable[[httpx2.Request], None]:
    lock = threading.Lock()

    def hook(_: httpx2.Request) -> None:
        with lock:
            pause = rng.uniform(0, 0.002)
        threading.Event().wait(pause)

    return hook


def _race(
    fake: FakeContextQ, tools: list[ContextQMemoryTool], tenant: Tenant, rounds: list[Any]
) -> None:
    def one(barrier: threading.Barrier, tool: ContextQMemoryTool, op: tuple[str, ...]) -> None:
        barrier.wait()
        outcome(lambda: tool.call(as_input(op)))

    for pair in rounds:
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=one, args=(barrier, t, op))
            for t, op in zip(tools, pair, strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert_consistent(files(fake, tenant))


_RACE_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
_rounds = st.lists(st.tuples(ops, ops), min_size=1, max_size=6)


@_RACE_SETTINGS
@given(rounds=_rounds, seed=st.integers(0, 2**32))
def test_two_instances_in_threads_in_process(
    shared_fake: FakeContextQ, rounds: list[Any], seed: int
) -> None:
    tenant, key = fresh(shared_fake)
    rng = random.Random(seed)
    https = [shared_fake.client(event_hooks={"request": [_jitter(rng)]}) for _ in range(2)]
    tools = [ContextQMemoryTool(key, http_client=h, workspace=WORKSPACE) for h in https]
    try:
        _race(shared_fake, tools, tenant, rounds)
    finally:
        for http in https:
            http.close()


@_RACE_SETTINGS
@given(rounds=_rounds, seed=st.integers(0, 2**32))
@pytest.mark.slow  # a subprocess: not in --quick
def test_two_instances_in_threads_served(
    shared_fake: FakeContextQ, served_url: str, rounds: list[Any], seed: int
) -> None:
    tenant, key = fresh(shared_fake)
    rng = random.Random(seed)
    https = [
        httpx2.Client(base_url=served_url, event_hooks={"request": [_jitter(rng)]})
        for _ in range(2)
    ]
    tools = [ContextQMemoryTool(key, http_client=h, workspace=WORKSPACE) for h in https]
    try:
        _race(shared_fake, tools, tenant, rounds)
    finally:
        for http in https:
            http.close()
