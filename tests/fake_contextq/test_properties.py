"""Property-based tests of the fake, through its HTTP API only.

``TenancyMachine`` drives three tenants (each with its own read/write/admin key) through
random sequences of context and workspace operations, half of them aimed at another
tenant's ids and external ids, against a small model of what each tenant owns. It checks
that a tenant never sees or touches another tenant's rows (404 ``not_found``), that every
answer matches the model, and that the global audit chain stays intact with exactly one
row per successful write, in order, attributed to the tenant that wrote.

``test_external_id_round_trips`` checks that any external id text survives a create and a
``GET /api/contexts/by-external/<percent-encoded id>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import httpx2
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
)

from adapter import wire
from adapter.wire import SCOPES
from fake_contextq import FakeContextQ
from fake_contextq.domain.audit import AuditAction

N_TENANTS = 3
WRITE_METHODS = frozenset({"POST", "PUT", "DELETE"})
READ_ONLY_POSTS = frozenset({"/api/search"})  # a POST that is a read: no audit row

TYPES = (
    "reference",
    "feedback",
    "project",
    "incident",
    "lesson",
    "user",
    "synthesis",
    "map",
    "moc",
)
# Small pools, so that ids collide inside a tenant and across tenants.
EXTERNAL_IDS = ("a", "b/c", "d:e", "x y", "%41", "q?#", "ü", "..x")
SLUGS = ("alpha", "beta", "gamma-1")
UNKNOWN_SLUG = "nowhere"
WORDS = ("apple", "banana", "cherry", "delta", "echo")
TAGS = ("t1", "t2", "red")

tenants = st.integers(0, N_TENANTS - 1)
texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
tag_lists = st.lists(st.sampled_from(TAGS), max_size=2, unique=True)
workspace_choices = st.sampled_from((None, *SLUGS, UNKNOWN_SLUG))


def by_external_path(external_id: str) -> str:
    """The by-external URL of an id: the id percent-encoded as one path segment.

    ``quote(eid, safe="")`` leaves dots alone, and URL clients (httpx, WHATWG URL) drop a
    path segment that is exactly ``.`` or ``..``; those two ids are sent as ``%2E``s.
    """
    segment = quote(external_id, safe="")
    if segment in (".", ".."):
        segment = segment.replace(".", "%2E")
    return "/api/contexts/by-external/" + segment


@dataclass(frozen=True)
class Row:
    """What the model knows of one live context."""

    id: int
    owner: int
    type: str
    title: str
    content: str
    tags: tuple[str, ...]
    external_id: str | None
    workspace: str | None

    def tokens(self) -> set[str]:
        text = " ".join((self.title, self.content, *self.tags)).lower()
        return set(re.findall(r"\w+", text))


def assert_not_found(response: httpx2.Response) -> None:
    assert response.status_code == 404, (
        response.request.method,
        response.request.url,
        response.status_code,
        response.text,
    )
    assert response.json()["error"] == "not_found", response.text


def assert_matches(body: dict[str, Any], row: Row, *, summary: bool = False) -> None:
    """The wire JSON of a context agrees with the model's row."""
    assert body["id"] == row.id
    assert body["type"] == row.type
    assert body["title"] == row.title
    assert body["tags"] == list(row.tags)
    assert body["externalId"] == row.external_id
    assert body["workspace"] == row.workspace
    if summary:
        assert "content" not in body, body
    else:
        assert body["content"] == row.content


