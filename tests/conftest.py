"""Shared test configuration (kept minimal: helpers live next to the tests that use them,
unless several test modules need them)."""

import os
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path

import _pytest.pytester
import pytest
from _pytest.pytester import SysModulesSnapshot
from hypothesis import HealthCheck, settings

# Property tests search widely when run by hand, and the same way every time in CI
# (`CI` set): no random seed, no example database carried between runs, so a fresh
# clone passes or fails on the code alone. Neither profile has a clock in it: the
# deadline and the too_slow health check fail a correct test on a loaded machine (one
# did, with -n 2 on two busy cores), and timing goals live in benchmarks/.
_untimed = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_untimed)
settings.register_profile("dev", **_untimed)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# pytester: the plugin and CLI tests run real pytest sessions (tests/test_pytest_plugin.py).
pytest_plugins = ["pytester"]


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """A plain `pytest` (the whole suite, from testpaths) runs on every core, as `-n auto`
    does; a file or folder named on the command line runs in one process, unless `-n` is
    given. `-n 0` or `-p no:xdist` runs the whole suite in one process too."""
    if (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and config.pluginmanager.hasplugin("xdist")
        and getattr(config.option, "numprocesses", 0) is None
        and not hasattr(config, "workerinput")
        and not config.option.collectonly
    ):
        config.option.numprocesses = "auto"
        # Work stealing: a worker left with the slow end of its share hands some over.
        if config.option.dist == "no":
            config.option.dist = "worksteal"


class _SnapshotKeepingLibraries(SysModulesSnapshot):
    """pytester's snapshot of sys.modules whose restore forgets only the modules of the
    test's own projects (those under pytest's base temporary folder): harness's modules,
    and the libraries they import, stay."""

    base = ""  # set by the pytester fixture below

    def __init__(self, preserve: Callable[[str], bool] | None = None) -> None:
        super().__init__(lambda name: _a_library(name) or bool(preserve and preserve(name)))


def _a_library(name: str) -> bool:
    where = getattr(sys.modules.get(name), "__file__", None)
    return bool(where) and not str(where).startswith(_SnapshotKeepingLibraries.base)


@pytest.fixture
def pytester(pytester, monkeypatch, tmp_path_factory):
    """pytester whose subprocess sessions load only the pytest plugins they need, and
    whose restores of sys.modules keep harness's modules and their libraries.

    A subprocess session (`runpytest_subprocess`) otherwise autoloads every installed
    pytest plugin (hypothesis's, Faker's, langsmith's, ...): about 2.7 s a process here,
    three processes for a session with `-n 2`. It loads harness's plugin, and
    pytest-xdist's when `-n` is given.
    """
    subprocess_session = pytester.runpytest_subprocess

    def lean(*args, **kwargs):
        needed = ["-p", "harness.pytest_plugin"]
        if any(str(a) == "-n" or str(a).startswith("--numprocesses") for a in args):
            needed += ["-p", "xdist.plugin"]
        with monkeypatch.context() as env:
            env.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
            return subprocess_session(*needed, *args, **kwargs)

    monkeypatch.setattr(pytester, "runpytest_subprocess", lean)
    # pytester forgets the modules a test (or an in-process session) imported: a test
    # project's own, rightly, but harness's and its libraries' too, which the next test
    # imported again; and pytest rewrites the asserts of every module of a plugin's
    # distribution (harness's) as it imports it, parsing it: about 1 s of CPU for each
    # test that ran harness in-process.
    _SnapshotKeepingLibraries.base = str(tmp_path_factory.getbasetemp())
    monkeypatch.setattr(_pytest.pytester, "SysModulesSnapshot", _SnapshotKeepingLibraries)
    pytester._sys_modules_snapshot = _SnapshotKeepingLibraries(
        lambda name: name.startswith(("zope", "readline"))  # as pytester's own
    )
    return pytester


# Test data, never test items: the report's sample scenarios (tests/report_samples.py)
# fail and err on purpose.
collect_ignore = ["fixtures"]


