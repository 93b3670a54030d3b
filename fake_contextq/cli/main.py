"""``fake-contextq serve``: the fake as a real HTTP server for clients in any language.

The HTTP side (FastAPI, uvicorn, SQLAlchemy: the ``fake`` extra) is imported when
``serve`` runs, so without it the command says which extra to install instead of failing
on import.
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from adapter import wire
from fake_contextq import _msgs
from fake_contextq._version import __version__
from fake_contextq.domain.auth import normalise_scopes
from fake_contextq.domain.errors import ApiError
from fake_contextq.domain.quota import DEFAULT_PLAN, PLAN_ALIASES, PLAN_CONTEXT_QUOTAS
from fake_contextq.mcp import CALL_DEADLINE_SECONDS as MCP_DEADLINE_SECONDS

if TYPE_CHECKING:
    from fake_contextq.fake import FakeContextQ
    from fake_contextq.stores.sql import SqlStore

DEFAULT_HOST = "127.0.0.1"
#: How many requests a served fake's journal keeps (a test's in-process fake keeps all).
DEFAULT_JOURNAL_KEEP = 10_000
DEFAULT_JOURNAL_KEEP_MIB = 64
DEFAULT_PORT = 38200  # the dev stack's port, so CONTEXT_API_URL's default reaches the fake


#: what ``add_subparsers`` returns (its class is private to argparse)
_Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fake-contextq", description="A strict, observable fake of ContextQ."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _serve_parser(commands)
    _mcp_parser(commands)
    return parser


def _serve_parser(commands: _Commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve the fake over HTTP",
        description="Serve the fake over HTTP. On start it creates a tenant and prints a "
        "read+write+admin key and the base URL.",
    )
    serve.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind ({DEFAULT_HOST})")
    serve.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port to bind; 0 picks a free one ({DEFAULT_PORT})",
    )
    serve.add_argument(
        "--plan",
        default=DEFAULT_PLAN,
        choices=[*PLAN_CONTEXT_QUOTAS, *PLAN_ALIASES],
        help="plan of the seeded tenant (free: 100 contexts, pro: 10,000, enterprise: no "
        "limit; 'unlimited' is enterprise's deprecated name)",
    )
    serve.add_argument("--tenant-name", default="dev", help="name of the seeded tenant")
    where = serve.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        metavar="PATH",
        help=f"keep state in this SQLite file (default: {default_db_path()})",
    )
    where.add_argument(
        "--memory",
        action="store_true",
        help="keep state in memory only: gone when the server stops",
    )
    where.add_argument(
        "--database-url", metavar="URL", help="keep state in this SQLAlchemy database URL instead"
    )
    serve.add_argument(
        "--lock-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long a request waits for the database's write lock (or a free connection) "
        "before it answers 503 database_busy (SQLite 30, Postgres 5)",
    )
    serve.add_argument(
        "--durable",
        action="store_true",
        help="make each commit wait until it is on disk (Postgres synchronous_commit on, "
        "SQLite synchronous=FULL); by default a crash may lose the last acknowledged writes",
    )
    serve.add_argument(
        "--workspace",
        action="append",
        default=[],
        metavar="SLUG",
        help="create this workspace in the seeded tenant (repeatable)",
    )
    serve.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="SCOPES",
        help="mint another key with these comma-separated scopes, e.g. "
        "'read' or 'read,write'; '' for none (repeatable)",
    )
    serve.add_argument(
        "--control",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="enable the /_fake/ control routes and the dashboard at /_fake/ui, guarded by "
        "a token (python3 dev.py serve turns this on; --no-control turns it off)",
    )
    serve.add_argument(
        "--control-token",
        metavar="TOKEN",
        help="use this control token instead of a random one (implies --control)",
    )
    serve.add_argument(
        "--journal-keep",
        type=_count,
        default=DEFAULT_JOURNAL_KEEP,
        metavar="N",
        help="keep the newest N requests in the journal the dashboard and /_fake/journal "
        f"show ({DEFAULT_JOURNAL_KEEP}), so a long-running server stays small",
    )
    serve.add_argument(
        "--journal-keep-mib",
        type=_count,
        default=DEFAULT_JOURNAL_KEEP_MIB,
        metavar="M",
        help="keep at most M MiB of request and answer bodies and request targets in the "
        f"journal ({DEFAULT_JOURNAL_KEEP_MIB}; each entry holds at most 64 KiB of each body)",
    )
    serve.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )


def _mcp_parser(commands: _Commands) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="ContextQ's MCP server on stdio, bridged to a ContextQ's REST API",
        description="Serve ContextQ's MCP tools on stdin/stdout, as the real MCP package "
        "does. Each tool call is a REST call to the ContextQ at $CONTEXT_API_URL "
        f"(default {wire.MCP_DEFAULT_API_URL}) made with the key in $CONTEXT_API_KEY: a "
        "served fake, or a real ContextQ.",
    )
    mcp.add_argument(
        "--deadline",
        type=_seconds,
        default=MCP_DEADLINE_SECONDS,
        metavar="SECONDS",
        help="how long one whole tool call may take, every REST call and answer byte of it, "
        f"before it is a tool error (default {MCP_DEADLINE_SECONDS:g})",
    )
    mcp.add_argument(
        "--protocol-versions",
        type=_versions,
        default=None,
        metavar="V1,V2,...",
        help="the MCP protocol versions to negotiate among, newest first (default: the "
        "TypeScript SDK's, newest 2025-11-25); naming 2026-07-28 serves that era too",
    )


def _versions(text: str) -> tuple[str, ...]:
    found = tuple(v.strip() for v in text.split(",") if v.strip())
    if not found:
        raise argparse.ArgumentTypeError("name at least one protocol version")
    return found


MOVED = {
    "model": "the scripted model is served by 'fake-anthropic serve SCRIPT.json' now",
    "demo": "the memory-tool demo is 'contextq-demo' now",
}


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in MOVED:
        print(f"fake-contextq: {MOVED[given[0]]}", file=sys.stderr)
        return 2
    args = _parser().parse_args(given)
    if args.command == "mcp":
        return mcp_stdio(args.deadline, args.protocol_versions)
    return serve(args)


def mcp_stdio(deadline: float = MCP_DEADLINE_SECONDS, versions: Sequence[str] | None = None) -> int:
    try:
        from fake_contextq.mcp.stdio import main as stdio_main
    except ModuleNotFoundError as exc:
        print(f"fake-contextq: {_missing(exc)}", file=sys.stderr)
        return 2
    try:
        return stdio_main(deadline=deadline, versions=versions)
    except SystemExit as exc:
        print(exc.code, file=sys.stderr)
        return 2


def mcp_client_lines(mcp_url: str, key: str) -> list[str]:
    """How to point an MCP client at the served fake: a ``claude mcp add`` line and the
    JSON an MCP client's configuration takes (Cursor's ``mcp.json``, for one)."""
    name = wire.MCP_SERVER_NAME
    auth = wire.authorization(key)
    config = {
        "mcpServers": {name: {"type": "http", "url": mcp_url, "headers": {"Authorization": auth}}}
    }
    return [
        f"MCP (streamable HTTP): {mcp_url}",
        f'  claude mcp add --transport http {name} {mcp_url} --header "Authorization: {auth}"',
        f"  MCP client config: {json.dumps(config)}",
    ]


def _missing(exc: ModuleNotFoundError) -> str:
    """What to install: the message itself when it already says (a store's missing
    driver names the ``postgres`` extra), else the ``fake`` extra."""
    if "pip install" in str(exc):
        return str(exc)
    return (
        f"serving needs {exc.name}; install the 'fake' extra: "
        "pip install 'contextq-memory-tool[fake]'"
    )


def default_db_path() -> Path:
    """Where ``serve`` keeps its state by default: the user's data directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fake-contextq" / "fake-contextq.db"


