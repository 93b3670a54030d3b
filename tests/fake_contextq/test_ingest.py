"""Ingest as a job (``ctx_ingest``, ``ctx_ingest_status`` and their REST twins): the split,
the data: URL, the refusal to fetch, the job's steps, the create rules, on every store and
through MCP in-process."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx2
import jsonschema
import pytest

from adapter import wire
from fake_contextq import FakeContextQ, Tenant, _msgs
from fake_contextq.domain.audit import AuditAction, PkmAction
from fake_contextq.domain.errors import NOT_FAKED_STATUS
from fake_contextq.mcp import McpToolError, SyncMcpClient
from fake_contextq.service import mcp_tool

pytestmark = pytest.mark.all_stores

DOC = """Intro paragraph.

# Deploys
Deploys go out on Tuesdays.

```sh
# not a heading: inside a fence
make deploy
```

# Incidents #
Page the on-call.
"""


def _output(name: str) -> Any:
    """The output schema the server lists for the tool ``name``."""
    tool = mcp_tool(name)
    assert tool is not None
    return tool.output_schema


def ingest(client: httpx2.Client, **body: Any) -> httpx2.Response:
    return client.post("/api/ingest", json=body)


def status(client: httpx2.Client, job_id: int | str) -> httpx2.Response:
    return client.get(f"/api/ingest/jobs/{job_id}")


def submitted(client: httpx2.Client, **body: Any) -> dict[str, Any]:
    answer = ingest(client, **body)
    assert answer.status_code == 202, answer.text
    job: dict[str, Any] = answer.json()
    return job


def run(client: httpx2.Client, job_id: int) -> dict[str, Any]:
    """Poll until the job ended (two reads: running, then done or failed)."""
    assert status(client, job_id).json()["status"] == wire.INGEST_RUNNING
    ended: dict[str, Any] = status(client, job_id).json()
    return ended


def issues_of(response: httpx2.Response) -> dict[str, str]:
    body = response.json()
    assert response.status_code == 400, body
    assert body["error"] == _msgs.VALIDATION_ERROR
    return {i["path"]: i["message"] for i in body["issues"]}


def data_url(text: str, media_type: str = "text/markdown", *, b64: bool = True) -> str:
    if b64:
        return f"data:{media_type};base64," + base64.b64encode(text.encode()).decode()
    return f"data:{media_type}," + quote(text)


@pytest.fixture
def mcp(fake: FakeContextQ, key: str) -> Iterator[SyncMcpClient]:
    with SyncMcpClient(fake.mcp_server(key)) as session:
        yield session


# ----- the job's steps -----


def test_a_job_is_queued_then_running_then_done_one_step_per_status_read(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    job = submitted(client, text=DOC, tags=["ops"])
    jsonschema.validate(job, _output("ctx_ingest"))
    assert (job["status"], job["parts"], job["contexts"], job["failure"]) == (
        wire.INGEST_QUEUED,
        3,
        [],
        None,
    )
    assert fake.contexts(tenant) == []  # nothing is made before the job runs
    running = status(client, job["id"]).json()
    assert (running["status"], running["contextIds"]) == (wire.INGEST_RUNNING, [])
    assert fake.contexts(tenant) == []
    done = status(client, job["id"]).json()
    jsonschema.validate(done, _output("ctx_ingest_status"))
    assert done["status"] == wire.INGEST_DONE
    assert [c["title"] for c in done["contexts"]] == ["Intro paragraph.", "Deploys", "Incidents"]
    assert [c["id"] for c in done["contexts"]] == done["contextIds"]
    assert status(client, job["id"]).json() == done  # an ended job stays as it is
    made = fake.contexts(tenant)
    assert [c.content for c in made] == [
        "Intro paragraph.",
        "# Deploys\nDeploys go out on Tuesdays.\n\n```sh\n# not a heading: inside a fence\n"
        "make deploy\n```",
        "# Incidents #\nPage the on-call.",
    ]
    assert {(c.type, c.tags, c.workspace) for c in made} == {
        (wire.INGEST_DEFAULT_TYPE, ("ops",), None)
    }
    assert [c.metadata for c in made] == [
        {"ingestJobId": job["id"], "ingestPart": n} for n in (1, 2, 3)
    ]


def test_a_head_on_the_status_finds_the_job_without_moving_it(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    """A HEAD's caller sees no body: a step it caused would pass unseen by the polling."""
    job = submitted(client, text=DOC)
    for _ in range(3):
        looked = client.head(f"/api/ingest/jobs/{job['id']}")
        assert (looked.status_code, looked.content) == (200, b"")
    assert fake.contexts(tenant) == []
    assert status(client, job["id"]).json()["status"] == wire.INGEST_RUNNING
    assert client.head(f"/api/ingest/jobs/{job['id'] + 1}").status_code == 404


