"""An upstream's answer as the recording proxy passes it on: the status, the headers for
the client, then the body piece by piece as it arrives; from the proxy's own HTTP/1.1
client (``record.upstream``, plain ``http``) or from httpx2 (``https``, a proxied upstream)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final, Protocol

import httpx2

from fake_anthropic.record.upstream import Headers, UpstreamResponse

HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)
"""Headers that describe one hop, not the message: never forwarded either way (the
``content-length`` of a request is set again for its body; ``accept-encoding`` is
replaced by ``identity`` so an answer arrives readable for the recording)."""
HOP_BY_HOP_BYTES: Final = frozenset(h.encode("ascii") for h in HOP_BY_HOP)


class Answer(Protocol):
    """What the proxy needs of an answer whose head has arrived."""

    status: int
    headers: Headers
    """The headers to send on to the client (hop-by-hop ones left out)."""

    @property
    def done(self) -> bool:
        """Whether the body has been read to its end."""
        ...

    async def read(self) -> bytes:
        """The body's next piece (b"" once ``done``)."""
        ...

    async def aclose(self) -> None: ...


class PlainAnswer:
    """An answer from ``record.upstream``, its body passed on as it arrives."""

    __slots__ = ("_response", "headers", "status")

    def __init__(self, response: UpstreamResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers = [(k, v) for k, v in response.headers if k.lower() not in HOP_BY_HOP_BYTES]

    @property
    def done(self) -> bool:
        return self._response.done

    async def read(self) -> bytes:
        return await self._response.read()

    async def aclose(self) -> None:
        self._response.aclose()


class HttpxAnswer:
    """An answer from httpx2, its body passed on as httpx2 reads it."""

    __slots__ = ("_chunks", "_response", "done", "headers", "status")

    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self.status = response.status_code
        self.done = False
        self.headers = [
            (k.encode("latin-1"), v.encode("latin-1"))
            for k, v in response.headers.multi_items()
            if k.lower() not in HOP_BY_HOP
        ]

    async def read(self) -> bytes:
        try:
            return await anext(self._chunks)
        except StopAsyncIteration:
            self.done = True
            return b""

    async def aclose(self) -> None:
        await self._response.aclose()
