"""`harness run --live [--concurrency N]` against `harness serve` on 127.0.0.1.

Live runs read and write no cassette, keep up to N requests in flight in one process,
and get through 429s with the openai SDK's own retry and back-off.
"""

from __future__ import annotations

from typing import Any

import pytest
from scenario_texts import SESSION_TESTS

from harness import cli
from harness._results import load_results
from harness.llm._script import parse_step
from harness.serve import create_app, running_app

pytestmark = SESSION_TESTS

SCENARIO = """\
name: {name}
input: What's the weather in SF?
llm: {{provider: openai, model: gpt-4o-mini, base_url: "{url}"}}
expect:
  final: {{contains: 72F}}
"""


class InFlight:
    """ASGI middleware counting the model requests in flight, and the most at once."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.now = self.most = self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            await self.app(scope, receive, send)
            return
        self.requests += 1
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await self.app(scope, receive, send)
        finally:
            self.now -= 1


@pytest.fixture
def project(pytester, monkeypatch):
    """An empty project, as the current directory."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    monkeypatch.chdir(pytester.path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return pytester


def _scenarios(project, url: str, count: int) -> None:
    for i in range(count):
        text = SCENARIO.format(name=f"weather{i}", url=url)
        (project.path / "scenarios" / f"weather{i}.scenario.yaml").write_text(text)


def _served(steps: list[dict[str, Any]]) -> InFlight:
    return InFlight(create_app([parse_step(i, step) for i, step in enumerate(steps)]))


def test_live_runs_keep_n_requests_in_flight_and_retry_429s(project, capsys):
    # Each reply takes a real second; two attempts are refused with 429 first.
    server = _served(
        [
            {"error": {"status": 429, "message": "Rate limit reached"}},
            {"error": {"status": 429, "message": "Rate limit reached"}},
            {"content": "It is 72F in SF.", "latency": 1.0},
        ]
    )
    with running_app(server) as url:
        _scenarios(project, url, 2)
        status = cli.main(["run", "--live", "--concurrency", "4", "--repeat", "4"])
    out = capsys.readouterr().out
    assert status == 0, out
    results = load_results(project.path / "reports/results.json")
    assert [s.status for s in results.scenarios] == ["passed"] * 8
    assert server.most == 4  # never more than asked for, and as many as asked for
    assert server.requests == 8 + 2  # every run once, and the two refused attempts again
    assert not (project.path / "cassettes").exists()  # nothing recorded


def test_without_live_a_recorded_scenario_replays_and_touches_no_network(project, capsys):
    server = _served([{"content": "It is 72F in SF."}])
    with running_app(server) as url:
        _scenarios(project, url, 1)
        status = cli.main(["run"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert "cassettes/weather0.yaml" in out  # replay only: the missing cassette is a miss
    assert server.requests == 0
    assert not (project.path / "cassettes").exists()


def test_concurrency_1_keeps_one_request_in_flight(project, capsys):
    server = _served([{"content": "It is 72F in SF.", "latency": 0.2}])
    with running_app(server) as url:
        _scenarios(project, url, 3)
        status = cli.main(["run", "--live"])
    assert status == 0, capsys.readouterr().out
    assert (server.most, server.requests) == (1, 3)


def test_a_run_that_fails_ahead_of_its_item_reports_as_its_item(project, capsys):
    # The script has no reply: every request is answered 400 (an llm_error, exit 1).
    server = _served([{"error": {"status": 400, "message": "bad request"}}])
    with running_app(server) as url:
        _scenarios(project, url, 3)
        status = cli.main(["run", "--live", "--concurrency", "3", "--", "-q"])
    out = capsys.readouterr().out
    assert status == 1, out
    results = load_results(project.path / "reports/results.json")
    assert [s.termination.value for s in results.scenarios] == ["llm_error"] * 3
    assert out.count("FAILED scenarios/weather") == 3


def test_under_xdist_each_worker_keeps_its_own_runs_in_flight(project, capsys):
    server = _served([{"content": "It is 72F in SF.", "latency": 0.5}])
    with running_app(server) as url:
        _scenarios(project, url, 8)
        status = cli.main(["run", "--live", "--concurrency", "2", "-n", "2", "--", "-q"])
    assert status == 0, capsys.readouterr().out
    results = load_results(project.path / "reports/results.json")
    assert [s.status for s in results.scenarios] == ["passed"] * 8
    assert server.requests == 8  # each run once: none ran twice, none was lost
    assert 2 <= server.most <= 4  # 2 workers x 2 runs at most