def test_run_ingest_jobs_ends_every_unfinished_job_at_once(
    client: httpx2.Client, fake: FakeContextQ, other: tuple[Tenant, httpx2.Client]
) -> None:
    first = submitted(client, text="# A\na")
    second = submitted(client, text="# B\nb\n# C\nc")
    status(client, second["id"])  # running
    _, theirs = other
    third = submitted(theirs, text="theirs")
    ended = fake.run_ingest_jobs()
    assert [(j.id, j.status, len(j.context_ids)) for j in ended] == [
        (first["id"], wire.INGEST_DONE, 1),
        (second["id"], wire.INGEST_DONE, 2),
        (third["id"], wire.INGEST_DONE, 1),
    ]
    assert fake.run_ingest_jobs() == []
    assert status(client, second["id"]).json()["status"] == wire.INGEST_DONE


def test_concurrent_status_reads_make_the_contexts_once(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    job = submitted(client, text="# A\na\n# B\nb")
    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(lambda _: status(client, job["id"]).json()["status"], range(16)))
    assert seen.count(wire.INGEST_RUNNING) == 1
    assert seen.count(wire.INGEST_DONE) == 15
    assert len(fake.contexts(tenant)) == 2


def test_a_deleted_context_leaves_the_jobs_ids_but_not_its_summary(
    client: httpx2.Client,
) -> None:
    job = submitted(client, text="# A\na\n# B\nb")
    done = run(client, job["id"])
    first, second = done["contextIds"]
    assert client.delete(f"/api/contexts/{first}").status_code == 204
    after = status(client, job["id"]).json()
    assert after["contextIds"] == [first, second]
    assert [c["id"] for c in after["contexts"]] == [second]


# ----- the create rules, when the job runs -----


