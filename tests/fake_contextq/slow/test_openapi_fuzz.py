"""Fuzz the fake in-process from its own OpenAPI document with schemathesis.

Every generated request carries a valid all-scopes key of a tenant on the ``enterprise``
plan that already holds a workspace and a few contexts, and path parameters are
sometimes swapped for ids, external ids and slugs that exist, so the fuzzer reaches
the success paths as well as the 400/404 ones. Both schema-conforming (positive) and
schema-violating (negative) requests are generated: neither may ever produce a 5xx.

Checks: no server error, every status code documented, the content type documented,
and the body valid against the documented schema. ``positive_data_acceptance`` and
``negative_data_rejection`` are deliberately left out (a 404 for an unknown id is the
right answer to a well-formed request). A failure prints schemathesis's report with a
``curl`` command that replays the request against a served fake; schemathesis's header
sanitising stays on, so the key shows as ``[Filtered]`` (put a key of that fake there):
no failure report of this project shows an API key, not even an in-memory one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from adapter import wire
from fake_contextq import FakeContextQ, JournalEntry, Tenant

MAX_EXAMPLES = 30

WORKSPACES = ("fuzz-ws", "empty-ws")
EXTERNAL_IDS = ("doc-1", "notes/2024:plan", "ünïcode ext?#%")


@dataclass(frozen=True)
class Seeded:
    """A fake holding the state the fuzzer leans on, and the values that exist in it."""

    fake: FakeContextQ
    tenant: Tenant
    key: str
    context_ids: tuple[str, ...]
    session_ids: tuple[str, ...]
    task_ids: tuple[str, ...]


def seeded_fake() -> Seeded:
    """A fake with a tenant on the ``enterprise`` plan, two workspaces, a few contexts
    through the API (some with an external id, one in a workspace) and a session with a
    task, so the routes reach their success paths. Deterministic: the same ids each time."""
    fake = FakeContextQ(llm=True)  # with a handoff writer, so 503 is a real server error
    tenant = fake.create_tenant("fuzz", plan="enterprise")
    key = fake.mint_key(tenant, wire.SCOPES)
    for slug in WORKSPACES:
        fake.create_workspace(tenant, slug)
    bodies: list[dict[str, Any]] = [
        {
            "type": "reference",
            "title": "Seed one",
            "content": "alpha beta",
            "externalId": EXTERNAL_IDS[0],
            "workspace": WORKSPACES[0],
            "tags": ["seed"],
        },
        {"type": "lesson", "title": "Seed two", "content": "gamma", "externalId": EXTERNAL_IDS[1]},
        {
            "type": "project",
            "title": "Seed three",
            "content": "delta alpha",
            "externalId": EXTERNAL_IDS[2],
            "metadata": {"k": [1, 2]},
        },
        {"type": "moc", "title": "Seed four", "content": "no external id"},
    ]
    with fake.client(key) as client:
        ids: list[str] = []
        for body in bodies:
            response = client.post("/api/contexts", json=body)
            assert response.status_code == 201, response.text
            ids.append(str(response.json()["id"]))
        session = client.post("/api/agent/sessions", json={"workspace": WORKSPACES[0]})
        assert session.status_code == 201, session.text
        sid = session.json()["id"]
        task = client.post(
            "/api/agent/tasks", json={"session_id": sid, "key": "k", "title": "Seed task"}
        )
        assert task.status_code == 201, task.text
        client.post("/api/agent/lessons", json={"text": "seed lesson"})
    return Seeded(fake, tenant, key, tuple(ids), (str(sid),), (str(task.json()["id"]),))


SEED = seeded_fake()  # the fuzzer's fake: its tests change it, in whatever order they run
FAKE, TENANT, KEY = SEED.fake, SEED.tenant, SEED.key
AUTH = {"Authorization": f"Bearer {KEY}"}
CONTEXT_IDS, SESSION_IDS, TASK_IDS = SEED.context_ids, SEED.session_ids, SEED.task_ids

# Values that exist in the tenant, per path parameter name of the document.
KNOWN_PATH_VALUES: dict[str, tuple[str, ...]] = {
    "context_id": CONTEXT_IDS,
    "external_id": EXTERNAL_IDS,
    "slug": WORKSPACES,
    "session_id": SESSION_IDS,
    "task_id": TASK_IDS,
}

schema = schemathesis.openapi.from_asgi("/openapi.json", FAKE.app)
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
)
schema.config.output.sanitization.update(enabled=True)  # the report shows no key


@schema.hook
def flatmap_path_parameters(context: Any, path_parameters: dict[str, Any]) -> Any:
    """Keep the generated path parameters, or swap them for values that exist."""
    if not path_parameters or not all(k in KNOWN_PATH_VALUES for k in path_parameters):
        return st.just(path_parameters)
    known = st.fixed_dictionaries(
        {name: st.sampled_from(KNOWN_PATH_VALUES[name]) for name in path_parameters}
    )
    return st.one_of(st.just(path_parameters), known)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def test_seeded_state_is_reachable() -> None:
    """The seed the fuzzer leans on is what it claims. Checked on a fresh seed, not on the
    fuzzer's fake (which the fuzzer changes, whenever this test happens to run): the seed
    is deterministic, so the values the fuzzer swaps in exist in both."""
    fresh = seeded_fake()
    assert (fresh.context_ids, fresh.session_ids, fresh.task_ids) == (
        CONTEXT_IDS,
        SESSION_IDS,
        TASK_IDS,
    )
    with fresh.fake.client(fresh.key) as client:
        response = client.get("/api/contexts/by-external/notes%2F2024%3Aplan")
        assert response.status_code == 200, response.text
        assert response.json()["externalId"] == EXTERNAL_IDS[1]
        listing = client.get("/api/workspaces")
        assert [w["slug"] for w in listing.json()["items"]] == list(WORKSPACES)
        assert client.get(f"/api/agent/sessions/{SESSION_IDS[0]}").status_code == 200
        for context_id in CONTEXT_IDS:
            assert client.get(f"/api/contexts/{context_id}").status_code == 200
    fresh.fake.close()


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case[Any]) -> None:
    served, rows = len(FAKE.journal), len(FAKE.audit_log())
    case.call_and_validate(headers=AUTH, checks=CHECKS)
    # one audit row per write answered 2xx, checked case by case
    writes = sum(1 for entry in FAKE.journal[served:] if _successful_write(entry))
    assert len(FAKE.audit_log()) - rows == writes


#: POSTs that only read (search, boot, a saved search's run): the routes that need `read`
READ_ONLY_POSTS = [
    re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", route.template) + "$")
    for route in wire.ROUTES
    if route.method == "POST" and route.scope == wire.READ
]


def _successful_write(entry: JournalEntry) -> bool:
    return (
        entry.method in ("POST", "PUT", "DELETE")
        and not any(post.match(entry.path) for post in READ_ONLY_POSTS)
        and entry.status is not None
        and 200 <= entry.status < 300
    )


def test_fuzzing_left_one_audit_row_per_successful_write() -> None:
    """Whatever the fuzzer has sent so far (this test may run before, after or between its
    cases: the fuzzer also checks its rows case by case), the audit chain is intact and
    holds exactly one row per write request answered 2xx, every one of them the fuzzing
    tenant's."""
    writes = [entry for entry in FAKE.journal if _successful_write(entry)]
    assert FAKE.verify_audit_chain() == len(writes), [str(e) for e in writes]
    assert {row.tenant_id for row in FAKE.audit_log()} == {TENANT.id}
