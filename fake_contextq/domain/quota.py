"""Plan quotas: the free plan's 100 contexts, and the 402 that guards them."""

from __future__ import annotations

import warnings

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed


def canonical_plan(plan: str) -> str:
    """A plan's public name (an alias such as ``unlimited`` is its deprecated spelling)."""
    return wire.PLAN_ALIASES.get(plan, plan)


def check_plan(plan: str) -> str:
    """The plan's name as stored, or a 400 naming the plans; an alias warns, once a call."""
    if plan in wire.PLAN_ALIASES:
        warnings.warn(
            _msgs.PLAN_ALIAS.format(plan=plan, name=wire.PLAN_ALIASES[plan]),
            DeprecationWarning,
            stacklevel=3,
        )
        return wire.PLAN_ALIASES[plan]
    if plan not in wire.PLAN_CONTEXT_QUOTAS:
        raise ValidationFailed(
            [
                {
                    "path": "plan",
                    "message": _msgs.UNKNOWN_PLAN.format(
                        plan=plan, plans=", ".join(wire.PLAN_CONTEXT_QUOTAS)
                    ),
                }
            ]
        )
    return plan


def context_limit(plan: str) -> int | None:
    """The plan's context quota; a tenant stored under an alias (a database of an older
    fake) counts as the plan it names."""
    return wire.PLAN_CONTEXT_QUOTAS[canonical_plan(plan)]


def ensure_room(plan: str, current: int, adding: int) -> None:
    """Raise 402 when ``adding`` new contexts would take the tenant over its plan."""
    limit = context_limit(plan)
    if limit is None or adding <= 0 or current + adding <= limit:
        return
    raise ApiError(
        _msgs.QUOTA_EXCEEDED,
        _msgs.QUOTA_EXCEEDED_MSG.format(
            plan=plan,
            limit=limit,
            resource=wire.QUOTA_RESOURCE_CONTEXTS,
            current=current,
            adding=adding,
        ),
        resource=wire.QUOTA_RESOURCE_CONTEXTS,
        limit=limit,
        plan=plan,
    )