def test_a_job_that_would_pass_the_quota_fails_and_makes_nothing(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.fill(tenant, 99)  # the free plan holds 100
    job = submitted(client, text="# A\na\n# B\nb")
    failed = run(client, job["id"])
    assert failed["status"] == wire.INGEST_FAILED
    assert failed["contextIds"] == [] and failed["contexts"] == []
    assert failed["failure"]["code"] == _msgs.QUOTA_EXCEEDED
    assert "would add 2" in failed["failure"]["message"]
    assert len(fake.contexts(tenant)) == 99
    assert fake.audit_log()[-1].action == PkmAction.INGEST_FAILED
    fits = submitted(client, text="one more")
    assert run(client, fits["id"])["status"] == wire.INGEST_DONE
    assert len(fake.contexts(tenant)) == 100


def test_the_workspace_falls_back_to_none_when_unknown_and_the_type_is_checked(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    fake.create_workspace(tenant, "acme")
    known = submitted(client, text="x", workspace="acme", type="project", title="Named")
    unknown = submitted(client, text="y", workspace="nowhere")
    fake.run_ingest_jobs()
    by_title = {c.title: c for c in fake.contexts(tenant)}
    assert (by_title["Named"].workspace, by_title["Named"].type) == ("acme", "project")
    assert by_title["y"].workspace is None
    assert status(client, known["id"]).json()["workspace"] == "acme"
    assert status(client, unknown["id"]).json()["workspace"] == "nowhere"  # as asked
    assert "type" in issues_of(ingest(client, text="x", type="diary"))


def test_the_title_names_the_text_before_the_first_heading(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant
) -> None:
    submitted(client, text="preamble\n# H\nbody", title="Notes")
    submitted(client, text="## not top level\nbody")
    fake.run_ingest_jobs()
    assert [c.title for c in fake.contexts(tenant)] == ["Notes", "H", "not top level"]


# ----- data: URLs -----


@pytest.mark.parametrize(
    ("url", "titles"),
    [
        (data_url("# A\na\n# B\nb"), ["A", "B"]),
        (data_url("# A\na\n# B\nb", b64=False), ["A", "B"]),
        (data_url("# A\na\n# B\nb", "text/plain"), ["A"]),  # plain text is one part
        ("data:,plain%20words", ["plain words"]),  # no media type: text/plain
        (
            "DATA:Text/Markdown;charset=UTF-8;base64,"
            + base64.b64encode(b"# \xc3\xa9t\xc3\xa9\nx").decode(),
            ["\u00e9t\u00e9"],
        ),
    ],
)
def test_a_data_url_is_read_by_its_media_type(
    client: httpx2.Client, fake: FakeContextQ, tenant: Tenant, url: str, titles: list[str]
) -> None:
    job = submitted(client, url=url)
    assert job["source"] == "data"
    assert run(client, job["id"])["status"] == wire.INGEST_DONE
    assert [c.title for c in fake.contexts(tenant)] == titles


@pytest.mark.parametrize(
    "url", ["http://example.com/doc.md", "https://example.com/", "HTTPS://EXAMPLE.COM"]
)
def test_an_http_url_is_refused_as_not_faked_and_nothing_is_written(
    client: httpx2.Client, fake: FakeContextQ, url: str
) -> None:
    audited = len(fake.audit_log())
    refused = ingest(client, url=url)
    assert refused.status_code == NOT_FAKED_STATUS == 501
    body = refused.json()
    assert body["error"] == _msgs.NOT_FAKED
    assert body["message"].startswith("fake-contextq does not fetch URLs")
    assert repr(url) in body["message"] and "real ContextQ is assumed" in body["message"]
    assert len(fake.audit_log()) == audited
    assert status(client, 1).status_code == 404  # no job was made


def test_a_refused_urls_credentials_are_never_shown(
    client: httpx2.Client, fake: FakeContextQ
) -> None:
    """The refusal names the URL, but not its password, its token or its fragment: not in
    the answer, nor in the journal that the dashboard and failure pages show."""
    url = "https://bob:hunter2pw@example.com/doc?token=s3cr3ttok&x=1#frag-secret" + "/p" * 200
    refused = ingest(client, url=url)
    assert refused.status_code == 501
    shown = refused.json()["message"]
    assert "bob:***@example.com" in shown and "token=***" in shown
    kept = fake.journal.last.response_body.decode()
    for secret in ("hunter2pw", "s3cr3ttok", "frag-secret"):
        assert secret not in shown and secret not in kept


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", _msgs.INGEST_BAD_SCHEME.format(scheme="ftp")),
        ("file:///etc/passwd", _msgs.INGEST_BAD_SCHEME.format(scheme="file")),
        ("no scheme at all", _msgs.INGEST_BAD_SCHEME.format(scheme="no scheme at all")),
        ("data:text/markdown;base64", _msgs.INGEST_NOT_DATA_URL),
        (
            "data:text/html,<p>x</p>",
            _msgs.INGEST_BAD_MEDIA_TYPE.format(
                media_type="text/html", types="text/plain, text/markdown"
            ),
        ),
        ("data:text/plain;charset=latin-1,x", _msgs.INGEST_BAD_CHARSET.format(charset="latin-1")),
        ("data:text/plain;base64,!!!", _msgs.INGEST_BAD_BASE64),
        ("data:text/plain,%FF%FE", _msgs.INGEST_NOT_UTF8),
        ("data:text/plain,a%00b", _msgs.HAS_NUL),
        ("data:text/plain,%20%0A", _msgs.INGEST_BLANK),
    ],
)
def test_a_url_that_is_no_usable_data_url_is_a_400(
    client: httpx2.Client, url: str, message: str
) -> None:
    assert issues_of(ingest(client, url=url)) == {"url": message}


