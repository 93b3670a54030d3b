"""Calling a backend as the kit does: every command under a timeout, every outcome kept as
data (a result, a ToolError, any other exception, or no answer in time), never raised."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from anthropic.lib.tools import ToolError

Kind = Literal["ok", "error", "crash", "timeout"]
Command = dict[str, Any]
DEFAULT_TIMEOUT: Final = 10.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one command gave: ``ok`` and its text, ``error`` and the ToolError's message,
    ``crash`` and the exception that is not a ToolError, or ``timeout``."""

    kind: Kind
    text: str

    def show(self) -> str:
        if self.kind == "ok":
            return self.text
        if self.kind == "error":
            return f"ToolError: {self.text}"
        return f"[{self.kind}] {self.text}"


class CommandTimeout(Exception):
    """A command got no answer in time: the rule it belongs to fails, the run goes on."""


def shown(value: object) -> str:
    """A command or value on one line, every invisible character escaped."""
    text = json.dumps(value, ensure_ascii=False)
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)


def _result_text(result: object) -> str:
    return result if isinstance(result, str) else repr(result)


def _crash(exc: BaseException) -> Outcome:
    return Outcome("crash", f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}")


@dataclass
class Log:
    """The commands a rule sent, in order, so that a failure can show how to reproduce it."""

    steps: list[tuple[str, Command]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, who: str, command: Command) -> None:
        with self.lock:
            self.steps.append((who, command))

    def lines(self, last: int = 40) -> list[str]:
        shown_steps = self.steps[-last:]
        skipped = len(self.steps) - len(shown_steps)
        out = [f"  ... {skipped} earlier command(s)"] if skipped else []
        first = skipped + 1
        out += [f"  {first + i}. {who}: {shown(cmd)}" for i, (who, cmd) in enumerate(shown_steps)]
        return out


class _LoopThread:
    """One event loop, in a daemon thread, that runs every async backend's coroutines."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise


_LOOP: _LoopThread | None = None
_LOOP_LOCK = threading.Lock()


def _loop() -> _LoopThread:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None:
            _LOOP = _LoopThread()
        return _LOOP


class Handle:
    """One instance of the backend, sync or async, called the same way by every rule."""

    def __init__(self, tool: Any, *, is_async: bool, timeout: float, name: str, log: Log):
        self.tool = tool
        self.is_async = is_async
        self.timeout = timeout
        self.name = name
        self.log = log
        self.closed = False

    def _invoke(self, fn: Callable[[], Any]) -> Outcome:
        """Run ``fn`` (which returns the result, or a coroutine of it) under the timeout."""
        if self.is_async:

            async def run() -> Any:
                result = fn()
                return (await result) if inspect.isawaitable(result) else result

            try:
                result = _loop().run(run(), self.timeout)
            except FutureTimeout:
                raise CommandTimeout(f"no answer in {self.timeout:g} s") from None
            except ToolError as exc:
                return Outcome("error", str(exc))
            except Exception as exc:
                return _crash(exc)
            return Outcome("ok", _result_text(result))
        box: list[Outcome] = []

        def target() -> None:
            try:
                box.append(Outcome("ok", _result_text(fn())))
            except ToolError as exc:
                box.append(Outcome("error", str(exc)))
            except BaseException as exc:  # a daemon thread: nothing else would see it
                box.append(_crash(exc))

        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not box:
            raise CommandTimeout(f"no answer in {self.timeout:g} s")
        return box[0]

    def call(self, command: Command) -> Outcome:
        self.log.add(self.name, command)
        outcome = self._invoke(lambda: self.tool.call(command))
        if outcome.kind == "timeout":  # pragma: no cover - _invoke raises instead
            raise CommandTimeout(outcome.text)
        return outcome

    def clear(self) -> Outcome:
        self.log.add(self.name, {"clear_all_memory": True})
        return self._invoke(self.tool.clear_all_memory)

    def close(self) -> None:
        """``close()`` or ``aclose()``, where the backend has one; the kit stops using it."""
        if self.closed:
            return
        self.closed = True
        for attr in ("aclose", "close") if self.is_async else ("close",):
            closer = getattr(self.tool, attr, None)
            if callable(closer):
                self._invoke(closer)
                return


__all__ = ["DEFAULT_TIMEOUT", "Command", "CommandTimeout", "Handle", "Log", "Outcome", "shown"]