def _cannot_listen(prog: str, host: str, port: int, exc: OSError) -> str:
    """The one line for a socket that cannot be bound; a busy port says how to get another."""
    line = f"{prog}: cannot listen on {host}:{port}: {exc.strerror or exc}"
    if exc.errno == errno.EADDRINUSE:
        line += " (another server is there? --port 0 picks a free port)"
    return line


def _redacted(url: str) -> str:
    """The URL as it may be printed: no password, whether given as ``user:pw@`` or as a
    ``password`` query parameter (and nothing at all if it cannot be parsed, since a
    malformed URL may still hold one)."""
    from fake_contextq.stores.sql import redacted_url

    try:
        return redacted_url(url)
    except Exception:
        return "given by --database-url"


def _scrubbed(text: str, url: str) -> str:
    """``text`` (an error's message, which may quote the URL) without the URL's passwords."""
    from fake_contextq.stores.sql import url_secrets

    for secret in url_secrets(url):
        text = text.replace(secret, "***")
    return text


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number above 0, not {text!r}")
    return value


def _fake(args: argparse.Namespace, store: SqlStore | None = None) -> FakeContextQ:
    """The fake, its journal bounded as asked."""
    from fake_contextq.fake import FakeContextQ

    return FakeContextQ(
        store=store,
        journal_keep=args.journal_keep,
        journal_keep_bytes=args.journal_keep_mib << 20,
    )


