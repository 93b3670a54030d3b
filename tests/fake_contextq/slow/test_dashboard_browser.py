"""The dashboard in a real browser (headless Chromium): opened from the printed URL,
showing what the API stored and the tree the memory tool shows, following the journal
without a reload, showing hostile text as text, changing state through its forms and
through no page of another port; and the server's root page. Most tests leave a
screenshot under ``artifacts/screenshots/``."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx2
import pytest
from playwright.sync_api import BrowserContext, Dialog, Page, Response, expect
from starlette.responses import HTMLResponse

from adapter import ContextQMemoryTool, wire
from fake_contextq import FakeContextQ, ServedFake, Tenant
from fake_contextq.http._io import Receive, Scope, Send
from fake_contextq.http.dashboard import PREFIX, dashboard_url
from fake_server import ServedApp
from tests.support.browser import shoot
from tests.support.helpers import checkpoint, context_body, ok, start

pytestmark = pytest.mark.xdist_group("chromium")  # one Chromium at a time, see conftest

TOKEN = "fkc_browser-test-token"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'


@pytest.fixture
def served(fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve(control_token=TOKEN) as running:
        yield running


@pytest.fixture
def acme(fake: FakeContextQ) -> Tenant:
    tenant = fake.create_tenant("acme")
    fake.create_workspace(tenant, "notes")
    return tenant


@pytest.fixture
def api(fake: FakeContextQ, acme: Tenant, served: ServedFake) -> Iterator[httpx2.Client]:
    """acme's client of the served fake, over a real socket."""
    key = fake.mint_key(acme, wire.SCOPES)
    with httpx2.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as c:
        yield c


def open_dashboard(page: Page, served: ServedFake, path: str = "") -> None:
    """Open the printed URL (the token once), then ``path``."""
    page.goto(dashboard_url(served.url, TOKEN))
    if path:
        page.goto(served.url + PREFIX + path)


def test_the_printed_url_opens_it_and_the_token_leaves_the_address_bar(
    page: Page, served: ServedFake, acme: Tenant
) -> None:
    page.goto(dashboard_url(served.url, TOKEN))
    assert page.url == served.url + PREFIX
    expect(page.locator("#tenants")).to_contain_text("acme")
    expect(page.locator("#audit-status")).to_have_text("verified, 0 row(s)")
    page.get_by_role("link", name="Journal").click()
    expect(page.locator("h1")).to_have_text("Request journal")  # the cookie, not the URL
    shoot(page, "dashboard-tenants")


def test_a_url_without_the_token_is_refused(
    browser_context: BrowserContext, served: ServedFake
) -> None:
    page = browser_context.new_page()
    answer = page.goto(served.url + PREFIX)
    assert answer is not None and answer.status == 401
    expect(page.locator("h1")).to_have_text("This dashboard needs the control token")
    answer = page.goto(served.url + PREFIX + "?token=fkc_guessed")
    assert answer is not None and answer.status == 401
    shoot(page, "dashboard-refused")


def test_contexts_created_through_the_api_appear_searchable_and_open(
    page: Page, served: ServedFake, acme: Tenant, api: httpx2.Client
) -> None:
    for title, content in (("Deploy checklist", "run the migrations"), ("Prefs", "Likes Go")):
        ok(api.post("/api/contexts", json=context_body(title=title, content=content)), 201)
    open_dashboard(page, served, f"/tenants/{acme.id}")
    rows = page.locator("#contexts tbody tr")
    expect(rows).to_have_count(2)
    page.get_by_label("search contexts").fill("migrations")
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Deploy checklist")
    page.get_by_role("link", name="show all").click()
    page.get_by_role("link", name="title").click()
    expect(rows.first).to_contain_text("Deploy checklist")
    page.get_by_role("link", name="title").click()  # again: descending
    expect(rows.first).to_contain_text("Prefs")
    page.get_by_role("link", name="Prefs").click()
    expect(page.locator("#content")).to_have_text("Likes Go")
    shoot(page, "dashboard-context")


