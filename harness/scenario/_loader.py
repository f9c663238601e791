"""Loading a scenario file: YAML -> schema -> checks, with errors for people.

Every problem is reported as ``path:line: field.path: message`` at the line of the
offending node, all of them at once, and nothing is left to fail later: templates are
compiled, planners and providers looked up, ``use:`` targets imported when the file
loads.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harness._errors import HarnessError, ScenarioError
from harness._files import read_bounded
from harness._plugins import PluginError, Plugins, discover
from harness._project import display_path, project_relative, project_root
from harness._tools import Tool
from harness.llm._config import RECORDED_PROVIDERS
from harness.scenario._agents import SubAgents, agent_cycles
from harness.scenario._cases import load_cases, one_scenario
from harness.scenario._dotted import DottedKeyError, expand_dotted, split_dotted
from harness.scenario._expect_schema import ExpectSection
from harness.scenario._expected_tools import check_expected_tools
from harness.scenario._external import check_target, check_target_section
from harness.scenario._guards import check_guards, with_prices
from harness.scenario._history import HistoryItemError, starting_conversation
from harness.scenario._issues import Issue, validation_issues
from harness.scenario._judging import check_judges
from harness.scenario._matrix import check_matrix, first_llm
from harness.scenario._mcp_tools import (
    add_mcp_tools,
    tool_names,
    unknown_server_tools,
)
from harness.scenario._overlay import with_extends
from harness.scenario._params import SpecError
from harness.scenario._remote import Serve, remote_tool
from harness.scenario._schema import Scenario, SubAgentSpec, TargetSection, scenario_name
from harness.scenario._simuser import check_user
from harness.scenario._stubs import ToolContext, build_tool
from harness.scenario._yamlsource import Located, dotted, load_yaml

if TYPE_CHECKING:
    from harness.mcp._client import MCPServers

__all__ = [
    "SUFFIX",
    "SUFFIXES",
    "Place",
    "build_tools",
    "load_scenario",
    "load_scenario_data",
    "scenario_name",
    "starting_conversation",
    "with_prices",
]

SUFFIX = ".scenario.yaml"
# The names a scenario file may have: SUFFIX, and its short spelling (.yml, as YAML
# files often are), collected, run and validated alike.
SUFFIXES = (SUFFIX, ".scenario.yml")

# What the Chat Completions API sends as a choice's finish_reason.
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")


def load_scenario(path: str | Path) -> Scenario:
    """Load and check one scenario file; ScenarioError lists every problem with its line."""
    path = Path(path)
    shown = display_path(path)
    try:
        data = read_bounded(path)
    except OSError as exc:
        raise ScenarioError.single(shown, None, "", f"cannot read the file: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.end].hex(" ")
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise ScenarioError.single(
            shown,
            data.count(b"\n", 0, exc.start) + 1,
            "",
            f"the file is not UTF-8 (byte {bad} at column {column}): save it as UTF-8",
        ) from None
    return load_scenario_text(text, path, shown)


def load_scenario_text(text: str, path: Path, shown: str | None = None) -> Scenario:
    """Load a scenario from ``text`` as if it were the file ``path``."""
    shown = shown or display_path(path)
    return _load_located(load_yaml(text, shown), path)


@dataclass(frozen=True)
class Place:
    """Where scenarios loaded from mappings live, found once (harness explore loads
    thousands of variants as files of one folder): the file, resolved; how messages show
    it; its project root; the scenario id's path."""

    path: Path
    shown: str
    root: Path
    id_path: str

    @classmethod
    def of(cls, path: Path) -> Place:
        """The place of the file ``path``."""
        resolved = path.resolve()
        root = project_root(resolved.parent)
        return cls(resolved, display_path(path), root, project_relative(resolved, root))


def load_scenario_data(data: dict[str, Any], path: Path | Place) -> Scenario:
    """Load a scenario from its mapping (a file's, as YAML reads it) as if it were the
    file ``path``: no YAML written and read again (harness explore's variants); problems
    name no line."""
    place = path if isinstance(path, Place) else Place.of(path)
    return _load_located(Located(dict(data), {}, place.shown), place.path, place)


