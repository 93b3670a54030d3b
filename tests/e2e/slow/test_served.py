"""The fake over real HTTP: `fake-contextq serve` in a subprocess, and `FakeContextQ.serve()`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import sqlalchemy as sa

from fake_contextq import FakeContextQ
from tests.support.processes import (
    Served,
    anthropic_command,
    cli_command,
    read_banner,
    start,
    start_model,
    stop,
)
from tests.support.stores import postgres_schema

NOTE = {"type": "reference", "title": "Prefs", "content": "Likes TypeScript."}


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    served = start("--control", "--key", "read", "--workspace", "acme")
    yield served
    if served.process.poll() is None:
        served.process.kill()
        served.process.wait()


def test_serve_prints_a_ready_key_and_url(server: Served) -> None:
    assert server.key.startswith("sk_live_") and len(server.key) == 48
    assert server.url.startswith("http://127.0.0.1:")
    assert any(line.startswith("key (read): sk_live_") for line in server.banner)
    assert any("on the free plan" in line for line in server.banner)
    assert "workspace 'acme' created" in server.banner


def test_the_api_over_real_http(server: Served) -> None:
    with httpx2.Client(base_url=server.url, headers={"Authorization": f"Bearer {server.key}"}) as c:
        made = c.post(
            "/api/contexts",
            json={**NOTE, "externalId": "mem-tool:acme/a b/ü.md", "workspace": "acme"},
        )
        assert made.status_code == 201, made.text
        got = c.get("/api/contexts/by-external/mem-tool%3Aacme%2Fa%20b%2F%C3%BC.md")
        assert got.status_code == 200
        assert got.json()["externalId"] == "mem-tool:acme/a b/ü.md"
        assert got.json()["workspace"] == "acme"
        hits = c.post("/api/search", json={"query": "typescript"}).json()["results"]
        assert [h["context"]["id"] for h in hits] == [made.json()["id"]]
        assert (
            c.post(
                "/api/contexts", content=b"{oops", headers={"content-type": "application/json"}
            ).status_code
            == 400
        )


def test_control_routes_need_the_control_token(server: Served) -> None:
    with httpx2.Client(base_url=server.url) as c:
        assert c.get("/_fake/health").json() == {"ok": True}
        assert c.get("/_fake/tenants").status_code == 401
        refused = c.get("/_fake/tenants", headers={"Authorization": f"Bearer {server.key}"})
        assert refused.status_code == 401
        assert "control token" in refused.json()["message"]


def test_control_routes_do_what_the_object_does(server: Served) -> None:
    auth = {"Authorization": f"Bearer {server.token}"}
    with (
        httpx2.Client(base_url=server.url, headers=auth) as control,
        httpx2.Client(base_url=server.url) as api,
    ):
        audited_before = len(control.get("/_fake/audit").json()["items"])
        tenant = control.post("/_fake/tenants", json={"name": "t2", "plan": "free"}).json()
        minted = control.post(
            f"/_fake/tenants/{tenant['id']}/keys", json={"scopes": ["read", "write"]}
        )
        assert minted.status_code == 201
        key = minted.json()["key"]
        api.headers["Authorization"] = f"Bearer {key}"
        assert (
            control.post(
                f"/_fake/tenants/{tenant['id']}/workspaces", json={"slug": "w2"}
            ).status_code
            == 201
        )
        assert api.post("/api/contexts", json={**NOTE, "workspace": "w2"}).status_code == 201
        assert api.post("/api/workspaces", json={"slug": "x"}).status_code == 403

        state = control.get(f"/_fake/tenants/{tenant['id']}/contexts").json()["items"]
        assert [c["workspace"] for c in state] == ["w2"]
        plan = control.put(f"/_fake/tenants/{tenant['id']}/plan", json={"plan": "pro"})
        assert plan.json()["plan"] == "pro"
        assert (
            control.put(f"/_fake/tenants/{tenant['id']}/plan", json={"plan": "gold"}).status_code
            == 400
        )

        journal = control.get("/_fake/journal").json()["entries"]
        assert journal[-1]["method"] == "POST" and journal[-1]["status"] == 403
        assert all(not e["path"].startswith("/_fake/") for e in journal)

        fault = control.post(
            "/_fake/faults",
            json={"method": "GET", "path": "/api/contexts", "status": 503, "times": 1},
        )
        assert fault.status_code == 201
        assert api.get("/api/contexts").status_code == 503
        assert api.get("/api/contexts").status_code == 200
        control.post("/_fake/faults", json={"method": "GET", "path": "/api/contexts", "drop": True})
        with pytest.raises(httpx2.TransportError):
            api.get("/api/contexts")
        assert api.get("/api/contexts").status_code == 200
        control.post(
            "/_fake/faults", json={"method": "*", "path": "/api/*", "status": 500, "times": None}
        )
        assert len(control.get("/_fake/faults").json()["items"]) == 1
        assert control.delete("/_fake/faults").status_code == 204
        assert api.get("/api/contexts").status_code == 200
        assert (
            control.post("/_fake/faults", json={"method": "GET", "path": "/x"}).status_code == 400
        )

        verified = control.post("/_fake/audit/verify").json()
        # the one write through the API is audited; control routes and faults are not
        assert verified == {**verified, "ok": True, "rows": audited_before + 1}
        assert len(control.get("/_fake/audit").json()["items"]) == verified["rows"]


def test_ctrl_c_stops_cleanly_and_reset_works_over_http() -> None:
    served = start("--control")
    auth = {"Authorization": f"Bearer {served.token}"}
    with httpx2.Client(base_url=served.url) as c:
        assert c.post("/_fake/reset", headers=auth).status_code == 204
        assert (
            c.get("/api/contexts", headers={"Authorization": f"Bearer {served.key}"}).status_code
            == 401
        )
    code, out, err = stop(served)
    assert code == 0, err
    assert "Traceback" not in err
    assert "fake-contextq stopped" in out


def test_control_routes_are_absent_unless_enabled() -> None:
    served = start()
    try:
        with httpx2.Client(base_url=served.url) as c:
            assert c.get("/_fake/tenants").status_code == 404
            assert c.get("/_fake/health").status_code == 404
    finally:
        stop(served)


def test_a_taken_port_is_one_clear_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        result = subprocess.run(
            [*cli_command(), "serve", "--memory", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f"fake-contextq: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another server is there? --port 0 picks a free port)\n"
    )


def test_a_bad_scope_is_refused_before_serving() -> None:
    result = subprocess.run(
        [*cli_command(), "serve", "--port", "0", "--memory", "--key", "read,delete"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "Unknown scope 'delete'" in result.stderr


# ----- FakeContextQ.serve(): a served fake inside the test process -----


def test_serve_in_thread_shares_state_with_the_object() -> None:
    with FakeContextQ() as fake:
        tenant = fake.create_tenant()
        key = fake.mint_key(tenant, ("read", "write"))
        with (
            fake.serve() as served,
            httpx2.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as c,
        ):
            url = served.url
            assert served.port > 0
            assert c.post("/api/contexts", json=NOTE).status_code == 201
            assert [ctx.title for ctx in fake.contexts(tenant)] == ["Prefs"]
            fake.faults.inject("GET", "/api/contexts", drop=True)
            with pytest.raises(httpx2.RemoteProtocolError):
                c.get("/api/contexts")
            assert fake.journal.last.status is None
            assert c.get("/api/contexts").json()["total"] == 1
        with pytest.raises(httpx2.ConnectError):  # stopped with its context manager
            httpx2.get(url + "/api/contexts")


# ----- fake-anthropic serve: the scripted model for other processes -----


def test_the_scripted_model_serves_another_process(tmp_path: Path) -> None:
    import anthropic

    process, url = start_model([[{"type": "text", "text": "Hello from the script."}]], tmp_path)
    client = anthropic.Anthropic(base_url=url, api_key="anything", max_retries=0)
    reply = client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.content[0].text == "Hello from the script."  # type: ignore[union-attr]
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert 'text "Hello from the script."' in out


def test_an_unplayed_script_fails_fake_anthropic_serve(tmp_path: Path) -> None:
    process, _ = start_model([[{"type": "text", "text": "never asked"}]], tmp_path)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 1
    assert "fake-anthropic serve:" in err and "Traceback" not in err


def test_a_bad_script_file_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = subprocess.run(
        [*anthropic_command(), "serve", str(bad)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"fake-anthropic serve: cannot load {bad}")
    assert "Traceback" not in result.stderr


# ----- state in a SQLite file -----


def test_serve_keeps_its_state_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "fake.db"
    first = start("--db", str(db), "--workspace", "acme")
    assert f"state in {db}" in first.banner[0]
    assert "workspace 'acme' created" in first.banner
    with httpx2.Client(base_url=first.url, headers={"Authorization": f"Bearer {first.key}"}) as c:
        made = c.post("/api/contexts", json={**NOTE, "externalId": "kept", "workspace": "acme"})
        assert made.status_code == 201
    assert stop(first)[0] == 0
    second = start("--db", str(db), "--workspace", "acme")
    with httpx2.Client(base_url=second.url) as c:
        for key in (first.key, second.key):  # the old key is stored too
            got = c.get(
                "/api/contexts/by-external/kept", headers={"Authorization": f"Bearer {key}"}
            )
            assert got.status_code == 200, got.text
            assert got.json()["workspace"] == "acme"
    assert any("tenant 1 'dev'" in line for line in second.banner)
    assert "workspace 'acme' exists" in second.banner  # kept in the file, not made again
    assert not any("created" in line for line in second.banner)
    assert stop(second)[0] == 0


def test_a_database_that_is_not_ours_is_refused_untouched(tmp_path: Path) -> None:
    alien = tmp_path / "notes.db"
    alien.write_text("these are my notes, not a database\n")
    result = subprocess.run(
        [*cli_command(), "serve", "--port", "0", "--db", str(alien)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"fake-contextq: cannot use the database {alien}")
    assert "Traceback" not in result.stderr
    assert alien.read_text() == "these are my notes, not a database\n"


@pytest.mark.parametrize(
    ("url", "shown", "says"),
    [
        ("nonsense://x", "nonsense://x", "speaks sqlite and postgresql, not 'nonsense'"),
        ("::not a url::", "given by --database-url", "not a database URL"),
        (
            "postgresql://me:s3cret@127.0.0.1:1/test",
            "postgresql://me:***@127.0.0.1:1/test",
            "OperationalError",
        ),
    ],
)
def test_a_bad_or_unreachable_database_url_is_one_line(url: str, shown: str, says: str) -> None:
    bad = subprocess.run(
        [*cli_command(), "serve", "--port", "0", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1, bad.stderr
    assert bad.stderr.startswith(f"fake-contextq: cannot use the database {shown}: ")
    assert says in bad.stderr
    assert "s3cret" not in bad.stderr


def test_a_sqlite_file_with_someone_elses_tables_is_refused_byte_for_byte(
    tmp_path: Path,
) -> None:
    theirs = tmp_path / "theirs.db"
    with contextlib.closing(sqlite3.connect(theirs)) as conn, conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO notes VALUES (1, 'keep me')")
    before = theirs.read_bytes()
    result = subprocess.run(
        [*cli_command(), "serve", "--port", "0", "--db", str(theirs)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"fake-contextq: cannot use the database {theirs}: ")
    assert "this fake did not create (notes)" in result.stderr
    assert theirs.read_bytes() == before  # no table added, no switch to WAL, no pragma
    assert [p.name for p in tmp_path.iterdir()] == ["theirs.db"]


def test_a_postgres_schema_with_someone_elses_tables_is_refused_untouched() -> None:
    with postgres_schema() as url:
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE TABLE invoices (id int PRIMARY KEY)"))
            result = subprocess.run(
                [*cli_command(), "serve", "--port", "0", "--database-url", url],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
            assert "this fake did not create (invoices)" in result.stderr
            with engine.connect() as conn:
                assert sa.inspect(conn).get_table_names() == ["invoices"]
        finally:
            engine.dispose()


def _with_password(url: str, form: str, secret: str) -> str:
    """``url`` (which has a query) carrying ``secret`` as its password, in one of the forms a
    URL allows: ``user:pw@``, ``?password=`` or ``&password=``."""
    if form == "userinfo":
        return sa.make_url(url).set(password=secret).render_as_string(hide_password=False)
    base, _, query = url.partition("?")
    if form == "first-param":
        return f"{base}?password={secret}&{query}"
    return f"{base}?{query}&password={secret}"


PASSWORD_FORMS = ["userinfo", "first-param", "later-param"]


@pytest.mark.parametrize("form", PASSWORD_FORMS)
def test_no_start_up_line_shows_the_database_password(form: str) -> None:
    secret = "pw-shown-nowhere-7f3a"
    with postgres_schema() as url:  # trust auth: any password is accepted
        given = _with_password(url, form, secret)
        assert secret in given
        served = start("--database-url", given)
        code, out, err = stop(served)
    assert code == 0
    assert secret not in "\n".join(served.banner) + out + err
    assert "state in postgresql+psycopg://" in served.banner[0]


@pytest.mark.parametrize("form", PASSWORD_FORMS)
def test_no_error_line_shows_the_database_password(form: str) -> None:
    secret = "pw-shown-nowhere-9c1e"
    unreachable = "postgresql://me@127.0.0.1:1/test?options=-csearch_path%3Dx"
    given = _with_password(unreachable, form, secret)
    assert secret in given
    result = subprocess.run(
        [*cli_command(), "serve", "--port", "0", "--database-url", given],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "OperationalError" in result.stderr
    assert secret not in result.stdout + result.stderr
    assert "***" in result.stderr


# ----- stopping and handing over -----


def test_sigterm_stops_serve_as_ctrl_c_does() -> None:
    served = start("--workspace", "acme")
    with httpx2.Client(base_url=served.url) as c:
        assert c.get("/api/contexts", headers={"Authorization": f"Bearer {served.key}"}).is_success
    code, out, err = stop(served, signal.SIGTERM)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "fake-contextq stopped"


def test_sigterm_makes_fake_anthropic_serve_print_and_verify(tmp_path: Path) -> None:
    import anthropic

    process, url = start_model(
        [[{"type": "text", "text": "played"}], [{"type": "text", "text": "never played"}]],
        tmp_path,
    )
    client = anthropic.Anthropic(base_url=url, api_key="anything", max_retries=0)
    client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 1  # verify() ran: a turn was left unplayed
    assert 'text "played"' in out  # the transcript was printed first
    assert err.startswith("fake-anthropic serve: ") and "Traceback" not in err


def test_a_taken_port_for_the_scripted_model_is_one_clear_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[[{"type": "text", "text": "hi"}]]')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        result = subprocess.run(
            [*anthropic_command(), "serve", str(script), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1
    assert result.stderr == (
        f"fake-anthropic serve: cannot listen on 127.0.0.1:{port}: Address already in use "
        "(another server is there? --port 0 picks a free port)\n"
    )


def _current_dev_venv() -> Path | None:
    """``dev.py`` when this is its ``.venv``'s Python and that holds everything ``dev.py
    serve`` needs, so it starts at once instead of installing (a test must not do that)."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "dev.py"
    spec = importlib.util.spec_from_file_location("_dev_entry", path)
    if spec is None or spec.loader is None:
        return None
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    if Path(sys.executable).resolve() != Path(dev.PYTHON).resolve():
        return None  # dev.py would ask another Python what it lacks, and may install
    return None if dev.lacking("fake") else path


