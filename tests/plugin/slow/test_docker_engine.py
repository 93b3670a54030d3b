"""The Docker Engine stand-in, driven through the real ``docker`` SDK over its Unix socket.

What matters is that ``container.exec_run`` behaves as it would against a real engine, so
these tests use only the SDK's public calls, except a few raw HTTP exchanges for the parts of
the protocol the SDK never shows (headers, the un-upgraded exec stream, unknown paths).
"""

from __future__ import annotations

import gc
import http.client
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
import requests
from docker.models.containers import Container, ExecResult

from tests.support.docker_engine import API_VERSION, DockerEngineStandIn, StandInContainer

PG = StandInContainer(
    "shared-context-postgres",
    {"PGHOST": "127.0.0.1", "PGPORT": "5432", "FROM_CONTAINER": "container-value"},
)
STOPPED = StandInContainer("stopped-postgres", {}, running=False)
PSQL = ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-d", "test"]


def demuxed(result: ExecResult) -> tuple[bytes | None, bytes | None]:
    """``exec_run(demux=True)``'s output: a (stdout, stderr) pair, which the stubs call bytes."""
    output: object = result.output
    assert isinstance(output, tuple) and len(output) == 2, output
    return output[0], output[1]


def joined(result: ExecResult) -> bytes:
    """``exec_run``'s output without demux: one byte string."""
    assert isinstance(result.output, bytes), result.output
    return result.output


def python(source: str) -> list[str]:
    """A command for the exec: this interpreter, so the tests need nothing else installed."""
    return [sys.executable, "-c", source]


@pytest.fixture(scope="session")
def postgres() -> None:
    """Skip without a Postgres at 127.0.0.1, or fail under ``CONTEXTQ_REQUIRE_POSTGRES=1``."""
    pg_isready = shutil.which("pg_isready")
    ready = pg_isready is not None and (
        subprocess.run(
            [pg_isready, "-q", "-h", "127.0.0.1", "-p", "5432"], check=False, timeout=10
        ).returncode
        == 0
    )
    if not ready:
        message = "no Postgres answers pg_isready at 127.0.0.1:5432"
        if os.environ.get("CONTEXTQ_REQUIRE_POSTGRES") == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def socket_path(tmp_path: Path) -> Iterator[Path]:
    """A socket path under the 108-byte limit: ``tmp_path`` if short enough, else in /tmp."""
    candidate = tmp_path / "docker.sock"
    if len(os.fsencode(candidate)) < 100:
        yield candidate
        return
    directory = tempfile.mkdtemp(prefix="dse-", dir="/tmp")
    try:
        yield Path(directory) / "docker.sock"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def standin(socket_path: Path) -> Iterator[DockerEngineStandIn]:
    with DockerEngineStandIn(socket_path, {PG.name: PG, STOPPED.name: STOPPED}) as engine:
        yield engine


@pytest.fixture
def docker_client(standin: DockerEngineStandIn) -> Iterator[docker.DockerClient]:
    client = docker.DockerClient(base_url=standin.base_url, version="auto", timeout=10)
    yield client
    client.close()


@pytest.fixture
def container(docker_client: docker.DockerClient) -> Container:
    return docker_client.containers.get(PG.name)


class UnixHTTPConnection(http.client.HTTPConnection):
    """Plain ``http.client`` over the stand-in's socket, for what the SDK hides."""

    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self.path))


