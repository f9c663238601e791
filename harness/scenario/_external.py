"""Scenarios with a ``target:`` (docs/external.md): their checks when the file loads, and
their run (the scenario's model served to the target, the run observed).

The served model is the scenario's script (harness's own server) or its cassette
(``provider: openai``: replayed, or recorded through a proxy under a record mode that
allows it). The engine part is ``harness.external``; this module reads the scenario.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from harness._actions import RunResult
from harness._errors import HarnessError
from harness._plugins import Plugins
from harness.llm._config import RECORDED_PROVIDERS
from harness.scenario._context import ScenarioRun
from harness.scenario._issues import IssueSink
from harness.scenario._requires import available, misspelt
from harness.scenario._schema import Scenario, TargetSection

__all__ = ["arun_target", "check_target", "check_target_section", "target_key_problems"]

# A target brings its own loop: these agent settings would not change anything.
_APPLIES = {"stagnation"}
_SERVED_PROVIDERS = ("scripted", *RECORDED_PROVIDERS)
# The keys of target: beside its kind.
_OPTIONS = tuple(k for k in TargetSection.model_fields if k not in ("python", "command"))


def target_key_problems(
    target: dict[Any, Any], registered: Collection[str]
) -> list[tuple[tuple[str | int, ...], str]]:
    """The keys of a ``target:`` mapping that are neither an option nor a registered kind,
    each at its own key, and a kind count other than one.

    A key the schema does not know may name a plugin's target kind, so these are checked
    against the registry: the schema alone would call ``timout`` a target kind.
    """
    kinds = sorted(registered)
    given = [k for k in target if k in registered]
    unknown = [k for k in target if k not in registered and k not in TargetSection.model_fields]
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for key in unknown:
        hint = difflib.get_close_matches(str(key), [*_OPTIONS, *kinds], n=1)
        if not given and (not hint or hint[0] in kinds):
            # Most likely the kind itself, misspelled or of a plugin not loaded.
            message = f"unknown target kind {key!r} (known: {', '.join(kinds)})"
            message += f"; did you mean {hint[0]!r}?" if hint else ""
        elif hint:
            message = f"unknown key {key!r} (did you mean {hint[0]!r}?)"
        else:
            message = (
                f"unknown key {key!r}; a target has one kind ({', '.join(kinds)}) and "
                f"{', '.join(_OPTIONS)}"
            )
        problems.append((("target", key), message))
    if len(given) > 1 or not (given or unknown):
        shown = ", ".join(given) or "none"
        problems.append(
            (("target",), f"give exactly one target kind ({', '.join(kinds)}); given: {shown}")
        )
    return problems


def check_target(scenario: Scenario, plugins: Plugins, issue: IssueSink) -> None:
    """Problems of a target scenario, each with its field; a missing requirement marks it
    skipped instead (``scenario.skip_reason``)."""
    target = scenario.target
    assert target is not None
    for name in sorted(scenario.agent.model_fields_set - _APPLIES):
        issue(
            ("agent", name),
            f"{name} is a setting of harness's own loop and cannot apply to a target, which "
            "runs its own loop: remove it (only agent.stagnation applies)",
        )
    for name, spec in scenario.tools.items():
        kind = next((k for k in ("agent", "remote", "mcp") if getattr(spec, k) is not None), None)
        if kind is not None:
            issue(
                ("tools", name, kind),
                f"a target gets the scenario's tools over MCP (docs/mcp.md): stubs, use: and "
                f"code: tools are served, {kind}: tools are not; remove it",
            )
    if scenario.history is not None:
        issue(("history",), "a target starts from its input alone: remove history:")
    if scenario.input is None:
        issue(("input",), "a target is called with the scenario's input: add input:")
    if scenario.llm.faults and scenario.llm.provider != "scripted":
        issue(
            ("llm", "faults"),
            "a target's recorded model (a cassette served) takes no llm.faults yet: script "
            "its model (harness freeze makes a script of a cassette) to place faults",
        )
    if scenario.llm.provider not in (*_SERVED_PROVIDERS, *_wire_vendors()):
        issue(
            ("llm", "provider"),
            f"a target is served a script or a cassette (provider scripted, openai, "
            f"anthropic, gemini or a plugin's model API's vendor), not "
            f"provider {scenario.llm.provider!r}",
        )
    skip = check_target_section(target, scenario.root, plugins, issue)
    if skip is not None:
        scenario.mark_skipped(skip)


def check_target_section(
    target: TargetSection, root: Path, plugins: Plugins, issue: IssueSink
) -> str | None:
    """The ``target:`` mapping's own problems (its keys, its kind's check); why the
    scenario is skipped when the target needs what is not installed, else None."""
    problems = target_key_problems(target.kinds(), plugins.registry("targets"))
    for at, message in problems:
        issue(at, message)
    if problems:
        return None
    ((kind, value),) = target.kinds().items()
    missing = [r for r in target.requires if not available(r)]
    for i, requirement in enumerate(target.requires):
        problem = misspelt(requirement) if requirement in missing else None
        if problem is not None:
            issue(("target", "requires", i), problem)
            missing = []  # an error, not a skip
    if missing:
        names = ", ".join(repr(m) for m in missing)
        return f"the target needs {names}, which is not installed"
    from harness.external import TargetError

    try:
        plugins.target_factory(kind)().check(value, root)
    except TargetError as exc:
        issue(("target", kind), str(exc))
    return None


def _wire_vendors() -> list[str]:
    """The vendors registered with the wires (a plugin's too: harness_register_wires): a
    target's recording of such an API names its vendor as ``llm.provider``."""
    from harness._modelwires import vendors

    return [vendor.name for vendor in vendors()]


def _served(run: ScenarioRun) -> tuple[Any, Any]:
    """The app serving the scenario's model, and the cassette app (None for a script)."""
    scenario, sid, context = run.scenario, str(run.id), run.llm
    if scenario.llm.provider == "scripted":
        from harness.serve import DEFAULT_MAX_DELAY, create_app

        llm = scenario.llm
        # A held reply (a timeout) never outlasts the target's own time.
        held = min(DEFAULT_MAX_DELAY, scenario.target.timeout if scenario.target else 60.0)
        conversations = llm.served_conversations()
        draws = context.draws
        return create_app(llm.scripted(), held, conversations=conversations, draws=draws), None
    from harness._project import project_relative
    from harness.cassettes._session import CassetteSession
    from harness.external import CassetteApp

    path = scenario.cassette_path(scenario_id=sid, record_mode=context.record_mode)
    from harness._errors import LLMError

    try:
        session = CassetteSession(
            path,
            # Live (--disable-recording): every request goes through, nothing is written.
            record_mode="rewrite" if context.disable_recording else context.record_mode,
            match=scenario.llm.match,
            match_ignore=tuple(scenario.llm.match_ignore),
            scenario=sid,
            shown_path=project_relative(path, scenario.root),
        )
    except LLMError as exc:
        raise HarnessError(str(exc)) from None
    cassette = CassetteApp(session, upstream=scenario.llm.base_url, vendor=scenario.llm.provider)
    return cassette, cassette


async def arun_target(
    run: ScenarioRun, tools: Any = None
) -> tuple[RunResult, int | None, str | None]:
    """Run a target scenario: (the observed run, replies left unused, a refused recording);
    ``tools`` (a ``harness.mcp.ToolServer``) are served to it over MCP."""
    from harness.external import TargetSpec, run_target

    scenario = run.scenario
    target = scenario.target
    assert target is not None
    ((kind, value),) = target.kinds().items()
    wire = (scenario.combination or {}).get("wire")
    cap = scenario.expect.max_requests_per_call if scenario.expect else None
    spec = TargetSpec(
        kind, value, target.timeout, target.on_stagnation, wire=wire, max_requests_per_call=cap
    )
    app, cassette = _served(run)
    try:
        result = await run_target(
            spec,
            app,
            input=scenario.input,
            plugins=run.own_plugins(),
            config=run.agent,
            root=scenario.root,
            tools=tools,
            conversations=list(scenario.llm.conversations),
        )
    finally:
        if cassette is not None and not run.llm.disable_recording:
            cassette.close()
    if cassette is not None:
        return result, cassette.session.remaining, cassette.refused
    llm = scenario.llm
    scripts = [llm.scripted(), *(rule.script for rule in llm.served_conversations())]
    total = sum(step.repeat for script in scripts for step in script)
    return result, max(total - result.llm_calls, 0), None
