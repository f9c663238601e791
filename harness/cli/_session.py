"""``harness run``'s pytest sessions: their command line, the plugin object that hands a
session what the command loaded and reads what it made, and the call to ``pytest.main``.

The command calls ``pytest.main`` in its own process rather than starting a pytest
subprocess: one interpreter start-up less per run, pytest's own output and exit status
as they are, and the session's results at hand for the summary and the baseline (no
re-reading of results.json). pytest-xdist's workers are separate processes anyway.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from harness._exitcodes import EXIT

if TYPE_CHECKING:
    from harness.pytest_plugin._parts import RunPart
    from harness.pytest_plugin._session import SuiteState

__all__ = ["Capture", "call_pytest", "pytest_args"]

_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"

# pytest.hookimpl, without importing pytest where the command does not run it.
_pytest_hookimpl = pluggy.HookimplMarker("pytest")


def plugin_autoloads() -> bool:
    from importlib.metadata import entry_points

    if os.environ.get(_AUTOLOAD):
        return False
    return any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11"))


def pytest_args(
    options: argparse.Namespace, paths: list[str], outputs: tuple[Path, Path]
) -> list[str]:
    """pytest's command line for the options (``outputs``: the JSON and HTML files)."""
    from harness.pytest_plugin._options import pytest_args as plugin_args

    json_path, html_path = outputs
    values = vars(options) | {
        "harness_scenarios_only": True,
        "harness_json": str(json_path),
        "harness_html": str(html_path),
        # Loaded here, and handed to the session (Capture) rather than read again.
        "harness_baseline": None,
    }
    args = [*paths, *plugin_args(values)]
    lean = not options.all_pytest_plugins
    if lean or not plugin_autoloads():
        # (Without autoload, or from a source tree without the entry point installed.)
        args += ["-p", "harness.pytest_plugin"]
    if lean and options.numprocesses is not None:
        args += ["-p", "xdist.plugin"]
    if lean:
        # pytest's unraisable-exception check runs gc.collect() five times as each
        # process ends; over a large suite's heap that was a second per process.
        args += ["-p", "no:unraisableexception"]
    return args + options.passed_on


class Capture:
    """A pytest plugin object that keeps the session's config, to read its harness state,
    and hands the session the baseline the command loaded (so it is read once)."""

    def __init__(
        self, baseline: tuple[Path, Any] | None = None, part: RunPart | None = None
    ) -> None:
        self.config: Any = None
        self.baseline = baseline
        self.part = part
        self.ctrl_c = False
        self.failed = 0  # pytest's count of failed items

    @_pytest_hookimpl(trylast=True)  # after harness's own pytest_configure made the state
    def pytest_configure(self, config: Any) -> None:
        """Keep the config; give harness's session state the loaded baseline."""
        from harness.pytest_plugin._session import Baseline, get_state

        self.config = config
        state = get_state(config)
        if state is not None and self.baseline is not None:
            state.baseline = Baseline(*self.baseline)
        if state is not None and self.part is not None:
            part = self.part
            state.take_part(part)
            if part.collects_nothing:  # the run's end prints the harness summary alone
                config.pluginmanager.unregister(name="terminalreporter")

    def pytest_sessionfinish(self, session: Any) -> None:
        """Keep pytest's count of failures (``--maxfail`` over a run's parts)."""
        self.failed = int(session.testsfailed)

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """Ctrl-C: pytest says 2 (as for collection errors), harness 130 (harness.cli._stops)."""
        self.ctrl_c = excinfo.type is KeyboardInterrupt  # not pytest.exit()

    def state(self) -> SuiteState | None:
        """The session's harness state (None when pytest stopped before configuring)."""
        from harness.pytest_plugin._session import get_state

        return get_state(self.config) if self.config is not None else None


def call_pytest(args: list[str], capture: Capture, *, lean: bool) -> int:
    """``pytest.main`` on ``args``; its status, pytest's usage error (4) made bad input."""
    import pytest

    # Scenario items need no third-party pytest plugins, and every autoloaded one is
    # imported by the controller and by each xdist worker: on a 2-CPU machine with
    # hypothesis, Faker, anyio and pytest-recording installed that doubled the run.
    # The variable must be in the environment so that xdist workers see it too.
    saved = os.environ.get(_AUTOLOAD)
    if lean:
        os.environ[_AUTOLOAD] = "1"
    try:
        code = int(pytest.main(args, plugins=[capture]))
    finally:
        if saved is None:
            os.environ.pop(_AUTOLOAD, None)
        else:
            os.environ[_AUTOLOAD] = saved
    # pytest's usage error (4) is bad input for harness; the rest keep pytest's meaning.
    return {4: EXIT["bad_input"]}.get(code, code)