def _open(args: argparse.Namespace) -> tuple[FakeContextQ, SqlStore | None, str]:
    """The fake, the store it was given (closed after it), and a phrase saying where its
    state lives; or SystemExit with one line."""

    if args.memory:
        if args.lock_timeout is not None or args.durable:
            option = "--lock-timeout" if args.lock_timeout is not None else "--durable"
            raise SystemExit(
                f"fake-contextq: {option} applies to a database (--db or --database-url), "
                "not to --memory"
            )
        return _fake(args), None, "in memory"
    url = args.database_url
    where = _redacted(url) if url is not None else ""
    if url is None:
        path = Path(args.db) if args.db else default_db_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SystemExit(f"fake-contextq: cannot create {path.parent}: {exc}") from None
        url, where = f"sqlite:///{path}", str(path)
    options: dict[str, Any] = {"durable": args.durable}
    if args.lock_timeout is not None:
        options.update(lock_timeout=args.lock_timeout, busy_timeout=args.lock_timeout)
    try:
        from fake_contextq.stores.sql import SqlStore

        store = SqlStore(url, **options)
        durable = ", each commit on disk before it answers" if args.durable else ""
        fake = _fake(args, store)
        return fake, store, f"state in {where}{durable}"
    except ModuleNotFoundError:
        raise  # a missing driver: serve() names the extra to install
    except Exception as exc:  # one clear line for a bad URL, file or schema, no traceback
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        detail = _scrubbed(detail, url)
        raise SystemExit(f"fake-contextq: cannot use the database {where}: {detail}") from None


def serve(args: argparse.Namespace) -> int:
    try:
        from fake_contextq.http.control import new_control_token
        from fake_contextq.http.dashboard import dashboard_url
        from fake_server import bind_socket, run_foreground, url_for
        from fake_server.served import stop_on_sigterm

        fake, store, where = _open(args)
    except ModuleNotFoundError as exc:
        print(f"fake-contextq: {_missing(exc)}", file=sys.stderr)
        return 2
    except SystemExit as exc:
        print(exc.code, file=sys.stderr)
        return 1
    try:
        extra_scopes = [normalise_scopes(spec) for spec in args.key]
        existing = [t for t in fake.tenants() if t.name == args.tenant_name]
        plan = PLAN_ALIASES.get(args.plan, args.plan)
        if plan != args.plan:
            print(
                f"fake-contextq: {_msgs.PLAN_ALIAS.format(plan=args.plan, name=plan)}",
                file=sys.stderr,
            )
        tenant = existing[0] if existing else fake.create_tenant(args.tenant_name, plan)
        if tenant.plan != plan:
            tenant = fake.set_plan(tenant, plan)
        known = {w.slug for w in fake.workspaces(tenant)}
        workspaces: dict[str, str] = {}
        for slug in args.workspace:
            if slug not in workspaces:
                workspaces[slug] = "exists" if slug in known else "created"
                if slug not in known:
                    fake.create_workspace(tenant, slug)
    except ApiError as exc:
        print(
            f"fake-contextq: {exc.message} {exc.details.get('issues', '')}".rstrip(),
            file=sys.stderr,
        )
        return 2
    admin_key = fake.mint_key(tenant, wire.SCOPES)
    extra_keys = [(scopes, fake.mint_key(tenant, scopes)) for scopes in extra_scopes]
    token = args.control_token or (new_control_token() if args.control else None)
    app = fake.served_app(control_token=token, host=args.host)

    try:
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        print(_cannot_listen("fake-contextq", args.host, args.port, exc), file=sys.stderr)
        return 1
    url = url_for(args.host, sock.getsockname()[1])
    lines = [
        f"fake-contextq {__version__} listening on {url} ({where}; Ctrl-C stops it)",
        f"tenant {tenant.id} {tenant.name!r} on the {tenant.plan} plan",
        *(f"workspace {slug!r} {state}" for slug, state in workspaces.items()),
        f"CONTEXT_API_URL={url}",
        f"CONTEXT_API_KEY={admin_key}",
        *mcp_client_lines(url + wire.MCP_PATH, admin_key),
    ]
    lines += [f"key ({', '.join(scopes) or 'no scopes'}): {key}" for scopes, key in extra_keys]
    if token is not None:
        lines.append(f"FAKE_CONTEXTQ_CONTROL_TOKEN={token}")
        lines.append(
            f"dashboard (opens once with the token, then keeps it in a cookie): "
            f"{dashboard_url(url, token)}"
        )
    stop_on_sigterm()  # from here on SIGTERM ends as Ctrl-C does: the closing line, status 0
    try:
        print("\n".join(lines), flush=True)
        run_foreground(app, sock, args.log_level, lifespan=True)
    except KeyboardInterrupt:
        pass  # stopped before uvicorn took the signals over
    finally:
        sock.close()
        fake.close()
        if store is not None:
            store.close()
    print("fake-contextq stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
