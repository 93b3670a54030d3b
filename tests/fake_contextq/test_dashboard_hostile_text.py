"""Text the dashboard and the journal cannot send as it is never makes them fail: a lone
surrogate (which JSON text may carry, and the stores may hold from the Python API or an
old database) is shown as U+FFFD, and a body or a stored value too deep or too long to
indent is shown as received, with a note saying why. On every store."""

from __future__ import annotations

import html
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.dashboard.model import SHOWN_CHARS, SHOWN_DEPTH
from fake_contextq.domain.records import Principal
from fake_contextq.http.dashboard import PREFIX
from fake_contextq.http.transport import InProcessTransport

pytestmark = pytest.mark.all_stores

TOKEN = "fkc_hostile-text-token"
LONE = "\ud800"
REPLACED = "\ufffd"
JSON = {"content-type": "application/json"}
#: A create-context body holding a lone surrogate, escaped as JSON allows (the bytes are
#: ASCII): what a client in any language may send.
ESCAPED_BODY = b'{"type": "reference", "title": "\\ud800 escaped", "content": "c \\udfff"}'
DEEP = 30_000


@pytest.fixture
def ui(fake: FakeContextQ) -> Iterator[httpx2.Client]:
    with httpx2.Client(
        transport=InProcessTransport(fake.control_app(TOKEN)),
        base_url="http://contextq.test",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as client:
        yield client


@pytest.fixture
def acme(fake: FakeContextQ) -> Tenant:
    tenant = fake.create_tenant("acme" + LONE)
    fake.create_workspace(tenant, "ws", name="Work " + LONE)
    return tenant


def shown(page: httpx2.Response) -> str:
    """The page's visible text (spaces collapsed), after asserting it was served."""
    assert page.status_code == 200, (page.request.url, page.status_code, page.text[:300])
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


def test_a_lone_surrogate_from_the_python_api_shows_as_u_fffd_on_every_page(
    fake: FakeContextQ, acme: Tenant, ui: httpx2.Client
) -> None:
    me = Principal(acme.id, wire.SCOPES, "test")
    fake.fill(acme, 1, prefix=LONE)  # title, content and external id
    memory_file = fake.backend.create_context(
        me,
        {
            "type": "reference",
            "title": "notes " + LONE,
            "content": "file " + LONE,
            "workspace": "ws",
            "tags": ["mem-tool", LONE],
            "externalId": f"mem-tool:ws/{LONE}.md",
            "metadata": {LONE: [LONE]},
        },
    )
    session = fake.backend.agent.start_session(me, {"workspace": "ws", "metadata": {"k": LONE}})
    fake.backend.agent.checkpoint(me, session.id, {"seq": 1, "state": {LONE: 1}, "summary": LONE})
    fake.backend.agent.upsert_task(me, {"session_id": session.id, "key": LONE, "title": LONE})
    fake.backend.agent.add_lesson(me, {"text": "lesson " + LONE, "workspace": "ws"})
    fake.backend.agent.end_session(
        me, session.id, {"status": "completed", "summary": "ended " + LONE}
    )
    assert REPLACED in fake.contexts(acme)[0].title  # the edge stored U+FFFD (wire rule)
    assert LONE not in fake.contexts(acme)[0].title
    _as_an_old_database_holds_them(fake, acme, session.id)
    with fake.store.read():
        held = fake.store.context(acme.id, memory_file.id)
    assert held is not None and LONE in held.title

    tenant = f"{PREFIX}/tenants/{acme.id}"
    for path in (
        PREFIX,
        tenant,
        f"{tenant}/memory",
        f"{tenant}/memory?open={memory_file.id}",
        f"{tenant}/agent",
    ):
        assert REPLACED in shown(ui.get(path)), path
    shown(ui.get(PREFIX + "/audit"))
    for c in fake.contexts(acme):
        page = shown(ui.get(f"{tenant}/contexts/{c.id}"))
        assert f"{c.title.replace(LONE, REPLACED)}" in page
        assert LONE not in page
    agent = shown(ui.get(f"{tenant}/agent"))
    for text in ("ended " + REPLACED, "lesson " + REPLACED, f'"{REPLACED}": 1'):
        assert text in agent
    opened = shown(ui.get(f"{tenant}/memory", params={"open": memory_file.id}))
    assert "file " + REPLACED in opened


def _as_an_old_database_holds_them(fake: FakeContextQ, acme: Tenant, session_id: int) -> None:
    """Put the lone surrogates back into the stored rows, through the store interface, as a
    database written before the edge rule (or by plain SQL) may hold them."""

    def raw(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(REPLACED, LONE)
        if isinstance(value, dict):
            return {raw(k): raw(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(raw(v) for v in value)
        return value

    store = fake.store
    contexts = fake.contexts(acme)
    with store.transaction():
        for c in contexts:
            store.put_context(
                replace(c, title=raw(c.title), content=raw(c.content), tags=raw(c.tags),
                        metadata=raw(c.metadata))
            )  # fmt: skip
        session = store.session(acme.id, session_id)
        assert session is not None
        store.put_session(
            replace(session, summary=raw(session.summary), metadata=raw(session.metadata))
        )
        for task in store.tasks(session_id):
            store.put_task(replace(task, title=raw(task.title), key=raw(task.key)))
        for lesson in store.lessons(acme.id):
            store.put_lesson(replace(lesson, text=raw(lesson.text)))
        last = store.last_checkpoint(session_id)
        assert last is not None
        store.put_checkpoint(
            replace(last, id=store.next_id("agent_checkpoint"), seq=last.seq + 1,
                    state=raw(last.state), summary=raw(last.summary))
        )  # fmt: skip


def test_a_lone_surrogate_in_a_journaled_body_shows_as_u_fffd(
    fake: FakeContextQ, acme: Tenant, ui: httpx2.Client
) -> None:
    key = fake.mint_key(acme, wire.SCOPES)
    with fake.client(key) as client:
        made = client.post("/api/contexts", content=ESCAPED_BODY, headers=JSON)
        assert made.status_code == 201
    with fake.client() as anonymous:
        assert (
            anonymous.post("/api/contexts", content=ESCAPED_BODY, headers=JSON).status_code == 401
        )
    journal = shown(ui.get(PREFIX + "/journal"))
    assert "POST /api/contexts" in journal
    for number in (1, 2):
        detail = shown(ui.get(f"{PREFIX}/journal/{number}"))
        assert f'"title": "{REPLACED} escaped"' in detail
        assert f'"content": "c {REPLACED}"' in detail
    stored = shown(ui.get(f"{PREFIX}/tenants/{acme.id}/contexts/{made.json()['id']}"))
    assert f"{REPLACED} escaped" in stored  # stored as sent, or already replaced
    entries = ui.get("/_fake/journal")
    assert entries.status_code == 200
    assert [e["request_body"] for e in entries.json()["entries"]] == [ESCAPED_BODY.decode()] * 2


def test_the_live_journal_follows_a_request_with_a_lone_surrogate(
    fake: FakeContextQ, acme: Tenant
) -> None:
    key = fake.mint_key(acme, wire.SCOPES)
    served = fake.serve(control_token=TOKEN)
    lines: list[str] = []
    following = threading.Event()

    def follow() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with (
            httpx2.Client(base_url=served.url, headers=headers, timeout=30) as c,
            c.stream("GET", PREFIX + "/journal/events") as stream,
        ):
            assert stream.status_code == 200
            for line in stream.iter_lines():
                following.set()
                lines.append(line)

    reader = threading.Thread(target=follow)
    reader.start()
    try:
        assert following.wait(10)
        with httpx2.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as c:
            assert c.post("/api/contexts", content=ESCAPED_BODY, headers=JSON).status_code == 201
            page = c.get(f"{PREFIX}/journal/1", headers={"Authorization": f"Bearer {TOKEN}"})
            assert f'"title": "{REPLACED} escaped"' in html.unescape(page.text)
        deadline = time.monotonic() + 10
        while not any(line.startswith("data:") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        served.stop()
        reader.join(10)
    [data] = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert (data["number"], data["target"], data["status"]) == (1, "/api/contexts", "201")


def nested(depth: int, inner: str = "0") -> bytes:
    return ("[" * depth + inner + "]" * depth).encode()


def test_a_body_too_deep_to_parse_is_journaled_as_received_with_a_note(
    fake: FakeContextQ, acme: Tenant, ui: httpx2.Client
) -> None:
    body = nested(DEEP)
    with fake.client() as anonymous:
        assert anonymous.post("/api/contexts", content=body, headers=JSON).status_code == 401
    with fake.client(fake.mint_key(acme, wire.SCOPES)) as client:
        assert client.post("/api/contexts", content=body, headers=JSON).status_code == 400
        just_over = nested(SHOWN_DEPTH + 1)  # parses, but deeper than the page indents
        assert client.post("/api/contexts", content=just_over, headers=JSON).status_code == 400
    entries = ui.get("/_fake/journal")
    assert entries.status_code == 200
    kept = [e["request_body"] for e in entries.json()["entries"]]
    assert kept == [body.decode(), body.decode(), just_over.decode()]
    assert shown(ui.get(PREFIX + "/journal")).count("POST /api/contexts") == 3
    note = _msgs.JSON_SHOWN_TOO_DEEP.format(depth=SHOWN_DEPTH)
    for number, sent in ((1, body), (2, body), (3, just_over)):
        page = ui.get(f"{PREFIX}/journal/{number}")
        detail = shown(page)
        assert note in detail
        request_body = re.search(r'<pre id="request-body">(.*?)</pre>', page.text, re.S)
        assert request_body and html.unescape(request_body.group(1)) == sent.decode()


def test_a_body_too_long_once_indented_is_shown_as_received_with_a_note(
    fake: FakeContextQ, acme: Tenant, ui: httpx2.Client
) -> None:
    # 40 levels over 6,000 numbers: 24 kB as sent, a megabyte of indentation once indented
    body = nested(40, ",".join(["0"] * 6000))
    with fake.client(fake.mint_key(acme, wire.SCOPES)) as client:
        assert client.post("/api/contexts", content=body, headers=JSON).status_code == 400
    page = ui.get(PREFIX + "/journal/1")
    assert _msgs.JSON_SHOWN_TOO_LONG.format(chars=SHOWN_CHARS) in shown(page)
    assert len(page.text) < 2 * len(body) + 10_000


def test_stored_json_too_deep_to_indent_is_shown_on_one_line_with_a_note(
    fake: FakeContextQ, acme: Tenant, ui: httpx2.Client
) -> None:
    me = Principal(acme.id, wire.SCOPES, "test")
    deep: object = "bottom"
    for _ in range(SHOWN_DEPTH + 20):  # deeper than any request may bring: an old database
        deep = [deep]
    made = fake.backend.create_context(me, {"type": "reference", "title": "t", "content": "c"})
    session = fake.backend.agent.start_session(me, {})
    fake.backend.agent.checkpoint(me, session.id, {"seq": 1, "state": {}})
    with fake.store.transaction():
        fake.store.put_context(replace(made, metadata={"d": deep}))
        fake.store.put_session(replace(session, metadata={"d": deep}))
        last = fake.store.last_checkpoint(session.id)
        assert last is not None
        fake.store.put_checkpoint(
            replace(last, id=fake.store.next_id("agent_checkpoint"), seq=2, state={"d": deep})
        )
    note = _msgs.JSON_SHOWN_TOO_DEEP.format(depth=SHOWN_DEPTH)
    context = shown(ui.get(f"{PREFIX}/tenants/{acme.id}/contexts/{made.id}"))
    assert note in context and '{"d": ' + "[" * (SHOWN_DEPTH + 20) + '"bottom"' in context
    assert shown(ui.get(f"{PREFIX}/tenants/{acme.id}/agent")).count(note) == 2
