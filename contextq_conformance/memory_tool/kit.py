"""The kit: runs each rule's check against a backend's factories and files the outcome as
pass, fail, declared (a failure the backend declares) or not run."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from typing import Any, Final

import anthropic

from contextq_conformance.memory_tool import (
    _check_concurrency,
    _check_instances,
    _check_limits,
    _check_paths,
    _check_results,
)
from contextq_conformance.memory_tool._calls import DEFAULT_TIMEOUT, CommandTimeout
from contextq_conformance.memory_tool._context import Broken, Context, NotRun, Sizes, Verdict
from contextq_conformance.memory_tool.declarations import Declarations
from contextq_conformance.memory_tool.report import (
    DECLARED,
    FAIL,
    NOT_RUN,
    PASS,
    Report,
    RuleResult,
)
from contextq_conformance.memory_tool.rules import RULES

CHECKS: Final[dict[str, Callable[[Context], Verdict]]] = {
    **_check_results.CHECKS,
    **_check_paths.CHECKS,
    **_check_limits.CHECKS,
    **_check_instances.CHECKS,
    **_check_concurrency.CHECKS,
}
assert set(CHECKS) == set(RULES), set(CHECKS) ^ set(RULES)


class Kit:
    """A backend as the rules see it: its factories, its declarations, and the run's
    timeout, seed and concurrency sizes."""

    def __init__(
        self,
        factory: Callable[[], Any] | None = None,
        async_factory: Callable[[], Any] | None = None,
        *,
        declarations: Declarations | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        seed: int | None = None,
        sizes: Sizes | None = None,
        names: tuple[str, str] = ("", ""),
    ) -> None:
        if factory is None and async_factory is None:
            raise ValueError("a kit needs a factory, an async factory, or both")
        self.factory = factory
        self.async_factory = async_factory
        self.declarations = declarations or Declarations()
        self.timeout = timeout
        self.seed = seed if seed is not None else random.SystemRandom().randrange(1_000_000)
        self.sizes = sizes or Sizes()
        self.names = names

    def run_rule(self, rule_id: str) -> RuleResult:
        ctx = Context(
            self.factory,
            self.async_factory,
            self.declarations,
            self.timeout,
            self.seed,
            self.sizes,
        )
        started = time.perf_counter()
        reason = ""
        try:
            verdict = CHECKS[rule_id](ctx)
        except NotRun as exc:
            verdict, reason = Verdict(), str(exc)
        except Broken as exc:
            verdict = Verdict([str(exc)])
        except CommandTimeout as exc:
            last = ctx.log.steps[-1] if ctx.log.steps else ("", {})
            verdict = Verdict([f"{last[0]}: a command got {exc}: the rule stopped there"])
        except Exception as exc:  # the backend answered so oddly that the check could not go on
            verdict = Verdict([f"the check stopped on {type(exc).__name__}: {exc}"])
        finally:
            ctx.close_all()
        seconds = time.perf_counter() - started
        if reason:
            status = NOT_RUN
        elif not verdict.problems:
            status = PASS
        elif rule_id in self.declarations.differences:
            status, reason = DECLARED, self.declarations.differences[rule_id]
        else:
            status = FAIL
        if status == PASS and rule_id in self.declarations.differences:
            verdict.notes.append("declared as a difference, yet it held")
        return RuleResult(
            rule_id,
            status,
            problems=verdict.problems,
            commands=ctx.log.lines() if verdict.problems else [],
            reason=reason,
            notes=verdict.notes,
            figures=verdict.figures,
            seconds=seconds,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "factory": self.names[0] or None,
            "async_factory": self.names[1] or None,
            "sdk": f"anthropic {anthropic.__version__}",
            "seed": self.seed,
            "timeout": self.timeout,
            "concurrency": {
                "instances": self.sizes.instances,
                "commands": self.sizes.commands,
                "rounds": self.sizes.rounds,
            },
            "declarations": self.declarations.as_json(),
        }

    def run(self, rule_ids: Iterable[str] | None = None) -> Report:
        ids = list(RULES) if rule_ids is None else list(rule_ids)
        return Report([self.run_rule(rule_id) for rule_id in ids], self.describe())


__all__ = ["CHECKS", "Kit"]
