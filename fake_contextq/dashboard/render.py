"""The dashboard's pages from its templates: Jinja2 with autoescaping on, so everything
that came from a request (a context titled ``<script>``) is shown as text, never run;
and every page passes ``printable`` on its way out, so text no UTF-8 can hold (a lone
surrogate) is shown as U+FFFD instead of failing the page."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from fake_contextq.dashboard.model import shown_json

#: The static files the pages load (no CDN: the dashboard works offline).
STATIC = {
    "dashboard.css": "text/css",
    "dashboard.js": "text/javascript",
    # named in every page, so a browser never asks the fake for /favicon.ico (which the
    # journal would show as a request of the API)
    "favicon.svg": "image/svg+xml",
}

#: A UTF-16 surrogate code point: JSON text may carry one unpaired (``"\\ud800"``), and
#: Python keeps it in a str, but no UTF-8 can encode it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with each surrogate code point as U+FFFD, which is what Node (and so
    ContextQ) writes for a lone surrogate: a str from the stores, a journaled body or the
    in-process API can be sent as UTF-8 whatever it holds."""
    return _SURROGATE.sub("\ufffd", text)


def _when(value: datetime | float | str | None) -> str:
    """A moment as UTC with milliseconds (an audit row's is already text)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    moment = datetime.fromtimestamp(value, UTC) if isinstance(value, float) else value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


@functools.cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("fake_contextq.dashboard", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["shown_json"] = shown_json
    return env


def page(template: str, **values: Any) -> str:
    """A whole page: ``template`` rendered with ``values``, ready to be sent as UTF-8."""
    return printable(_environment().get_template(template).render(**values))


def static(name: str) -> bytes:
    """One of ``STATIC``'s files."""
    return resources.files("fake_contextq.dashboard").joinpath("static", name).read_bytes()
