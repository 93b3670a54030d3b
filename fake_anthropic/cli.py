"""``fake-anthropic serve SCRIPT.json``: a scripted model over HTTP, for a subprocess or a
test suite in another language (point ``ANTHROPIC_BASE_URL`` at the printed URL)."""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Sequence

from fake_anthropic import __version__
from fake_anthropic.model import ScriptedModel

DEFAULT_HOST = "127.0.0.1"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fake-anthropic", description="A scripted fake of the Anthropic Messages API."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve a scripted model over HTTP from a JSON script",
        description="Serve the scripted model over HTTP for a subprocess or another "
        "language: point ANTHROPIC_BASE_URL at the printed URL. SCRIPT is a JSON list of "
        "turns, each a list of content blocks in the API's shape or "
        '{"content": [...], "stop_reason": ...}. Ctrl-C stops it and prints the transcript; '
        "the exit status is 1 if the script was overrun or left unplayed.",
    )
    serve.add_argument("script", metavar="SCRIPT", help="path of the JSON script")
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind ({DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=0, help="port to bind (0: a free one)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from fake_server import bind_socket, run_foreground, url_for
        from fake_server.served import stop_on_sigterm
    except ModuleNotFoundError as exc:
        print(
            f"fake-anthropic: serving needs {exc.name}; install the 'fake' extra: "
            "pip install 'contextq-memory-tool[fake]'",
            file=sys.stderr,
        )
        return 2
    try:
        model = ScriptedModel.from_json(args.script)
    except (OSError, ValueError, TypeError) as exc:
        print(f"fake-anthropic serve: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        line = f"fake-anthropic serve: cannot listen on {args.host}:{args.port}: "
        line += str(exc.strerror or exc)
        if exc.errno == errno.EADDRINUSE:
            line += " (another server is there? --port 0 picks a free port)"
        print(line, file=sys.stderr)
        return 1
    url = url_for(args.host, sock.getsockname()[1])
    stop_on_sigterm()  # from here on SIGTERM ends as Ctrl-C does: transcript, then verify
    try:
        print(
            f"scripted model with {model.remaining} turn(s) listening on {url} (Ctrl-C stops it)",
            f"ANTHROPIC_BASE_URL={url}",
            "ANTHROPIC_API_KEY=scripted",
            sep="\n",
            flush=True,
        )
        run_foreground(model.app, sock)
    except KeyboardInterrupt:
        sock.close()  # stopped before uvicorn took the signals over
    print(model.transcript(), flush=True)
    try:
        model.verify()
    except AssertionError as exc:
        print(f"fake-anthropic serve: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
