"""What ``harness run`` and ``harness validate`` say about files that are not what they
look like: a scenario named ``weather.yaml`` (never collected: refused when named, pointed
out when a run found nothing), and a ``harness record`` with nothing to record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli._parsing import UsageError, to_stderr

if TYPE_CHECKING:
    from harness.scenario import Scenario

__all__ = ["refuse_misnamed", "say_misnamed", "say_nothing_to_record"]


def refuse_misnamed(paths: list[str]) -> None:
    """UsageError for a YAML file named on the command line that is no scenario file: it
    would be passed over (pytest collects scenario files by their names)."""
    # The names are checked without importing the scenario layer: it imports vcrpy, which
    # must come after pytest-recording's register_assert_rewrite (a warning otherwise).
    from harness._results import ScenarioId
    from harness.pytest_plugin._options import SUFFIXES

    for given in paths:
        path = Path(ScenarioId.file_of(given))
        if path.suffix in (".yaml", ".yml") and not path.name.endswith(SUFFIXES) and path.is_file():
            from harness.scenario._naming import rename_hint

            raise UsageError(
                f"{given}: not a scenario file name, so never collected; {rename_hint(path)}"
            )


def say_misnamed(paths: list[str], command: str) -> None:
    """After a run that collected nothing: the YAML files there that read like scenarios."""
    from harness.scenario._naming import misnamed, rename_hint

    found = misnamed(paths)
    if not found:
        return
    listed = ", ".join(p.as_posix() for p in found[:5]) + (", ..." if len(found) > 5 else "")
    to_stderr(
        f"harness {command}: no scenario files in {', '.join(paths)}, but {len(found)} YAML "
        f"file(s) there read like scenarios: {listed}; {rename_hint(found[0])}"
    )


def say_nothing_to_record(paths: list[str]) -> None:
    """``harness record`` over scenarios that record nothing (their model is scripted):
    said, so that an empty cassettes/ is not a mystery."""
    from harness._errors import HarnessError
    from harness.scenario import load_scenario
    from harness.scenario._naming import scenario_files

    files = scenario_files(paths)
    for file in files:  # the first that records ends the search
        try:
            scenario = load_scenario(file)
        except HarnessError:
            return  # the run says what is wrong with it
        if any(records(case) for case in scenario.case_scenarios):
            return
    if files:
        to_stderr(
            f"harness record: nothing to record: the {len(files)} scenario file(s) script "
            "their model (llm.script); harness record records a scenario whose llm names a "
            "provider (llm: {provider: openai, model: gpt-4o-mini}): docs/recording.md"
        )


def records(scenario: Scenario) -> bool:
    """Whether a scenario's run talks to something recorded: its model, a sub-agent's, a
    real MCP server."""
    from harness.llm._config import RECORDED_PROVIDERS

    llms = [scenario.llm, *(agent.llm for agent in scenario.agents.values())]
    if any(llm.provider in RECORDED_PROVIDERS for llm in llms):
        return True
    return any(spec.mcp is not None for spec in scenario.tools.values())
