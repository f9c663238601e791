"""The plugin's command-line options, and how a session reads them.

``--record-mode`` and ``--disable-recording`` are pytest-recording's options too: when
that plugin is installed and not blocked it owns them, and harness reads them the same
way whichever plugin defined them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from harness.llm.config import RECORD_MODES

__all__ = ["SUFFIX", "pytest_addoption", "session_options"]

# The scenario files the plugin collects (harness.scenario.loader.SUFFIX, kept here so
# that loading the plugin imports no scenario code).
SUFFIX = ".scenario.yaml"

# The pytest-recording plugin, under the names pytest may register it with.
_RECORDING = ("recording", "pytest_recording.plugin")


def _plugin_args(pluginmanager: pytest.PytestPluginManager) -> list[str]:
    """Every ``-p`` value of the session: ini ``addopts``, ``PYTEST_ADDOPTS``, command line."""
    config = pluginmanager.get_plugin("pytestconfig")
    # pytest parses all three into known_args_namespace before it loads any plugin.
    known = getattr(config, "known_args_namespace", None)
    if known is not None:
        return [str(p).strip() for p in getattr(known, "plugins", None) or []]
    args = [str(a) for a in config.invocation_params.args] if config is not None else []
    args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    values = []
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args):
            values.append(args[i + 1].strip())
        elif arg.startswith("-p") and arg != "-p":
            values.append(arg[2:].strip())
    return values


def _recording_owns_options(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording defines ``--record-mode`` in this session (then harness
    must not): it is registered, or will be, or harness loads it here.

    Adding the option twice kills pytest at start-up, and which of the two plugins loads
    first depends on entry-point order and on where it is asked for, so this decides
    before either option exists: pytest-recording, when installed and not blocked, is the
    one owner of the option.
    """
    if any(pluginmanager.has_plugin(name) for name in _RECORDING):
        return True
    asked = None  # the last -p naming it wins, as in pytest
    for arg in _plugin_args(pluginmanager):
        if arg in _RECORDING:
            asked = True
        elif arg.startswith("no:") and arg[3:].strip() in _RECORDING:
            asked = False
    if asked is False or any(pluginmanager.is_blocked(name) for name in _RECORDING):
        return False  # -p no:recording, from any source
    if importlib.util.find_spec("pytest_recording") is None:
        return False  # not installed
    env_plugins = {p.strip() for p in os.environ.get("PYTEST_PLUGINS", "").split(",")}
    if asked or env_plugins & set(_RECORDING):
        return True  # -p recording / PYTEST_PLUGINS: pytest registers it before conftests
    config = pluginmanager.get_plugin("pytestconfig")
    args = [str(a) for a in config.invocation_params.args] if config is not None else []
    autoload = not (
        os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") or "--disable-plugin-autoload" in args
    )
    if autoload and any(ep.name == "recording" for ep in entry_points(group="pytest11")):
        return True
    # Installed but not asked for, with autoloading off. The one way left for it to
    # arrive is a conftest's `pytest_plugins`, after harness's option exists: a clash.
    # Loading it now, under the module name a conftest uses (which then is a no-op),
    # keeps a single owner of the option whatever the conftests do.
    pluginmanager.import_plugin("pytest_recording.plugin")
    return True


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Harness's options, in a group of their own."""
    group = parser.getgroup("harness", "harness scenarios (*.scenario.yaml)")
    if not _recording_owns_options(pluginmanager):
        # Same names, values and defaults as pytest-recording's, so that a session reads
        # them the same way whichever plugin defined them.
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=RECORD_MODES,
            help="cassette record mode for recorded scenarios (default: none = replay only)",
        )
        group.addoption(
            "--disable-recording",
            action="store_true",
            default=False,
            help="run recorded scenarios live against the endpoint and write no cassette",
        )
    group.addoption(
        "--harness-plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="load a harness plugin module (repeatable; reaches xdist workers too)",
    )
    group.addoption(
        "--harness-json", metavar="PATH", default=None, help="write results.json to PATH"
    )
    group.addoption(
        "--harness-html", metavar="PATH", default=None, help="write the HTML report to PATH"
    )
    group.addoption(
        "--harness-baseline",
        metavar="PATH",
        default=None,
        help="compare the results with this results.json (the diff goes into the reports)",
    )
    _add_scale_options(group)
    group.addoption(
        "--harness-scenarios-only",
        action="store_true",
        default=False,
        help="collect only *.scenario.yaml files from folders (what `harness run` uses)",
    )


def _count(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def _shard(value: str) -> Any:
    from harness.shards import Shard

    try:
        return Shard.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _durations(value: str) -> dict[str, float]:
    # Read while the options are parsed: a file that cannot be used is a usage error.
    from harness.results import ResultsFileError, load_results
    from harness.shards import durations_of

    try:
        return durations_of(load_results(value, what="durations file"))
    except ResultsFileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_scale_options(group: Any) -> None:
    """Repeats, live runs with requests in flight at once, and shards."""
    group.addoption(
        "--harness-repeat",
        type=_count,
        default=None,
        metavar="N",
        help="run each scenario N times (ids path::name[k]; a scenario's own repeat: wins)",
    )
    group.addoption(
        "--harness-live",
        action="store_true",
        default=False,
        help="run recorded scenarios live: no cassette read or written (--disable-recording)",
    )
    group.addoption(
        "--harness-concurrency",
        type=_count,
        default=1,
        metavar="N",
        help="scenario runs in flight at once in each process (default 1)",
    )
    group.addoption(
        "--harness-shard",
        type=_shard,
        default=None,
        metavar="K/N",
        help="run shard K of N of the selected scenarios (merge with `harness merge`)",
    )
    group.addoption(
        "--harness-durations",
        type=_durations,
        default=None,
        metavar="PATH",
        help="an earlier results.json: balance the shards by its wall times",
    )


def session_options(config: pytest.Config) -> dict[str, Any]:
    """The session's recording settings and report paths (fields of SuiteState)."""
    live = bool(config.getoption("harness_live", False))
    return {
        "record_mode": config.getoption("record_mode", None) or "none",
        "disable_recording": live or bool(config.getoption("disable_recording", False)),
        "live": live,
        "repeat": config.getoption("harness_repeat", None),
        "concurrency": config.getoption("harness_concurrency", 1) or 1,
        "shard": config.getoption("harness_shard", None),
        "durations": config.getoption("harness_durations", None),
        "json_path": _out_path(config, config.getoption("harness_json")),
        "html_path": _out_path(config, config.getoption("harness_html")),
        "baseline_path": _out_path(config, config.getoption("harness_baseline")),
    }


def _out_path(config: pytest.Config, value: str | None) -> Path | None:
    # Relative to where pytest was started, like --junitxml.
    return Path(config.invocation_params.dir, value) if value else None
