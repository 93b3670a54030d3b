"""The served fake's dashboard over HTTP: who may see it, what each page shows, that
everything from a request is escaped, that the forms change what the control routes
change, and that the live journal is pushed and ends with the server. On every store.
(``test_dashboard_browser.py`` drives the same pages in Chromium.)"""

from __future__ import annotations

import html
import json
import re
import threading
import time
from collections.abc import Callable, Iterator

import httpx2
import pytest

from adapter import ContextQMemoryTool, wire
from fake_contextq import FakeContextQ, Tenant
from fake_contextq.http.dashboard import COOKIE, PREFIX, cookie_value, dashboard_url
from fake_contextq.http.transport import InProcessTransport
from tests.support.helpers import checkpoint, context_body, lesson, ok, start, upsert

pytestmark = pytest.mark.all_stores

TOKEN = "fkc_dashboard-test-token"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture
def ui(fake: FakeContextQ) -> Iterator[httpx2.Client]:
    """A client of the control app in-process, holding the dashboard's token."""
    app = fake.control_app(TOKEN)
    with httpx2.Client(
        transport=InProcessTransport(app),
        base_url="http://contextq.test",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as client:
        yield client


@pytest.fixture
def acme(fake: FakeContextQ) -> Tenant:
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "notes")
    return tenant


@pytest.fixture
def acme_client(fake: FakeContextQ, acme: Tenant) -> Iterator[httpx2.Client]:
    with fake.client(fake.mint_key(acme, wire.SCOPES)) as client:
        yield client