def test_the_memory_tree_is_what_the_memory_tools_view_prints(
    page: Page, served: ServedFake, fake: FakeContextQ, acme: Tenant
) -> None:
    tool = ContextQMemoryTool(
        fake.mint_key(acme, wire.SCOPES), http_client=fake.client(), workspace="notes"
    )
    for path, text in {
        "/memories/prefs.md": "Prefers TypeScript.\n",
        "/memories/projects/api.md": "Endpoints:\n" + "- GET /items\n" * 200,
        "/memories/projects/web/ui.md": "Dark mode.\n",
        "/memories/projects/web/deep/er.md": "x",
    }.items():
        tool.call({"command": "create", "path": path, "file_text": text})
    printed = tool.call({"command": "view", "path": "/memories"}).splitlines()[1:]

    open_dashboard(page, served, f"/tenants/{acme.id}/memory")
    entries = page.locator('.tree[data-workspace="notes"] li')
    drawn = [
        (
            int(e.get_attribute("data-depth") or 0),
            e.get_attribute("data-path"),
            e.get_attribute("data-size"),
        )
        for e in entries.all()
    ]
    assert [f"{size}\t{path}" for depth, path, size in drawn if depth <= 2] == printed
    assert (4, "/memories/projects/web/deep/er.md", "1B") in drawn  # every level, not two
    page.get_by_role("link", name="ui.md").click()
    expect(page.locator("#file-content")).to_have_text("Dark mode.\n")
    expect(page.locator("#file h2")).to_have_text("notes: /memories/projects/web/ui.md")
    shoot(page, "dashboard-memory")


def test_a_request_made_after_the_page_loaded_appears_without_a_reload(
    page: Page, served: ServedFake, api: httpx2.Client
) -> None:
    api.get("/api/contexts")
    open_dashboard(page, served, "/journal")
    expect(page.locator("#journal tbody tr")).to_have_count(1)
    page.evaluate("window.loadedOnce = true")
    expect(page.locator("#live")).to_have_class(re.compile(r"\bok\b"))  # the stream is open
    api.post("/api/contexts", json=context_body(title="Live"))
    api.get("/api/contexts/999")
    fresh = page.locator('#journal tbody tr[data-number="3"]')
    expect(fresh).to_contain_text("/api/contexts/999")
    expect(fresh).to_contain_text("404")
    expect(page.locator("#journal tbody tr")).to_have_count(3)
    assert page.evaluate("window.loadedOnce") is True  # the same page: no reload
    shoot(page, "dashboard-journal")
    fresh.get_by_role("link", name="3").click()
    expect(page.locator("#response-body")).to_contain_text('"error": "not_found"')
    shoot(page, "dashboard-request")


def test_the_live_journal_keeps_to_the_filter(
    page: Page, served: ServedFake, api: httpx2.Client
) -> None:
    open_dashboard(page, served, "/journal?status=4xx")
    expect(page.locator("#live")).to_have_class(re.compile(r"\bok\b"))
    api.get("/api/contexts")
    api.get("/api/contexts/5")
    expect(page.locator('#journal tbody tr[data-number="2"]')).to_be_visible()
    expect(page.locator("#journal tbody tr")).to_have_count(1)


