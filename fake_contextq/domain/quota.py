"""Plan quotas: the free plan's 100 contexts, and the 402 that guards them.

The plans and their numbers are the service's rules, which a client only meets as a 402
(``adapter.errors.QuotaExceededError`` reads its ``resource``, ``limit`` and ``plan``): they
live with the fake, not in ``adapter.wire``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Final

from fake_contextq import _msgs
from fake_contextq.domain.errors import ApiError, ValidationFailed

# [public] the plan names Pro and Enterprise (ContextQ's docs and security pages); [seed]
# free allows 100 contexts; [assumed] Pro's 10,000 and Enterprise's no limit (None): no
# quota number is public.
PLAN_CONTEXT_QUOTAS: Final[Mapping[str, int | None]] = {
    "free": 100,
    "pro": 10_000,
    "enterprise": None,
}
# This project's earlier name for the plan without a limit: accepted, with a deprecation
# warning, for one release (0.2), then refused as any unknown plan is.
PLAN_ALIASES: Final[Mapping[str, str]] = {"unlimited": "enterprise"}
DEFAULT_PLAN: Final = "free"  # [assumed] a new tenant's plan
QUOTA_RESOURCE_CONTEXTS: Final = "contexts"  # [assumed] the 402's ``resource``


def canonical_plan(plan: str) -> str:
    """A plan's public name (an alias such as ``unlimited`` is its deprecated spelling)."""
    return PLAN_ALIASES.get(plan, plan)


def check_plan(plan: str) -> str:
    """The plan's name as stored, or a 400 naming the plans; an alias warns, once a call."""
    if plan in PLAN_ALIASES:
        warnings.warn(
            _msgs.PLAN_ALIAS.format(plan=plan, name=PLAN_ALIASES[plan]),
            DeprecationWarning,
            stacklevel=3,
        )
        return PLAN_ALIASES[plan]
    if plan not in PLAN_CONTEXT_QUOTAS:
        raise ValidationFailed(
            [
                {
                    "path": "plan",
                    "message": _msgs.UNKNOWN_PLAN.format(
                        plan=plan, plans=", ".join(PLAN_CONTEXT_QUOTAS)
                    ),
                }
            ]
        )
    return plan


def context_limit(plan: str) -> int | None:
    """The plan's context quota; a tenant stored under an alias (a database of an older
    fake) counts as the plan it names."""
    return PLAN_CONTEXT_QUOTAS[canonical_plan(plan)]


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
            resource=QUOTA_RESOURCE_CONTEXTS,
            current=current,
            adding=adding,
        ),
        resource=QUOTA_RESOURCE_CONTEXTS,
        limit=limit,
        plan=plan,
    )