def _load_located(located: Located, path: Path, place: Place | None = None) -> Scenario:
    if not isinstance(located.data, dict):
        raise located.error((), "a scenario file is a mapping (name:, llm:, expect: ...)")
    located = with_extends(located, path)
    if "cases" in located.data:
        return load_cases(located, path, lambda doc, at, case: _validated(doc, at, case, place))
    return _validated(located, path, None, place)


def _validated(
    located: Located,
    path: Path,
    case: tuple[str, dict[str, Any]] | None = None,
    place: Place | None = None,
) -> Scenario:
    """The scenario of one document (of the case ``case``: its id and keys; at ``place``,
    if found already): its schema, then every check beyond it."""
    _expand_dotted_expect(located)
    try:
        # Strict: no coercion, so `max_iterations: true` or `parallel_tools: 1` is an error
        # rather than 1 or True.
        scenario = Scenario.model_validate(located.data, strict=True)
    except ValidationError as exc:
        issues = validation_issues(exc, located) + _registry_issues(located, path)
        raise ScenarioError(issues) from None
    if place is None:
        scenario.bind(path.resolve(), located)
    else:
        scenario.bind(place.path, located, root=place.root, id_path=place.id_path)
    if case is not None:
        scenario.set_case(*case)
    issues = _check(scenario, located)
    if issues:
        raise ScenarioError(issues)
    return scenario


def _expand_dotted_expect(located: Located) -> None:
    """Read ``expect: {tool_calls.count: ...}`` as the nested form, lines moved along."""
    expect = located.data.get("expect")
    if not isinstance(expect, dict):
        return
    sections = ExpectSection.sections()
    try:
        expanded = expand_dotted(expect, sections)
    except DottedKeyError as exc:
        raise located.error(("expect", exc.key), str(exc)) from None
    if expanded is expect:
        return
    located.data["expect"] = expanded
    for table in (located.lines, located.literal_blocks):
        for path, line in list(table.items()):
            if len(path) < 2 or path[0] != "expect" or not isinstance(path[1], str):
                continue
            parts = split_dotted(path[1], sections)
            if parts is not None:
                table.setdefault(("expect", parts[0]), line)
                table[("expect", *parts, *path[2:])] = line


# -- checks beyond the schema -----------------------------------------------------------------


def build_tools(
    scenario: Scenario,
    *,
    plugins: Plugins | None = None,
    llm_source: Callable[[str, Any], Any] | None = None,
    agents: SubAgents | None = None,
    serve: Serve | None = None,
    mcp: MCPServers | None = None,
) -> dict[str, Tool]:
    """The scenario's tools (stubs, real ones, sub-agents, remote agents, MCP servers');
    ScenarioError on problems (at the lines of the YAML the scenario was loaded from).

    ``plugins``: the run's (default: those of the scenario's project).
    ``serve(path) -> URL`` serves the scenario files of ``remote: {scenario: FILE}`` tools
    (harness.scenario._serving's; without it, calling one is an error).
    ``mcp`` holds the run's MCP servers, their tools listed (``harness.scenario._mcp_tools``);
    without it, ``mcp:`` entries bring no tools (the tools are built to be checked).
    ``llm_source(name, llm_config)`` makes a sub-agent's LLM source (default: its
    provider's factory, with no run context); pass ``agents`` to see the sub-agents built.
    """
    issues: list[Issue] = []
    plugins = plugins if plugins is not None else discover(scenario.root)
    agents = agents if agents is not None else SubAgents(scenario, plugins)
    builder = _ToolBuilder(scenario, scenario.source, plugins, agents, serve=serve, mcp=mcp)

    def build(name: str, spec: SubAgentSpec, agents: SubAgents) -> dict[str, Tool]:
        tools = builder.build(issues, at=("agents", name), specs=spec.tools)
        if issues:
            raise ScenarioError(issues)
        return tools

    def default_source(name: str, config: Any) -> Any:
        return plugins.llm_factory(config.provider)(config)

    agents.build_tools = build
    agents.llm_source = llm_source or default_source
    tools = builder.build(issues)
    if issues:
        raise ScenarioError(issues)
    return tools


