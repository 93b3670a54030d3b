"""The dashboard's pages from its templates: Jinja2 with autoescaping on, so everything
that came from a request (a context titled ``<script>``) is shown as text, never run."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

#: The static files the pages load (no CDN: the dashboard works offline).
STATIC = {
    "dashboard.css": "text/css",
    "dashboard.js": "text/javascript",
    # named in every page, so a browser never asks the fake for /favicon.ico (which the
    # journal would show as a request of the API)
    "favicon.svg": "image/svg+xml",
}


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
    return env


def page(template: str, **values: Any) -> str:
    """A whole page: ``template`` rendered with ``values``."""
    return _environment().get_template(template).render(**values)


def static(name: str) -> bytes:
    """One of ``STATIC``'s files."""
    return resources.files("fake_contextq.dashboard").joinpath("static", name).read_bytes()
