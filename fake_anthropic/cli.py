"""``fake-anthropic serve SCRIPT.json``: a scripted model (or a recording replayed) over
HTTP, for a subprocess or a test suite in another language (point ``ANTHROPIC_BASE_URL``
at the printed URL); ``fake-anthropic record --upstream URL --out FILE``: a recording
proxy in front of the real API."""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from fake_anthropic import __version__
from fake_anthropic.engine.surface import check_ignored_betas
from fake_anthropic.model import ScriptedModel
from fake_anthropic.record import recording
from fake_anthropic.record.cassette import BaseURL, CassetteError, convert
from fake_anthropic.record.match import MATCH_MODES
from fake_anthropic.record.proxy import DEFAULT_UPSTREAM, RecordingProxy
from fake_anthropic.record.recording import is_recording

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
    serve.add_argument("script", metavar="SCRIPT", help="path of the JSON script or recording")
    serve.add_argument(
        "--match",
        choices=MATCH_MODES,
        default="strict",
        help="for a recording: how a request must match the recorded one (strict)",
    )
    serve.add_argument(
        "--ignore-beta",
        action="append",
        default=[],
        metavar="BETA",
        help="for a script: play requests sending BETA as if it were not sent, though the "
        "scripted model does not model it (repeatable)",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind ({DEFAULT_HOST})")
    serve.add_argument("--port", type=int, default=0, help="port to bind (0: a free one)")
    record = commands.add_parser(
        "record",
        help="record a run against the real API through a proxy",
        description="A recording proxy: point ANTHROPIC_BASE_URL at the printed URL and run "
        "your agent with its own key; each request goes to UPSTREAM unchanged and its answer "
        "comes back unchanged (streams as they arrive), and every finished exchange is written "
        "to FILE without credentials. Ctrl-C or SIGTERM stops it; FILE is complete after every "
        "exchange. Replay FILE with `fake-anthropic serve FILE` or "
        "ScriptedModel.from_recording(FILE).",
    )
    record.add_argument(
        "--upstream", default=DEFAULT_UPSTREAM, help=f"the API to forward to ({DEFAULT_UPSTREAM})"
    )
    record.add_argument("--out", required=True, metavar="FILE", help="the recording to write")
    record.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind ({DEFAULT_HOST})")
    record.add_argument("--port", type=int, default=0, help="port to bind (0: a free one)")
    imported = commands.add_parser(
        "import-cassette",
        help="convert a vcrpy cassette of Messages API traffic into a recording",
        description="Convert a vcrpy cassette (YAML or JSON, as vcrpy writes them) into a "
        "recording: each /v1/messages and count_tokens exchange with https://api.anthropic.com "
        "(or a --base-url), streams rebuilt from their events, credentials redacted as the "
        "recording proxy redacts them; exchanges with other paths or hosts are skipped and "
        "counted. A file that is no cassette, or holds no such exchange, is one line and exit "
        "status 1. Replay RECORDING with ScriptedModel.from_recording(RECORDING) or "
        "`fake-anthropic serve RECORDING`.",
    )
    imported.add_argument("cassette", metavar="CASSETTE", help="the vcrpy cassette to read")
    imported.add_argument(
        "--out", required=True, metavar="RECORDING", help="the recording to write"
    )
    imported.add_argument(
        "--base-url",
        action="append",
        type=_base_url,
        metavar="URL",
        help="import the exchanges sent to this base URL too (the SDK's base_url; "
        "repeatable; default: ANTHROPIC_BASE_URL if set)",
    )
    imported.add_argument("--force", action="store_true", help="replace RECORDING if it exists")
    return parser


def _base_url(url: str) -> BaseURL:
    try:
        return BaseURL.parse(url)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _import_cassette(args: argparse.Namespace) -> int:
    base_urls: list[BaseURL] = args.base_url or []
    from_env = os.environ.get("ANTHROPIC_BASE_URL")
    if not base_urls and from_env:
        try:
            base_urls = [BaseURL.parse(from_env)]
        except ValueError as exc:
            print(f"fake-anthropic import-cassette: ANTHROPIC_BASE_URL {exc}", file=sys.stderr)
            return 2
    out = Path(args.out)
    if out.exists() and not args.force:
        print(
            f"fake-anthropic import-cassette: {out} exists; --force replaces it",
            file=sys.stderr,
        )
        return 1
    try:
        result = convert(args.cassette, base_urls)
    except CassetteError as exc:
        print(f"fake-anthropic import-cassette: {exc}", file=sys.stderr)
        return 1
    temporary = out.with_name(out.name + ".partial")
    try:
        temporary.write_text(recording.dump(result.exchanges), "utf-8")
        temporary.replace(out)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        print(f"fake-anthropic import-cassette: cannot write {out}: {exc}", file=sys.stderr)
        return 1
    print(
        f"fake-anthropic import-cassette: {len(result.exchanges)} exchange(s) written to {out}"
        f"; {result.skipped} other exchange(s) skipped"
    )
    return 0


def _listen(command: str, host: str, port: int) -> socket.socket | None:
    from fake_server import bind_socket

    try:
        return bind_socket(host, port)
    except OSError as exc:
        line = f"fake-anthropic {command}: cannot listen on {host}:{port}: "
        line += str(exc.strerror or exc)
        if exc.errno == errno.EADDRINUSE:
            line += " (another server is there? --port 0 picks a free port)"
        print(line, file=sys.stderr)
        return None


def _load(path: str, match: str, ignore_betas: Sequence[str] = ()) -> ScriptedModel:
    try:
        document = json.loads(Path(path).read_text("utf-8"))
    except RecursionError:
        raise ValueError("it nests deeper than JSON is read here") from None
    if is_recording(document):
        return ScriptedModel.from_recording(path, match="order" if match == "order" else "strict")
    source = document if isinstance(document, list) else path
    return ScriptedModel.from_json(source, ignore_betas=ignore_betas)


def _record(args: argparse.Namespace) -> int:
    from fake_anthropic.record.server import run_foreground
    from fake_server import url_for
    from fake_server.served import stop_on_sigterm

    try:
        proxy = RecordingProxy(args.upstream, args.out)
    except ValueError as exc:
        print(f"fake-anthropic record: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"fake-anthropic record: cannot write {args.out}: {exc}", file=sys.stderr)
        return 2
    sock = _listen("record", args.host, args.port)
    if sock is None:
        return 1
    url = url_for(args.host, sock.getsockname()[1])
    stop_on_sigterm()
    gc.freeze()  # what start-up imported is never garbage: collections need not scan it
    try:
        print(
            f"recording proxy to {proxy.shown_upstream} listening on {url}, writing {args.out} "
            "(Ctrl-C stops it)",
            f"ANTHROPIC_BASE_URL={url}",
            sep="\n",
            flush=True,
        )
        run_foreground(proxy, sock)
    except KeyboardInterrupt:
        sock.close()
    proxy.close()
    for note in proxy.abandoned:
        print(f"fake-anthropic record: not recorded: {note}", file=sys.stderr)
    print(f"recorded {len(proxy.exchanges)} exchange(s) to {args.out}", flush=True)
    return 1 if proxy.failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "import-cassette":
        return _import_cassette(args)
    try:
        from fake_server import run_foreground, url_for
        from fake_server.served import stop_on_sigterm
    except ModuleNotFoundError as exc:
        print(
            f"fake-anthropic: serving needs {exc.name}; install the 'fake' extra: "
            "pip install 'contextq-memory-tool[fake]'",
            file=sys.stderr,
        )
        return 2
    if args.command == "record":
        return _record(args)
    try:
        check_ignored_betas(args.ignore_beta)
    except ValueError as exc:
        print(f"fake-anthropic serve: --ignore-beta: {exc}", file=sys.stderr)
        return 2
    try:
        model = _load(args.script, args.match, args.ignore_beta)
    except (OSError, ValueError, TypeError) as exc:
        print(f"fake-anthropic serve: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    sock = _listen("serve", args.host, args.port)
    if sock is None:
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