def text_of(page: str) -> str:
    """The page's visible text, roughly: tags out, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# ----- who may look -----


def test_without_the_token_every_page_is_a_401_naming_the_url_to_open(fake: FakeContextQ) -> None:
    app = fake.control_app(TOKEN)
    with httpx2.Client(transport=InProcessTransport(app), base_url="http://x") as anonymous:
        pages = ("", "/journal", "/journal/events", "/faults", "/tenants/1", "/static/dashboard.js")
        for path in pages:
            page = anonymous.get(PREFIX + path)
            assert page.status_code == 401, path
            assert "open the dashboard URL the server printed" in page.text
        wrong = anonymous.get(PREFIX, params={"token": "fkc_not-it"})
        assert wrong.status_code == 401
        assert "is not the server's control token" in text_of(wrong.text)
        key = anonymous.get(
            PREFIX, headers={"Authorization": f"Bearer {fake.mint_key(fake.create_tenant())}"}
        )
        assert key.status_code == 401  # an API key is no control token
        assert anonymous.post(PREFIX + "/reset").status_code == 401
        assert (
            anonymous.post(PREFIX + "/faults", data={"method": "*", "path": "/x"}).status_code
            == 401
        )


def test_the_token_in_the_url_becomes_a_cookie_for_this_path_and_leaves_the_url(
    fake: FakeContextQ,
) -> None:
    app = fake.control_app(TOKEN)
    with httpx2.Client(transport=InProcessTransport(app), base_url="http://x") as browser:
        opened = browser.get(PREFIX, params={"token": TOKEN})
        assert opened.status_code == 303 and opened.headers["location"] == PREFIX
        cookie = opened.headers["set-cookie"]
        assert f"{COOKIE}={cookie_value(TOKEN)}" in cookie
        assert "Path=/_fake/ui" in cookie and "HttpOnly" in cookie
        assert "samesite=strict" in cookie.lower()
        assert TOKEN not in cookie  # the cookie does not carry the control token itself
        browser.cookies.set(COOKIE, cookie_value(TOKEN))
        assert browser.get(PREFIX).status_code == 200
        assert browser.get(PREFIX + "/journal").status_code == 200
        browser.cookies.set(COOKIE, cookie_value("fkc_other"))
        assert browser.get(PREFIX).status_code == 401


def test_without_control_there_is_no_dashboard(fake: FakeContextQ) -> None:
    with fake.client() as plain:
        assert plain.get(PREFIX).status_code == 404
        assert plain.get(PREFIX, params={"token": TOKEN}).status_code == 404


def test_the_printed_url_opens_it_once() -> None:
    assert dashboard_url("http://127.0.0.1:38200", "fkc_a b") == (
        "http://127.0.0.1:38200/_fake/ui?token=fkc_a+b"
    )


def test_pages_forbid_inline_script_and_foreign_loads(ui: httpx2.Client) -> None:
    page = ui.get(PREFIX)
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'self'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r"<script[^>]*>", page.text)
    assert scripts == ['<script src="/_fake/ui/static/dashboard.js" defer>']  # none inline
    assert not re.search(r'(src|href)="(https?:)?//', page.text)  # nothing from elsewhere


# ----- what it shows -----


def test_tenants_show_their_plan_and_quota_use(
    ui: httpx2.Client, fake: FakeContextQ, acme: Tenant, acme_client: httpx2.Client
) -> None:
    for i in range(3):
        ok(acme_client.post("/api/contexts", json=context_body(title=f"n{i}")), 201)
    big = fake.create_tenant("big", plan="enterprise")
    page = text_of(ui.get(PREFIX).text)
    assert f"{acme.id} acme free 3 / 100 (3%) 1 1" in page
    assert f"{big.id} big enterprise 0 (no limit) 0 0" in page
    assert "audit chain verified, 3 row(s)" in page


def test_a_full_tenant_is_marked(ui: httpx2.Client, fake: FakeContextQ, acme: Tenant) -> None:
    fake.fill(acme)
    assert f'<tr data-tenant="{acme.id}" class="full">' in ui.get(PREFIX).text


def test_contexts_are_searchable_and_sortable_and_each_opens(
    ui: httpx2.Client, acme: Tenant, acme_client: httpx2.Client
) -> None:
    made = [
        ok(acme_client.post("/api/contexts", json=context_body(title=t, content=c, tags=g)), 201)
        for t, c, g in (
            ("Beta plan", "ship on tuesday", ["ops"]),
            ("alpha notes", "nothing to ship", []),
            ("Gamma", "unrelated", ["ship-it"]),
        )
    ]

    def ids(**params: str) -> list[int]:
        page = ui.get(f"{PREFIX}/tenants/{acme.id}", params=params).text
        return [int(n) for n in re.findall(r'<tr data-context="(\d+)">', page)]

    assert ids() == [c["id"] for c in made]
    assert ids(sort="title") == [made[1]["id"], made[0]["id"], made[2]["id"]]
    assert ids(sort="title", order="desc") == [made[2]["id"], made[0]["id"], made[1]["id"]]
    assert ids(q="ship") == [c["id"] for c in made]  # content, and a tag
    assert ids(q="ship tuesday") == [made[0]["id"]]  # every word
    assert ids(q="SHIP-IT") == [made[2]["id"]]
    detail = ui.get(f"{PREFIX}/tenants/{acme.id}/contexts/{made[0]['id']}")
    assert detail.status_code == 200
    shown = text_of(detail.text)
    assert "ship on tuesday" in shown and "ops" in shown
    assert '"bytes"' not in shown  # metadata is the row's, here empty


def test_a_context_page_shows_external_id_tags_and_metadata(
    ui: httpx2.Client, acme: Tenant, acme_client: httpx2.Client
) -> None:
    body = context_body(externalId="ext-1", tags=["a", "b"], metadata={"source": "unit", "n": 2})
    made = ok(acme_client.post("/api/contexts", json=body), 201)
    page = ui.get(f"{PREFIX}/tenants/{acme.id}/contexts/{made['id']}").text
    assert '<dd class="mono" id="external-id">ext-1</dd>' in page
    assert '<span class="tag">a</span><span class="tag">b</span>' in page
    metadata = re.search(r'<pre id="metadata">(.*?)</pre>', page, re.S)
    assert metadata and json.loads(html.unescape(metadata.group(1))) == {"source": "unit", "n": 2}


def test_the_memory_view_is_the_tree_the_tool_shows(
    ui: httpx2.Client, fake: FakeContextQ, acme: Tenant
) -> None:
    key = fake.mint_key(acme, wire.SCOPES)
    tool = ContextQMemoryTool(key, http_client=fake.client(), workspace="notes")
    files = {
        "/memories/prefs.md": "Likes Go.\n",
        "/memories/projects/api.md": "x" * 3000,
        "/memories/projects/deep/er/still.md": "deep\n",
    }
    for path, text in files.items():
        tool.call({"command": "create", "path": path, "file_text": text})
    listed = tool.call({"command": "view", "path": "/memories"}).splitlines()[1:]
    page = ui.get(f"{PREFIX}/tenants/{acme.id}/memory").text
    drawn = re.findall(r'data-depth="(\d+)" data-path="([^"]+)" data-size="([^"]+)"', page)
    # the tool lists two levels; the dashboard draws every level, and agrees on those two
    assert [f"{size}\t{path}" for depth, path, size in drawn if int(depth) <= 2] == listed
    assert ("4", "/memories/projects/deep/er/still.md", "5B") in drawn
    opened = fake.contexts(acme)[0]
    page = ui.get(f"{PREFIX}/tenants/{acme.id}/memory", params={"open": opened.id}).text
    content = re.search(r'<pre id="file-content">(.*?)</pre>', page, re.S)
    assert content and html.unescape(content.group(1)) == "Likes Go.\n"


def test_the_agent_memory_layer_shows_lineage_checkpoints_tasks_lessons_handoffs(
    ui: httpx2.Client, make_fake: Callable[..., FakeContextQ]
) -> None:
    fake = make_fake(llm=True)
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "ws")
    app = fake.control_app(TOKEN)
    with (
        fake.client(fake.mint_key(tenant, wire.SCOPES)) as c,
        httpx2.Client(
            transport=InProcessTransport(app),
            base_url="http://x",
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as view,
    ):
        first = start(c, workspace="ws")["id"]
        ok(checkpoint(c, first, 1, {"step": 1}, summary="planned"), 201)
        ok(checkpoint(c, first, 2, {"step": 2}, summary="applied"), 201)
        task = ok(upsert(c, first, "migrate", title="Migrate"), 201)["id"]
        ok(c.post(f"/api/agent/tasks/{task}/tick", json={"evidence": "all green"}))
        second = start(c, workspace="ws", parent_session_id=first)["id"]
        lesson(c, "Back up before migrating.", workspace="ws")
        ok(c.post("/api/agent/handoff", json={"session_id": second}), 201)
        page = text_of(view.get(f"{PREFIX}/tenants/{tenant.id}/agent").text)
    assert f"session {second}" in page and f"resumes session {first}" in page
    assert f"resumed by session {second}" in page
    assert re.search(r"1\s+planned.*2\s+applied", page, re.S)
    assert re.search(r"migrate\s+Migrate\s+verified\s+-\s+all green", page)
    assert "Back up before migrating." in page
    assert "handoff 1 · workspace ws" in page


def test_the_audit_page_says_verified_or_names_the_first_broken_row(
    ui: httpx2.Client, fake: FakeContextQ, acme_client: httpx2.Client, store_kind: str
) -> None:
    from tests.support.stores import tamper_audit

    for i in range(3):
        ok(acme_client.post("/api/contexts", json=context_body(title=f"n{i}")), 201)
    assert "Verified: 3 row(s)" in ui.get(PREFIX + "/audit").text
    tamper_audit(fake.store, 2, action="context.delete")
    page = ui.get(PREFIX + "/audit").text
    assert "Broken at row 2" in page and '<tr class="broken"><td>2</td>' in page


def test_the_journal_filters_and_each_request_opens_to_its_bodies(
    ui: httpx2.Client, fake: FakeContextQ, acme: Tenant, acme_client: httpx2.Client
) -> None:
    ok(acme_client.post("/api/contexts", json=context_body(title="Prefs")), 201)
    acme_client.get("/api/contexts/999")
    with fake.client() as anonymous:
        anonymous.get("/api/contexts")
    fake.faults.inject("GET", "/api/workspaces", status=503)
    acme_client.get("/api/workspaces")

    def rows(**params: str) -> list[int]:
        page = ui.get(PREFIX + "/journal", params=params).text
        return [int(n) for n in re.findall(r'<tr data-number="(\d+)"', page)]

    assert rows() == [4, 3, 2, 1]  # newest first
    assert rows(status="404") == [2]
    assert rows(status="4xx") == [3, 2]
    assert rows(route="POST /api/contexts") == [1]
    assert rows(tenant="-") == [4, 3]  # a fault answers before the key is read
    assert rows(tenant=str(acme.id)) == [2, 1]
    assert '<tr data-number="4" class="fault">' in ui.get(PREFIX + "/journal").text
    detail = text_of(ui.get(PREFIX + "/journal/1").text)
    assert '"title": "Prefs"' in detail and '"id": 1' in detail
    assert ui.get(PREFIX + "/journal/99").status_code == 404


def test_everything_from_a_request_is_shown_as_text(
    ui: httpx2.Client, fake: FakeContextQ, acme: Tenant, acme_client: httpx2.Client
) -> None:
    body = context_body(title=HOSTILE, content=HOSTILE, tags=["<b>t</b>"], externalId=HOSTILE)
    made = ok(acme_client.post("/api/contexts", json=body), 201)
    fake.create_workspace(acme, "safe")
    pages = [
        ui.get(f"{PREFIX}/tenants/{acme.id}").text,
        ui.get(f"{PREFIX}/tenants/{acme.id}/contexts/{made['id']}").text,
        ui.get(PREFIX + "/journal").text,
        ui.get(PREFIX + "/journal/1").text,
        ui.get(PREFIX + "/journal", params={"route": HOSTILE}).text,
        ui.get(f"{PREFIX}/tenants/{acme.id}", params={"q": HOSTILE}).text,
    ]
    for page in pages:
        assert "<script>window.pwned" not in page and "<img src=x" not in page
        assert "<b>t</b>" not in page
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in pages[1]


# ----- what it changes -----


def test_the_fault_form_injects_what_post_faults_injects(
    ui: httpx2.Client, fake: FakeContextQ, acme_client: httpx2.Client
) -> None:
    done = ui.post(
        PREFIX + "/faults",
        data={"method": "get", "path": "/api/contexts/*", "status": "503", "times": "2"},
    )
    assert done.status_code == 303 and "fault+injected" in done.headers["location"]
    [fault] = fake.faults.active()
    assert (fault.method, fault.path, fault.status, fault.times) == (
        "GET",
        "/api/contexts/*",
        503,
        2,
    )
    assert acme_client.get("/api/contexts/1").status_code == 503
    page = text_of(ui.get(PREFIX + "/faults").text)
    assert re.search(r"GET\s+/api/contexts/\*\s+503\s+-\s+no\s+1\s+1", page)
    ui.post(PREFIX + "/faults", data={"method": "*", "path": "/x", "drop": "true", "times": ""})
    assert fake.faults.active()[-1].drop and fake.faults.active()[-1].times is None
    assert ui.post(PREFIX + "/faults/clear").status_code == 303
    assert fake.faults.active() == []


@pytest.mark.parametrize(
    ("form", "said"),
    [
        ({"method": "GET", "path": "/x", "status": "99"}, "status: Must be an integer between"),
        ({"method": "GET", "path": "/x", "status": "abc"}, "status: "),
        ({"method": "", "path": "/x", "status": "500"}, "method: "),
        ({"method": "GET", "path": "/x", "delay": "-1"}, "delay"),
        # float() reads these as infinity, which no JSON answer (GET /_fake/faults) can hold
        ({"method": "GET", "path": "/x", "delay": "inf"}, "delay must be a finite number"),
        ({"method": "GET", "path": "/x", "delay": "1e400"}, "delay must be a finite number"),
        ({"method": "GET", "path": "/x", "status": "", "times": "1"}, "needs at least one of"),
    ],
)
def test_a_fault_that_makes_no_sense_is_refused_naming_the_field(
    ui: httpx2.Client, fake: FakeContextQ, form: dict[str, str], said: str
) -> None:
    refused = ui.post(PREFIX + "/faults", data=form)
    assert refused.status_code == 400
    problems = re.search(r'<div class="problems" role="alert">(.*?)</div>', refused.text, re.S)
    assert problems and said in html.unescape(problems.group(1))
    assert fake.faults.active() == []
    assert f'value="{html.escape(form["path"])}"' in refused.text  # the form keeps its input


def test_reset_forgets_everything(ui: httpx2.Client, fake: FakeContextQ, acme: Tenant) -> None:
    fake.faults.inject("*", "/x", status=500, times=None)
    done = ui.post(PREFIX + "/reset")
    assert done.status_code == 303
    assert fake.tenants() == [] and fake.faults.active() == [] and len(fake.journal) == 0


# ----- live -----


def test_the_live_journal_pushes_each_new_request_that_matches_and_ends_with_the_server(
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
            c.stream("GET", PREFIX + "/journal/events", params={"status": "4xx"}) as stream,
        ):
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                following.set()
                lines.append(line)

    reader = threading.Thread(target=follow)
    reader.start()
    try:
        assert following.wait(10)
        with httpx2.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as c:
            c.get("/api/contexts")
            c.get("/api/contexts/77")
        deadline = time.monotonic() + 10
        while not any(line.startswith("data:") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        served.stop()  # with the stream still open: it must end, not hold the server
        reader.join(10)
    assert not reader.is_alive()
    [data] = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert (data["number"], data["target"], data["status"]) == (2, "/api/contexts/77", "404")
    assert "id: 2" in lines and "event: request" in lines


def test_a_bounded_journal_says_how_many_were_served_beyond_those_kept() -> None:
    with FakeContextQ(journal_keep=2) as fake:
        with fake.client("sk_live_nope") as anonymous:
            for _ in range(5):
                anonymous.get("/api/contexts")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        transport = InProcessTransport(fake.control_app(TOKEN))
        with httpx2.Client(transport=transport, base_url="http://t", headers=headers) as ui:
            journal = text_of(ui.get(PREFIX + "/journal").text)
            tenants = text_of(ui.get(PREFIX).text)
    assert "showing the newest 2 of 2 request(s); 5 served, the others no longer kept" in journal
    assert "5 request(s) served" in tenants