# This repository's own plugins (`[tool.harness] plugins`), which its example scenarios
# use. A test that runs those examples says so with the `repo_plugins` mark; every other
# test runs with them blocked, so that none depends on them by accident: a test that
# needs a plugin registers it.
_REPO_PLUGINS = tomllib.loads(
    (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
)["tool"]["harness"].get("plugins", [])


@pytest.fixture(autouse=True)
def _repo_plugins_only_when_asked(request, monkeypatch):
    if request.node.get_closest_marker("repo_plugins") is not None:
        yield
        return
    from harness import _plugins as plugins

    given = os.environ.get("HARNESS_DISABLE_PLUGINS", "")
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", ",".join(filter(None, [given, *_REPO_PLUGINS])))
    # Plugin sets are kept per project: one found by an earlier test may hold them.
    plugins.discovery.reset()
    yield
    plugins.discovery.reset()


@pytest.fixture(autouse=True)
def _stop_served_scenarios():
    """Scenario files served as A2A agents (``remote: {scenario: FILE}``) live until the
    process exits; a test that started one stops it, so that its server's loop does not
    run on (and sleep) under the next tests."""
    yield
    serving = sys.modules.get("harness.scenario._serving")
    if serving is not None:
        serving.stop_served()


@pytest.fixture(autouse=True)
def _agents_sdk_client_per_test():
    """The OpenAI Agents SDK keeps one HTTP client for the whole process
    (agents.models.openai_provider.shared_http_client), bound to the event loop it first
    ran on: a sync target (Runner.run_sync, on its thread's loop) and an async one (on
    the targets' loop) cannot both use it in one process, in harness or out of it
    (docs/external.md#the-openai-agents-sdk). Each test starts with none, so that which
    test ran before does not decide whether the SDK works."""
    yield
    provider = sys.modules.get("agents.models.openai_provider")
    if provider is not None and hasattr(provider, "_http_client"):
        provider._http_client = None


@pytest.fixture
def one_sandbox_user_at_a_time():
    """Held by every test that runs sandboxed code (tests/test_sandbox*.py), across
    xdist workers: under root, bubblewrap's code runs as the host's uid 65534, and so does
    harness itself in the attacks made as that user, where RLIMIT_NPROC (per user,
    host-wide) is the process limit. A fork bomb held at its limit in one worker then
    leaves the other worker's uid-65534 harness unable to make its sandbox ("Creating new
    namespace failed: Resource temporarily unavailable")."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / "harness-tests-sandbox.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def cli_project(pytester, monkeypatch, capsys):
    """An empty project (pyproject.toml, scenarios/) as the current directory, with
    ``project.run_harness(*args)``: harness's command in this process, its exit status
    and what it printed (stdout then stderr)."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    monkeypatch.chdir(pytester.path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)

    from cli_runs import harness

    pytester.run_harness = lambda *args: harness(capsys, *args)
    return pytester


@pytest.fixture
def fresh_plugins():
    """Each test discovers harness plugins afresh, and leaves none behind.

    Plugin sets are process-wide (harness._plugins.discovery keeps each project's): one
    discovered in a throw-away project must not serve the tests that run next.
    """
    from harness import _plugins as plugins

    plugins.discovery.reset()
    yield
    plugins.discovery.reset()


# Per test, in seconds (pytest-timeout): the slowest test takes about 15 s on a loaded
# 2-CPU machine; a hung one fails instead of holding CI. Set as a mark, not in the ini
# file, so that `harness run` in this repository (which loads only the plugins it needs)
# does not warn about an unknown option.
TEST_TIMEOUT = 300


# Warnings that hide bugs fail the test that caused them: a coroutine never awaited (a
# missed `await`: RuntimeWarning), an exception raised where nothing could catch it (in
# __del__, in a callback), an exception that ended a thread. Set per test, not in the ini
# file: there the filters also hold at the session's end, where an exception nothing can
# tie to a test (a Ctrl-C landing in a library's gc callback) made pytest exit 1 with
# every test passed. A test's own filterwarnings marks still come first.
HIDING_BUGS = (
    "error::RuntimeWarning",
    "error::pytest.PytestUnraisableExceptionWarning",
    "error::pytest.PytestUnhandledThreadExceptionWarning",
)


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT))
        item.add_marker(pytest.mark.filterwarnings(*HIDING_BUGS), append=False)


def pytest_configure(config):
    # The registry behind tests/test_hookspecs.py: a test that exercises hooks says which.
    config.addinivalue_line(
        "markers", "hooks(*names): the harness hooks this test exercises (see test_hookspecs.py)"
    )
    config.addinivalue_line("markers", "timeout(seconds): pytest-timeout's per-test limit")
    config.addinivalue_line(
        "markers", "repo_plugins: the test runs this repository's example plugins (scenarios/)"
    )


@pytest.fixture
def no_real_sleep(monkeypatch):
    """The real sleeps taken by time.sleep and asyncio.sleep meanwhile ("0.5 s in thread
    'MainThread'").

    Simulated latency must cost no real time: a test asserts this list is empty instead
    of timing itself, which a loaded machine would make flaky. The patch is process-wide:
    the ticks of a server thread an earlier test left running (uvicorn's main loop sleeps
    0.1 s at a time) and the sleeps of external targets (on their own threads and loop)
    are not the run's, and are not counted.
    """
    import asyncio
    import threading
    import time

    from harness._asgi import SERVER_THREAD

    slept: list[str] = []
    real_sleep, real_async_sleep = time.sleep, asyncio.sleep

    def counted(seconds):
        name = threading.current_thread().name
        # A target's own threads and loop ("harness-target...") run on the wall clock by
        # design (an SDK's retry backoff, say), like the server's: not the run's latency.
        return seconds > 0.001 and not name.startswith(
            (SERVER_THREAD, "harness-concurrency", "harness-target")
        )

    def taken(seconds) -> str:
        # The thread is named so that a failure says whose sleep it was.
        return f"{seconds} s in thread {threading.current_thread().name!r}"

    def sleep(seconds):
        if counted(seconds):
            slept.append(taken(seconds))
        return real_sleep(seconds)

    async def async_sleep(seconds, result=None):
        if counted(seconds):
            slept.append(taken(seconds))
        return await real_async_sleep(seconds, result)

    monkeypatch.setattr(time, "sleep", sleep)
    monkeypatch.setattr(asyncio, "sleep", async_sleep)
    return slept