def test_a_data_url_past_the_size_limit_is_a_400(client: httpx2.Client) -> None:
    big = "x" * (wire.INGEST_MAX_TEXT_BYTES + 1)
    issues = issues_of(
        ingest(client, url="data:text/plain;base64," + base64.b64encode(big.encode()).decode())
    )
    assert issues == {
        "url": _msgs.TOO_MANY_BYTES.format(max=wire.INGEST_MAX_TEXT_BYTES, got=len(big))
    }
    too_long = "data:text/plain," + "x" * wire.INGEST_MAX_URL_CHARS
    assert issues_of(ingest(client, url=too_long)) == {
        "url": _msgs.TOO_LONG.format(max=wire.INGEST_MAX_URL_CHARS)
    }


# ----- bad input -----


@pytest.mark.parametrize(
    ("body", "issues"),
    [
        ({}, {"": _msgs.INGEST_NEEDS_ONE}),
        ({"text": "x", "url": "data:,x"}, {"": _msgs.INGEST_NEEDS_ONE}),
        ({"text": 5}, {"text": _msgs.EXPECTED.format(expected="string", received="number")}),
        ({"text": "a\x00b"}, {"text": _msgs.HAS_NUL}),
        ({"text": "  \n\t"}, {"text": _msgs.INGEST_BLANK}),
        (
            {"text": "x", "tags": "ops"},
            {"tags": _msgs.EXPECTED.format(expected="array", received="string")},
        ),
        (
            {"text": "x", "title": "t" * 501},
            {"title": _msgs.TOO_LONG.format(max=wire.MAX_TITLE_CHARS)},
        ),
        ({"text": "x", "workspace": ""}, {"workspace": _msgs.TOO_SHORT.format(min=1)}),
        ({"url": ""}, {"url": _msgs.TOO_SHORT.format(min=1)}),
    ],
)
def test_bad_ingest_bodies_are_400s_naming_the_field(
    client: httpx2.Client, body: dict[str, Any], issues: dict[str, str]
) -> None:
    assert issues_of(ingest(client, **body)) == issues


