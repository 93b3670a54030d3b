"""The live fixtures as a downstream project meets them: gated off by default, and, with
``--contextq-live``, throwaway tenants on a dev stack (here the fake served on Postgres)
that never leak a key or a user, whatever the test did."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live_stack import DevStack, dev_stack

LIVE_TESTS = """
import pytest

def test_uses_a_tenant(contextq_live_tenant):
    assert contextq_live_tenant.client.list_contexts().total == 0
    contextq_live_tenant.client.create_context(type="reference", title="t", content="c")
    print("TENANT wrote", contextq_live_tenant.tenant_id)

@pytest.mark.contextq_live
def test_marked_live():
    pass

def test_fails_after_writing(contextq_live_tenant):
    contextq_live_tenant.client.create_workspace("ws")
    print("TENANT wrote", contextq_live_tenant.tenant_id)
    assert False, "the test's own failure"

def test_two_tenants_on_two_plans(contextq_live, contextq_live_tenants):
    free, pro = contextq_live_tenants(), contextq_live_tenants(plan="pro")
    assert free.tenant_id != pro.tenant_id
    print("TENANT clean", free.tenant_id)
    print("TENANT clean", pro.tenant_id)
"""


@pytest.fixture(scope="module")
def stack() -> Iterator[DevStack]:
    with dev_stack(with_docker=True) as made:
        yield made


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("CONTEXTQ_LIVE", "CONTEXTQ_DB_DSN", "CONTEXT_API_URL", "DOCKER_HOST"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_without_the_flag_live_tests_skip_saying_how_to_enable_them(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(LIVE_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "-rs", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(
        ["*live ContextQ tests are off: pass --contextq-live or set CONTEXTQ_LIVE=1*"]
    )


@pytest.mark.parametrize("transport", ["dsn", "docker"])
def test_with_the_flag_tenants_are_made_and_nothing_usable_is_left(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack, transport: str
) -> None:
    for name, value in stack.env(docker=transport == "docker").items():
        clean_env.setenv(name, value)
    pytester.makepyfile(LIVE_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-s", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: the test's own failure*"])
    # the tests run in any order (pytest-randomly shuffles this inner run too): each line
    # says what its tenant did
    found = re.findall(r"TENANT (wrote|clean) (\d+)", result.stdout.str())
    tenants = {int(n): what for what, n in found}
    assert sorted(tenants.values()) == ["clean", "clean", "wrote", "wrote"]
    for tenant_id in tenants:
        keys = stack.scalar("select count(*) from api_keys where tenant_id = :t", t=tenant_id)
        users = stack.scalar("select count(*) from users where tenant_id = :t", t=tenant_id)
        assert (keys, users) == (0, 0)
    # the two that wrote keep their tenant rows (chained audit rows); the two that did not
    # are gone whole
    kept = {t: stack.scalar("select count(*) from tenants where id = :t", t=t) for t in tenants}
    assert kept == {t: 1 if what == "wrote" else 0 for t, what in tenants.items()}
    result.stdout.fnmatch_lines(
        [
            "*= contextq live =*",
            "contextq live: left tenant cqmt-live-* in place: it has 2 chained audit row(s)*",
        ]
    )


def test_the_env_variable_turns_them_on_too_and_an_unreachable_api_is_an_error(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack
) -> None:
    clean_env.setenv("CONTEXTQ_LIVE", "1")
    clean_env.setenv("CONTEXTQ_DB_DSN", stack.dsn)
    clean_env.setenv("CONTEXT_API_URL", "http://127.0.0.1:9")
    pytester.makepyfile("def test_x(contextq_live_tenant):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "contextq_fixtures", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*contextq live: cannot reach ContextQ at http://127.0.0.1:9*"])


def test_an_unreachable_database_is_an_error_not_a_skip(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack
) -> None:
    clean_env.setenv("CONTEXT_API_URL", stack.served.url)
    clean_env.setenv("DOCKER_HOST", "unix:///tmp/no-such-docker.sock")
    pytester.makepyfile("def test_x(contextq_live_tenant):\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*contextq live: cannot reach Docker*is Docker running*"])


@pytest.mark.parametrize("unreachable", ["api", "database"])
def test_a_test_with_only_the_marker_is_an_error_when_the_stack_is_unreachable(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack, unreachable: str
) -> None:
    """Not a pass, not a skip: the marker alone gets the fixtures' reachability check."""
    if unreachable == "api":
        clean_env.setenv("CONTEXTQ_DB_DSN", stack.dsn)
        clean_env.setenv("CONTEXT_API_URL", "http://127.0.0.1:9")
        said = "*contextq live: cannot reach ContextQ at http://127.0.0.1:9*"
    else:
        clean_env.setenv("CONTEXT_API_URL", stack.served.url)
        clean_env.setenv("DOCKER_HOST", "unix:///tmp/no-such-docker.sock")
        said = "*contextq live: cannot reach Docker*"
    pytester.makepyfile(
        "import pytest\n\n"
        "@pytest.mark.contextq_live\n"
        "def test_marked_only():\n    pass\n\n"
        "@pytest.mark.contextq_live\n"
        "def test_marked_too():\n    pass\n\n"
        "def test_not_live():\n    pass\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(errors=2, passed=1)
    result.stdout.fnmatch_lines([said])


def test_with_the_flag_a_marked_test_gets_the_stack(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack
) -> None:
    for name, value in stack.env().items():
        clean_env.setenv(name, value)
    pytester.makepyfile(
        "import pytest\n\n"
        "@pytest.mark.contextq_live\n"
        "def test_marked_only(request):\n"
        "    assert 'contextq_live' in request.fixturenames\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)


def test_an_interrupted_run_still_cleans_up(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack
) -> None:
    """Ctrl-C mid-test (KeyboardInterrupt): pytest tears the fixtures down on its way out."""
    for name, value in stack.env().items():
        clean_env.setenv(name, value)
    pytester.makepyfile(
        """
def test_interrupted(contextq_live_tenant):
    contextq_live_tenant.client.create_context(type="reference", title="t", content="c")
    print("TENANT", contextq_live_tenant.tenant_id, flush=True)
    raise KeyboardInterrupt

def test_never_reached():
    pass
"""
    )
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-s", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])
    (tenant_id,) = [int(n) for n in re.findall(r"TENANT (\d+)", result.stdout.str())]
    keys = stack.scalar("select count(*) from api_keys where tenant_id = :t", t=tenant_id)
    users = stack.scalar("select count(*) from users where tenant_id = :t", t=tenant_id)
    contexts = stack.scalar("select count(*) from contexts where tenant_id = :t", t=tenant_id)
    assert (keys, users, contexts) == (0, 0, 0)


def test_the_docs_example_runs_against_the_stack(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, stack: DevStack
) -> None:
    """docs/how-to/live-stack.md's test, as written, against the stack."""
    page = Path(__file__).resolve().parents[3] / "docs" / "how-to" / "live-stack.md"
    found = re.search(
        r"<!-- test: covered-by tests/plugin/slow/test_live_plugin.py -->\n```python\n(.*?)```",
        page.read_text(),
        re.S,
    )
    assert found, "the live-stack page has no block this test covers"
    for name, value in stack.env(docker=False).items():
        clean_env.setenv(name, value)
    pytester.makepyfile(found.group(1))
    result = pytester.runpytest_subprocess(
        "-p", "contextq_fixtures", "--contextq-live", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
