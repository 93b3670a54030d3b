"""The in-process transport's translation of an httpx2 request into the service's: the
path is what httpx2 itself decodes (``url.path``), the raw path and query as sent, and the
headers as a served request's (names lower case, latin-1 values, the first of a name)."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fake_contextq import FakeContextQ
from fake_contextq.http.transport import service_request
from fake_contextq.service import Request

# escapes of any byte (invalid UTF-8 included), and the characters a path may hold as is
SEGMENT = st.lists(
    st.sampled_from(["%2F", "%25", "%C3%A9", "%FF", "%E2%82", "%00", "a", "Z", "-", "~", "."])
    # httpx2 refuses non-printable ASCII in a URL; it escapes any other character
    | st.text(
        st.characters(codec="utf-8", exclude_characters="/?#%", exclude_categories=["Cc"]),
        max_size=3,
    ),
    max_size=6,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(SEGMENT, min_size=1, max_size=4),
    query=st.none() | st.text(max_size=8),
)
def test_the_path_is_what_httpx2_decodes_and_the_raw_parts_are_as_sent(
    segments: list[str], query: str | None
) -> None:
    url = "http://contextq.test/" + "/".join(segments)
    if query is not None:
        url += "?" + quote(query, safe="=&")
    request = httpx2.Request("GET", url)
    got = service_request(request, b"")
    assert got.path == request.url.path
    raw = request.url.raw_path.decode("latin-1")
    assert got.raw_path == raw.split("?", 1)[0]
    assert got.query == request.url.query.decode("latin-1")


def test_headers_are_read_as_a_served_request_reads_them() -> None:
    request = httpx2.Request(
        "POST",
        "http://contextq.test/api/contexts",
        headers=[
            (b"X-Twice", b"first"),
            (b"Content-Type", b"application/json"),
            (b"x-twice", b"second"),
            (b"X-Latin", "caf\u00e9".encode("latin-1")),
        ],
        content=b"{}",
    )
    got = service_request(request, b"{}")
    assert got.headers["x-twice"] == "first"
    assert got.headers["x-latin"] == "caf\u00e9"
    assert got.headers["content-type"] == "application/json"
    assert got.headers == Request.header_map(request.headers.raw)
    assert set(got.headers) == {"x-twice", "x-latin", "content-type", "content-length", "host"}


def test_a_waiting_request_that_fails_before_it_waits_is_journaled() -> None:
    """An exchange that has taken its fault is journaled however it ends: here a request
    whose read timeout cannot be read (httpx2 always sets one; a hand-made request may
    not) fails before waiting out its fault's delay, and still leaves its entry."""
    fake = FakeContextQ()
    key = fake.mint_key(fake.create_tenant())
    fake.faults.inject("GET", "/api/contexts", delay=0.01)
    request = httpx2.Request(
        "GET",
        "http://contextq.test/api/contexts",
        headers={"authorization": f"Bearer {key}"},
        extensions={"timeout": None},
    )
    with pytest.raises(AttributeError):
        asyncio.run(fake.async_transport().handle_async_request(request))
    (entry,) = list(fake.journal)
    assert (entry.number, entry.path, entry.fault, entry.status) == (1, "/api/contexts", True, None)
    fake.close()
