"""Headless Chromium for the browser tests: the system's own (``apt-get install chromium``),
driven by Playwright, never a browser Playwright downloads.

A test that needs it fails when it is missing under CI (``CI`` set: ``.ci/run`` installs
it), and skips saying how to install it elsewhere. Screenshots go under
``artifacts/screenshots/`` (or ``$CONTEXTQ_SCREENSHOTS``), which CI keeps and git ignores.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(os.environ.get("CONTEXTQ_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
#: What the machine's closed network and a root user need (see the env notes of CI).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """The system Chromium's path, or a failure (CI) or skip (elsewhere) saying so."""
    given = os.environ.get("CONTEXTQ_CHROMIUM")
    found = given or next(
        (p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None
    )
    if found and Path(found).exists():
        return found
    message = (
        "no Chromium: install the system's (apt-get install chromium) or set CONTEXTQ_CHROMIUM"
    )
    if os.environ.get("CI"):
        pytest.fail(message + "; CI needs it (.ci/run installs it)")
    pytest.skip(message)


def shoot(page: Page, name: str) -> Path:
    """A full-page screenshot ``<name>.png`` under ``SCREENSHOTS``, for a reviewer."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / (re.sub(r"[^A-Za-z0-9_.-]+", "-", name) + ".png")
    page.screenshot(path=str(path), full_page=True)
    return path
