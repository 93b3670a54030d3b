"""The live memory round trip: a real Claude saves a fact with the ``memory`` tool into a
real ContextQ, recalls it in a second, separate conversation, and the fact is then found
through ``GET /api/contexts`` by this script itself, not taken on Claude's word.

    python -m e2e.live_memory_roundtrip            (or: python e2e/live_memory_roundtrip.py)

Needs ``ANTHROPIC_API_KEY`` (without it: a message and exit 0, nothing fabricated), a
ContextQ dev stack at ``CONTEXT_API_URL`` (default http://localhost:38200), and its
database by ``CONTEXTQ_DB_DSN`` or Docker access to its Postgres container
(``CONTEXTQ_DB_CONTAINER``, default shared-context-postgres): a throwaway tenant is
provisioned there and cleaned up however the run ends.

``--record PATH`` sends the Anthropic calls through the recording proxy
(``fake-anthropic record``, in this process) and writes what the API said to PATH, with no
credential in it; ``fake-anthropic serve PATH`` replays it, so CI runs the same round trip
with no key and no network, against the fake ContextQ (see docs/how-to/live-stack.md, "The
live script").

Exit codes: 0 every check passed (or no key: nothing run), 1 a check failed, 2 the stack
could not be set up or cleaned up, 3 the Anthropic API refused or failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import anthropic

DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-5-5"
BETAS = ["context-management-2025-06-27"]
FACT_WORD = "teal"
SAVE_PROMPT = (
    "Please remember this for our future conversations, by saving it to your memory "
    f"directory: my favourite colour is {FACT_WORD}."
)
RECALL_PROMPT = (
    "What is my favourite colour? Look in your memory directory first; answer in one line."
)

OK, CHECK_FAILED, SETUP_FAILED, MODEL_FAILED = 0, 1, 2, 3


@dataclass
class Outcome:
    """What the run found; ``failed`` lists the checks that did not hold."""

    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        (self.passed if ok else self.failed).append(what)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m e2e.live_memory_roundtrip",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument(
        "--api-url", help="ContextQ's base URL (default: $CONTEXT_API_URL, else :38200)"
    )
    parser.add_argument(
        "--anthropic-base-url",
        help="the Messages API's base URL (default: $ANTHROPIC_BASE_URL, else the API's own)",
    )
    parser.add_argument("--model", default=os.environ.get("ANTHROPIC_MODEL", DEFAULT_MODEL))
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument(
        "--record",
        metavar="PATH",
        help="record the Anthropic exchanges to PATH (replay: fake-anthropic serve PATH)",
    )
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return _parser().parse_args(argv)


def _host(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc or url


# What the API said is told in words of ours, from the error's fields: the SDK's own wording
# of it changed in anthropic 2.17 ("Error code: 401 - {body}" before, "401 <message>
# (request_id: ..., path: ...)" since, and "Connection error." became "Connection to <host>
# failed: <reason>"), so printing it whole would say the status or the host twice.


def refused(exc: anthropic.APIStatusError, host: str) -> str:
    """The API's answer: status, error type, its sentence and the request id to quote."""
    said = exc.api_message if isinstance(exc.api_message, str) else None
    said = said or (exc.body.strip() if isinstance(exc.body, str) else None)
    text = f"{exc.status_code}{f' {exc.type}' if exc.type else ''} from {host}: "
    text += said or "an answer with no error message"
    if exc.request_id:
        text += f" (request {exc.request_id})"
    if exc.status_code == 401:
        text += (
            "; a bare 401 through a gateway looks like a bad key: check "
            "ANTHROPIC_BASE_URL (unset it for a direct run)"
        )
    return text


def unreachable(exc: anthropic.APIConnectionError, host: str) -> str:
    """The transport's failure under the SDK's error: the same on every SDK version."""
    cause = exc.__cause__
    if cause is None:
        return f"cannot reach {host}: {exc.message}"
    return f"cannot reach {host}: {type(cause).__name__}{f': {cause}' if str(cause) else ''}"


def _tool_calls(messages: Sequence[Any]) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    for message in messages:
        for block in message.content:
            if getattr(block, "type", None) == "tool_use" and block.name == "memory":
                calls.append(dict(block.input))
    return calls


def _text(message: Any) -> str:
    return "".join(b.text for b in message.content if getattr(b, "type", None) == "text")


def converse(anthropic_client: Any, tool: Any, args: argparse.Namespace, prompt: str) -> Any:
    """One conversation, run to its end; returns every assistant message in order."""
    runner = anthropic_client.beta.messages.tool_runner(
        model=args.model,
        max_tokens=args.max_tokens,
        betas=BETAS,
        tools=[tool],
        messages=[{"role": "user", "content": prompt}],
    )
    return list(runner)