class _ToolBuilder:
    """Builds the tools of one scenario, its own and its sub-agents', each problem added
    to the issues given (with its line in ``located``, when there is one)."""

    def __init__(
        self,
        scenario: Scenario,
        located: Located | None,
        plugins: Plugins,
        agents: SubAgents | None = None,
        *,
        serve: Serve | None = None,
        mcp: MCPServers | None = None,
    ) -> None:
        self.scenario = scenario
        self.located = located
        self.serve = serve
        self.mcp = mcp
        self.context = ToolContext(
            seed=scenario.seed if scenario.seed is not None else scenario.display_name,
            root=scenario.root,
            registered=plugins.tool,
            agents=agents or SubAgents(scenario, plugins),
            case=scenario.case_values,
        )

    def build(
        self,
        issues: list[Issue],
        at: tuple[str | int, ...] = (),
        specs: dict[str, Any] | None = None,
    ) -> dict[str, Tool]:
        """The tools of ``specs`` (default: the scenario's ``tools:``), found ``at``."""
        scenario, located = self.scenario, self.located
        file = located.file if located else "<scenario>"
        tools: dict[str, Tool] = {}
        for name, spec in (scenario.tools if specs is None else specs).items():
            try:
                if spec.mcp is not None:
                    add_mcp_tools(tools, name, self.mcp, at, specs or scenario.tools)
                    continue
                if spec.remote is not None:
                    tools[name] = remote_tool(name, spec, scenario, self.serve)
                    continue
                tools[name] = build_tool(name, spec, self._where(at, name), self.context)
            except SpecError as exc:
                path = (*at, "tools", name, *exc.field)
                shown = located.file_of(path) if located else file
                line = _line(located, path, exc.line_in_text)
                issues.append((shown, line, dotted(path), exc.message))
        return tools

    def _where(self, at: tuple[str | int, ...], name: str) -> Callable[..., str]:
        """Where a field of tool ``name`` is, as a render-time error says it."""
        located = self.located
        file = located.file if located else "<scenario>"
        # Render-time errors end up in results: they name the file as scenario ids do
        # (relative to the project root), so results do not depend on where a run started.
        run_file = self.scenario.id_path or file

        def where(field: tuple[Any, ...], line_in_text: int | None = None) -> str:
            path = (*at, "tools", name, *field)
            line = _line(located, path, line_in_text)
            # A tool from the file the scenario extends (or a case's file) names that file.
            other = located.file_of(path) if located else file
            shown = run_file if other == file else other
            return ScenarioError.format_issue(shown, line, dotted(path), "").rstrip(": ")

        return where


def _line(
    located: Located | None, path: tuple[str | int, ...], line_in_text: int | None
) -> int | None:
    if located is None:
        return None
    if line_in_text is not None:
        return located.text_line(path, line_in_text)
    return located.line_of(path)


def _check_expectation_keys(
    keys: Any, plugins: Plugins, issue: Callable[[tuple[str | int, ...], str], None]
) -> None:
    """``expect`` keys beyond the built-in ones must be registered by a plugin."""
    registry = plugins.registry("expectations")
    for key in keys:
        if key not in registry and not any(k.startswith(f"{key}.") for k in registry):
            top = sorted({k.split(".")[0] for k in registry})
            hint = difflib.get_close_matches(key, top, n=1)
            issue(
                ("expect", key),
                f"unknown expectation {key!r}"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; known: {', '.join(top)}",
            )


def _registry_issues(located: Located, path: Path) -> list[Issue]:
    """The unknown ``expect`` and ``target`` keys of a file whose schema check failed.

    Either may name what a plugin registers, so they are only found against the plugins'
    registry, after the schema: without this, a file with a typo in ``llm`` and one in
    ``expect`` or ``target`` shows the second only once the first is fixed.
    """
    expect = located.data.get("expect")
    known = set(ExpectSection.model_fields)
    extra = (
        [k for k in expect if isinstance(k, str) and k not in known]
        if isinstance(expect, dict)
        else []
    )
    target = located.data.get("target")
    if not extra and not isinstance(target, dict):
        return []
    try:
        plugins = discover(project_root(path))
    except PluginError:
        return []  # said when the schema is fixed and the file loads further
    issues: list[Issue] = []

    def issue(at: tuple[str | int, ...], message: str) -> None:
        issues.append((*located.where(at), dotted(at), message))

    _check_expectation_keys(extra, plugins, issue)
    if isinstance(target, dict):
        try:
            # Alone, the section may be valid: its kind's check (the import) then runs too.
            section = TargetSection.model_validate(target, strict=True)
        except ValidationError:
            section = None  # its schema errors are said already
        if section is not None:
            check_target_section(section, project_root(path), plugins, issue)
    return issues


