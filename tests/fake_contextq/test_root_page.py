"""The served fake's root page: the URL the server prints answers with what it serves (the
REST API, ``/mcp``, the OpenAPI document, the dashboard with ``--control``), as JSON, or
as HTML for a browser, saying it is the fake; never the control token. It is the fake's
own page: not journaled, not faulted, and not there in-process, where ``/`` is ContextQ's
404."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import httpx2
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, ServedFake, __version__
from fake_contextq.http.dashboard import PREFIX
from fake_contextq.http.transport import InProcessTransport

TOKEN = "fkc_root-page-token"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture(params=[False, True], ids=["plain", "control"])
def served(request: pytest.FixtureRequest, fake: FakeContextQ) -> Iterator[ServedFake]:
    with fake.serve(control_token=TOKEN if request.param else None) as running:
        yield running


def test_the_printed_url_lists_what_the_server_serves_as_json(
    served: ServedFake, fake: FakeContextQ
) -> None:
    with httpx2.Client(base_url=served.url) as anyone:
        answer = anyone.get("/")
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/json"
        listed = answer.json()
        expected = {
            "server": "fake-contextq",
            "version": __version__,
            "fake": True,
            "api": served.url + "/api",
            "mcp": served.mcp_url,
            "openapi": served.url + "/openapi.json",
        }
        if served.control_token is not None:
            expected["dashboard"] = served.url + PREFIX
        assert {k: v for k, v in listed.items() if k != "note"} == expected
        assert "not ContextQ" in listed["note"] and "fake-contextq" in listed["note"]
        assert TOKEN not in answer.text
        # each listed URL is served
        assert "paths" in anyone.get(listed["openapi"]).json()
        assert anyone.get(listed["api"] + "/contexts").status_code == 401
        assert anyone.post(listed["mcp"], json={}).status_code == 401
        if "dashboard" in listed:
            assert anyone.get(listed["dashboard"]).status_code == 401  # no token, no page


def test_a_browser_gets_an_escaped_page_saying_it_is_the_fake(served: ServedFake) -> None:
    answer = httpx2.get(served.url + "/", headers=BROWSER)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["vary"].lower() == "accept"
    page = answer.text
    assert "<script" not in page and TOKEN not in page
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert f"fake-contextq {__version__}" in text and "not ContextQ" in text
    links = re.findall(r'href="([^"]+)"', page)
    expected = [served.url + "/openapi.json"]
    if served.control_token is not None:
        expected.append(served.url + PREFIX)
    assert links == ["data:,", *expected]
    assert served.mcp_url in text and served.url + "/api" in text


def test_head_answers_without_a_body(served: ServedFake) -> None:
    answer = httpx2.head(served.url + "/")
    assert answer.status_code == 200 and answer.content == b""
    assert answer.headers["content-type"] == "application/json"


def test_the_root_page_is_neither_journaled_nor_faulted(
    served: ServedFake, fake: FakeContextQ
) -> None:
    fake.faults.inject("*", "/*", status=503, times=None)  # every path
    assert httpx2.get(served.url + "/").status_code == 200
    assert httpx2.get(served.url + "/", headers=BROWSER).status_code == 200
    assert len(fake.journal) == 0
    # a POST to / is no root page: ContextQ's router, journaled and faulted as any route
    assert httpx2.post(served.url + "/").status_code == 503
    fake.faults.clear()
    refused = httpx2.post(served.url + "/")
    assert refused.status_code == wire.UNKNOWN_ROUTE_STATUS
    assert refused.json()["error"] == "not_found"
    assert [(e.method, e.path) for e in fake.journal] == [("POST", "/"), ("POST", "/")]


def test_in_process_the_root_is_contextqs_404(fake: FakeContextQ) -> None:
    with fake.client() as client:
        for method in ("GET", "HEAD"):
            answer = client.request(method, "/")
            assert answer.status_code == wire.UNKNOWN_ROUTE_STATUS
        assert client.get("/", headers=BROWSER).json()["error"] == "not_found"
    app = fake.control_app(TOKEN)
    with httpx2.Client(transport=InProcessTransport(app), base_url="http://x") as control:
        assert control.get("/").status_code == wire.UNKNOWN_ROUTE_STATUS
