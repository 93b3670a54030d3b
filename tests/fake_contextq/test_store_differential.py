"""One contract on every store, proven by property: the memory, SQLite and Postgres stores,
driven side by side through HTTP (each fake's in-process transport) by the same random
request sequences full of hostile input (NUL, lone surrogates, bidi and zero-width
characters, huge and negative integers, ids past the signed 64-bit range, bodies that are
not UTF-8), answer every request with the same status and the same body, ids and
timestamps aside.

The decisions the property holds the stores to (each **assumed**, in ``adapter.wire``) are
also checked one by one below, on each store, through the ``all_stores`` marker.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from adapter import wire
from fake_contextq import FakeContextQ
from fake_contextq.http.transport import InProcessTransport
from tests.support.helpers import context_body, error, issue_paths, ok, start
from tests.support.stores import StorePool, fresh_store

pytestmark = pytest.mark.all_stores

# ----- hostile input ----------------------------------------------------------------------

ODD_CHARS = [
    "\x00",  # NUL: Postgres text cannot hold it
    "\ud800",  # lone surrogates: legal in JSON text, not in UTF-8
    "\udfff",
    "\u202e",  # bidi override
    "\u200b",  # zero-width space
    "\ufeff",  # BOM inside text
    "\u212a",  # Kelvin sign (folds to k)
    "\u0130",  # dotted capital I (lowercases to two characters)
    "\u00e9",
    "\U0001f600",
    "\U0010ffff",
    "\x7f",
    "\u0085",
    "\n",
    "'",
    '"',
    "\\",
    "%",
    "/",
    "%2F",
    "%00",
    " ",
]
# NUL and lone surrogates are the characters stores disagree on: drawn most often
odd = st.one_of(st.sampled_from(["\x00", "\ud800", "\udfff"]), st.sampled_from(ODD_CHARS))
# a string with at least one odd character in it
hostile_text = st.tuples(st.text(max_size=3), odd, st.text(max_size=3)).map("".join)
words = st.sampled_from(["alpha", "beta", "deploy", "tacos", "Alpha", "\u00fcn\u00ef"])
texts = st.one_of(words, hostile_text, st.just(""), st.text(max_size=12))
huge_ints = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 10**19 - 1, 10**19, -(2**63)]),
)
json_scalars = st.one_of(
    st.none(), st.booleans(), huge_ints, st.floats(allow_nan=False, allow_infinity=False), texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=3)
slugs = st.sampled_from(["ops", "notes", "a-b"])
hostile_slugs = st.one_of(st.sampled_from(["Ops", "x" * 65, "", "-a"]), hostile_text)
# what a field of any type may be sent as instead of a good value
anything = st.one_of(hostile_text, st.just(""), huge_ints, json_values)
HOSTILE_IDS = [
    "0",
    "-1",
    "01",
    "1e3",
    "abc",
    "9223372036854775807",
    "9223372036854775808",
    "9999999999999999999",
    "10000000000000000000",
    "%00",
    "1%00",
]
path_ids = st.one_of(
    st.sampled_from(HOSTILE_IDS), st.integers(min_value=-(2**64), max_value=2**64).map(str)
)


def spoiled(
    required: dict[str, st.SearchStrategy[Any]],
    optional: dict[str, st.SearchStrategy[Any]],
    hostile: dict[str, st.SearchStrategy[Any]],
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid body, or one with one or two of its fields replaced by hostile values (so
    the hostile value gets past the other checks and reaches the store)."""

    def spoil(body: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
        fields = st.lists(st.sampled_from(sorted(hostile)), min_size=1, max_size=2, unique=True)
        return st.one_of(
            st.just(body),
            fields.flatmap(
                lambda names: st.fixed_dictionaries({n: hostile[n] for n in names}).map(
                    lambda bad: {**body, **bad}
                )
            ),
        )

    return st.fixed_dictionaries(required, optional=optional).flatmap(spoil)


def context_fields(*, create: bool) -> st.SearchStrategy[dict[str, Any]]:
    """A context body: valid, or with hostile values in one or two fields."""
    required = {
        "type": st.sampled_from(["reference", "lesson", "moc"]),
        "title": words,
        "content": words,
    }
    optional = {
        "tags": st.lists(words, max_size=3),
        "externalId": st.one_of(words, st.none()),
        "workspace": st.one_of(slugs, st.none()),
        "metadata": st.dictionaries(words, json_scalars, max_size=2),
    }
    hostile = {
        "type": st.one_of(texts, anything),
        "title": st.one_of(hostile_text, anything),
        "content": st.one_of(hostile_text, anything),
        "tags": st.one_of(st.lists(st.one_of(words, hostile_text), max_size=3), anything),
        "externalId": st.one_of(hostile_text, anything),
        "workspace": st.one_of(hostile_slugs, anything),
        "metadata": st.one_of(json_objects, anything),
    }
    if create:
        return spoiled(required, optional, hostile)
    return spoiled({}, {**required, **optional}, hostile)


@dataclass
class Side:
    """One store's fake, its client, and the labels its ids get when compared."""

    kind: str
    fake: FakeContextQ
    client: httpx2.Client
    labels: dict[tuple[str, int], str] = field(default_factory=dict)

    def label(self, kind: str, raw: int) -> str:
        return self.labels.setdefault((kind, raw), f"{kind}#{len(self.labels)}")


TIMESTAMP_KEYS = frozenset(
    {"createdAt", "updatedAt", "created_at", "updated_at", "started_at", "ended_at"}
)
ID_KEYS = {
    "session_id": "session",
    "parent_session_id": "session",
    "parent_id": "task",
    "sourceId": "context",
    "targetId": "context",
    "linkId": "link",
    "ingestJobId": "ingest_job",
}


def _kind(obj: dict[str, Any]) -> str:
    if "relation" in obj:
        return "link"
    if "mediaType" in obj:
        return "ingest_job"
    if "seq" in obj:
        return "checkpoint"
    if "slug" in obj:
        return "workspace"
    if "externalId" in obj:
        return "context"
    if "evidence" in obj:
        return "task"
    if "started_at" in obj:
        return "session"
    return "other"


def normalised(value: Any, side: Side) -> Any:
    """A body with each id replaced by a label of its kind in order of appearance (the
    stores may draw different ids) and timestamps by their shape."""
    if isinstance(value, list):
        return [normalised(v, side) for v in value]
    if not isinstance(value, dict):
        return value
    kind = _kind(value)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in TIMESTAMP_KEYS and isinstance(item, str):
            out[key] = "<timestamp>" if item.endswith("Z") else item
        elif key == "id" and isinstance(item, int):
            out[key] = side.label(kind, item)
        elif key in ID_KEYS and isinstance(item, int):
            out[key] = side.label(ID_KEYS[key], item)
        elif key == "contextIds" and isinstance(item, list):
            out[key] = [side.label("context", i) for i in item]
        elif key == "message" and isinstance(item, str):
            out[key] = re.sub(r"\d+", "#", item)  # an error's sentence may name an id
        else:
            out[key] = normalised(item, side)
    return out


def call(side: Side, method: str, path: str, body: Any = None) -> httpx2.Response:
    """A request with a JSON body written as JSON.stringify would (lone surrogates as
    ``\\ud800`` escapes), which httpx's own encoder cannot do."""
    if body is None:
        return side.client.request(method, path)
    raw = json.dumps(body, allow_nan=False).encode()
    return side.client.request(
        method, path, content=raw, headers={"content-type": "application/json"}
    )


def answer(response: httpx2.Response, side: Side) -> tuple[int, Any]:
    assert response.status_code < 500, (side.kind, response.status_code, response.text)
    if not response.content:
        return response.status_code, None
    return response.status_code, normalised(response.json(), side)


@dataclass(frozen=True)
class Ref:
    """One row made on every side: its id on each (by store kind)."""

    ids: tuple[int, ...]


class StoresAgree(RuleBasedStateMachine):
    """Every request goes to all three stores; their answers must be the same."""

    pool: StorePool  # set by the test

    contexts = Bundle("contexts")
    ingest_jobs = Bundle("ingest_jobs")
    sessions = Bundle("sessions")
    tasks = Bundle("tasks")

    def __init__(self) -> None:
        super().__init__()
        self.sides: list[Side] = []
        for kind in ("memory", "sqlite", "postgres"):
            fake = FakeContextQ(store=fresh_store(self.pool, kind))
            tenant = fake.create_tenant("acme", "enterprise")
            fake.create_workspace(tenant, "ops")
            client = fake.client(fake.mint_key(tenant, wire.SCOPES))
            self.sides.append(Side(kind, fake, client))

    def teardown(self) -> None:
        for side in self.sides:
            side.client.close()
            side.fake.close()

    def send(self, request: Callable[[Side], httpx2.Response]) -> tuple[int, Any]:
        """Send one request to every side; their answers, which must agree."""
        answers = [answer(request(side), side) for side in self.sides]
        first = answers[0]
        for side, other in zip(self.sides[1:], answers[1:], strict=True):
            assert other == first, (side.kind, other, "memory", first)
        return first

    def made(self, request: Callable[[Side], httpx2.Response], status: int) -> Ref | None:
        """Send a create; the new row's id on each side, when it was made."""
        responses = [request(side) for side in self.sides]
        answers = [answer(r, s) for r, s in zip(responses, self.sides, strict=True)]
        assert all(a == answers[0] for a in answers), answers
        if answers[0][0] != status:
            return None
        return Ref(tuple(int(r.json()["id"]) for r in responses))

    @staticmethod
    def path_id(ref: Ref | str, side_index: int) -> str:
        return (
            str(ref.ids[side_index])
            if isinstance(ref, Ref)
            else quote(ref, safe="", errors="surrogatepass")
        )

    def by_index(self, side: Side) -> int:
        return self.sides.index(side)

    # ----- contexts -----

    @initialize(target=contexts)
    def seed_context(self) -> Ref:
        ref = self.made(
            lambda s: call(
                s, "POST", "/api/contexts", context_body(externalId="seed/1", tags=["t"])
            ),
            201,
        )
        assert ref is not None
        return ref

    @rule(target=contexts, body=context_fields(create=True))
    def create_context(self, body: dict[str, Any]) -> Ref:
        ref = self.made(lambda s: call(s, "POST", "/api/contexts", body), 201)
        return ref if ref is not None else Ref((2**63 - 1,) * 3)

    @rule(ref=st.one_of(contexts, path_ids), body=context_fields(create=False))
    def update_context(self, ref: Ref | str, body: dict[str, Any]) -> None:
        self.send(
            lambda s: call(s, "PUT", f"/api/contexts/{self.path_id(ref, self.by_index(s))}", body)
        )

    @rule(ref=st.one_of(contexts, path_ids))
    def get_context(self, ref: Ref | str) -> None:
        self.send(lambda s: s.client.get(f"/api/contexts/{self.path_id(ref, self.by_index(s))}"))

    @rule(ref=st.one_of(consumes(contexts), path_ids))
    def delete_context(self, ref: Ref | str) -> None:
        self.send(lambda s: s.client.delete(f"/api/contexts/{self.path_id(ref, self.by_index(s))}"))

    @rule(external_id=st.one_of(texts, st.just("seed/1")), encode=st.booleans())
    def get_by_external(self, external_id: str, encode: bool) -> None:
        segment = quote(external_id, safe="" if encode else "/", errors="surrogatepass")
        if not segment or segment in (".", ".."):
            return  # the URL would name another path before it is sent
        self.send(lambda s: s.client.get(f"/api/contexts/by-external/{segment}"))

    @rule(
        params=st.dictionaries(
            st.sampled_from(["workspace", "tag", "type", "limit", "offset"]),
            st.one_of(texts, huge_ints.map(str), st.sampled_from(["ops", "t", "reference"])),
            max_size=3,
        )
    )
    def list_contexts(self, params: dict[str, str]) -> None:
        query = "&".join(
            f"{quote(k)}={quote(v, safe='', errors='surrogatepass')}" for k, v in params.items()
        )
        self.send(lambda s: s.client.get(f"/api/contexts?{query}"))

    @rule(
        items=st.lists(
            context_fields(create=True).map(lambda b: {**b, "externalId": b.get("externalId")}),
            max_size=3,
        )
    )
    def bulk_upsert(self, items: list[dict[str, Any]]) -> None:
        self.send(lambda s: call(s, "POST", "/api/contexts/bulk-upsert", {"contexts": items}))

    @rule(
        body=spoiled(
            {"query": words},
            {
                "type": st.sampled_from(["reference", "lesson"]),
                "workspace": st.one_of(slugs, st.none()),
                "tags": st.lists(words, max_size=2),
                "limit": st.integers(1, 50),
            },
            {
                "query": st.one_of(hostile_text, anything),
                "type": st.one_of(st.just("moc"), texts, anything),
                "workspace": st.one_of(hostile_slugs, anything),
                "tags": st.one_of(st.lists(hostile_text, min_size=1, max_size=2), anything),
                "limit": anything,
            },
        )
    )
    def search(self, body: dict[str, Any]) -> None:
        self.send(lambda s: call(s, "POST", "/api/search", body))

    # ----- workspaces -----

    @rule(
        slug=st.one_of(slugs, hostile_slugs, anything),
        name=st.one_of(st.none(), words, hostile_text, anything),
    )
    def create_workspace(self, slug: Any, name: Any) -> None:
        body = {"slug": slug} if name is None else {"slug": slug, "name": name}
        self.send(lambda s: call(s, "POST", "/api/workspaces", body))

    @rule(slug=st.one_of(slugs, hostile_slugs), archive=st.booleans())
    def archive_or_delete_workspace(self, slug: str, archive: bool) -> None:
        segment = quote(slug, safe="", errors="surrogatepass")
        if not segment or segment in (".", ".."):
            return
        if archive:
            self.send(lambda s: s.client.post(f"/api/workspaces/{segment}/archive"))
        else:
            self.send(lambda s: s.client.delete(f"/api/workspaces/{segment}"))

    # ----- the agent layer -----

    @rule(
        target=sessions,
        body=spoiled(
            {},
            {"workspace": st.one_of(slugs, st.none()), "metadata": st.just({"a": 1})},
            {
                "workspace": st.one_of(hostile_slugs, anything),
                "metadata": st.one_of(json_objects, anything),
                "parent_session_id": st.one_of(huge_ints, anything),
            },
        ),
    )
    def start_session(self, body: dict[str, Any]) -> Ref:
        ref = self.made(lambda s: call(s, "POST", "/api/agent/sessions", body), 201)
        return ref if ref is not None else Ref((2**63 - 1,) * 3)

    @rule(
        ref=st.one_of(sessions, path_ids),
        action=st.sampled_from(["", "/resume", "/tasks"]),
    )
    def read_session(self, ref: Ref | str, action: str) -> None:
        self.send(
            lambda s: s.client.get(
                f"/api/agent/sessions/{self.path_id(ref, self.by_index(s))}{action}"
            )
        )

    @rule(
        ref=st.one_of(sessions, path_ids),
        seq=st.one_of(st.integers(0, 3), huge_ints),
        state=st.one_of(st.just({}), json_objects, anything),
        summary=st.one_of(st.none(), words, hostile_text, anything),
    )
    def checkpoint(self, ref: Ref | str, seq: int, state: Any, summary: Any) -> None:
        body = {"seq": seq, "state": state, "summary": summary}
        self.send(
            lambda s: call(
                s,
                "POST",
                f"/api/agent/sessions/{self.path_id(ref, self.by_index(s))}/checkpoint",
                body,
            )
        )

    @rule(
        ref=st.one_of(sessions, path_ids),
        status=st.one_of(st.sampled_from(["completed", "failed"]), texts),
        summary=st.one_of(st.none(), words, hostile_text, anything),
    )
    def end_session(self, ref: Ref | str, status: str, summary: Any) -> None:
        body = {"status": status, "summary": summary}
        self.send(
            lambda s: call(
                s, "POST", f"/api/agent/sessions/{self.path_id(ref, self.by_index(s))}/end", body
            )
        )

    @rule(
        target=tasks,
        ref=sessions,
        key=st.one_of(st.sampled_from(["a", "b"]), hostile_text, anything),
        title=st.one_of(words, hostile_text),
        extra=spoiled(
            {},
            {
                "status": st.sampled_from(["pending", "verified"]),
                "parent_key": st.sampled_from(["a", "b"]),
                "evidence": st.one_of(st.none(), words),
            },
            {
                "status": texts,
                "parent_key": st.one_of(hostile_text, anything),
                "evidence": st.one_of(hostile_text, anything),
            },
        ),
    )
    def upsert_task(self, ref: Ref, key: Any, title: str, extra: dict[str, Any]) -> Ref:
        responses = [
            call(
                side,
                "POST",
                "/api/agent/tasks",
                {"session_id": ref.ids[i], "key": key, "title": title, **extra},
            )
            for i, side in enumerate(self.sides)
        ]
        answers = [answer(r, s) for r, s in zip(responses, self.sides, strict=True)]
        assert all(a == answers[0] for a in answers), answers
        if answers[0][0] not in (200, 201):
            return Ref((2**63 - 1,) * 3)
        return Ref(tuple(int(r.json()["id"]) for r in responses))

    @rule(ref=st.one_of(tasks, path_ids), evidence=st.one_of(st.none(), words, anything))
    def tick_task(self, ref: Ref | str, evidence: Any) -> None:
        self.send(
            lambda s: call(
                s,
                "POST",
                f"/api/agent/tasks/{self.path_id(ref, self.by_index(s))}/tick",
                {"evidence": evidence},
            )
        )

    @rule(
        body=spoiled(
            {"text": words},
            {"tags": st.lists(words, max_size=2), "workspace": slugs},
            {
                "text": st.one_of(hostile_text, anything),
                "tags": st.one_of(st.lists(hostile_text, min_size=1, max_size=2), anything),
                "workspace": st.one_of(hostile_slugs, anything),
            },
        )
    )
    def add_lesson(self, body: dict[str, Any]) -> None:
        self.send(lambda s: call(s, "POST", "/api/agent/lessons", body))

    # ----- links and ingest -----

    @rule(
        source=st.one_of(contexts, path_ids),
        other=st.one_of(contexts, contexts, huge_ints, anything),
        relation=st.one_of(st.none(), st.sampled_from(["related", "supports"]), anything),
    )
    def link_contexts(self, source: Ref | str, other: Any, relation: Any) -> None:
        def request(s: Side) -> httpx2.Response:
            i = self.by_index(s)
            body = {"targetId": other.ids[i] if isinstance(other, Ref) else other}
            if relation is not None:
                body["relation"] = relation
            return call(s, "POST", f"/api/contexts/{self.path_id(source, i)}/links", body)

        self.send(request)

    @rule(ref=st.one_of(contexts, path_ids))
    def read_links(self, ref: Ref | str) -> None:
        self.send(
            lambda s: s.client.get(f"/api/contexts/{self.path_id(ref, self.by_index(s))}/links")
        )

    @rule(
        target=ingest_jobs,
        body=spoiled(
            {"text": st.sampled_from(["# A\na\n# B\nb", "plain words", "pre\n# H\nx"])},
            {"tags": st.lists(words, max_size=2), "workspace": slugs, "title": words},
            {
                "text": st.one_of(hostile_text, anything),
                "url": st.one_of(
                    st.sampled_from(["data:,a%00b", "data:;base64,!", "https://x.test/", "ftp:x"]),
                    hostile_text,
                    anything,
                ),
                "tags": st.one_of(st.lists(hostile_text, min_size=1, max_size=2), anything),
                "workspace": st.one_of(hostile_slugs, anything),
                "type": anything,
            },
        ),
    )
    def ingest(self, body: dict[str, Any]) -> Ref:
        responses = [call(s, "POST", "/api/ingest", body) for s in self.sides]
        for response, side in zip(responses, self.sides, strict=True):  # 501: the fake's own
            assert response.status_code != 500, (side.kind, response.text)
        answers = [
            (r.status_code, normalised(r.json(), s))
            for r, s in zip(responses, self.sides, strict=True)
        ]
        assert all(a == answers[0] for a in answers), answers
        if answers[0][0] != 202:
            return Ref((wire.MAX_ID,) * 3)
        return Ref(tuple(int(r.json()["id"]) for r in responses))

    @rule(ref=st.one_of(ingest_jobs, path_ids))
    def ingest_status(self, ref: Ref | str) -> None:
        self.send(lambda s: s.client.get(f"/api/ingest/jobs/{self.path_id(ref, self.by_index(s))}"))

    # ----- raw bodies -----

    @rule(
        body=context_fields(create=True),
        encoding=st.sampled_from(
            ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"]
        ),
    )
    def raw_body(self, body: dict[str, Any], encoding: str) -> None:
        raw = json.dumps(body).encode(encoding)  # ASCII JSON: every encoding can carry it
        self.send(
            lambda s: s.client.post(
                "/api/contexts", content=raw, headers={"content-type": "application/json"}
            )
        )

    @invariant()
    def same_rows(self) -> None:
        """What a full listing shows is the same on every side."""
        self.send(lambda s: s.client.get("/api/contexts?limit=500"))


@pytest.mark.slow  # --quick leaves it out
def test_every_store_answers_every_request_alike(store_pool: StorePool) -> None:
    StoresAgree.pool = store_pool
    run_state_machine_as_test(
        StoresAgree,
        settings=settings(
            max_examples=30,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


# ----- the decisions, one by one, on each store ----------------------------------------------

NUL = "a\x00b"


@pytest.fixture
def session(client: httpx2.Client) -> int:
    sid: int = start(client)["id"]
    return sid


NUL_BODIES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/contexts", context_body(title=NUL), "title"),
    ("POST", "/api/contexts", context_body(content=NUL), "content"),
    ("POST", "/api/contexts", context_body(externalId=NUL), "externalId"),
    ("POST", "/api/contexts", context_body(workspace=NUL), "workspace"),
    ("POST", "/api/contexts", context_body(tags=["ok", NUL]), "tags.1"),
    (
        "POST",
        "/api/contexts",
        context_body(metadata={"k": {"deep": [1, NUL]}}),
        "metadata.k.deep.1",
    ),
    ("POST", "/api/contexts", context_body(metadata={NUL: 1}), f"metadata.{NUL}"),
    (
        "POST",
        "/api/contexts/bulk-upsert",
        {"contexts": [context_body(externalId="x", title=NUL)]},
        "contexts.0.title",
    ),
    ("POST", "/api/search", {"query": NUL}, "query"),
    ("POST", "/api/search", {"query": "a", "workspace": NUL}, "workspace"),
    ("POST", "/api/search", {"query": "a", "tags": [NUL]}, "tags.0"),
    ("POST", "/api/workspaces", {"slug": NUL}, "slug"),
    ("POST", "/api/workspaces", {"slug": "ok", "name": NUL}, "name"),
    ("POST", "/api/agent/sessions", {"workspace": NUL}, "workspace"),
    ("POST", "/api/agent/sessions", {"metadata": {"a": NUL}}, "metadata.a"),
    ("POST", "/api/agent/lessons", {"text": NUL}, "text"),
    ("POST", "/api/agent/boot", {"goal": NUL}, "goal"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), NUL_BODIES)
def test_nul_in_any_text_field_is_a_400_naming_it(
    client: httpx2.Client,
    fake: FakeContextQ,
    tenant: Any,
    method: str,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    before = fake.audit_log()
    found = error(client.request(method, path, json=body), 400, "validation_error")
    assert field in issue_paths(found), found
    assert fake.audit_log() == before and fake.contexts(tenant) == []


def test_nul_in_agent_bodies_and_a_put_is_a_400(
    client: httpx2.Client, session: int, make_context: Callable[..., dict[str, Any]]
) -> None:
    made = make_context()
    cases = [
        (f"/api/contexts/{made['id']}", "PUT", {"title": NUL}, "title"),
        (
            f"/api/agent/sessions/{session}/checkpoint",
            "POST",
            {"seq": 1, "state": {"s": NUL}},
            "state.s",
        ),
        (
            f"/api/agent/sessions/{session}/end",
            "POST",
            {"status": "failed", "summary": NUL},
            "summary",
        ),
        ("/api/agent/tasks", "POST", {"session_id": session, "key": NUL, "title": "t"}, "key"),
    ]
    for path, method, body, field_path in cases:
        found = error(client.request(method, path, json=body), 400, "validation_error")
        assert field_path in issue_paths(found), (path, found)
    assert ok(client.get(f"/api/contexts/{made['id']}")) == made


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/contexts/by-external/a%00b", "externalId"),
        ("/api/contexts?workspace=a%00b", "workspace"),
        ("/api/contexts?tag=a%00b", "tag"),
    ],
)
def test_nul_in_a_path_or_query_parameter_is_a_400_naming_it(
    client: httpx2.Client, path: str, field: str
) -> None:
    assert field in issue_paths(error(client.get(path), 400, "validation_error"))


def test_nul_in_a_workspace_slug_of_the_path_is_a_400(client: httpx2.Client) -> None:
    for response in (
        client.post("/api/workspaces/a%00b/archive"),
        client.delete("/api/workspaces/a%00b"),
    ):
        assert issue_paths(error(response, 400, "validation_error")) == {"slug"}


BEYOND_64_BITS = ["9223372036854775808", "9999999999999999999"]


@pytest.mark.parametrize("raw", BEYOND_64_BITS)
def test_an_id_beyond_64_bits_is_a_404_on_every_route_taking_one(
    client: httpx2.Client, raw: str
) -> None:
    requests = [
        ("GET", f"/api/contexts/{raw}", None),
        ("PUT", f"/api/contexts/{raw}", {"title": "t"}),
        ("DELETE", f"/api/contexts/{raw}", None),
        ("GET", f"/api/agent/sessions/{raw}", None),
        ("POST", f"/api/agent/sessions/{raw}/end", {"status": "completed"}),
        ("POST", f"/api/agent/sessions/{raw}/checkpoint", {"seq": 1, "state": {}}),
        ("GET", f"/api/agent/sessions/{raw}/resume", None),
        ("GET", f"/api/agent/sessions/{raw}/tasks", None),
        ("POST", f"/api/agent/tasks/{raw}/tick", {"evidence": "e"}),
        ("POST", f"/api/contexts/{raw}/links", {"targetId": 1}),
        ("GET", f"/api/contexts/{raw}/links", None),
        ("GET", f"/api/ingest/jobs/{raw}", None),
    ]
    for method, path, body in requests:
        response = client.request(method, path, json=body)
        assert response.status_code == 404, (method, path, response.text)
        assert response.json()["error"] == "not_found"
    assert wire.MAX_ID == 2**63 - 1 and not wire.id_in_range(int(raw))


def test_the_largest_64_bit_id_is_an_ordinary_missing_id(client: httpx2.Client) -> None:
    error(client.get(f"/api/contexts/{wire.MAX_ID}"), 404, "not_found")
    error(client.get("/api/contexts/10000000000000000000"), 400, "validation_error")


def test_a_control_route_with_an_id_beyond_64_bits_is_a_404(fake: FakeContextQ) -> None:
    token = "fkc_test"
    with httpx2.Client(
        transport=InProcessTransport(fake.control_app(token)),
        base_url=fake.base_url,
        headers={"Authorization": wire.authorization(token)},
    ) as control:
        for raw in BEYOND_64_BITS:
            error(control.get(f"/_fake/tenants/{raw}/contexts"), 404, "not_found")


@pytest.mark.parametrize(
    "encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
)
def test_a_body_that_is_not_utf8_is_a_400(
    client: httpx2.Client, fake: FakeContextQ, tenant: Any, encoding: str
) -> None:
    raw = json.dumps(context_body()).encode(encoding)
    response = client.post(
        "/api/contexts", content=raw, headers={"content-type": "application/json"}
    )
    # with a BOM, or wide enough to be no UTF-8: "not UTF-8"; else a NUL-strewn, malformed text
    assert error(response, 400, "validation_error")["issues"][0]["path"] == ""
    assert fake.contexts(tenant) == []


def test_a_utf8_body_with_a_bom_is_read(client: httpx2.Client) -> None:
    raw = json.dumps(context_body(title="bom")).encode("utf-8-sig")
    made = ok(
        client.post("/api/contexts", content=raw, headers={"content-type": "application/json"}),
        201,
    )
    assert made["title"] == "bom"


def test_an_unencoded_slash_in_by_external_is_a_404_and_an_encoded_one_works(
    client: httpx2.Client, make_context: Callable[..., dict[str, Any]]
) -> None:
    made = make_context(externalId="a/b")
    assert ok(client.get("/api/contexts/by-external/a%2Fb")) == made
    assert ok(client.get("/api/contexts/by-external/a%2fb")) == made
    found = error(client.get("/api/contexts/by-external/a/b"), 404, "not_found")
    assert "Route" in found["message"]


def test_an_unencoded_slash_is_a_404_even_without_a_key(fake: FakeContextQ) -> None:
    with fake.client() as anonymous:
        error(anonymous.get("/api/contexts/by-external/a/b"), 404, "not_found")
        error(anonymous.get("/api/contexts/by-external/a%2Fb"), 401, "unauthorized")
