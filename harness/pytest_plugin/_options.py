"""The options of a harness session, each declared once, and how a session reads them.

``OPTIONS`` is the one declaration of every option: its pytest flag, the flag ``harness
run`` gives it, its validator, default and help. The plugin's ``pytest_addoption`` and
``harness run``'s argument parser are both made from it, and ``harness run`` hands pytest
what it parsed with ``pytest_args`` (its short flags become the plugin's long ones), so a
value is checked by the same function whichever front end it came through. A session
reads its options once, into the frozen ``SessionOptions``.

``--record-mode`` and ``--disable-recording`` are pytest-recording's options too: when
that plugin is installed and not blocked it owns them, and harness reads them the same
way whichever plugin defined them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from harness._baseline import CORRECTIONS
from harness._runbudget import dollars
from harness.llm._config import RECORD_MODES

if TYPE_CHECKING:
    from harness._baseline import Correction
    from harness._shards import Shard

__all__ = [
    "OPTIONS",
    "SUFFIX",
    "SUFFIXES",
    "Option",
    "SessionOptions",
    "percent",
    "pytest_addoption",
    "pytest_args",
    "read_durations",
    "session_options",
]

# The scenario files the plugin collects (harness.scenario._loader.SUFFIXES, kept here so
# that loading the plugin imports no scenario code): SUFFIX, and its short spelling.
SUFFIX = ".scenario.yaml"
SUFFIXES = (SUFFIX, ".scenario.yml")

# The pytest-recording plugin, under the names pytest may register it with.
_RECORDING = ("recording", "pytest_recording.plugin")


# -- the validators ------------------------------------------------------------------------


def _count(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def _rate(value: str) -> float:
    try:
        rate = float(value.removesuffix("%")) / (100 if value.endswith("%") else 1)
    except ValueError:
        rate = -1.0
    if not 0 <= rate <= 1:
        raise argparse.ArgumentTypeError(
            f"expected a share of runs from 0 to 1 (0.8, or 80%), got {value!r}"
        )
    return rate


def percent(value: str) -> float:
    """A percentage from 0 to 100 (``80`` or ``80%``), for a required share."""
    try:
        share = float(value.removesuffix("%"))
    except ValueError:
        share = -1.0
    if not 0 <= share <= 100:  # NaN too
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {value!r}")
    return share


def _seed(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number (0, 1, 2, ...), got {value!r}")
    return int(value)


def _shard(value: str) -> Shard:
    from harness._shards import Shard

    try:
        return Shard.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _workers(value: str) -> str:
    if value in ("auto", "logical") or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(f"expected a number of workers or 'auto', got {value!r}")


def _endpoint(value: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"expected a collector's http:// or https:// URL (http://localhost:4318), got {value!r}"
        )
    return value


def read_durations(path: str, flag: str) -> dict[str, float]:
    """The wall times by id in an earlier results.json (``--durations``); a
    ResultsFileError naming ``flag`` and the file when it cannot be used."""
    from harness._results import load_results
    from harness._shards import durations_of

    return durations_of(load_results(path, what=flag))


# -- the declarations ----------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option: its pytest flag, ``harness run``'s flag for it, and how both parse it.

    ``owner``: who adds the pytest flag; harness adds its own, and pytest-recording's
    unless that plugin does (see the module's docstring); ``-k``, ``-m`` and ``-n`` are
    pytest's and xdist's, which ``harness run`` passes on. ``run_help``: ``harness run``'s
    words where its default differs from plain pytest's (it writes reports/ by default).
    """

    pytest: str
    run: str | None
    help: str
    owner: Literal["harness", "recording", "pytest", "xdist"] = "harness"
    action: Literal["store", "store_true", "append"] = "store"
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    metavar: str | None = None
    run_help: str | None = None
    dest_name: str | None = None

    @property
    def dest(self) -> str:
        """The attribute both parsers store the value in (pytest's name for it)."""
        return self.dest_name or self.pytest.lstrip("-").replace("-", "_")

    def arguments(self, **overrides: Any) -> dict[str, Any]:
        """``add_argument``'s keyword arguments (pytest's ``addoption`` takes the same)."""
        declared: dict[str, Any] = {"action": self.action, "dest": self.dest, "help": self.help}
        if self.action != "store_true":
            declared |= {"type": self.type, "choices": self.choices, "metavar": self.metavar}
        declared["default"] = [] if self.action == "append" else self.default
        declared |= overrides
        return {key: value for key, value in declared.items() if value is not None}

    def as_pytest_args(self, value: Any) -> list[str]:
        """What ``harness run`` passes pytest for ``value`` (nothing for the default)."""
        if value is None or value is False or value == self.default:
            return []
        if self.action == "store_true":
            return [self.pytest]
        values = value if self.action == "append" else [value]
        return [arg for each in values for arg in (self.pytest, str(each))]