class TenancyMachine(RuleBasedStateMachine):
    """Three tenants sharing one fake, each acting on its own and on the others' rows."""

    contexts = Bundle("contexts")

    def __init__(self) -> None:
        super().__init__()
        self.fake = FakeContextQ()
        self.tenant_ids: list[int] = []
        self.keys: list[str] = []
        self.clients: list[httpx2.Client] = []
        for i in range(N_TENANTS):
            tenant = self.fake.create_tenant(f"tenant-{i}", plan="enterprise")
            key = self.fake.mint_key(tenant, SCOPES)
            self.tenant_ids.append(tenant.id)
            self.keys.append(key)
            self.clients.append(self.fake.client(key))
        self.rows: dict[int, Row] = {}  # live contexts of every tenant, by id
        self.workspaces: list[set[str]] = [set() for _ in range(N_TENANTS)]
        # (tenant index, action) of every write request answered 2xx, in order.
        self.writes: list[tuple[int, str]] = []
        self.unchecked_writes = False  # a write was attempted since the totals were checked

    def teardown(self) -> None:
        for client in self.clients:
            client.close()
        self.fake.close()

    # ----- helpers -----

    def call(
        self, actor: int, method: str, path: str, action: str | None = None, **kwargs: Any
    ) -> httpx2.Response:
        """One request as tenant ``actor``; a 2xx write is expected to add one audit row."""
        response = self.clients[actor].request(method, path, **kwargs)
        assert response.status_code < 500, (method, path, response.status_code, response.text)
        is_write = method in WRITE_METHODS and path not in READ_ONLY_POSTS
        self.unchecked_writes |= is_write
        if is_write and response.is_success:
            assert action is not None, f"unexpected successful write {method} {path}"
            self.writes.append((actor, action))
        return response

    def owned(self, actor: int) -> list[Row]:
        return sorted((r for r in self.rows.values() if r.owner == actor), key=lambda r: r.id)

    def holder_of(self, actor: int, external_id: str) -> Row | None:
        return next(
            (r for r in self.rows.values() if r.owner == actor and r.external_id == external_id),
            None,
        )

    def pick_actor(self, data: st.DataObject, context_id: int) -> int:
        """The owner of a live row half of the time, any tenant otherwise."""
        row = self.rows.get(context_id)
        if row is not None and data.draw(st.booleans(), label="as owner"):
            return row.owner
        return data.draw(tenants, label="actor")

    def pick_slug(self, data: st.DataObject, actor: int) -> str:
        """One of the actor's workspaces half of the time, any slug of the pool otherwise."""
        own = sorted(self.workspaces[actor])
        if bool(own) and data.draw(st.booleans(), label="own slug"):
            return data.draw(st.sampled_from(own), label="slug")
        return data.draw(st.sampled_from(SLUGS), label="slug")

    def resolve(self, actor: int, slug: str | None) -> str | None:
        """An unknown workspace slug is stored as no workspace."""
        return slug if slug in self.workspaces[actor] else None

    # ----- contexts -----

    @rule(
        target=contexts,
        actor=tenants,
        type_=st.sampled_from(TYPES),
        title=texts,
        content=texts,
        tags=tag_lists,
        external_id=st.none() | st.sampled_from(EXTERNAL_IDS),
        workspace=workspace_choices,
    )
    def create_context(
        self,
        actor: int,
        type_: str,
        title: str,
        content: str,
        tags: list[str],
        external_id: str | None,
        workspace: str | None,
    ) -> Any:
        body: dict[str, Any] = {"type": type_, "title": title, "content": content, "tags": tags}
        if external_id is not None:
            body["externalId"] = external_id
        if workspace is not None:
            body["workspace"] = workspace
        response = self.call(actor, "POST", "/api/contexts", AuditAction.CONTEXT_CREATE, json=body)
        if external_id is not None and self.holder_of(actor, external_id) is not None:
            assert response.status_code == 409, response.text
            assert response.json()["error"] == "external_id_taken"
            return multiple()
        assert response.status_code == 201, response.text
        created = response.json()
        assert created["id"] not in self.rows  # ids are unique across tenants
        row = Row(
            created["id"],
            actor,
            type_,
            title,
            content,
            tuple(tags),
            external_id,
            self.resolve(actor, workspace),
        )
        assert_matches(created, row)
        self.rows[row.id] = row
        return row.id

    @rule(context_id=contexts, data=st.data())
    def get_context(self, context_id: int, data: st.DataObject) -> None:
        actor = self.pick_actor(data, context_id)
        response = self.call(actor, "GET", f"/api/contexts/{context_id}")
        row = self.rows.get(context_id)
        if row is None or row.owner != actor:
            assert_not_found(response)
            return
        assert response.status_code == 200, response.text
        assert_matches(response.json(), row)

    @rule(actor=tenants, data=st.data())
    def get_by_external(self, actor: int, data: st.DataObject) -> None:
        own = sorted(r.external_id for r in self.owned(actor) if r.external_id is not None)
        pool = own if bool(own) and data.draw(st.booleans(), label="own id") else EXTERNAL_IDS
        external_id = data.draw(st.sampled_from(pool), label="externalId")
        response = self.call(actor, "GET", by_external_path(external_id))
        row = self.holder_of(actor, external_id)
        if row is None:  # even when another tenant holds that external id
            assert_not_found(response)
            return
        assert response.status_code == 200, response.text
        assert_matches(response.json(), row)

    @rule(context_id=contexts, data=st.data())
    def update_context(self, context_id: int, data: st.DataObject) -> None:
        actor = self.pick_actor(data, context_id)
        changes: dict[str, Any] = data.draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "type": st.sampled_from(TYPES),
                    "title": texts,
                    "content": texts,
                    "tags": tag_lists,
                    "externalId": st.none() | st.sampled_from(EXTERNAL_IDS),
                    "workspace": workspace_choices,
                },
            ),
            label="changes",
        )
        response = self.call(
            actor, "PUT", f"/api/contexts/{context_id}", AuditAction.CONTEXT_UPDATE, json=changes
        )
        row = self.rows.get(context_id)
        if row is None or row.owner != actor:
            assert_not_found(response)
            return
        new_ext = changes.get("externalId")
        holder = None if new_ext is None else self.holder_of(actor, new_ext)
        if holder is not None and holder.id != row.id:
            assert response.status_code == 409, response.text
            assert response.json()["error"] == "external_id_taken"
            return
        assert response.status_code == 200, response.text
        updated = replace(
            row,
            type=changes.get("type", row.type),
            title=changes.get("title", row.title),
            content=changes.get("content", row.content),
            tags=tuple(changes.get("tags", row.tags)),
            external_id=changes.get("externalId", row.external_id),
            workspace=(
                self.resolve(actor, changes["workspace"])
                if "workspace" in changes
                else row.workspace
            ),
        )
        assert_matches(response.json(), updated)
        self.rows[row.id] = updated

    @rule(context_id=contexts, data=st.data())
    def delete_context(self, context_id: int, data: st.DataObject) -> None:
        actor = self.pick_actor(data, context_id)
        response = self.call(
            actor, "DELETE", f"/api/contexts/{context_id}", AuditAction.CONTEXT_DELETE
        )
        row = self.rows.get(context_id)
        if row is None or row.owner != actor:
            assert_not_found(response)
            return
        assert response.status_code == 204, response.text
        del self.rows[context_id]

    @rule(target=contexts, actor=tenants, data=st.data())
    def bulk_upsert(self, actor: int, data: st.DataObject) -> Any:
        ext_ids = data.draw(
            st.lists(st.sampled_from(EXTERNAL_IDS), min_size=1, max_size=4, unique=True),
            label="externalIds",
        )
        items: list[dict[str, Any]] = []
        for ext in ext_ids:
            item: dict[str, Any] = data.draw(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(TYPES), "title": texts, "content": texts},
                    optional={"tags": tag_lists, "workspace": workspace_choices},
                ),
                label=f"item {ext!r}",
            )
            items.append({**item, "externalId": ext})
        response = self.call(
            actor,
            "POST",
            "/api/contexts/bulk-upsert",
            AuditAction.CONTEXT_BULK_UPSERT,
            json={"contexts": items},
        )
        assert response.status_code == 200, response.text
        result = response.json()
        existing = [self.holder_of(actor, item["externalId"]) for item in items]
        assert result["created"] == sum(1 for old in existing if old is None)
        assert result["updated"] == sum(1 for old in existing if old is not None)
        assert len(result["items"]) == len(items)
        new_ids: list[int] = []
        for item, old, body in zip(items, existing, result["items"], strict=True):
            if old is None:
                assert body["id"] not in self.rows
                new_ids.append(body["id"])
                old = Row(body["id"], actor, "", "", "", (), item["externalId"], None)
            row = replace(
                old,
                type=item["type"],
                title=item["title"],
                content=item["content"],
                tags=tuple(item.get("tags", old.tags)),
                workspace=(
                    self.resolve(actor, item["workspace"]) if "workspace" in item else old.workspace
                ),
            )
            assert_matches(body, row)
            self.rows[row.id] = row
        return multiple(*new_ids)

    @rule(actor=tenants, word=st.sampled_from(WORDS))
    def search(self, actor: int, word: str) -> None:
        response = self.call(actor, "POST", "/api/search", json={"query": word, "limit": 50})
        assert response.status_code == 200, response.text
        found = [hit["context"]["id"] for hit in response.json()["results"]]
        expected = {r.id for r in self.owned(actor) if word in r.tokens()}
        if len(expected) <= 50:
            assert set(found) == expected, (word, found, expected)
        for hit in response.json()["results"]:
            assert_matches(hit["context"], self.rows[hit["context"]["id"]], summary=True)

    @rule(
        actor=tenants,
        filters=st.fixed_dictionaries(
            {},
            optional={
                "workspace": st.sampled_from((*SLUGS, UNKNOWN_SLUG)),
                "tag": st.sampled_from(TAGS),
                "type": st.sampled_from(TYPES),
            },
        ),
        limit=st.sampled_from((1, 2, 500)),
        offset=st.sampled_from((0, 1, 3)),
    )
    def list_contexts(self, actor: int, filters: dict[str, str], limit: int, offset: int) -> None:
        params = {**filters, "limit": str(limit), "offset": str(offset)}
        response = self.call(actor, "GET", "/api/contexts", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        matching = [
            r
            for r in self.owned(actor)
            if ("workspace" not in filters or r.workspace == filters["workspace"])
            and ("tag" not in filters or filters["tag"] in r.tags)
            and ("type" not in filters or r.type == filters["type"])
        ]
        assert page["total"] == len(matching), (filters, page["total"], len(matching))
        assert [item["id"] for item in page["items"]] == [
            r.id for r in matching[offset : offset + limit]
        ]
        assert (page["limit"], page["offset"]) == (limit, offset)
        for item in page["items"]:
            assert_matches(item, self.rows[item["id"]], summary=True)

    # ----- workspaces -----

    @rule(actor=tenants, slug=st.sampled_from(SLUGS))
    def create_workspace(self, actor: int, slug: str) -> None:
        response = self.call(
            actor, "POST", "/api/workspaces", AuditAction.WORKSPACE_CREATE, json={"slug": slug}
        )
        if slug in self.workspaces[actor]:
            assert response.status_code == 409, response.text
            return
        assert response.status_code == 201, response.text
        assert response.json()["slug"] == slug
        self.workspaces[actor].add(slug)

    @rule(actor=tenants, data=st.data())
    def archive_workspace(self, actor: int, data: st.DataObject) -> None:
        slug = self.pick_slug(data, actor)
        response = self.call(
            actor, "POST", f"/api/workspaces/{slug}/archive", AuditAction.WORKSPACE_ARCHIVE
        )
        if slug not in self.workspaces[actor]:
            assert_not_found(response)
            return
        assert response.status_code == 200, response.text
        assert response.json()["archived"] is True

    @rule(actor=tenants, data=st.data())
    def delete_workspace(self, actor: int, data: st.DataObject) -> None:
        slug = self.pick_slug(data, actor)
        response = self.call(
            actor, "DELETE", f"/api/workspaces/{slug}", AuditAction.WORKSPACE_DELETE
        )
        if slug not in self.workspaces[actor]:
            assert_not_found(response)
            return
        held = sum(1 for r in self.owned(actor) if r.workspace == slug)
        if held:
            assert response.status_code == 409, response.text
            assert response.json()["error"] == "workspace_not_empty"
            return
        assert response.status_code == 204, response.text
        self.workspaces[actor].discard(slug)

    @rule(actor=tenants)
    def list_workspaces(self, actor: int) -> None:
        response = self.call(actor, "GET", "/api/workspaces")
        assert response.status_code == 200, response.text
        assert {w["slug"] for w in response.json()["items"]} == self.workspaces[actor]

    @precondition(lambda self: any(r.external_id is not None for r in self.rows.values()))
    @rule(actor=tenants, data=st.data())
    def touch_foreign_external_id(self, actor: int, data: st.DataObject) -> None:
        """An external id that only another tenant holds answers 404 to this one."""
        foreign = sorted(
            {
                r.external_id
                for r in self.rows.values()
                if r.owner != actor and r.external_id is not None
            }
        )
        mine = {r.external_id for r in self.owned(actor)}
        candidates = [e for e in foreign if e not in mine]
        if not candidates:
            return
        ext = data.draw(st.sampled_from(candidates), label="foreign externalId")
        assert_not_found(self.call(actor, "GET", by_external_path(ext)))

    # ----- invariants -----

    @invariant()
    def audit_chain_has_one_row_per_successful_write(self) -> None:
        assert self.fake.verify_audit_chain() == len(self.writes)
        rows = self.fake.audit_log()
        assert [(row.tenant_id, row.action) for row in rows] == [
            (self.tenant_ids[actor], action) for actor, action in self.writes
        ]
        assert [row.actor_key_prefix for row in rows] == [
            self.keys[actor][:12] for actor, _ in self.writes
        ]

    @invariant()
    def list_totals_match_the_model(self) -> None:
        """Every tenant's total, after any write attempt (a refused one included)."""
        if not self.unchecked_writes:
            return
        self.unchecked_writes = False
        for actor in range(N_TENANTS):
            response = self.call(actor, "GET", "/api/contexts", params={"limit": "1"})
            assert response.status_code == 200, response.text
            assert response.json()["total"] == len(self.owned(actor)), actor


# One failure shrunk, not every distinct one: a broken rule usually breaks several of them.
TenancyMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=35,
    deadline=None,
    report_multiple_bugs=False,
)
test_tenancy_machine = TenancyMachine.TestCase