def _check(scenario: Scenario, located: Located) -> list[Issue]:
    issues: list[Issue] = []

    def issue(path: tuple[str | int, ...], message: str) -> None:
        issues.append((*located.where(path), dotted(path), message))

    try:
        plugins = discover(scenario.root)
    except PluginError as exc:  # the scenario's project lists a plugin that does not load
        return [(located.file, None, "", str(exc))]
    _check_agent(scenario, plugins, issue)
    check_matrix(scenario, plugins, issue)
    check_judges(scenario, issue)
    check_user(scenario, issue)

    # Built to check them (templates, types, use: targets); each run builds its own, since
    # stubs count their calls.
    tools = _ToolBuilder(scenario, located, plugins)
    tools.build(issues)
    _check_served(scenario, issue)

    if scenario.target is not None:
        check_target(scenario, plugins, issue)
    _check_script(scenario, issue)
    for name, spec in scenario.agents.items():
        _check_agent(spec, plugins, issue, at=("agents", name))
        tools.build(issues, at=("agents", name), specs=spec.tools)
        _check_script(spec, issue, at=("agents", name))
    for path, message in agent_cycles(scenario):
        issue(path, message)
    if scenario.expect is not None:
        check_expected_tools(scenario, scenario.expect, ("expect",), issue)

    if scenario.expect is not None and scenario.expect.model_extra:
        _check_expectation_keys(scenario.expect.model_extra, plugins, issue)
    for k, turn in enumerate(scenario.turns or []):
        if turn.expect is not None:
            at = ("turns", k, "expect")
            check_expected_tools(scenario, turn.expect, at, issue)
            if turn.expect.model_extra:

                def turn_issue(path: tuple[str | int, ...], message: str, at: tuple = at) -> None:
                    issue((*at, *path[1:]), message)

                _check_expectation_keys(turn.expect.model_extra, plugins, turn_issue)
    check_guards(scenario, plugins, issue)

    try:
        starting_conversation(scenario)
    except HistoryItemError as exc:
        issue(("history", exc.index), exc.problem)
    except HarnessError as exc:
        issue(("history",), str(exc))
    return issues


# The served scenario files being checked, outermost first: one that serves itself,
# directly or through others, would be served without end.
_serving: ContextVar[tuple[Path, ...]] = ContextVar("harness_serving", default=())


def _check_served(scenario: Scenario, issue: Callable[[tuple, str], None]) -> None:
    """``remote: {scenario: FILE}``: the file loads, and serves no chain back to itself."""
    chain: tuple[Path, ...] | None = None
    for name, spec in scenario.tools.items():
        remote = spec.remote_spec
        if remote is None or remote.scenario is None:
            continue
        if chain is None:
            chain = (*_serving.get(), *([scenario.path.resolve()] if scenario.path else []))
        path = scenario.resolve(remote.scenario).resolve()
        at = ("tools", name, "remote", "scenario")
        if not path.is_file():
            continue  # said by the tool's build
        if path in chain:
            issue(at, f"{remote.scenario} serves a chain of scenarios that comes back to itself")
            continue
        token = _serving.set(chain)
        try:
            one_scenario(load_scenario(path), "remote: {scenario: FILE}")
        except HarnessError as exc:
            issue(at, f"{remote.scenario} cannot be served: {exc}")
        finally:
            _serving.reset(token)


def _wire_vendor(provider: str) -> bool:
    """Whether ``provider`` is the vendor of a registered model API (a plugin's too:
    harness_register_wires): a target's recording names it, and no LLM source is built
    for a target."""
    from harness._modelwires import vendors

    return any(vendor.name == provider for vendor in vendors())


