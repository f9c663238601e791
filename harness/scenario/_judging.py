"""A scenario's judges: which expectations are judged, the checks of ``harness validate``
for them, and the ``Judge`` the runner hands to the checks."""

from __future__ import annotations

from typing import Any

from harness._project import project_config
from harness.judge import Judge, ScriptedJudge
from harness.scenario._expect_schema import JudgeSpec
from harness.scenario._issues import IssueSink
from harness.scenario._schema import Scenario

__all__ = ["build_judge", "check_judges", "judged"]


def judged(scenario: Scenario) -> list[tuple[tuple[str, ...], JudgeSpec]]:
    """The judged expectations (where, spec), in a fixed order: final, then transcript."""
    expect = scenario.expect
    if expect is None:
        return []
    out: list[tuple[tuple[str, ...], JudgeSpec]] = []
    for section in ("final", "transcript"):
        value = getattr(expect, section)
        spec = getattr(value, "judge", None) if value is not None else None
        if spec is not None:
            out.append((("expect", section, "judge"), spec))
    return out


def _project_model(scenario: Scenario) -> Any:
    return project_config(scenario.root).get("judge_model")


def check_judges(scenario: Scenario, issue: IssueSink) -> None:
    """Judges need something to answer them; a judge script replies with verdicts."""
    judges = judged(scenario)
    script = scenario.llm.judge_script
    if judges and not script and scenario.llm.provider == "scripted":
        issue(
            judges[0][0],
            "a scripted scenario's judge is scripted too: add llm.judge_script with one "
            "verdict per judged expectation, like "
            """- content: '{"pass": true, "score": 1, "reason": "..."}'""",
        )
    for i, step in enumerate(script):
        if any(variant.tool_calls for variant in step.variants()):
            issue(
                ("llm", "judge_script", i, "tool_calls"),
                "a judge replies with a JSON verdict in content, not with tool calls",
            )
    model = _project_model(scenario)
    if judges and model is not None and (not isinstance(model, str) or not model):
        issue(
            judges[0][0],
            f"[tool.harness] judge_model in {scenario.root / 'pyproject.toml'} must be a model "
            f"name, not {model!r}",
        )


def build_judge(scenario: Scenario, llm: Any, draws: str = "") -> Judge | None:
    """The scenario's judge: scripted (``llm.judge_script``, its stochastic steps drawn
    with ``draws``), else through the scenario's LLM source when it can judge
    (``provider: openai``); None when nothing is judged."""
    if not judged(scenario):
        return None
    model = _project_model(scenario)
    default = model if isinstance(model, str) and model else scenario.llm.model
    if scenario.llm.judge_script:
        return Judge(ScriptedJudge(scenario.llm.judge_script, draws), default)
    if callable(getattr(llm, "judge", None)):
        return Judge(llm, default)
    return None
