"""A local stand-in for the Docker Engine API, spoken over a Unix socket.

Code under test runs ``docker exec <container> psql ...`` through the real ``docker`` SDK. CI has
no Docker engine, so this module answers the handful of endpoints that path needs and runs the
exec'd command on this machine instead of inside a container. The SDK is not mocked: it talks
HTTP/1.1 to the socket, including the connection hijack of ``POST /exec/{id}/start``, so the
wire protocol the production code depends on is exercised for real.

Only what ``containers.get`` and ``exec_run`` (and the low-level ``exec_*`` calls) use is
implemented; every other path answers 404 ``page not found`` like the engine's router.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import secrets
import selectors
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any, NamedTuple, cast
from urllib.parse import unquote, urlsplit

__all__ = [
    "API_VERSION",
    "ENGINE_VERSION",
    "MIN_API_VERSION",
    "DockerEngineStandIn",
    "RecordedRequest",
    "StandInContainer",
]

API_VERSION = "1.45"
MIN_API_VERSION = "1.24"
ENGINE_VERSION = "26.1.0-standin"

_STDOUT = 1
_STDERR = 2
_MULTIPLEXED = "application/vnd.docker.multiplexed-stream"
_RAW = "application/vnd.docker.raw-stream"
# sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL.
_MAX_SOCKET_PATH = 107
_VERSION_PREFIX = re.compile(r"^/v[0-9]+(?:\.[0-9]+)*(?=/)")
_CREATED = "2024-01-01T00:00:00.000000000Z"
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class StandInContainer:
    """A container the stand-in pretends to run; ``env`` is what its processes inherit."""

    name: str
    env: Mapping[str, str] = field(default_factory=dict)
    running: bool = True
    image: str = "postgres:16"
    id: str = field(init=False)

    def __post_init__(self) -> None:
        # A copy, so mutating the caller's dict later cannot change a "running container".
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        # Deterministic, so tests can assert on ids the way they would on a real engine's.
        object.__setattr__(self, "id", hashlib.sha256(self.name.encode()).hexdigest())


class RecordedRequest(NamedTuple):
    """One request the stand-in received; ``path`` is decoded, without version or query."""

    method: str
    path: str


@dataclass
class _Exec:
    """An exec instance: created by ``POST /containers/{id}/exec``, run by ``.../start``."""

    id: str
    container: StandInContainer
    cmd: list[str]
    env: list[str]
    user: str
    workdir: str | None
    tty: bool
    attach_stdout: bool
    attach_stderr: bool
    privileged: bool
    started: bool = False
    running: bool = False
    exit_code: int | None = None
    pid: int = 0
    process: subprocess.Popen[bytes] | None = None

    def inspect(self) -> JsonObject:
        return {
            "ID": self.id,
            "Running": self.running,
            "ExitCode": self.exit_code,
            "ProcessConfig": {
                "tty": self.tty,
                "entrypoint": self.cmd[0],
                "arguments": self.cmd[1:],
                "privileged": self.privileged,
                "user": self.user,
            },
            "OpenStdin": False,
            "OpenStderr": self.attach_stderr,
            "OpenStdout": self.attach_stdout,
            "CanRemove": False,
            "ContainerID": self.container.id,
            "DetachKeys": "",
            "Pid": self.pid,
        }


class _StartFailure(Exception):
    """The command could not be started: Docker's exit code, and its status when detached."""

    def __init__(self, detail: str, exit_code: int, http_status: int = 400) -> None:
        super().__init__(
            "OCI runtime exec failed: exec failed: unable to start container process: "
            f"{detail}: unknown"
        )
        self.exit_code = exit_code
        self.http_status = http_status