OPTIONS: tuple[Option, ...] = (
    Option("-k", "-k", "select by name (pytest -k)", "pytest", metavar="EXPR", dest_name="keyword"),
    Option("-m", "-m", "select by tag (pytest -m)", "pytest", metavar="MARK", dest_name="markexpr"),
    Option(
        "-n",
        "-n",
        "run in N processes (xdist)",
        "xdist",
        type=_workers,
        metavar="N",
        dest_name="numprocesses",
    ),
    Option(
        "--harness-plugin",
        "-p",
        "load a harness plugin module (repeatable; reaches xdist workers too)",
        action="append",
        metavar="MODULE",
    ),
    Option(
        "--record-mode",
        "--record-mode",
        "cassette record mode (default: none: replay only)",
        "recording",
        choices=RECORD_MODES,
    ),
    Option(
        "--disable-recording",
        "--disable-recording",
        "run recorded scenarios live and write no cassette",
        "recording",
        action="store_true",
    ),
    Option(
        "--harness-repeat",
        "--repeat",
        "run each scenario N times: pass rates, flaky scenarios (a file's repeat: wins)",
        type=_count,
        metavar="N",
    ),
    Option(
        "--harness-min-pass-rate",
        "--min-pass-rate",
        "a repeated scenario passes when at least this share of its runs pass (0.8 or 80%%; "
        "a file's repeat: {min_pass_rate: R} wins)",
        type=_rate,
        metavar="R",
    ),
    Option(
        "--harness-decide",
        "--decide",
        "with --harness-repeat N: sequential stops a scenario's runs once its verdict is "
        "clear (Wald's test; a file's repeat: wins; default fixed)",
        choices=("fixed", "sequential"),
        default="fixed",
    ),
    Option(
        "--harness-seed",
        "--seed",
        "what stochastic steps (one_of) are drawn with (default 0)",
        type=_seed,
        default=0,
        metavar="S",
    ),
    Option(
        "--harness-live",
        "--live",
        "talk to the real endpoint: no cassette read or written, the SDK retries 429s",
        action="store_true",
    ),
    Option(
        "--harness-max-requests",
        "--max-requests",
        "with --live: no new scenario starts once the run sent N model requests (the rest "
        "are not run: exit 1); shards and xdist workers each keep to their share",
        type=_count,
        metavar="N",
    ),
    Option(
        "--harness-max-cost",
        "--max-cost",
        "with --live: the same for their cost in US dollars (at [tool.harness.prices])",
        type=dollars,
        metavar="USD",
    ),
    Option(
        "--harness-concurrency",
        "--concurrency",
        "scenario runs in flight at once in each process (default 1)",
        type=_count,
        default=1,
        metavar="N",
    ),
    Option(
        "--harness-shard",
        "--shard",
        "run shard K of N (for CI machines; join them with `harness merge`)",
        type=_shard,
        metavar="K/N",
    ),
    # A file, read when the session starts, as the baseline is (read_durations).
    Option(
        "--harness-durations",
        "--durations",
        "with --harness-shard: balance the shards by the wall times in this results.json",
        metavar="F",
        run_help="with --shard: balance the shards by the wall times in this results.json",
    ),
    Option(
        "--harness-shard-ids",
        None,
        "with --harness-shard: plan the shards over the ids in this file (a JSON list), "
        "not over those this session selected (what `harness run --chunk-size` uses: each "
        "of its sessions selects one part of the suite)",
        metavar="F",
    ),
    Option(
        "--harness-json",
        "--json",
        "write results.json here",
        metavar="F",
        run_help="results file (default: reports/results.json)",
    ),
    Option(
        "--harness-html",
        "--html",
        "write the HTML report here",
        metavar="F",
        run_help="HTML report (default: reports/report.html)",
    ),
    Option(
        "--harness-baseline",
        "--baseline",
        "compare the results with this results.json (the diff goes into the reports)",
        metavar="F",
        run_help="results to compare with (default: reports/baseline.json when it exists)",
    ),
    Option(
        "--harness-regression-correction",
        "--regression-correction",
        "how the pass-rate drops of the scenarios compared are corrected for their number: "
        "holm (default), bh or none (docs/gate.md)",
        choices=CORRECTIONS,
        default="holm",
    ),
    Option(
        "--harness-otel",
        "--otel",
        "write every run as OpenTelemetry spans to this file (OTLP JSON)",
        metavar="FILE",
    ),
    Option(
        "--harness-otel-endpoint",
        "--otel-endpoint",
        "send every run's spans to this OTLP/HTTP collector (http://localhost:4318)",
        type=_endpoint,
        metavar="URL",
    ),
    Option(
        "--harness-otel-content",
        "--otel-content",
        "with --otel or --otel-endpoint: include message contents, tool arguments and results",
        action="store_true",
    ),
    Option(
        "--harness-markdown",
        "--markdown",
        "write the summary and the baseline diff as Markdown here (a pull-request comment); "
        "$GITHUB_STEP_SUMMARY gets it too when set",
        metavar="F",
    ),
    Option(
        "--harness-coverage",
        "--coverage",
        "record which behaviours the suite exercised (results.json coverage; "
        "docs/coverage.md); [tool.harness] coverage = true does it for every run",
        action="store_true",
    ),
    Option(
        "--harness-coverage-fail-under",
        "--coverage-fail-under",
        "with coverage: exit 1 when less than P%% of the behaviours were covered",
        type=percent,
        metavar="P",
    ),
    Option(
        "--harness-fail-on-skip",
        "--fail-on-skip",
        "exit 1 when a scenario was skipped (a missing framework, a skip mark)",
        action="store_true",
    ),
    Option(
        "--harness-part",
        None,
        "collect only the scenario files of part K of N of the suite, the parts split by "
        "file path (what `harness run --chunk-size` uses)",
        type=_shard,
        metavar="K/N",
    ),
    Option(
        "--harness-scenarios-only",
        None,
        "collect only *.scenario.yaml files from folders (what `harness run` uses)",
        action="store_true",
    ),
)


