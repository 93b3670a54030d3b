"""Waiting on a protocol's wake-up future with a time limit, without a task per wait."""

from __future__ import annotations

import asyncio


async def wait_for_wake(waiter: asyncio.Future[None], seconds: float) -> bool:
    """Wait until ``waiter`` is woken (its result set); False if ``seconds`` ran out first.
    A cancellation of the waiting task goes through as usual."""
    if seconds <= 0:
        return False
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        if not waiter.done():
            waiter.set_result(None)

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        await waiter
    finally:
        timer.cancel()
    return not expired
