"""Failure reports: what the fake served, and what the scripted model saw, as sections."""

from __future__ import annotations

from typing import Any

import pytest

from contextq_fixtures._state import FAKE_KEY, MODEL_KEY


def sections(item: pytest.Item) -> list[tuple[str, str]]:
    """The extra report sections for a failed test that used these fixtures."""
    out: list[tuple[str, str]] = []
    fake = item.stash.get(FAKE_KEY, None)
    if fake is not None:
        out.append(("ContextQ requests (fake_contextq.journal)", fake.journal.table()))
    model: Any = item.stash.get(MODEL_KEY, None)
    if model is not None:
        out.append(("scripted model transcript", model.transcript()))
    return out