def pytest_args(values: Mapping[str, Any]) -> list[str]:
    """pytest's flags for the options' values, by dest (``harness run``'s parsed options)."""
    return [
        arg
        for option in OPTIONS
        if option.dest in values
        for arg in option.as_pytest_args(values[option.dest])
    ]


# -- pytest's options ----------------------------------------------------------------------


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
    # Same names, values and defaults as pytest-recording's, so that a session reads
    # them the same way whichever plugin defined them.
    owners = {"harness"} if _recording_owns_options(pluginmanager) else {"harness", "recording"}
    for option in OPTIONS:
        if option.owner in owners:
            group.addoption(option.pytest, **option.arguments())


# -- what a session reads ------------------------------------------------------------------


@dataclass(frozen=True)
class SessionOptions:
    """A session's options, read once (``session_options``): recording, scale, reports."""

    record_mode: str = "none"
    disable_recording: bool = False
    # --harness-live, --harness-repeat, --harness-min-pass-rate, --harness-concurrency (see
    # harness.pytest_plugin._live and docs/running.md#repeats).
    live: bool = False
    repeat: int | None = None
    min_pass_rate: float | None = None
    # --harness-decide: how repeats are decided (fixed, sequential: docs/gate.md).
    decide: str = "fixed"
    # --harness-seed: what stochastic steps are drawn with (docs/scenarios.md).
    seed: int = 0
    concurrency: int = 1
    # --harness-max-requests, --harness-max-cost: the live run's budget.
    max_requests: int | None = None
    max_cost: float | None = None
    # --harness-shard and the wall times it is planned by (harness.pytest_plugin._sharding).
    shard: Shard | None = None
    durations: Mapping[str, float] | None = None
    shard_ids: tuple[str, ...] | None = None
    json_path: Path | None = None
    html_path: Path | None = None
    markdown_path: Path | None = None
    baseline_path: Path | None = None
    # --harness-regression-correction (harness.report._passrates.adjust).
    regression_correction: Correction = "holm"
    # --harness-otel, --harness-otel-endpoint, --harness-otel-content (pytest_plugin.tracing).
    otel_path: Path | None = None
    otel_endpoint: str | None = None
    otel_content: bool = False
    fail_on_skip: bool = False
    # --harness-coverage (or [tool.harness] coverage = true) and the share of behaviours
    # the run must cover (docs/coverage.md).
    coverage: bool = False
    coverage_fail_under: float | None = None


