"""Scenarios with a ``target:`` (DESIGN section 10): their checks when the file loads, and
their run (the scenario's model served to the target, the run observed).

The served model is the scenario's script (harness's own server) or its cassette
(``provider: openai``: replayed, or recorded through a proxy under a record mode that
allows it). The engine part is ``harness.external``; this module reads the scenario.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from typing import Any

from harness.actions import RunResult
from harness.config import AgentConfig
from harness.errors import HarnessError
from harness.llm.config import LLMContext
from harness.plugins import PluginError, Plugins
from harness.scenario.schema import Scenario

__all__ = ["arun_target", "check_target"]

Issue = Callable[[tuple[str | int, ...], str], None]

# A target brings its own loop: these agent settings would not change anything.
_APPLIES = {"stagnation"}
_SERVED_PROVIDERS = ("scripted", "openai")


def _available(requirement: str) -> bool:
    """A Python module that imports or a program on PATH."""
    if shutil.which(requirement) is not None:
        return True
    try:
        return importlib.util.find_spec(requirement) is not None
    except (ImportError, ValueError):
        return False


def check_target(scenario: Scenario, plugins: Plugins, issue: Issue) -> None:
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
    if scenario.tools:
        issue(
            ("tools",),
            "a target runs its own tools: the stubs under tools: are never used; remove tools:",
        )
    if scenario.history is not None:
        issue(("history",), "a target starts from its input alone: remove history:")
    if scenario.input is None:
        issue(("input",), "a target is called with the scenario's input: add input:")
    if scenario.llm.provider not in _SERVED_PROVIDERS:
        issue(
            ("llm", "provider"),
            f"a target is served a script or a cassette (provider scripted or openai), not "
            f"provider {scenario.llm.provider!r}",
        )
    kinds = target.kinds()
    if len(kinds) != 1:
        known = ", ".join(sorted(plugins.registry("targets")))
        given = ", ".join(kinds) or "none"
        issue(("target",), f"give exactly one target kind ({known}); given: {given}")
        return
    ((kind, value),) = kinds.items()
    try:
        factory = plugins.target_factory(kind)
    except PluginError as exc:
        issue(("target", kind), str(exc))
        return
    missing = [r for r in target.requires if not _available(r)]
    if missing:
        names = ", ".join(repr(m) for m in missing)
        scenario.mark_skipped(f"the target needs {names}, which is not installed")
        return
    from harness.external import TargetError

    try:
        factory().check(value, scenario.root)
    except TargetError as exc:
        issue(("target", kind), str(exc))


def _served(
    scenario: Scenario, sid: str, record_mode: str, disable_recording: bool
) -> tuple[Any, Any]:
    """The app serving the scenario's model, and the cassette app (None for a script)."""
    if scenario.llm.provider == "scripted":
        from harness.llm.server import create_app

        return create_app(list(scenario.llm.script)), None
    from harness.external import CassetteApp
    from harness.llm.cassettes import CassetteSession, resolve_cassette_path
    from harness.project import project_relative

    context = LLMContext(
        scenario_id=sid,
        scenario_file=scenario.path,
        project_root=scenario.root,
        record_mode=record_mode,
    )
    path = resolve_cassette_path(scenario.llm.with_context(context))
    from harness.errors import LLMError

    try:
        session = CassetteSession(
            path,
            # Live (--disable-recording): every request goes through, nothing is written.
            record_mode="rewrite" if disable_recording else record_mode,
            match=scenario.llm.match,
            match_ignore=tuple(scenario.llm.match_ignore),
            scenario=sid,
            shown_path=project_relative(path, scenario.root),
        )
    except LLMError as exc:
        raise HarnessError(str(exc)) from None
    cassette = CassetteApp(session, upstream=scenario.llm.base_url)
    return cassette, cassette


async def arun_target(
    scenario: Scenario,
    plugins: Plugins,
    sid: str,
    record_mode: str = "none",
    *,
    disable_recording: bool = False,
    config: AgentConfig | None = None,
) -> tuple[RunResult, int | None, str | None]:
    """Run a target scenario: (the observed run, replies left unused, a refused recording)."""
    from harness.external import TargetSpec, run_target

    target = scenario.target
    assert target is not None
    ((kind, value),) = target.kinds().items()
    spec = TargetSpec(kind, value, target.timeout, target.on_stagnation)
    app, cassette = _served(scenario, sid, record_mode, disable_recording)
    try:
        result = await run_target(
            spec,
            app,
            input=scenario.input,
            plugins=plugins,
            config=config or scenario.agent.to_config(),
            root=scenario.root,
        )
    finally:
        if cassette is not None and not disable_recording:
            cassette.close()
    if cassette is not None:
        return result, cassette.session.remaining, cassette.refused
    total = sum(step.repeat for step in scenario.llm.script)
    return result, max(total - result.llm_calls, 0), None
