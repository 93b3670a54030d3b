"""ctx_dream, ctx_evolve and ctx_regenerate_mocs: the tools that need the server's LLM.

Without one, each answers the handoff's 503 after the handoff's own checks (the request,
its workspace or context); with the built-in LLM each writes deterministic text; a test's
own LLM gets the material; every rule holds on every store and through MCP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.audit import AuditAction
from fake_contextq.domain.handoff import HandoffMaterial
from fake_contextq.domain.llm import DreamMaterial, EvolveMaterial, LlmMaterial, MocMaterial
from fake_contextq.mcp import McpToolError, SyncMcpClient
from tests.support.helpers import actions, context_body, error, issue_paths, ok, start

pytestmark = pytest.mark.all_stores

A = AuditAction
T0 = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


class Clock:
    """A clock a test moves: each reading is ``now`` until ``advance``."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, minutes: int = 1) -> None:
        self.now += timedelta(minutes=minutes)


def note(c: httpx2.Client, title: str, tags: list[str], **extra: Any) -> dict[str, Any]:
    body = context_body(title=title, content=f"{title} body\nsecond line", tags=tags, **extra)
    body.setdefault("workspace", "ws")
    created: dict[str, Any] = ok(c.post("/api/contexts", json=body), 201)
    return created


def dream(c: httpx2.Client, **body: Any) -> httpx2.Response:
    return c.post(wire.Routes.DREAM.path(), json=body)


def evolve(c: httpx2.Client, context_id: int | str, **body: Any) -> httpx2.Response:
    return c.post(wire.Routes.EVOLVE_CONTEXT.path(context_id=context_id), json=body)


def regenerate(c: httpx2.Client, **body: Any) -> httpx2.Response:
    return c.post(wire.Routes.REGENERATE_MOCS.path(), json=body)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def llm_env(
    make_fake: Callable[..., FakeContextQ], clock: Clock
) -> Iterator[tuple[FakeContextQ, Tenant, httpx2.Client]]:
    """A fake with the built-in LLM on ``clock``, a tenant with workspace ``ws``."""
    fake = make_fake(clock=clock, llm=True)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        yield fake, tenant, c


# ----- without an LLM: the handoff's checks, then its 503 --------------------------------------


def test_without_an_llm_each_is_503_after_the_handoffs_checks(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client
) -> None:
    fake.create_workspace(tenant, "ws")
    mine = note(client, "Mine", ["a"])
    loose = note(client, "Loose", ["a"], workspace="no-such-ws")  # stored with no workspace
    assert loose["workspace"] is None
    # the request itself, then what it names, are checked before the LLM
    error(dream(client, limit=0), 400, "validation_error")
    error(dream(client), 400, "no_workspace")
    error(dream(client, workspace="no-such-ws"), 400, "no_workspace")
    error(regenerate(client), 400, "no_workspace")
    error(regenerate(client, workspace="no-such-ws"), 400, "no_workspace")
    error(evolve(client, "abc"), 400, "validation_error")
    error(evolve(client, mine["id"] + 1000), 404, "not_found")
    # an evolution reads its context's workspace, as a handoff its session's
    body = error(evolve(client, loose["id"], instruction="shorter"), 400, "no_workspace")
    assert body["message"] == _msgs.NO_WORKSPACE_TO_EVOLVE.format(id=loose["id"])
    error(client.post("/api/agent/handoff", json={}), 400, "no_workspace")
    # then the 503, the handoff's own answer
    for response, what in (
        (dream(client, workspace="ws"), "synthesis"),
        (evolve(client, mine["id"], instruction="shorter"), "evolved context"),
        (regenerate(client, workspace="ws"), "map of content"),
        (client.post("/api/agent/handoff", json={"workspace": "ws"}), "handoff"),
    ):
        body = error(response, 503, "llm_unavailable")
        assert body["message"] == _msgs.LLM_UNAVAILABLE_FOR.format(what=what)
    assert actions(fake) == [A.CONTEXT_CREATE, A.CONTEXT_CREATE]
    assert [c.id for c in fake.contexts(tenant)] == [mine["id"], loose["id"]]


# ----- dream -----------------------------------------------------------------------------------