def _check_agent(
    scenario: Scenario | SubAgentSpec,
    plugins: Plugins,
    issue: Callable[[tuple, str], None],
    at: tuple[str | int, ...] = (),
) -> None:
    """The planner and the LLM source of the scenario's agent or of a sub-agent (``at``)."""
    try:
        plugins.planner_factory(scenario.agent.planner)
    except PluginError as exc:
        issue((*at, "agent", "planner"), str(exc))
    llm = scenario.llm
    try:
        factory = plugins.llm_factory(llm.provider)
    except PluginError as exc:
        if not (getattr(scenario, "target", None) and _wire_vendor(llm.provider)):
            issue((*at, "llm", "provider"), str(exc))
    else:
        # Build the source once now, so that a config it rejects (say, openai without a
        # model) is a load error with a line, not a failure at run time. Factories do no
        # I/O: sessions and clients open at the first request.
        try:
            # A matrix may give the model: the first combination's is checked. (A target's
            # model is served, not built: the target names its own model.)
            if at or getattr(scenario, "target", None) is None:
                factory(first_llm(scenario) if isinstance(scenario, Scenario) else llm)
        except HarnessError as exc:
            issue((*at, "llm"), str(exc))
        except Exception:  # a plugin's own bug surfaces when the scenario runs (exit 3)
            pass
    if llm.provider == "scripted":
        for key in ("cassette", "model"):
            if getattr(llm, key) is not None:
                issue(
                    (*at, "llm", key),
                    f"{key} is for recorded models: add `provider: openai` (or anthropic)",
                )
    elif llm.script:
        issue((*at, "llm", "script"), f"provider {llm.provider!r} does not use a script")
    # (A scenario's rules may script its simulated user: harness.scenario._simuser.)
    scripts_user = isinstance(scenario, Scenario) and not at and scenario.user.kind == "llm"
    if llm.conversations and (at or getattr(scenario, "target", None) is None) and not scripts_user:
        issue(
            (*at, "llm", "conversations"),
            "llm.conversations script a target's other conversations (docs/external.md"
            "#several-conversations): harness's own agent holds one conversation; give a "
            "sub-agent an llm: section of its own instead",
        )
    elif llm.conversations and llm.provider != "scripted":
        issue(
            (*at, "llm", "conversations"),
            f"provider {llm.provider!r} answers from its cassette, not from scripts: "
            "remove llm.conversations, or serve a script (provider: scripted)",
        )
    elif at and llm.provider in RECORDED_PROVIDERS and llm.cassette is None:
        issue(
            (*at, "llm"),
            "a recorded sub-agent needs a cassette of its own: give it `cassette:` (the "
            "default one is the scenario's)",
        )


def _check_script(
    scenario: Scenario | SubAgentSpec,
    issue: Callable[[tuple, str], None],
    at: tuple[str | int, ...] = (),
) -> None:
    """Script steps: tools the agent (``at``: a sub-agent) has, unique call ids, real
    finish reasons."""
    known = sorted(tool_names(scenario.tools))
    if unknown_server_tools(scenario.tools):
        return  # an MCP server's tools are known when it runs (docs/mcp.md)
    prefix = at
    owner = f"agent {at[1]!r} does not have" if at else "the scenario does not define"
    steps = [
        ((*prefix, "llm", "script", i, *(("one_of", j) if step.stochastic else ())), variant)
        for i, step in enumerate(scenario.llm.script)
        for j, variant in enumerate(step.variants())
    ]
    for at, step in steps:
        if step.finish_reason is not None and step.finish_reason not in FINISH_REASONS:
            issue(
                (*at, "finish_reason"),
                f"unknown finish_reason {step.finish_reason!r}; the API sends "
                + ", ".join(FINISH_REASONS),
            )
        ids: dict[str, int] = {}
        for j, call in enumerate(step.tool_calls):
            if call.id is not None:
                if call.id in ids:
                    issue(
                        (*at, "tool_calls", j, "id"),
                        f"duplicate call id {call.id!r} (call {ids[call.id] + 1} of this step "
                        "has it too); the calls of one reply have distinct ids",
                    )
                ids.setdefault(call.id, j)
            # A target's tools are its own: the script names them.
            if step.unknown_tools or call.name in known or getattr(scenario, "target", None):
                continue
            hint = difflib.get_close_matches(call.name, known, n=1)
            issue(
                (*at, "tool_calls", j),
                f"calls tool {call.name!r}, which {owner}"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; tools: {', '.join(known) or 'none'}. Add it under tools:, fix the "
                "name, or set `unknown_tools: true` on the step if the model should "
                "call a tool that does not exist",
            )
