"""The controlled scheduler: each agent's request waits at a gate until the explorer
releases it, so exactly one request is in flight and the order is the explorer's choice.

Agents run on threads of their own (an async agent on its own event loop there); a gate
parks the calling thread, which is safe because an agent does nothing else while its
request waits. Between two requests an agent runs alone: the explorer waits until every
agent is parked at a gate or has ended before it chooses the next request (as CHESS
does, Musuvathi et al., OSDI 2008), and calls an agent that does neither in time stuck.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx2

from fake_contextq.explore.records import Step
from fake_contextq.http.transport import service_request
from fake_contextq.service import ContextQService
from fake_contextq.service.exchange import Answer
from fake_contextq.service.faults import ConnectionDropped

RUNNING, PARKED, DONE = "running", "parked", "done"


class Stopped(BaseException):  # not an Exception: agents' handlers let it by
    """Raised in a parked agent when the explorer abandons the order (a stuck agent)."""


class Scheduler:
    """The gates of one explored order and the steps released through them."""

    def __init__(self, agents: int) -> None:
        self.cond = threading.Condition()
        self.state = [RUNNING] * agents
        self.go = [False] * agents
        self.stopped = False
        self.steps: list[Step] = []
        self.commands = [""] * agents  # what each agent is doing, for the timeline

    # ----- the agents' side -----

    def park(self, agent: int) -> None:
        """Wait at the gate until released (or raise ``Stopped``)."""
        with self.cond:
            if self.stopped:
                raise Stopped()
            self.state[agent] = PARKED
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.go[agent] or self.stopped)
            if not self.go[agent]:
                raise Stopped()
            self.go[agent] = False
            self.state[agent] = RUNNING

    def ended(self, agent: int) -> None:
        with self.cond:
            self.state[agent] = DONE
            self.cond.notify_all()

    # ----- the explorer's side -----

    def quiet(self, timeout: float) -> bool:
        """Wait until no agent runs; False if one still runs after ``timeout`` seconds."""
        with self.cond:
            return self.cond.wait_for(lambda: RUNNING not in self.state, timeout)

    def parked(self) -> list[int]:
        with self.cond:
            return [a for a, s in enumerate(self.state) if s == PARKED]

    def running(self) -> tuple[int, ...]:
        with self.cond:
            return tuple(a for a, s in enumerate(self.state) if s == RUNNING)

    def release(self, agent: int) -> None:
        with self.cond:
            self.state[agent] = RUNNING  # running from now: quiet() waits for it
            self.go[agent] = True
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()


def _answer(
    scheduler: Scheduler, agent: int, service: ContextQService, request: httpx2.Request, body: bytes
) -> httpx2.Response:
    """Park, then answer the request in this thread (the fault it meets included, its
    delay not waited: time plays no part in an explored order) and note the step."""
    scheduler.park(agent)
    asked = service_request(request, body)
    answer: Answer | None = None
    try:
        answer = service.begin(asked).finish(service.answer)
    except ConnectionDropped:
        raise httpx2.RemoteProtocolError(
            "Server disconnected without sending a response.", request=request
        ) from None
    finally:
        scheduler.steps.append(
            Step(
                agent,
                scheduler.commands[agent],
                request.method,
                request.url.path + (f"?{request.url.query.decode()}" if request.url.query else ""),
                None if answer is None else answer.status,
                body,
                b"" if answer is None else answer.body,
            )
        )
    content = b"" if request.method == "HEAD" else answer.body
    return httpx2.Response(
        answer.status, headers=answer.raw_headers(), content=content, request=request
    )


class GatedTransport(httpx2.BaseTransport):
    """A sync transport whose every request waits for the explorer's release."""

    def __init__(self, scheduler: Scheduler, agent: int, service: ContextQService) -> None:
        self.scheduler, self.agent, self.service = scheduler, agent, service

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return _answer(self.scheduler, self.agent, self.service, request, request.read())


class AsyncGatedTransport(httpx2.AsyncBaseTransport):
    """The async twin: it parks its agent's own thread (its loop has nothing else to do)."""

    def __init__(self, scheduler: Scheduler, agent: int, service: ContextQService) -> None:
        self.scheduler, self.agent, self.service = scheduler, agent, service

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        return _answer(self.scheduler, self.agent, self.service, request, body)


def start_agent(
    scheduler: Scheduler, agent: int, body: Callable[[], Any], out: list[Any], errs: list[Any]
) -> threading.Thread:
    """Run ``body`` on a daemon thread (a stuck agent must not keep the process alive),
    keeping what it returned or raised."""

    def run() -> None:
        try:
            out[agent] = body()
        except Stopped:
            errs[agent] = None
        except BaseException as exc:  # reported with the schedule, never the explorer's crash
            errs[agent] = exc
        finally:
            scheduler.ended(agent)

    thread = threading.Thread(target=run, name=f"explore-agent-{agent}", daemon=True)
    thread.start()
    return thread