def test_a_dream_synthesises_the_newest_contexts_deterministically(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, tenant, c = llm_env
    fake.create_workspace(tenant, "other")
    old = note(c, "Old plan", ["plan"])
    clock.advance()
    first = note(c, "Chose Postgres", ["db"])
    clock.advance()
    second = note(c, "Chose pgvector", ["db"])
    note(c, "Elsewhere", ["db"], workspace="other")
    ok(c.post("/api/contexts", json=context_body(type="moc", workspace="ws", title="A map")), 201)
    made = ok(dream(c, workspace="ws", limit=2), 201)
    assert made["type"] == wire.DREAM_TYPE and made["workspace"] == "ws"
    assert made["tags"] == [wire.DREAM_TAG] and made["externalId"] is None
    assert made["title"] == "Synthesis of ws"
    assert made["content"] == (
        "# Synthesis of ws\n\n"
        "Drawn from 2 recent context(s), newest first:\n\n"
        f"- Chose pgvector (#{second['id']}, reference): Chose pgvector body\n"
        f"- Chose Postgres (#{first['id']}, reference): Chose Postgres body\n"
    )
    assert made["metadata"] == {
        wire.GENERATED_KEY: {"by": "dream", "sources": [second["id"], first["id"]], "since": None}
    }
    assert ok(c.get(f"/api/contexts/{made['id']}")) == made
    # the same sources write the same text; a synthesis is never a dream's source
    again = ok(dream(c, workspace="ws", limit=2), 201)
    assert again["content"] == made["content"] and again["id"] != made["id"]
    # since: only what was updated since then
    since = ok(dream(c, workspace="ws", since=wire.timestamp(T0 + timedelta(minutes=1))), 201)
    assert since["metadata"][wire.GENERATED_KEY]["sources"] == [second["id"], first["id"]]
    everything = ok(dream(c, workspace="ws"), 201)
    sources = everything["metadata"][wire.GENERATED_KEY]["sources"]
    assert sources == [second["id"], first["id"], old["id"]]
    assert actions(fake)[-4:] == [A.CONTEXT_DREAM] * 4


def test_a_dream_with_nothing_to_read_is_a_400_and_writes_nothing(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, _tenant, c = llm_env
    body = error(dream(c, workspace="ws"), 400, "validation_error")
    assert issue_paths(body) == {"workspace"}
    note(c, "Only", ["x"])
    clock.advance(5)
    later = (T0 + timedelta(minutes=1)).isoformat()
    assert (
        "since"
        in error(dream(c, workspace="ws", since=later), 400, "validation_error")["issues"][0][
            "message"
        ]
    )
    assert actions(fake) == [A.CONTEXT_CREATE]


def test_a_dream_counts_against_the_quota(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client],
) -> None:
    fake, tenant, c = llm_env
    fake.fill(tenant, workspace="ws")
    before = len(fake.audit_log())
    error(dream(c, workspace="ws"), 402, "quota_exceeded")
    assert len(fake.audit_log()) == before
    assert not [x for x in fake.contexts(tenant) if x.type == wire.DREAM_TYPE]


# ----- evolve ----------------------------------------------------------------------------------


def test_evolve_revises_a_context_from_newer_related_ones(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, tenant, c = llm_env
    fake.create_workspace(tenant, "other")
    target = note(c, "Deploy plan", ["deploy", "ops"])
    older = target["id"]
    clock.advance()
    newer = note(c, "Deploys moved to Tuesday", ["deploy"])
    note(c, "Unrelated", ["food"])
    note(c, "Other workspace", ["deploy"], workspace="other")
    clock.advance()
    evolved = ok(evolve(c, older))
    assert (evolved["id"], evolved["title"], evolved["tags"]) == (
        older,
        "Deploy plan",
        target["tags"],
    )
    assert evolved["content"] == (
        "Deploy plan body\nsecond line\n\n## Since then\n"
        f"- Deploys moved to Tuesday (#{newer['id']}, reference): Deploys moved to Tuesday body\n"
    )
    assert evolved["metadata"][wire.EVOLVED_KEY] == {"sources": [newer["id"]], "instruction": None}
    assert evolved["updatedAt"] == wire.timestamp(clock.now)
    assert ok(c.get(f"/api/contexts/{older}")) == evolved
    # now newer than its sources, it has nothing to evolve from but an instruction
    body = error(evolve(c, older), 400, "validation_error")
    assert issue_paths(body) == {"instruction"}
    clock.advance()
    told = ok(evolve(c, older, instruction="  Mention the freeze.  "))
    assert told["content"].endswith("## Revised as instructed\nMention the freeze.\n")
    assert told["metadata"][wire.EVOLVED_KEY]["instruction"] == "Mention the freeze."
    assert actions(fake)[-2:] == [A.CONTEXT_EVOLVE, A.CONTEXT_EVOLVE]


def test_evolve_of_a_context_with_no_workspace_is_a_400_even_with_an_llm(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, _tenant, c = llm_env
    loose = note(c, "Loose", ["deploy"], workspace=None)
    clock.advance()
    note(c, "Also loose", ["deploy"], workspace=None)
    before = actions(fake)
    error(evolve(c, loose["id"], instruction="x"), 400, "no_workspace")
    assert ok(c.get(f"/api/contexts/{loose['id']}")) == loose
    assert actions(fake) == before


def test_evolve_reads_at_most_limit_sources_newest_first(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    _, _, c = llm_env
    target = note(c, "Target", ["t"])
    ids = []
    for i in range(4):
        clock.advance()
        ids.append(note(c, f"Newer {i}", ["t"])["id"])
    evolved = ok(evolve(c, target["id"], limit=2))
    assert evolved["metadata"][wire.EVOLVED_KEY]["sources"] == [ids[3], ids[2]]


def test_evolve_of_another_tenants_context_is_404(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client],
) -> None:
    fake, _, c = llm_env
    theirs = fake.create_tenant()
    mine = note(c, "Mine", ["a"])
    with fake.client(fake.mint_key(theirs, wire.SCOPES)) as t:
        body = error(evolve(t, mine["id"], instruction="leak it"), 404, "not_found")
        assert "Mine" not in str(body)
        error(evolve(t, 2**63, instruction="x"), 404, "not_found")
    assert ok(c.get(f"/api/contexts/{mine['id']}")) == mine


# ----- maps of content -------------------------------------------------------------------------


def test_mocs_are_regenerated_per_tag_and_replace_the_previous_ones(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, _tenant, c = llm_env
    a = note(c, "Beta", ["db", "ops"])
    b = note(c, "Alpha", ["db"])
    o = note(c, "Gamma", ["ops"])
    note(c, "Lonely", ["solo"])  # one context: no map
    done = ok(regenerate(c, workspace="ws"))
    assert done["workspace"] == "ws"
    assert (done["updated"], done["unchanged"], done["removed"]) == ([], [], [])
    db, ops = done["created"]  # most carried first, then by tag: a tie, so by name
    assert (db["type"], db["externalId"], db["tags"]) == ("moc", "moc:ws:db", ["db"])
    assert db["title"] == "Map of content: db" and ops["externalId"] == "moc:ws:ops"
    db_full = ok(c.get(f"/api/contexts/{db['id']}"))
    assert db_full["content"] == (
        "# Map of content: db\n\n2 context(s) of ws carry this tag:\n\n"
        f"- Alpha (#{b['id']}, reference): Alpha body\n"
        f"- Beta (#{a['id']}, reference): Beta body\n"
    )
    assert db_full["metadata"] == {
        wire.GENERATED_KEY: {"by": "moc", "tag": "db", "sources": [b["id"], a["id"]]}
    }
    # again, with nothing changed: nothing written, the MOCs are not their own sources
    clock.advance()
    same = ok(regenerate(c, workspace="ws"))
    assert [x["id"] for x in same["unchanged"]] == [db["id"], ops["id"]]
    assert (same["created"], same["updated"], same["removed"]) == ([], [], [])
    # a tag that no longer makes a group loses its map; a changed group is updated in place
    ok(c.put(f"/api/contexts/{o['id']}", json={"tags": ["db"]}))
    clock.advance()
    changed = ok(regenerate(c, workspace="ws"))
    assert changed["removed"] == [ops["id"]]
    assert [x["id"] for x in changed["updated"]] == [db["id"]]
    assert changed["updated"][0]["updatedAt"] == wire.timestamp(clock.now)
    error(c.get(f"/api/contexts/{ops['id']}"), 404, "not_found")
    assert actions(fake)[-4:] == [
        A.MOC_REGENERATE,
        A.MOC_REGENERATE,
        A.CONTEXT_UPDATE,
        A.MOC_REGENERATE,
    ]
    [row] = [r for r in fake.audit_log() if r.action == A.MOC_REGENERATE][-1:]
    assert (row.entity, row.entity_id) == ("workspace", "ws")


def test_a_moc_id_held_by_a_context_not_generated_is_a_409_and_nothing_changes(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client],
) -> None:
    fake, tenant, c = llm_env
    note(c, "One", ["db"])
    note(c, "Two", ["db"])
    note(c, "Mine", ["x"], externalId=wire.moc_external_id("ws", "db"))
    before = fake.contexts(tenant)
    body = error(regenerate(c, workspace="ws"), 409, "external_id_taken")
    assert body["externalId"] == "moc:ws:db"
    assert fake.contexts(tenant) == before


def test_moc_regeneration_counts_what_it_adds_against_the_quota(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client],
) -> None:
    fake, tenant, c = llm_env
    note(c, "One", ["db"])
    note(c, "Two", ["db"])
    fake.fill(tenant)
    before = fake.contexts(tenant)
    error(regenerate(c, workspace="ws"), 402, "quota_exceeded")
    assert fake.contexts(tenant) == before


# ----- a test's own LLM ------------------------------------------------------------------------


def test_a_test_supplied_llm_gets_each_material_and_writes_the_text(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    seen: list[LlmMaterial] = []

    def llm(material: LlmMaterial) -> str:
        seen.append(material)
        if isinstance(material, DreamMaterial):
            return f"## Dreamt {len(material.contexts)}\nbody"
        if isinstance(material, EvolveMaterial):
            return f"evolved by {material.instruction}"
        if isinstance(material, MocMaterial):
            return f"MOC {material.tag}: " + ",".join(x.title for x in material.contexts)
        return f"handoff of {material.workspace}"

    fake = make_fake(llm=llm)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        one = note(c, "One", ["t"])
        note(c, "Two", ["t"])
        dreamt = ok(dream(c, workspace="ws"), 201)
        assert (dreamt["title"], dreamt["content"]) == ("Dreamt 2", "## Dreamt 2\nbody")
        assert ok(evolve(c, one["id"], instruction="me"))["content"] == "evolved by me"
        [moc] = ok(regenerate(c, workspace="ws"))["created"]
        assert moc["title"] == "MOC t: One,Two"
        assert ok(c.post("/api/agent/handoff", json={"workspace": "ws"}), 201)["content"] == (
            "handoff of ws"
        )
    assert [type(m) for m in seen] == [DreamMaterial, EvolveMaterial, MocMaterial, HandoffMaterial]
    dm = seen[0]
    assert isinstance(dm, DreamMaterial) and dm.workspace == "ws" and dm.since is None
    assert [x.title for x in dm.contexts] == ["Two", "One"]


@pytest.mark.parametrize(
    "reply", ["", "  ", None, 42, "a\x00b", "x" * (wire.MAX_CONTENT_BYTES + 1), RuntimeError]
)
def test_an_llm_that_fails_or_writes_nothing_usable_is_a_503_and_writes_nothing(
    make_fake: Callable[..., FakeContextQ], reply: Any
) -> None:
    def llm(material: LlmMaterial) -> Any:
        if reply is RuntimeError:
            raise RuntimeError("provider down")
        return reply

    fake = make_fake(llm=llm)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        one = note(c, "One", ["t"])
        note(c, "Two", ["t"])
        before = fake.contexts(tenant)
        for response in (
            dream(c, workspace="ws"),
            evolve(c, one["id"], instruction="x"),
            regenerate(c, workspace="ws"),
        ):
            body = error(response, 503, "llm_unavailable")
            if reply is RuntimeError:
                assert "RuntimeError" in body["message"]
    assert fake.contexts(tenant) == before
    assert actions(fake) == [A.CONTEXT_CREATE, A.CONTEXT_CREATE]


def test_a_handoff_only_callable_still_writes_handoffs(
    make_fake: Callable[..., FakeContextQ],
) -> None:
    def summarise(material: HandoffMaterial) -> str:
        return f"{len(material.tasks)} task(s)"

    fake = make_fake(llm=summarise)
    tenant = fake.create_tenant()
    fake.create_workspace(tenant, "ws")
    with fake.client(fake.mint_key(tenant, wire.SCOPES)) as c:
        sid = start(c, workspace="ws")["id"]
        written = ok(c.post("/api/agent/handoff", json={"session_id": sid}), 201)
        assert written["content"] == "0 task(s)"
        note(c, "One", ["t"])
        # it is the server's LLM for the rest too: a handoff-only callable fails there
        error(dream(c, workspace="ws"), 503, "llm_unavailable")


# ----- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "body", "field"),
    [
        ("dream", {"workspace": "ws\x00"}, "workspace"),
        ("dream", {"workspace": 5}, "workspace"),
        ("dream", {"workspace": "w" * (wire.MAX_WORKSPACE_SLUG_CHARS + 1)}, "workspace"),
        ("dream", {"workspace": "ws", "since": "yesterday"}, "since"),
        ("dream", {"workspace": "ws", "since": "2030-01-01\x00"}, "since"),
        ("dream", {"workspace": "ws", "since": 1}, "since"),
        ("dream", {"workspace": "ws", "limit": wire.DREAM_MAX_SOURCES + 1}, "limit"),
        ("dream", {"workspace": "ws", "limit": "3"}, "limit"),
        ("evolve", {"instruction": "x" * (wire.MAX_TEXT_CHARS + 1)}, "instruction"),
        ("evolve", {"instruction": "a\x00"}, "instruction"),
        ("evolve", {"instruction": ["x"]}, "instruction"),
        ("evolve", {"limit": 0}, "limit"),
        ("regenerate", {"workspace": ""}, "workspace"),
        ("regenerate", {"workspace": True}, "workspace"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], call: str, body: dict[str, Any], field: str
) -> None:
    fake, _tenant, c = llm_env
    one = note(c, "One", ["t"])
    note(c, "Two", ["t"])
    if call == "dream":
        response = dream(c, **body)
    elif call == "evolve":
        response = evolve(c, one["id"], **body)
    else:
        response = regenerate(c, **body)
    assert issue_paths(error(response, 400, "validation_error")) == {field}
    assert actions(fake) == [A.CONTEXT_CREATE, A.CONTEXT_CREATE]


@pytest.mark.parametrize("raw", [b"[]", b"{", b'"ws"'])
def test_a_body_that_is_no_json_object_is_a_400(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], raw: bytes
) -> None:
    _, _, c = llm_env
    headers = {"content-type": "application/json"}
    for path in (wire.Routes.DREAM.path(), wire.Routes.REGENERATE_MOCS.path()):
        error(c.post(path, content=raw, headers=headers), 400, "validation_error")


def test_a_read_only_key_may_not_dream_evolve_or_regenerate(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client],
) -> None:
    fake, tenant, c = llm_env
    one = note(c, "One", ["t"])
    with fake.client(fake.mint_key(tenant, (wire.READ,))) as reader:
        error(dream(reader, workspace="ws"), 403, "scope_denied")
        error(evolve(reader, one["id"], instruction="x"), 403, "scope_denied")
        error(regenerate(reader, workspace="ws"), 403, "scope_denied")


# ----- MCP ---------------------------------------------------------------------------------------


def test_the_tools_round_trip_through_mcp_as_their_rest_twins(
    llm_env: tuple[FakeContextQ, Tenant, httpx2.Client], clock: Clock
) -> None:
    fake, tenant, c = llm_env
    one = note(c, "One", ["t"])
    clock.advance()
    two = note(c, "Two", ["t"])
    with SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, wire.SCOPES))) as mcp:
        made = mcp.call("ctx_dream", {"workspace": "ws", "limit": 5})
        assert made == ok(c.get(f"/api/contexts/{made['id']}"))
        assert made["metadata"][wire.GENERATED_KEY]["sources"] == [two["id"], one["id"]]
        evolved = mcp.call("ctx_evolve", {"id": one["id"], "instruction": "tidy"})
        assert evolved == ok(c.get(f"/api/contexts/{one['id']}"))
        assert evolved["metadata"][wire.EVOLVED_KEY]["sources"] == [two["id"]]
        mocs = mcp.call("ctx_regenerate_mocs", {"workspace": "ws"})
        assert [x["externalId"] for x in mocs["created"]] == ["moc:ws:t"]
        assert ok(regenerate(c, workspace="ws"))["unchanged"] == mocs["created"]
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_evolve", {"id": 2**53 - 1, "instruction": "x"})
        assert caught.value.code == "not_found"
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_dream", {})
        assert caught.value.code == "no_workspace"
    with SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, (wire.READ,)))) as reader:
        for tool, args in (
            ("ctx_dream", {"workspace": "ws"}),
            ("ctx_evolve", {"id": one["id"], "instruction": "x"}),
            ("ctx_regenerate_mocs", {"workspace": "ws"}),
        ):
            with pytest.raises(McpToolError) as caught:
                reader.call(tool, args)
            assert caught.value.code == "scope_denied"


def test_without_an_llm_the_tools_are_503_tool_errors(
    fake: FakeContextQ, tenant: Tenant, key: str, client: httpx2.Client
) -> None:
    fake.create_workspace(tenant, "ws")
    one = note(client, "One", ["t"])
    with SyncMcpClient(fake.mcp_server(key)) as mcp:
        for tool, args in (
            ("ctx_dream", {"workspace": "ws"}),
            ("ctx_evolve", {"id": one["id"]}),
            ("ctx_regenerate_mocs", {"workspace": "ws"}),
        ):
            with pytest.raises(McpToolError) as caught:
                mcp.call(tool, args)
            assert caught.value.code == "llm_unavailable"
            assert caught.value.text.startswith("ContextQ 503 llm_unavailable:")
        # a context of no workspace: the handoff's 400 comes before the 503
        loose = note(client, "Loose", ["t"], workspace=None)
        with pytest.raises(McpToolError) as caught:
            mcp.call("ctx_evolve", {"id": loose["id"]})
        assert caught.value.code == "no_workspace"
