"""The dashboard's forms change state only when sent from its own pages: a page of another
origin (another port of this host included, which ``SameSite=Strict`` counts as the same
site) is refused with a 403 saying why, whatever cookie its browser sends along, and a form
without the page's form token is refused too. On every store: a refused reset must leave
each store's state as it was. (``test_dashboard_browser.py`` drives the attack itself from
a page on another port, in Chromium.)"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx2
import pytest

from fake_contextq import FakeContextQ, Tenant
from fake_contextq.http.dashboard import COOKIE, FORM_TOKEN_FIELD, PREFIX, cookie_value, form_token
from fake_contextq.http.transport import InProcessTransport

pytestmark = pytest.mark.all_stores

TOKEN = "fkc_csrf-test-token"
OWN = "http://contextq.test"
#: Each form of the dashboard: its route and what it posts.
FORMS = {
    "reset": ("/reset", {}),
    "inject": ("/faults", {"method": "*", "path": "/api/*", "status": "503", "times": ""}),
    "clear": ("/faults/clear", {}),
}


@pytest.fixture
def browser(fake: FakeContextQ) -> Iterator[httpx2.Client]:
    """What a browser that opened the dashboard holds: its cookie, and no token header."""
    with httpx2.Client(
        transport=InProcessTransport(fake.control_app(TOKEN)), base_url=OWN
    ) as client:
        opened = client.get(PREFIX, params={"token": TOKEN})
        assert opened.status_code == 303
        client.cookies.set(COOKIE, cookie_value(TOKEN))
        yield client


@pytest.fixture
def state(fake: FakeContextQ) -> Tenant:
    """Something to lose: a tenant, and a fault to clear."""
    tenant = fake.create_tenant("acme")
    fake.faults.inject("GET", "/api/workspaces", status=500, times=None)
    return tenant


def page_token(browser: httpx2.Client) -> str:
    """The form token as a browser reads it off the faults page."""
    page = browser.get(PREFIX + "/faults").text
    found = re.findall(rf'name="{FORM_TOKEN_FIELD}" value="([^"]*)"', page)
    assert len(found) == 3 and len(set(found)) == 1  # every form carries it
    return html.unescape(found[0])


def unchanged(fake: FakeContextQ, tenant: Tenant) -> bool:
    [fault] = fake.faults.active()
    return [t.id for t in fake.tenants()] == [tenant.id] and fault.path == "/api/workspaces"


def refusal(answer: httpx2.Response) -> str:
    assert answer.status_code == 403, (answer.status_code, answer.text)
    assert answer.headers["content-type"].startswith("text/html")
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", answer.text)).split())
    assert "Refused: not sent from the dashboard's own page" in text
    assert "Nothing was changed" in text
    return text


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "http://contextq.test:8080",  # another port of the same host: the same site
        "https://contextq.test",
        "http://contextq.test.evil.example",
    ],
)
def test_a_form_sent_from_another_origin_is_refused_saying_why(
    browser: httpx2.Client, fake: FakeContextQ, state: Tenant, form: str, origin: str
) -> None:
    path, data = FORMS[form]
    data = {**data, FORM_TOKEN_FIELD: page_token(browser)}  # even with the right token
    text = refusal(browser.post(PREFIX + path, data=data, headers={"Origin": origin}))
    assert f"sent from {origin}, another origin than the dashboard's ({OWN})" in text
    assert unchanged(fake, state)


@pytest.mark.parametrize("site", ["same-site", "cross-site"])
@pytest.mark.parametrize("origin", [None, "null"])
def test_without_an_origin_the_browsers_sec_fetch_site_decides(
    browser: httpx2.Client, fake: FakeContextQ, state: Tenant, site: str, origin: str | None
) -> None:
    headers = {"Sec-Fetch-Site": site} | ({} if origin is None else {"Origin": origin})
    data = {FORM_TOKEN_FIELD: page_token(browser)}
    text = refusal(browser.post(PREFIX + "/reset", data=data, headers=headers))
    assert f"(Sec-Fetch-Site: {site})" in text
    assert unchanged(fake, state)


def test_a_null_origin_with_no_word_of_where_it_came_from_is_refused(
    browser: httpx2.Client, fake: FakeContextQ, state: Tenant
) -> None:
    data = {FORM_TOKEN_FIELD: page_token(browser)}
    text = refusal(browser.post(PREFIX + "/reset", data=data, headers={"Origin": "null"}))
    assert "sent from null" in text
    assert unchanged(fake, state)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("given", [None, "", "0" * 64, "forged\u00e9"])
def test_a_form_without_the_pages_form_token_is_refused(
    browser: httpx2.Client, fake: FakeContextQ, state: Tenant, form: str, given: str | None
) -> None:
    path, data = FORMS[form]
    if given is not None:
        data = {**data, FORM_TOKEN_FIELD: given}
    answer = browser.post(PREFIX + path, data=data, headers={"Origin": OWN})
    text = refusal(answer)
    said = "carried no dashboard form token" if given is None else "is not this server's"
    assert said in text and "Reload the dashboard page" in text
    assert unchanged(fake, state)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": OWN, "Sec-Fetch-Site": "same-origin"},
        # what Chromium sends for the pages' own forms (Referrer-Policy: no-referrer)
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
        {"Origin": OWN + ":80"},
        {},  # neither header (curl holding the cookie): the form token is enough
    ],
)
def test_a_form_from_the_dashboards_own_page_with_its_token_goes_through(
    browser: httpx2.Client, fake: FakeContextQ, state: Tenant, headers: dict[str, str]
) -> None:
    token = page_token(browser)
    assert token == form_token(TOKEN)
    path, data = FORMS["inject"]
    injected = browser.post(PREFIX + path, data={**data, FORM_TOKEN_FIELD: token}, headers=headers)
    assert injected.status_code == 303 and "fault+injected" in injected.headers["location"]
    assert [f.path for f in fake.faults.active()] == ["/api/workspaces", "/api/*"]
    cleared = browser.post(
        PREFIX + "/faults/clear", data={FORM_TOKEN_FIELD: token}, headers=headers
    )
    assert cleared.status_code == 303 and fake.faults.active() == []
    reset = browser.post(PREFIX + "/reset", data={FORM_TOKEN_FIELD: token}, headers=headers)
    assert reset.status_code == 303 and fake.tenants() == []


def test_a_script_with_the_token_in_its_header_needs_no_form_token_but_the_origin_counts(
    fake: FakeContextQ, state: Tenant
) -> None:
    with httpx2.Client(
        transport=InProcessTransport(fake.control_app(TOKEN)),
        base_url=OWN,
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as script:
        refusal(script.post(PREFIX + "/reset", headers={"Origin": "http://evil.example"}))
        assert unchanged(fake, state)
        assert script.post(PREFIX + "/faults/clear").status_code == 303
        assert fake.faults.active() == []


def test_the_form_token_is_bound_to_the_cookie_and_the_control_token() -> None:
    assert form_token(TOKEN) == form_token(TOKEN, cookie_value(TOKEN))
    assert form_token(TOKEN) != form_token("fkc_another-token")
    assert form_token(TOKEN) != form_token(TOKEN, cookie_value("fkc_another-token"))
    assert TOKEN not in form_token(TOKEN) and cookie_value(TOKEN) not in form_token(TOKEN)