def test_hostile_text_is_shown_as_text_and_never_runs(
    page: Page, served: ServedFake, acme: Tenant, api: httpx2.Client
) -> None:
    dialogs: list[str] = []

    def noted(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", noted)
    made = ok(api.post("/api/contexts", json=context_body(title=HOSTILE, content=HOSTILE)), 201)
    open_dashboard(page, served, "/journal")
    expect(page.locator("#live")).to_have_class(re.compile(r"\bok\b"))
    api.get("/api/contexts/by-external/" + HOSTILE.replace("/", "%2F"))  # arrives live
    expect(page.locator("#journal tbody tr")).to_have_count(2)
    expect(page.locator("#journal tbody tr").first).to_contain_text("<script>window.pwned")
    page.goto(f"{served.url}{PREFIX}/tenants/{acme.id}")
    expect(page.locator("#contexts tbody tr").first).to_contain_text(HOSTILE)
    page.goto(f"{served.url}{PREFIX}/tenants/{acme.id}/contexts/{made['id']}")
    expect(page.locator("#context h2")).to_have_text(HOSTILE)
    expect(page.locator("#content")).to_have_text(HOSTILE)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.locator("#context img").count() == 0
    assert dialogs == []
    shoot(page, "dashboard-hostile")


def test_the_fault_form_injects_and_the_reset_form_forgets(
    page: Page, served: ServedFake, fake: FakeContextQ, api: httpx2.Client
) -> None:
    open_dashboard(page, served, "/faults")
    form = page.locator("#inject-fault")
    form.get_by_label("method").fill("GET")
    form.get_by_label("path (glob)").fill("/api/contexts*")
    form.get_by_label("status").fill("503")
    form.get_by_label("times").fill("1")
    form.get_by_role("button", name="Inject").click()
    expect(page.locator(".notice")).to_have_text("fault injected: GET /api/contexts*")
    expect(page.locator("#faults tbody tr")).to_contain_text("/api/contexts*")
    assert api.get("/api/contexts").status_code == 503
    page.reload()
    expect(page.locator("#faults tbody")).to_contain_text("No fault active.")  # used up
    form.get_by_label("path (glob)").fill("/api/*")
    form.get_by_label("status").fill("42")
    form.get_by_role("button", name="Inject").click()
    expect(page.locator(".problems")).to_contain_text("status: Must be an integer between")
    shoot(page, "dashboard-faults")

    def accept(dialog: Dialog) -> None:
        assert "Forget every tenant" in dialog.message
        dialog.accept()

    page.once("dialog", accept)
    page.get_by_role("button", name="Forget everything").click()
    expect(page.locator(".notice")).to_contain_text("everything forgotten")
    expect(page.locator("#tenants")).to_contain_text("No tenant yet.")
    assert fake.tenants() == []


def test_agent_sessions_show_their_lineage_and_checkpoints(
    page: Page, served: ServedFake, acme: Tenant, api: httpx2.Client
) -> None:
    first = start(api, workspace="notes")["id"]
    ok(checkpoint(api, first, 1, {"step": "plan"}, summary="planned"), 201)
    second = start(api, workspace="notes", parent_session_id=first)["id"]
    open_dashboard(page, served, f"/tenants/{acme.id}/agent")
    session = page.locator(f'[data-session="{second}"]')
    expect(session).to_contain_text(f"resumes session {first}")
    session.get_by_role("link", name=f"session {first}").click()
    assert page.url.endswith(f"#session-{first}")
    expect(page.locator(f'[data-session="{first}"] .checkpoints')).to_contain_text("planned")
    shoot(page, "dashboard-agent")


#: A page of another port of this host, once the user has opened the dashboard: it posts
#: the dashboard's reset and fault forms (into frames, so both go) and the same again with
#: fetch, guessing the form token. The browser sends the dashboard's cookie with each.
ATTACK = """<!doctype html>
<title>an innocent page</title>
<iframe name="one"></iframe><iframe name="two"></iframe>
<form id="reset" method="post" action="{ui}/reset" target="one">
  <input name="form_token" value="guessed">
</form>
<form id="fault" method="post" action="{ui}/faults" target="two">
  <input name="method" value="*"><input name="path" value="/api/*">
  <input name="status" value="503"><input name="times" value="">
  <input name="form_token" value="guessed">
</form>
<script>
document.getElementById("reset").submit();
document.getElementById("fault").submit();
const fault = new URLSearchParams({{method: "*", path: "/api/*", status: "503", times: ""}});
const sent = {{method: "POST", mode: "no-cors", credentials: "include"}};
fetch("{ui}/faults", {{...sent, body: fault}});
fetch("{ui}/reset", sent);
</script>
"""


def attacker(page_html: str) -> ServedApp:
    """A server of its own, on another port of 127.0.0.1, serving ``page_html`` at /."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await HTMLResponse(page_html)(scope, receive, send)

    return ServedApp(app, "127.0.0.1", 0, name="attacker")


def test_a_page_on_another_port_cannot_reset_or_fault_the_fake_through_the_dashboard(
    page: Page, served: ServedFake, fake: FakeContextQ, acme: Tenant, api: httpx2.Client
) -> None:
    open_dashboard(page, served, "/faults")  # the user opened it: the cookie is set
    expect(page.locator("#inject-fault")).to_be_visible()
    posted: list[Response] = []

    def note(answer: Response) -> None:
        if answer.request.method == "POST" and answer.url.startswith(served.url + PREFIX):
            posted.append(answer)

    page.on("response", note)
    with attacker(ATTACK.format(ui=served.url + PREFIX)) as evil:
        evil.start()
        assert evil.port != served.port
        page.goto(evil.url + "/")
        deadline = time.monotonic() + 10
        while len(posted) < 4 and time.monotonic() < deadline:
            page.wait_for_timeout(50)
    assert len(posted) == 4  # each form and each fetch reached the dashboard
    for answer in posted:
        assert answer.status == 403, (answer.url, answer.status)
    assert [t.id for t in fake.tenants()] == [acme.id]  # not reset
    assert fake.faults.active() == []  # not faulted
    assert api.get("/api/contexts").status_code == 200
    open_dashboard(page, served)  # and the user's own dashboard still works
    expect(page.locator("#tenants")).to_contain_text("acme")


def test_the_printed_server_url_shows_what_is_served_and_says_it_is_the_fake(
    page: Page, served: ServedFake
) -> None:
    page.goto(served.url)
    expect(page.locator("#note")).to_contain_text("not ContextQ")
    expect(page.locator("#mcp")).to_contain_text(served.mcp_url)
    page.get_by_role("link", name=served.url + PREFIX).click()
    expect(page.locator("h1")).to_have_text("This dashboard needs the control token")
    shoot(page, "root-page")