def run(args: argparse.Namespace) -> int:
    base_url = (
        args.anthropic_base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_ANTHROPIC_URL
    )
    # A gateway in ANTHROPIC_BASE_URL answers a bare 401 that looks like a bad key: say
    # where the requests go on every run, so that is never silent.
    print(f"anthropic base url: {_host(base_url)}", flush=True)
    if not os.environ.get("ANTHROPIC_API_KEY"):
        print(
            "live memory round trip: SKIPPED: ANTHROPIC_API_KEY is not set, so no "
            "conversation was run and nothing was checked (set it to run the round trip)"
        )
        return OK

    from contextq_fixtures.database import LiveSetupError
    from contextq_fixtures.live import CleanupError, LiveConfig, LiveStack

    try:
        config = LiveConfig.from_env()
        if args.api_url:
            config = replace(config, api_url=args.api_url)
        stack = LiveStack(config)
    except LiveSetupError as exc:
        print(f"live memory round trip: SETUP FAILED: {exc}")
        return SETUP_FAILED
    try:
        stack.check()  # the database and the API, before any conversation relies on them
        stack.reap()
    except LiveSetupError as exc:
        stack.close()
        print(f"live memory round trip: SETUP FAILED: {exc}")
        return SETUP_FAILED
    print(f"contextq: {config.api_url}, database: {stack.database.description}", flush=True)

    recorder = None
    sent_to = base_url
    if args.record:
        from fake_anthropic.record.recorder import Recorder

        try:
            recorder = Recorder(base_url, args.record)
            sent_to = recorder.start()
        except OSError as exc:
            stack.close()
            print(f"live memory round trip: SETUP FAILED: cannot record to {args.record}: {exc}")
            return SETUP_FAILED
        print(f"recording to {args.record} through {_host(sent_to)}", flush=True)

    # imported once the stack answered: a setup failure is told before the SDK's second
    import anthropic

    from adapter import ContextQMemoryTool

    outcome = Outcome()
    where = ""
    client = anthropic.Anthropic(base_url=sent_to)
    try:
        with stack.tenant() as tenant:
            workspace = f"e2e-{stack.run_id}"
            tenant.client.create_workspace(workspace)
            tool = ContextQMemoryTool(client=tenant.client, workspace=workspace)

            saved = converse(client, tool, args, SAVE_PROMPT)
            creates = [c for c in _tool_calls(saved) if c.get("command") == "create"]
            outcome.check(bool(creates), "conversation 1 saved the fact with memory create")

            recalled = converse(client, tool, args, RECALL_PROMPT)
            views = [c for c in _tool_calls(recalled) if c.get("command") == "view"]
            outcome.check(bool(views), "conversation 2 looked with memory view")
            answer = _text(recalled[-1]) if recalled else ""
            outcome.check(FACT_WORD in answer.lower(), f"conversation 2 answered {FACT_WORD!r}")

            stored = [
                summary
                for summary in tenant.client.iter_contexts(workspace=workspace)
                if FACT_WORD in tenant.client.get_context(summary.id).content.lower()
            ]
            outcome.check(bool(stored), "GET /api/contexts holds the fact in ContextQ")
            where = f" (context {stored[0].id}, {stored[0].title})" if stored else ""
    except anthropic.APIStatusError as exc:
        print(f"live memory round trip: MODEL FAILED: {refused(exc, _host(base_url))}")
        return MODEL_FAILED
    except anthropic.APIConnectionError as exc:
        print(f"live memory round trip: MODEL FAILED: {unreachable(exc, _host(base_url))}")
        return MODEL_FAILED
    except LiveSetupError as exc:
        print(f"live memory round trip: SETUP FAILED: {exc}")
        return SETUP_FAILED
    except CleanupError as exc:
        print(f"live memory round trip: CLEANUP FAILED: {exc}")
        return SETUP_FAILED
    except Exception as exc:
        print(f"live memory round trip: SETUP FAILED: {type(exc).__name__}: {exc}")
        return SETUP_FAILED
    finally:
        client.close()
        stack.close()
        if recorder is not None:
            recorder.close()
            print(
                f"recorded {len(recorder.proxy.exchanges)} exchange(s) to {args.record}",
                flush=True,
            )

    for what in outcome.passed:
        print(f"  ok    {what}")
    for what in outcome.failed:
        print(f"  FAIL  {what}")
    total = len(outcome.passed) + len(outcome.failed)
    if outcome.failed:
        print(f"live memory round trip: FAIL: {len(outcome.failed)} of {total} checks failed")
        return CHECK_FAILED
    print(f"live memory round trip: PASS: {total} of {total} checks{where}")
    return OK


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a file: make the project importable
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