@pytest.mark.skipif(os.name == "nt", reason="dev.py serve runs the server as a child on Windows")
def test_dev_py_serve_hands_over_its_pid_to_the_server() -> None:
    dev_py = _current_dev_venv()
    if dev_py is None:
        pytest.skip("dev.py's .venv is missing or out of date; run python3 dev.py once")
    process = subprocess.Popen(
        [sys.executable, str(dev_py), "serve", "--port", "0", "--memory"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,  # its own group, so nothing it leaves behind can outlive us
    )
    clean = False
    try:
        served = read_banner(process)
        with httpx2.Client(base_url=served.url) as c:
            auth = {"Authorization": f"Bearer {served.key}"}
            assert c.get("/api/contexts", headers=auth).is_success
        code, out, _ = stop(served, signal.SIGTERM)  # the PID dev.py was started as
        assert code == 0
        assert out.splitlines()[-1] == "fake-contextq stopped"
        with pytest.raises(httpx2.ConnectError):  # no server left behind on the port
            httpx2.get(served.url + "/api/contexts")
        clean = True
    finally:
        if not clean:  # a server orphaned by dev.py is still in the group: end it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


def test_lock_timeout_bounds_the_wait_for_a_held_database(tmp_path: Path) -> None:
    """--lock-timeout: a request that finds the SQLite file's write lock held by another
    process answers 503 database_busy after that long, naming the wait; --durable says so."""
    db = tmp_path / "fake.db"
    served = start("--db", str(db), "--lock-timeout", "0.5", "--durable")
    try:
        assert served.banner[0].endswith(
            f"(state in {db}, each commit on disk before it answers; Ctrl-C stops it)"
        )
        holder = sqlite3.connect(db, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with httpx2.Client(
                base_url=served.url, headers={"Authorization": f"Bearer {served.key}"}
            ) as c:
                refused = c.post("/api/contexts", json={**NOTE, "externalId": "held"})
                assert refused.status_code == 503, refused.text
                assert refused.json()["error"] == "database_busy"
                assert "0.5s" in refused.json()["message"]
                holder.execute("ROLLBACK")
                made = c.post("/api/contexts", json={**NOTE, "externalId": "held"})
                assert made.status_code == 201, made.text
        finally:
            holder.close()
    finally:
        assert stop(served)[0] == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--lock-timeout", "0"), "argument --lock-timeout: must be a number of seconds above 0"),
        (("--lock-timeout", "soon"), "argument --lock-timeout: must be a number of seconds"),
        (("--memory", "--durable"), "fake-contextq: --durable applies to a database"),
        (("--memory", "--lock-timeout", "2"), "fake-contextq: --lock-timeout applies to a"),
        (("--journal-keep", "0"), "argument --journal-keep: must be a whole number above 0"),
        (("--journal-keep-mib", "-1"), "argument --journal-keep-mib: must be a whole number"),
        (("--journal-keep", "lots"), "argument --journal-keep: must be a whole number"),
    ],
)
def test_database_options_are_refused_where_they_mean_nothing(
    args: tuple[str, ...], says: str
) -> None:
    result = subprocess.run(
        [*cli_command(), "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode in (1, 2)
    assert says in result.stderr
    assert "Traceback" not in result.stderr