def raw_request(
    standin: DockerEngineStandIn, method: str, path: str, body: object = None
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request on a fresh connection: status, headers and the whole body."""
    conn = UnixHTTPConnection(standin.socket_path)
    try:
        data = None if body is None else json.dumps(body)
        headers = {} if body is None else {"Content-Type": "application/json"}
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def split_frames(stream: bytes) -> list[tuple[int, bytes]]:
    """Decode a multiplexed stream, joining consecutive frames of the same stream."""
    frames: list[tuple[int, bytes]] = []
    while stream:
        kind, length = struct.unpack(">BxxxL", stream[:8])
        payload, stream = stream[8 : 8 + length], stream[8 + length :]
        assert len(payload) == length, "truncated frame"
        if frames and frames[-1][0] == kind:
            frames[-1] = (kind, frames[-1][1] + payload)
        else:
            frames.append((kind, payload))
    return frames


# -- psql against the machine's Postgres ------------------------------------------------------


@pytest.mark.usefixtures("postgres")
def test_psql_runs_locally_and_the_sdk_sees_a_normal_exec(
    standin: DockerEngineStandIn, container: Container
) -> None:
    result = container.exec_run(
        [*PSQL, "-c", "select 1+1"], demux=True, environment={"PGAPPNAME": "x"}
    )

    assert result.exit_code == 0
    assert demuxed(result) == (b"2\n", None)
    methods_and_paths = standin.requests
    assert methods_and_paths[:2] == [("GET", "/version"), ("GET", f"/containers/{PG.name}/json")]
    assert ("POST", f"/containers/{PG.id}/exec") in methods_and_paths
    assert [m for m, p in methods_and_paths if p.startswith("/exec/")] == ["POST", "GET"]


@pytest.mark.usefixtures("postgres")
def test_failing_sql_exits_non_zero_with_the_error_on_stderr(
    container: Container,
) -> None:
    result = container.exec_run([*PSQL, "-c", "select * from no_such_table"], demux=True)

    assert result.exit_code == 1  # psql: the statement failed under ON_ERROR_STOP
    stdout, stderr = demuxed(result)
    assert stdout is None
    assert stderr is not None
    assert b"ERROR:" in stderr
    assert b"no_such_table" in stderr


@pytest.mark.usefixtures("postgres")
def test_large_output_arrives_whole(container: Container) -> None:
    result = container.exec_run([*PSQL, "-c", "select repeat('x', 200000)"], demux=True)

    assert result.exit_code == 0
    assert demuxed(result) == (b"x" * 200000 + b"\n", None)


# -- streams, environment, working directory -------------------------------------------------


def test_demux_separates_stdout_and_stderr(container: Container) -> None:
    source = "import sys; print('to stdout'); print('to stderr', file=sys.stderr)"

    result = container.exec_run(python(source), demux=True)

    assert (result.exit_code, demuxed(result)) == (0, (b"to stdout\n", b"to stderr\n"))


def test_without_demux_the_streams_arrive_interleaved_in_order(
    container: Container,
) -> None:
    # The pauses keep the two pipes' writes apart, so arrival order is write order.
    source = (
        "import sys, time\n"
        "for i, stream in enumerate([sys.stdout, sys.stderr, sys.stdout]):\n"
        "    print(f'line {i}', file=stream, flush=True); time.sleep(0.05)\n"
    )

    result = container.exec_run(python(source))

    assert (result.exit_code, joined(result)) == (0, b"line 0\nline 1\nline 2\n")


def test_large_mixed_output_keeps_every_byte_of_each_stream(
    container: Container,
) -> None:
    source = (
        "import sys\n"
        "for _ in range(20):\n"
        "    sys.stdout.write('o' * 50000); sys.stdout.flush()\n"
        "    sys.stderr.write('e' * 30000); sys.stderr.flush()\n"
    )

    result = container.exec_run(python(source), demux=True)

    assert result.exit_code == 0
    assert demuxed(result) == (b"o" * 1_000_000, b"e" * 600_000)


def test_tty_exec_gets_one_raw_stream(container: Container) -> None:
    result = container.exec_run(["sh", "-c", "echo out; echo err >&2"], tty=True)

    assert (result.exit_code, joined(result)) == (0, b"out\nerr\n")


def test_container_env_then_exec_env_reach_the_process(
    container: Container, tmp_path: Path
) -> None:
    source = (
        "import json, os\n"
        "keys = ['X', 'PGHOST', 'FROM_CONTAINER', 'PATH']\n"
        "print(json.dumps({k: os.environ.get(k) for k in keys} | {'cwd': os.getcwd()}))\n"
    )

    result = container.exec_run(
        python(source),
        environment={"X": "from-exec", "PGHOST": "overridden"},
        workdir=str(tmp_path),
    )

    assert result.exit_code == 0
    assert json.loads(joined(result)) == {
        "X": "from-exec",
        "PGHOST": "overridden",
        "FROM_CONTAINER": "container-value",
        "PATH": os.environ.get("PATH"),
        "cwd": str(tmp_path),
    }


def test_container_json_describes_the_container(
    docker_client: docker.DockerClient, container: Container
) -> None:
    assert container.id == PG.id
    assert container.name == PG.name
    assert container.status == "running"
    assert container.attrs["Config"]["Image"] == "postgres:16"
    assert "PGHOST=127.0.0.1" in container.attrs["Config"]["Env"]
    assert docker_client.containers.get(PG.id[:12]).id == PG.id
    assert docker_client.containers.get(PG.id).name == PG.name


# -- clients -------------------------------------------------------------------------------


def test_docker_host_and_the_low_level_exec_api(
    standin: DockerEngineStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", standin.base_url)
    client = docker.from_env(timeout=10)
    try:
        api = client.api
        assert api.ping() is True
        assert api.version()["ApiVersion"] == API_VERSION
        created = api.exec_create(PG.name, python("import sys; print('hi'); sys.exit(3)"))
        before = api.exec_inspect(created["Id"])
        output = api.exec_start(created["Id"])
        after = api.exec_inspect(created["Id"])
        with pytest.raises(docker.errors.APIError) as again:
            api.exec_start(created["Id"])
    finally:
        client.close()

    assert len(created["Id"]) == 64
    assert (before["Running"], before["ExitCode"]) == (False, None)
    assert output == b"hi\n"
    assert (after["Running"], after["ExitCode"]) == (False, 3)
    assert after["ContainerID"] == PG.id
    assert after["ProcessConfig"]["entrypoint"] == sys.executable
    assert again.value.status_code == 409


def test_detached_exec_runs_in_the_background(docker_client: docker.DockerClient) -> None:
    api = docker_client.api
    exec_id = api.exec_create(PG.name, python("import sys; sys.exit(5)"))["Id"]

    started: object = api.exec_start(exec_id, detach=True)  # the stubs say bytes; it is text
    assert started == ""
    deadline = time.monotonic() + 10
    while (state := api.exec_inspect(exec_id))["Running"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert state["ExitCode"] == 5


# -- errors --------------------------------------------------------------------------------


def test_unknown_container_is_not_found(docker_client: docker.DockerClient) -> None:
    with pytest.raises(docker.errors.NotFound, match="No such container: nope"):
        docker_client.containers.get("nope")
    with pytest.raises(docker.errors.NotFound):
        docker_client.api.exec_create("nope", ["true"])


def test_stopped_container_refuses_exec_with_409(docker_client: docker.DockerClient) -> None:
    stopped = docker_client.containers.get(STOPPED.name)
    assert stopped.status == "exited"

    with pytest.raises(docker.errors.APIError, match="is not running") as refused:
        stopped.exec_run(["true"])

    assert refused.value.status_code == 409


def test_empty_command_is_a_bad_request(docker_client: docker.DockerClient) -> None:
    with pytest.raises(docker.errors.APIError, match="No exec command specified") as refused:
        docker_client.api.exec_create(PG.name, [])
    assert refused.value.status_code == 400


def test_unknown_exec_id_is_not_found(docker_client: docker.DockerClient) -> None:
    with pytest.raises(docker.errors.NotFound):
        docker_client.api.exec_inspect("0" * 64)


def test_unknown_executable_fails_like_docker_every_time(
    docker_client: docker.DockerClient, container: Container
) -> None:
    # The message is written the instant the stream opens: the race the stand-in must not lose.
    for _ in range(20):
        result = container.exec_run(["no-such-executable"], demux=True)
        assert result.exit_code == 127
        assert demuxed(result) == (
            b"OCI runtime exec failed: exec failed: unable to start container process: "
            b'exec: "no-such-executable": executable file not found in $PATH: unknown\r\n',
            None,
        )
    exec_id = docker_client.api.exec_create(PG.name, ["/no/such/file"])["Id"]
    assert b"no such file or directory" in docker_client.api.exec_start(exec_id)
    assert docker_client.api.exec_inspect(exec_id)["ExitCode"] == 127


# -- raw protocol --------------------------------------------------------------------------


def test_ping_version_and_unknown_paths_on_the_wire(standin: DockerEngineStandIn) -> None:
    status, headers, body = raw_request(standin, "GET", "/_ping")
    assert (status, body) == (200, b"OK")
    assert headers["Api-Version"] == API_VERSION
    assert headers["Content-Type"].startswith("text/plain")

    status, _, body = raw_request(standin, "GET", "/v1.41/version")
    assert status == 200
    assert json.loads(body)["MinAPIVersion"] == "1.24"

    status, _, body = raw_request(standin, "GET", "/v1.45/images/json")
    assert status == 404
    assert json.loads(body) == {"message": "page not found"}
    assert standin.requests == [
        ("GET", "/_ping"),
        ("GET", "/version"),
        ("GET", "/images/json"),
    ]


def test_exec_start_without_upgrade_streams_frames_in_a_200(
    standin: DockerEngineStandIn,
) -> None:
    exec_body = {"Cmd": python("print(42)")}
    status, _, body = raw_request(standin, "POST", f"/v1.45/containers/{PG.name}/exec", exec_body)
    assert status == 201
    exec_id = json.loads(body)["Id"]

    status, headers, body = raw_request(
        standin, "POST", f"/v1.45/exec/{exec_id}/start", {"Detach": False}
    )

    assert status == 200
    assert headers["Content-Type"] == "application/vnd.docker.multiplexed-stream"
    assert split_frames(body) == [(1, b"42\n")]


def test_socket_is_removed_on_exit_and_clients_then_fail(socket_path: Path) -> None:
    with DockerEngineStandIn(socket_path, {PG.name: PG}) as engine:
        client = docker.DockerClient(base_url=engine.base_url, version="auto", timeout=10)
        assert client.containers.get(PG.name).id == PG.id
        assert socket_path.is_socket()

    assert not socket_path.exists()
    # The SDK's UnixHTTPConnection.connect leaks its socket when connect() fails (a reference
    # cycle through the traceback): collect it here, quietly, rather than in a later test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        with pytest.raises(requests.exceptions.ConnectionError):
            client.containers.get(PG.name)
        client.close()
        gc.collect()
