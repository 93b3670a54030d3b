"""Plan quotas: the free plan's 100 contexts, and the 402 that guards them."""

from __future__ import annotations

from adapter import wire
from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed


def check_plan(plan: str) -> str:
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
    return wire.PLAN_CONTEXT_QUOTAS[plan]


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