# ----- external id round trip -----

external_id_texts = st.text(
    alphabet=st.one_of(
        st.sampled_from("/:%?# .&=+;~\\"),
        # NUL is refused in any text (wire.FORBIDDEN_TEXT_CHARS): tested on its own
        st.characters(exclude_categories=["Cs"], exclude_characters=wire.FORBIDDEN_TEXT_CHARS),
    ),
    min_size=1,
    max_size=100,
)


@settings(max_examples=200, deadline=None)
@given(external_id=external_id_texts)
@example(external_id=".")  # the ids by_external_path encodes specially, every run
@example(external_id="..")
@example(external_id="%2E")
@example(external_id="a/../b")
@example(external_id="line\nfeed")
def test_external_id_round_trips(external_id: str) -> None:
    with FakeContextQ() as fake:
        tenant = fake.create_tenant("roundtrip")
        with fake.client(fake.mint_key(tenant, SCOPES)) as client:
            created = client.post(
                "/api/contexts",
                json={"type": "reference", "title": "t", "content": "c", "externalId": external_id},
            )
            assert created.status_code == 201, created.text
            assert created.json()["externalId"] == external_id
            response = client.get(by_external_path(external_id))
            assert response.status_code == 200, (response.request.url, response.text)
            assert response.json()["id"] == created.json()["id"]
            assert response.json()["externalId"] == external_id
