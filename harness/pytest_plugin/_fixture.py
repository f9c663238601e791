"""The ``harness`` fixture: run scenarios and build agents from a hand-written test."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.pytest_plugin._session import get_state

if TYPE_CHECKING:
    from harness._agent import Agent
    from harness._results import ScenarioResult
    from harness.scenario import Scenario

__all__ = ["HarnessFixture", "harness"]


class HarnessFixture:
    """Run scenarios and build agents from a hand-written test (the ``harness`` fixture)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._registered: list[Any] = []
        state = get_state(request.config)
        self.record_mode = state.options.record_mode if state else "none"
        self.disable_recording = state.options.disable_recording if state else False

    def path(self, path: str | Path) -> Path:
        """A scenario path: as given when it exists, else next to the test file."""
        candidate = Path(path)
        if candidate.is_absolute() or candidate.exists():
            return candidate
        beside = Path(self._request.path).parent / candidate
        return beside if beside.exists() else candidate

    def load(self, path: str | Path) -> Scenario:
        """Load a scenario file (ScenarioError lists its problems)."""
        from harness.scenario import load_scenario

        return load_scenario(self.path(path))

    def run(
        self,
        scenario: str | Path | Scenario,
        *,
        record_mode: str | None = None,
        disable_recording: bool | None = None,
        check: bool = True,
    ) -> ScenarioResult:
        """Run a scenario file or Scenario; fail the test unless it passed (or ``check=False``)."""
        from harness._sync import run_sync

        result = run_sync(
            self._arun(scenario, record_mode, disable_recording),
            name="harness.run()",
            instead="harness.arun(...)",
        )
        return self._finish(result, check)

    async def arun(
        self,
        scenario: str | Path | Scenario,
        *,
        record_mode: str | None = None,
        disable_recording: bool | None = None,
        check: bool = True,
    ) -> ScenarioResult:
        """``run`` for async tests."""
        return self._finish(await self._arun(scenario, record_mode, disable_recording), check)

    async def _arun(
        self, scenario: Any, record_mode: str | None, disable_recording: bool | None
    ) -> ScenarioResult:
        from harness.scenario import Scenario, arun_scenario

        if not isinstance(scenario, Scenario):
            scenario = self.load(scenario)
        return await arun_scenario(
            scenario,
            record_mode or self.record_mode,
            disable_recording=self.disable_recording
            if disable_recording is None
            else disable_recording,
        )

    def _finish(self, result: ScenarioResult, check: bool) -> ScenarioResult:
        if check and result.status != "passed":
            from harness.report._text import format_failure

            pytest.fail(format_failure(result), pytrace=False)
        return result

    def agent(self, llm: Any = None, tools: Any = (), **options: Any) -> Agent:
        """An Agent with the project's plugins and this test's (``register``); ``llm`` may
        be a list of script steps (a ScriptedLLM), ``plugins=[...]`` adds more."""
        from harness._agent import Agent

        extra = options.pop("plugins", ())
        # Anything but a list of plugins goes to Agent as given, to be refused there.
        plugins = self._plugins().with_extra(extra) if isinstance(extra, list | tuple) else extra
        return Agent([] if llm is None else llm, tools, plugins=plugins, **options)

    def register(self, plugin: Any, name: str | None = None) -> Any:
        """Register a harness plugin for this test only (unregistered at teardown): the
        fixture's agents and the scenarios of the project get it."""
        # None: already registered (or blocked), so not this test's to unregister.
        if self._plugins().register(plugin, name) is not None:
            self._registered.append(plugin)
        return plugin

    def _plugins(self) -> Any:
        """The plugins of the project pytest was started in (the front end names it)."""
        from harness._plugins import discover
        from harness._project import project_root

        return discover(project_root(self._request.config.invocation_params.dir))

    def _teardown(self) -> None:
        plugins = self._plugins()
        for plugin in reversed(self._registered):
            with contextlib.suppress(ValueError, KeyError):
                plugins.unregister(plugin)
        self._registered.clear()


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Any:
    """Run scenario files or Scenario objects and build agents in a hand-written test."""
    fixture = HarnessFixture(request)
    yield fixture
    fixture._teardown()
