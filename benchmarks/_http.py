"""HTTP helpers the sections share: a status check that says what went wrong, and the
canned transport the in-process floors answer from."""

from __future__ import annotations

import httpx2

JSON_HEADERS = {"content-type": "application/json"}


def expect(response: httpx2.Response, status: int) -> httpx2.Response:
    if response.status_code != status:
        raise RuntimeError(
            f"{response.request.method} {response.request.url} answered "
            f"{response.status_code}, expected {status}: {response.text[:300]}"
        )
    return response


def canned_transport(responses: dict[tuple[str, str], tuple[int, bytes]]) -> httpx2.MockTransport:
    """A MockTransport answering (method, raw path) with a canned status and JSON body."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        path = request.url.raw_path.split(b"?", 1)[0].decode("ascii")
        status, body = responses[(request.method, path)]
        return httpx2.Response(status, content=body, headers=JSON_HEADERS)

    return httpx2.MockTransport(handler)