class _HttpError(Exception):
    """An API error answered as ``{"message": ...}`` with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class DockerEngineStandIn:
    """Serves a subset of the Docker Engine API on ``socket_path`` while the context is open.

    ``containers`` maps each container's name to its description. Exec'd commands run as local
    subprocesses with the current environment, then the container's ``env``, then the exec's
    ``Env`` on top. ``User`` is recorded but not applied: the stand-in cannot switch users.
    """

    def __init__(self, socket_path: Path, containers: Mapping[str, StandInContainer]) -> None:
        for key, container in containers.items():
            if key != container.name:
                raise ValueError(f"container {container.name!r} is filed under {key!r}")
        self.socket_path = Path(socket_path)
        self.containers: Mapping[str, StandInContainer] = MappingProxyType(dict(containers))
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._execs: dict[str, _Exec] = {}
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._server: _Server | None = None
        self._serve_thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """What to give ``docker.DockerClient(base_url=...)`` or ``DOCKER_HOST``."""
        return "unix://" + str(self.socket_path)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> DockerEngineStandIn:
        if self._server is not None:
            raise RuntimeError("the stand-in is already serving")
        if len(os.fsencode(self.socket_path)) > _MAX_SOCKET_PATH:
            raise ValueError(
                f"{self.socket_path} is longer than a Unix socket path may be "
                f"({_MAX_SOCKET_PATH} bytes)"
            )
        if self.socket_path.exists() or self.socket_path.is_symlink():
            raise FileExistsError(f"{self.socket_path} already exists")
        server = _Server(str(self.socket_path), self)
        self._server = server
        self._serve_thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"docker-engine-standin:{self.socket_path.name}",
            daemon=True,
        )
        self._serve_thread.start()
        # A probe connection wakes the accept loop; its first pass proves it is serving.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.connect(str(self.socket_path))
        if not server.serving.wait(timeout=10):
            self.__exit__(None, None, None)
            raise RuntimeError("the Docker Engine stand-in did not start serving")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        if self._serve_thread is not None:
            self._serve_thread.join(timeout=10)
            self._serve_thread = None
        server.server_close()
        self.socket_path.unlink(missing_ok=True)
        with self._lock:
            processes = [e.process for e in self._execs.values() if e.running and e.process]
            connections = dict(self._connections)
        for process in processes:
            _kill_group(process)
        # Wakes handlers blocked on a kept-alive connection, so their threads end now.
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in connections.values():
            thread.join(timeout=10)

    # -- bookkeeping used by the handler ------------------------------------------------------

    def _record(self, method: str, path: str) -> None:
        with self._lock:
            self._requests.append(RecordedRequest(method, path))

    def _track(self, conn: socket.socket, thread: threading.Thread) -> None:
        with self._lock:
            self._connections[conn] = thread

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.pop(conn, None)

    def _find_container(self, ref: str) -> StandInContainer:
        name = ref.removeprefix("/")
        if name in self.containers:
            return self.containers[name]
        if len(ref) >= 12 and re.fullmatch(r"[0-9a-f]+", ref):
            matches = [c for c in self.containers.values() if c.id.startswith(ref)]
            if len(matches) == 1:
                return matches[0]
        raise _HttpError(404, f"No such container: {ref}")

    def _find_exec(self, exec_id: str) -> _Exec:
        with self._lock:
            found = self._execs.get(exec_id)
        if found is None:
            raise _HttpError(404, f"No such exec instance: {exec_id}")
        return found

    def _inspect_exec(self, exec_id: str) -> JsonObject:
        found = self._find_exec(exec_id)
        with self._lock:
            return found.inspect()

    # -- endpoints ----------------------------------------------------------------------------

    def _version(self) -> JsonObject:
        components = [
            {
                "Name": "Engine",
                "Version": ENGINE_VERSION,
                "Details": {"ApiVersion": API_VERSION, "MinAPIVersion": MIN_API_VERSION},
            }
        ]
        machine = platform.machine().lower()
        return {
            "Platform": {"Name": "Docker Engine stand-in"},
            "Components": components,
            "Version": ENGINE_VERSION,
            "ApiVersion": API_VERSION,
            "MinAPIVersion": MIN_API_VERSION,
            "GitCommit": "standin",
            "GoVersion": "none",
            "Os": platform.system().lower(),
            "Arch": _GO_ARCH.get(machine, machine),
            "KernelVersion": platform.release(),
            "BuildTime": _CREATED,
        }

    def _inspect_container(self, ref: str) -> JsonObject:
        c = self._find_container(ref)
        return {
            "Id": c.id,
            "Created": _CREATED,
            "Path": "docker-entrypoint.sh",
            "Args": ["postgres"],
            "State": {
                "Status": "running" if c.running else "exited",
                "Running": c.running,
                "Paused": False,
                "Restarting": False,
                "OOMKilled": False,
                "Dead": False,
                "Pid": os.getpid() if c.running else 0,
                "ExitCode": 0,
                "Error": "",
                "StartedAt": _CREATED,
                "FinishedAt": "0001-01-01T00:00:00Z" if c.running else _CREATED,
            },
            "Image": "sha256:" + hashlib.sha256(c.image.encode()).hexdigest(),
            "Name": "/" + c.name,
            "RestartCount": 0,
            "Driver": "overlay2",
            "Platform": "linux",
            "HostConfig": {"NetworkMode": "bridge"},
            "Mounts": [],
            "Config": {
                "Hostname": c.id[:12],
                "User": "",
                "Tty": False,
                "OpenStdin": False,
                "Env": [f"{k}={v}" for k, v in c.env.items()],
                "Cmd": ["postgres"],
                "Image": c.image,
                "WorkingDir": "",
                "Entrypoint": ["docker-entrypoint.sh"],
                "Labels": {},
            },
            "NetworkSettings": {"Networks": {}},
        }

    def _create_exec(self, ref: str, body: JsonObject) -> JsonObject:
        container = self._find_container(ref)
        cmd = body.get("Cmd")
        if not cmd:
            raise _HttpError(400, "No exec command specified")
        if not isinstance(cmd, list) or not all(isinstance(a, str) for a in cmd):
            raise _HttpError(400, "Cmd must be a list of strings")
        if not container.running:
            raise _HttpError(409, f"container {container.id} is not running")
        env = body.get("Env") or []
        if not isinstance(env, list) or not all(isinstance(e, str) for e in env):
            raise _HttpError(400, "Env must be a list of strings")
        workdir = body.get("WorkingDir") or None
        created = _Exec(
            id=secrets.token_hex(32),
            container=container,
            cmd=list(cmd),
            env=list(env),
            user=str(body.get("User") or ""),
            workdir=str(workdir) if workdir else None,
            tty=bool(body.get("Tty", False)),
            attach_stdout=bool(body.get("AttachStdout", True)),
            attach_stderr=bool(body.get("AttachStderr", True)),
            privileged=bool(body.get("Privileged", False)),
        )
        with self._lock:
            self._execs[created.id] = created
        return {"Id": created.id}

    def _claim_exec(self, exec_id: str) -> _Exec:
        """Mark an exec started, once: the engine refuses to start one twice."""
        found = self._find_exec(exec_id)
        with self._lock:
            if found.running:
                raise _HttpError(409, f"Error: Exec command {exec_id} is already running")
            if found.started:
                raise _HttpError(409, f"Error: Exec command {exec_id} has already run")
            if not found.container.running:
                raise _HttpError(409, f"container {found.container.id} is not running")
            found.started = True
            found.running = True
        return found

    def _spawn(self, ex: _Exec, *, discard_output: bool) -> subprocess.Popen[bytes]:
        """Start the exec's command, or raise ``_StartFailure`` as the engine would report it."""
        env = dict(os.environ)
        env.update(ex.container.env)
        for entry in ex.env:
            key, sep, value = entry.partition("=")
            if sep:
                env[key] = value
            else:  # "KEY" alone unsets it, as in the engine's env merge
                env.pop(key, None)
        if ex.workdir is not None and not os.path.isdir(ex.workdir):
            raise _StartFailure(
                f'chdir to cwd ("{ex.workdir}") set in config.json failed: '
                "no such file or directory",
                126,
                500,
            )
        program = ex.cmd[0]
        if "/" in program:
            executable = program
        else:
            found = shutil.which(program, path=env.get("PATH", os.defpath))
            if found is None:
                raise _StartFailure(f'exec: "{program}": executable file not found in $PATH', 127)
            executable = found
        out = subprocess.DEVNULL if discard_output or not ex.attach_stdout else subprocess.PIPE
        if discard_output or not ex.attach_stderr:
            err: int = subprocess.DEVNULL
        else:
            # A tty has one output; without a real one, stderr joins stdout.
            err = subprocess.STDOUT if ex.tty and out == subprocess.PIPE else subprocess.PIPE
        try:
            process = subprocess.Popen(
                ex.cmd,
                executable=executable,
                env=env,
                cwd=ex.workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise _StartFailure(
                f'exec: "{program}": stat {program}: no such file or directory', 127
            ) from None
        except PermissionError:
            raise _StartFailure(f'exec: "{program}": permission denied', 126) from None
        except OSError as exc:
            raise _StartFailure(f'exec: "{program}": {exc.strerror}', 126, 500) from None
        with self._lock:
            ex.process = process
            ex.pid = process.pid
        return process

    def _finish(self, ex: _Exec, exit_code: int) -> None:
        with self._lock:
            ex.exit_code = exit_code
            ex.running = False
            ex.process = None

    def _run_detached(self, ex: _Exec) -> None:
        try:
            process = self._spawn(ex, discard_output=True)
        except _StartFailure as failure:
            self._finish(ex, failure.exit_code)
            raise _HttpError(failure.http_status, str(failure)) from None

        def wait() -> None:
            self._finish(ex, _exit_code(process.wait()))

        threading.Thread(target=wait, name=f"exec-{ex.id[:12]}", daemon=True).start()

    def _run_attached(self, ex: _Exec, emit: Callable[[int, bytes], None]) -> None:
        """Run the command, handing each chunk of output to ``emit`` as it arrives."""
        try:
            process = self._spawn(ex, discard_output=False)
        except _StartFailure as failure:
            # The engine writes the start error to the attached stdout, CRLF-terminated.
            emit(_STDOUT, (str(failure) + "\r\n").encode())
            self._finish(ex, failure.exit_code)
            return
        with process:
            try:
                for stream, chunk in _read_pipes(process):
                    emit(stream, chunk)
            except BaseException:
                _kill_group(process)  # never leave an exec "running" behind a failed pump
                raise
            finally:
                self._finish(ex, _exit_code(process.wait()))


class _Server(socketserver.ThreadingUnixStreamServer):
    """Tracks each connection with its thread so ``__exit__`` can end and join them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, path: str, engine: DockerEngineStandIn) -> None:
        self.engine = engine
        self.serving = threading.Event()
        super().__init__(path, _Handler)

    def service_actions(self) -> None:
        self.serving.set()

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        if isinstance(request, socket.socket):
            self.engine._track(request, thread)
        thread.start()

    def process_request_thread(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            if isinstance(request, socket.socket):
                self.engine._untrack(request)

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away; nothing to report
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive, as the SDK's connection pool expects."""

    protocol_version = "HTTP/1.1"

    def version_string(self) -> str:
        return f"Docker/{ENGINE_VERSION} (linux)"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: test output is no place for an access log."""

    @property
    def engine(self) -> DockerEngineStandIn:
        return cast(_Server, self.server).engine

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        self._responded = False
        try:
            raw = self._read_body()
            path = _VERSION_PREFIX.sub("", urlsplit(self.path).path, count=1)
            parts = [unquote(p) for p in path.split("/")]
            self.engine._record(self.command, "/".join(parts))
            self._route(parts[1:], raw)
        except _HttpError as exc:
            self._send_json(exc.status, {"message": exc.message})
        except OSError:
            self.close_connection = True
        except Exception as exc:
            if self._responded:
                self.close_connection = True
            else:
                self._send_json(500, {"message": f"{type(exc).__name__}: {exc}"})

    def _route(self, parts: list[str], raw: bytes) -> None:
        method, engine = self.command, self.engine
        match (method, parts):
            case ("GET" | "HEAD", ["_ping"]):
                self._send(200, b"OK", "text/plain; charset=utf-8")
            case ("GET", ["version"]):
                self._send_json(200, engine._version())
            case ("GET", ["containers", ref, "json"]):
                self._send_json(200, engine._inspect_container(ref))
            case ("POST", ["containers", ref, "exec"]):
                self._send_json(201, engine._create_exec(ref, _json_body(raw)))
            case ("POST", ["exec", exec_id, "start"]):
                self._start_exec(exec_id, _json_body(raw))
            case ("GET", ["exec", exec_id, "json"]):
                self._send_json(200, engine._inspect_exec(exec_id))
            case _:
                raise _HttpError(404, "page not found")

    def _start_exec(self, exec_id: str, body: JsonObject) -> None:
        engine = self.engine
        ex = engine._claim_exec(exec_id)
        if body.get("Detach"):
            engine._run_detached(ex)
            self._send(200, b"", None)
            return
        # Like the engine: framing follows the start request's Tty, not the create's.
        tty = bool(body.get("Tty", False))
        upgrade = "Upgrade" in self.headers
        if upgrade:
            self.send_response(101, "UPGRADED")
        else:
            self.send_response(200)
        self.send_header("Content-Type", _RAW if tty else _MULTIPLEXED)
        if upgrade:
            self.send_header("Connection", "Upgrade")
            self.send_header("Upgrade", "tcp")
        else:
            self.send_header("Connection", "close")
        self._add_engine_headers()
        self.end_headers()  # one write: the whole header block in one segment
        self._responded = True
        self.close_connection = True
        if upgrade:
            # The SDK reads the rest straight from the socket, bypassing the buffered reader
            # that parsed the headers; bytes sent before it read them would be lost in there.
            _wait_until_peer_has_read(self.connection)
        conn = self.connection
        alive = True

        def emit(stream: int, chunk: bytes) -> None:
            nonlocal alive
            if not alive:
                return  # keep draining the process; the client is gone
            frame = chunk if tty else struct.pack(">BxxxL", stream, len(chunk)) + chunk
            try:
                conn.sendall(frame)
            except OSError:
                alive = False

        engine._run_attached(ex, emit)

    # -- plumbing -----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _add_engine_headers(self) -> None:
        self.send_header("Api-Version", API_VERSION)
        self.send_header("Docker-Experimental", "false")
        self.send_header("Ostype", "linux")

    def _send(self, status: int, data: bytes, content_type: str | None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self._add_engine_headers()
        if status == 200 and self.path.endswith("/_ping"):
            self.send_header("Cache-Control", "no-cache, no-store, must-revalidate")
            self.send_header("Pragma", "no-cache")
        self.end_headers()
        self._responded = True
        if self.command != "HEAD" and data:
            self.wfile.write(data)

    def _send_json(self, status: int, body: JsonObject) -> None:
        self._send(status, json.dumps(body).encode() + b"\n", "application/json")


def _json_body(raw: bytes) -> JsonObject:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise _HttpError(400, f"invalid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _HttpError(400, "invalid JSON: expected an object")
    return body


def _read_pipes(process: subprocess.Popen[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(stream, chunk)`` from stdout and stderr in the order the chunks arrive."""
    pipes: Sequence[tuple[int, Any]] = ((_STDOUT, process.stdout), (_STDERR, process.stderr))
    with selectors.DefaultSelector() as selector:
        for stream, pipe in pipes:
            if pipe is not None:
                selector.register(pipe, selectors.EVENT_READ, stream)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    yield key.data, chunk
                else:
                    selector.unregister(key.fileobj)


def _wait_until_peer_has_read(conn: socket.socket, timeout: float = 5.0) -> None:
    """Block until the client has read everything sent so far (or ``timeout`` passes).

    On Linux, SIOCOUTQ on a Unix stream socket counts the bytes still queued for the peer.
    Elsewhere a short pause is the best available approximation.
    """
    request = getattr(termios, "TIOCOUTQ", None) if sys.platform == "linux" else None
    if request is None:
        time.sleep(0.05)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            (queued,) = struct.unpack("i", fcntl.ioctl(conn.fileno(), request, b"\0" * 4))
        except OSError:
            time.sleep(0.05)
            return
        if queued == 0:
            return
        time.sleep(0.0005)


def _exit_code(returncode: int) -> int:
    """Popen reports death by signal N as -N; the engine reports 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
