"""Finding the backend: a ``package.module:callable`` that returns a fresh memory tool over
the backend's storage each time it is called, checked once before any rule runs."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool

from contextq_conformance.memory_tool._calls import DEFAULT_TIMEOUT, Handle, Log


class FactoryError(Exception):
    """The factory cannot be used: the message names it and says what was wrong."""


def load_factory(spec: str, *, asynchronous: bool = False) -> Callable[[], Any]:
    """The callable ``spec`` names, checked by calling it once (that instance is closed)."""
    module_name, colon, attr = spec.partition(":")
    if not colon or not module_name or not attr:
        raise FactoryError(f"{spec}: not package.module:callable")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise FactoryError(
            f"{spec}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise FactoryError(f"{spec}: {module_name} has no {attr!r}") from None
    if not callable(target):
        raise FactoryError(f"{spec}: {attr} is not callable")
    check_factory(target, spec, asynchronous=asynchronous)
    return target  # type: ignore[no-any-return]


def check_factory(factory: Callable[[], Any], name: str, *, asynchronous: bool = False) -> None:
    """Call ``factory`` once: it must return the right kind of memory tool."""
    expected: type = BetaAsyncAbstractMemoryTool if asynchronous else BetaAbstractMemoryTool
    try:
        tool = factory()
    except Exception as exc:
        raise FactoryError(f"{name}: calling it raised {type(exc).__name__}: {exc}") from None
    if not isinstance(tool, expected):
        raise FactoryError(
            f"{name}: returned {type(tool).__module__}.{type(tool).__qualname__}, not a "
            f"{expected.__name__}"
        )
    with contextlib.suppress(Exception):  # closing the check's own instance: best effort
        Handle(tool, is_async=asynchronous, timeout=DEFAULT_TIMEOUT, name=name, log=Log()).close()


__all__ = ["FactoryError", "check_factory", "load_factory"]