def session_options(config: pytest.Config) -> SessionOptions:
    """The session's options (their defaults when harness came in after they were parsed)."""
    from harness._results import ResultsFileError

    live = bool(config.getoption("harness_live", False))
    budget = [config.getoption(f"harness_max_{k}", None) for k in ("requests", "cost")]
    if budget != [None, None] and not live:
        message = "--harness-max-requests and --harness-max-cost budget a --harness-live run"
        raise pytest.UsageError(f"{message} (harness run: --live); a replay sends no request")
    durations = config.getoption("harness_durations", None)
    try:
        times = read_durations(durations, "--harness-durations") if durations else None
    except ResultsFileError as exc:
        raise pytest.UsageError(str(exc)) from None
    return SessionOptions(
        record_mode=config.getoption("record_mode", None) or "none",
        disable_recording=live or bool(config.getoption("disable_recording", False)),
        live=live,
        repeat=config.getoption("harness_repeat", None),
        min_pass_rate=config.getoption("harness_min_pass_rate", None),
        seed=config.getoption("harness_seed", 0) or 0,
        decide=config.getoption("harness_decide", "fixed") or "fixed",
        concurrency=config.getoption("harness_concurrency", 1) or 1,
        max_requests=config.getoption("harness_max_requests", None),
        max_cost=config.getoption("harness_max_cost", None),
        shard=config.getoption("harness_shard", None),
        durations=times,
        shard_ids=_ids(config.getoption("harness_shard_ids", None)),
        json_path=_out_path(config, config.getoption("harness_json", None)),
        html_path=_out_path(config, config.getoption("harness_html", None)),
        markdown_path=_out_path(config, config.getoption("harness_markdown", None)),
        fail_on_skip=bool(config.getoption("harness_fail_on_skip", False)),
        baseline_path=_out_path(config, config.getoption("harness_baseline", None)),
        regression_correction=config.getoption("harness_regression_correction", "holm"),
        otel_path=_out_path(config, config.getoption("harness_otel", None)),
        otel_endpoint=config.getoption("harness_otel_endpoint", None),
        otel_content=bool(config.getoption("harness_otel_content", False)),
        coverage=_coverage(config),
        coverage_fail_under=config.getoption("harness_coverage_fail_under", None),
    )


def _coverage(config: pytest.Config) -> bool:
    """Whether the session records coverage: --harness-coverage, a required share of it,
    or the project's ``[tool.harness] coverage = true``."""
    if config.getoption("harness_coverage", False):
        return True
    if config.getoption("harness_coverage_fail_under", None) is not None:
        return True
    from harness._errors import HarnessError
    from harness._project import project_config, project_root

    root = project_root(Path(config.invocation_params.dir))
    try:
        value = project_config(root).get("coverage", False)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not isinstance(value, bool):
        raise pytest.UsageError(
            f"{root / 'pyproject.toml'}: [tool.harness] coverage must be true or false, "
            f"not {value!r}"
        )
    return value


def _ids(path: str | None) -> tuple[str, ...] | None:
    """The ids of a --harness-shard-ids file (written by ``harness run``: a JSON list)."""
    if path is None:
        return None
    try:
        ids = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise pytest.UsageError(f"--harness-shard-ids {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise pytest.UsageError(f"--harness-shard-ids {path}: not JSON: {exc}") from None
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise pytest.UsageError(f"--harness-shard-ids {path}: expected a JSON list of ids")
    return tuple(ids)


def _out_path(config: pytest.Config, value: str | None) -> Path | None:
    # Relative to where pytest was started, like --junitxml.
    return Path(config.invocation_params.dir, value) if value else None
