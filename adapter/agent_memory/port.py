"""The port an agent core depends on, and nothing else: ``AgentMemory``. Every method is
best-effort: a ContextQ or transport failure degrades to "no memory", never a failed run
(it is logged once and counted in ``failures``); bad input from the caller is a
``ValueError`` at once. A remote backend's method also has a deadline (``timeout``, whole
call): whatever the server does, it returns within it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

from adapter import _deadline
from adapter.agent_memory.records import Capabilities, IssueEvent, RunRecord
from adapter.errors import ContextQError, redact
from adapter.types import AgentTask, BootPack, Lesson, Resume

LOG = logging.getLogger("adapter.agent_memory")
DEFAULT_MAX_CHARS = 4_000
#: Seconds a remote backend's method may take in all (every request, retry and wait of
#: it): past them it returns its empty answer and counts a ``ContextQTimeoutError``.
DEFAULT_TIMEOUT = 10.0
T = TypeVar("T")


@runtime_checkable
class AgentMemory(Protocol):
    """The required methods, and the optional ones every backend has but only those whose
    ``capabilities`` say so do anything (the others return ``None`` or ``[]``)."""

    capabilities: Capabilities
    failures: list[Failure]

    def write_record(self, record: RunRecord) -> RunRecord | None: ...
    def list_records(self) -> list[RunRecord]: ...
    def get_record(self, run_id: str) -> RunRecord | None: ...
    def latest_record(self) -> RunRecord | None: ...
    def list_open_issues(self) -> list[IssueEvent]: ...
    def build_preamble(
        self,
        query: str,
        *,
        top_k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        parent_run_id: str | None = None,
        chat_session_id: str | None = None,
    ) -> str: ...

    def boot(self, goal: str, *, token_budget: int | None = None) -> BootPack | None: ...
    def begin_run(self, record: RunRecord) -> int | None: ...
    def checkpoint(
        self, run_id: str, state: Mapping[str, Any], *, summary: str | None = None
    ) -> int | None: ...
    def resume(self, run_id: str) -> Resume | None: ...
    def open_tasks(self, run_id: str) -> list[AgentTask]: ...
    def add_lesson(
        self, text: str, *, run_id: str | None = None, tags: Iterable[str] = ()
    ) -> Lesson | None: ...
    def handoff(self, run_id: str) -> str | None: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc_info: object) -> None: ...


@dataclass(frozen=True)
class Failure:
    """One failure a backend absorbed: the method, ContextQ's code (or the exception's
    type), and what it said."""

    method: str
    code: str
    message: str


class BestEffort:
    """What every backend shares: its failures, ``strict`` to raise them instead, and
    ``timeout``, each method's deadline in seconds (None: none, the method runs in the
    caller's thread)."""

    def __init__(self, *, strict: bool = False, timeout: float | None = None) -> None:
        self.strict = strict
        self.timeout = _deadline.check(timeout)
        self.failures: list[Failure] = []

    def close(self) -> None:
        """Release what the backend holds (a client, a session); a backend holding nothing
        has nothing to do. Never raises, and a second call does nothing more."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _failed(self, method: str, exc: Exception) -> None:
        code = getattr(exc, "code", None) or type(exc).__name__
        failure = Failure(method, str(code), redact(str(exc)))
        self.failures.append(failure)
        # a ContextQError with a code already says it ('POST /api/contexts: 402
        # quota_exceeded: ...'); anything else is named by its code or type
        said = failure.message if getattr(exc, "code", None) else f"{code}: {failure.message}"
        LOG.warning("agent memory: %s failed (%s); carrying on without it", method, said)


def check_preamble_args(top_k: int, max_chars: int) -> None:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 0:
        raise ValueError(f"top_k must be an integer of at least 0, not {top_k!r}")
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 1:
        raise ValueError(f"max_chars must be a positive integer, not {max_chars!r}")


def best_effort(default: Callable[[], Any]) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run the method within the backend's deadline; a ContextQ or transport failure, or
    the deadline passing, is absorbed (``default()`` is returned) unless the backend is
    ``strict``. ``ValueError`` (bad input) passes."""

    def wrap(method: Callable[..., T]) -> Callable[..., T]:
        @wraps(method)
        def run(self: BestEffort, *args: Any, **kwargs: Any) -> T:
            try:
                return _deadline.run_within(
                    self.timeout, lambda: method(self, *args, **kwargs), method.__name__
                )
            except (ContextQError, OSError, TimeoutError) as exc:
                if self.strict:
                    raise
                self._failed(method.__name__, exc)
                result: T = default()
                return result

        return run

    return wrap