def test_text_past_the_byte_limit_or_the_part_limit_is_a_400(client: httpx2.Client) -> None:
    big = "\u00e9" * (wire.INGEST_MAX_TEXT_BYTES // 2 + 1)  # 2 bytes each in UTF-8
    assert issues_of(ingest(client, text=big)) == {
        "text": _msgs.TOO_MANY_BYTES.format(max=wire.INGEST_MAX_TEXT_BYTES, got=len(big) * 2)
    }
    many = "".join(f"# {n}\nx\n" for n in range(wire.INGEST_MAX_PARTS + 1))
    count = wire.INGEST_MAX_PARTS + 1
    assert issues_of(ingest(client, text=many)) == {
        "text": _msgs.INGEST_TOO_MANY_PARTS.format(count=count, max=wire.INGEST_MAX_PARTS)
    }
    exactly = "".join(f"# {n}\nx\n" for n in range(wire.INGEST_MAX_PARTS))
    assert submitted(client, text=exactly)["parts"] == wire.INGEST_MAX_PARTS


def test_job_ids_are_checked_and_another_tenants_job_is_a_404(
    client: httpx2.Client, other: tuple[Tenant, httpx2.Client]
) -> None:
    job = submitted(client, text="secret plans")
    _, theirs = other
    refused = status(theirs, job["id"])
    assert refused.status_code == 404
    assert refused.json()["message"] == _msgs.INGEST_JOB_NOT_FOUND.format(id=job["id"])
    assert "secret" not in refused.text
    # the owner's first read moves it one step: the other tenant's read did not move it
    assert status(client, job["id"]).json()["status"] == wire.INGEST_RUNNING
    assert status(client, 999_999).status_code == 404
    assert status(client, "9" * 19).status_code == 404
    assert issues_of(status(client, "abc")) == {"jobId": _msgs.NOT_AN_ID.format(value="abc")}


def test_scopes_write_to_submit_read_to_poll_and_the_submitter_is_audited(
    fake: FakeContextQ, tenant: Tenant, client: httpx2.Client, key: str
) -> None:
    with fake.client(fake.mint_key(tenant, [wire.READ])) as reader:
        refused = ingest(reader, text="x")
        assert refused.status_code == 403 and refused.json()["error"] == _msgs.SCOPE_DENIED
        job = submitted(client, text="x")
        assert run(reader, job["id"])["status"] == wire.INGEST_DONE
    with fake.client(fake.mint_key(tenant, [wire.WRITE])) as writer:
        assert status(writer, job["id"]).status_code == 403
    rows = [r for r in fake.audit_log() if r.entity == "ingest_job"]
    assert [(r.action, r.entity_id) for r in rows] == [
        (PkmAction.INGEST_SUBMIT, str(job["id"])),
        (PkmAction.INGEST_DONE, str(job["id"])),
    ]
    assert {r.actor_key_prefix for r in rows} == {rows[0].actor_key_prefix}
    assert key.startswith(rows[0].actor_key_prefix or "-")  # the submitter, not the poller
    assert AuditAction.CONTEXT_CREATE not in {r.action for r in fake.audit_log()}
    assert fake.verify_audit_chain() == len(fake.audit_log())


# ----- through MCP -----


def test_ctx_ingest_and_its_status_round_trip_as_rest_answers(
    mcp: SyncMcpClient, client: httpx2.Client
) -> None:
    job = mcp.call("ctx_ingest", {"text": DOC, "tags": ["ops"]})
    jsonschema.validate(job, _output("ctx_ingest"))
    assert job["status"] == wire.INGEST_QUEUED
    running = mcp.call("ctx_ingest_status", {"jobId": job["id"]})
    assert running["status"] == wire.INGEST_RUNNING
    done = mcp.call("ctx_ingest_status", {"jobId": job["id"]})
    jsonschema.validate(done, _output("ctx_ingest_status"))
    assert done["status"] == wire.INGEST_DONE and len(done["contexts"]) == 3
    assert done == status(client, job["id"]).json()


def test_ingest_refusals_are_tool_errors_with_rests_body(
    mcp: SyncMcpClient, fake: FakeContextQ, tenant: Tenant
) -> None:
    with pytest.raises(McpToolError) as caught:
        mcp.call("ctx_ingest", {"url": "https://example.com/page"})
    assert caught.value.code == _msgs.NOT_FAKED
    assert "fake-contextq does not fetch URLs" in caught.value.text
    for args, tool, code in (
        ({"text": "a\x00"}, "ctx_ingest", _msgs.VALIDATION_ERROR),
        ({}, "ctx_ingest", _msgs.VALIDATION_ERROR),
        ({"jobId": 999_999}, "ctx_ingest_status", _msgs.NOT_FOUND),
    ):
        with pytest.raises(McpToolError) as caught:
            mcp.call(tool, args)
        assert caught.value.code == code, caught.value.text
    with SyncMcpClient(fake.mcp_server(fake.mint_key(tenant, [wire.READ]))) as reader:
        with pytest.raises(McpToolError) as caught:
            reader.call("ctx_ingest", {"text": "x"})
        assert caught.value.code == _msgs.SCOPE_DENIED
