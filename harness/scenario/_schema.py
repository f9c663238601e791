"""The scenario file schema (pydantic; unknown keys are errors)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    create_model,
    model_validator,
)

from harness._config import AgentConfig, BudgetSettings, DetectorSettings, ModelPrice
from harness._markers import check_tag
from harness._results import combination_label
from harness._sequential import SequentialPlan
from harness.llm._config import LLMConfig
from harness.scenario._expect_schema import ExpectSection
from harness.scenario._fields import CLOSED, TOOL_NAME
from harness.scenario._tool_schema import ToolSpec

__all__ = [
    "AgentSection",
    "RepeatSection",
    "Scenario",
    "SubAgentSpec",
    "TargetSection",
    "TurnSpec",
    "UserSection",
    "json_schema",
    "scenario_name",
]


_WINDOW = AgentConfig.model_fields["stagnation_window"]


class StagnationSection(BaseModel):
    """Stagnation detection settings."""

    model_config = CLOSED
    window: int = Field(default=_WINDOW.default, ge=0, description=_WINDOW.description)


class _AgentSectionBase(BaseModel):
    """How the agent loop runs."""

    model_config = CLOSED

    if TYPE_CHECKING:
        # create_model gives AgentSection its fields (_agent_fields); the ones read by name,
        # as properties: annotations would be fields without defaults to pydantic's plugin.
        @property
        def stagnation(self) -> StagnationSection: ...
        @property
        def planner(self) -> str: ...
        @property
        def detectors(self) -> dict[str, DetectorSettings] | None: ...
        @property
        def budget(self) -> BudgetSettings | None: ...

    def to_config(self) -> AgentConfig:
        """The loop's AgentConfig."""
        settings = self.model_dump(exclude={"stagnation"})
        return AgentConfig(**settings, stagnation_window=self.stagnation.window)


def _agent_fields() -> dict[str, Any]:
    """AgentConfig's fields in their order, the window as a ``stagnation`` mapping."""
    fields: dict[str, Any] = {}
    for name, info in AgentConfig.model_fields.items():
        if name == "prices":
            continue  # a scenario's top-level `prices:` (with [tool.harness.prices])
        if name == "stagnation_window":
            fields["stagnation"] = (StagnationSection, Field(default_factory=StagnationSection))
        else:
            fields[name] = (info.annotation, info)
    return fields


AgentSection = create_model(
    "AgentSection",
    __base__=_AgentSectionBase,
    __module__=__name__,
    __doc__=_AgentSectionBase.__doc__,
    **_agent_fields(),
)


class TargetSection(BaseModel):
    """An external agent run against the scenario's model (docs/external.md).

    One kind key: ``python`` or ``command`` (built-ins), or a kind a plugin registers
    with ``harness_register_targets`` (extra keys name it).
    """

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    python: str | None = Field(
        default=None,
        description="module:callable, imported from the project root, called with the input",
    )
    command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="argv run in the project root; the input on stdin or as {input}",
    )
    timeout: float = Field(
        default=60.0, gt=0, description="wall seconds for the whole run; then it is stopped"
    )
    on_stagnation: Literal["observe", "stop"] = Field(
        default="observe",
        description="stop: answer the request after a stagnating plan with HTTP 400",
    )
    requires: list[str] = Field(
        default_factory=list,
        description="Python modules or programs the target needs: when one is missing the "
        "scenario is skipped (with the reason), not an error",
    )

    def kinds(self) -> dict[str, Any]:
        """The kind keys given: ``{kind: value}`` (one, in a valid file)."""
        given = {k: getattr(self, k) for k in ("python", "command") if getattr(self, k) is not None}
        given.update(self.model_extra or {})
        return given


def scenario_name(path: Path) -> str:
    """The default name: the file name without ``.scenario.yaml``."""
    name = path.name
    for suffix in (".scenario.yaml", ".scenario.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


class TurnSpec(BaseModel):
    """One user turn of a conversation (``turns:``): the user's text and what the turn must do."""

    model_config = CLOSED
    user: str | None = Field(
        default=None, description="the user's message (the scripted user needs one per turn)"
    )
    expect: ExpectSection | None = None


class UserSection(BaseModel):
    """Which user simulator gives the turns' messages (``harness_register_users``): the
    turns' texts (``scripted``), a model playing the user (``llm``: docs/scenarios.md
    #simulated-users), or a plugin's."""

    model_config = CLOSED
    name: str = Field(default="scripted", description="scripted (default) or a plugin's user")
    simulator: str | None = Field(
        default=None, description="the same as name: scripted, llm (a model plays the user)"
    )
    options: dict[str, Any] = Field(default_factory=dict, description="handed to the user")
    provider: str | None = Field(
        default=None,
        description="with simulator: llm, the user's model: openai, anthropic, gemini, or "
        "scripted (from llm.conversations); default: the agent's llm.provider",
    )
    model: str | None = Field(default=None, description="with simulator: llm, the user's model")
    base_url: str | None = Field(default=None, description="default: the agent's endpoint")
    goal: str | None = Field(default=None, description="with simulator: llm, what it wants done")
    persona: str | None = Field(default=None, description="with simulator: llm, who the user is")
    stop_when: str | None = Field(
        default=None,
        description="with simulator: llm, when the user ends the conversation (default: "
        "when the goal is reached, or cannot be)",
    )

    @model_validator(mode="after")
    def _one_name(self) -> UserSection:
        named = "name" in self.model_fields_set
        if self.simulator is not None and named and self.simulator != self.name:
            raise ValueError("give simulator: or name: (the same key), not both")
        return self

    @property
    def kind(self) -> str:
        """The simulator's name (``simulator:``, else ``name:``)."""
        return self.simulator or self.name

    def simulator_options(self) -> dict[str, Any]:
        """What the simulator gets as its options: ``options:`` and the llm user's keys."""
        given = {k: getattr(self, k) for k in ("model", "goal", "persona", "stop_when")}
        return {**self.options, **{k: v for k, v in given.items() if v is not None}}


def _check_tool_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(
            f"tool name {name!r} is not accepted by the OpenAI API: use 1 to 64 letters, "
            "digits, '_' or '-'"
        )
    return name


class SubAgentSpec(BaseModel):
    """A named sub-agent (the ``agents:`` section): its own loop settings, tools and
    model. A tool entry ``{agent: NAME}`` exposes it to the agent that has the tool."""

    model_config = CLOSED
    description: str | None = Field(
        default=None, description="what the agent does: the description of tools exposing it"
    )
    agent: AgentSection = Field(default_factory=AgentSection)
    tools: dict[Annotated[str, AfterValidator(_check_tool_name)], ToolSpec] = Field(
        default_factory=dict,
        json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}},
    )
    llm: LLMConfig = Field(default_factory=LLMConfig)


# The most runs one scenario may ask for.
MAX_RUNS = 10_000


class RepeatSection(BaseModel):
    """``repeat: {runs: N, min_pass_rate: R}``: N runs, judged by their pass rate; or
    ``repeat: {max_runs: N, min_pass_rate: R, decide: sequential}``: runs until the
    verdict is clear at the error rates given, N at most (docs/gate.md)."""

    model_config = CLOSED
    runs: int | None = Field(
        default=None, ge=1, le=MAX_RUNS, description="how many times the scenario runs"
    )
    min_pass_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the share of runs (0 to 1) that must pass; default: every run",
    )
    decide: Literal["fixed", "sequential"] = Field(
        default="fixed",
        description="fixed: every run runs; sequential: the runs stop once the verdict is "
        "clear (Wald's sequential probability ratio test)",
    )
    max_runs: int | None = Field(
        default=None, ge=1, le=MAX_RUNS, description="with decide: sequential, the most runs"
    )
    false_pass: float = Field(
        default=0.05,
        gt=0,
        lt=0.5,
        description="with decide: sequential, the chance of passing an agent whose pass rate "
        "is min_pass_rate - margin (default 0.05)",
    )
    false_fail: float = Field(
        default=0.05,
        gt=0,
        lt=0.5,
        description="with decide: sequential, the chance of failing an agent whose pass rate "
        "is min_pass_rate + margin (default 0.05)",
    )
    margin: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description="with decide: sequential, how far from min_pass_rate the error rates "
        "hold (default 0.1: within it, either verdict is acceptable)",
    )

    @model_validator(mode="after")
    def _one_way(self) -> RepeatSection:
        if self.decide == "fixed":
            given = sorted(
                {"max_runs", "false_pass", "false_fail", "margin"} & self.model_fields_set
            )
            if given:
                raise ValueError(
                    f"{', '.join(given)}: only with decide: sequential (give runs: N for a "
                    "fixed number of runs)"
                )
            if self.runs is None:
                raise ValueError("give runs: N (or max_runs: N with decide: sequential)")
        else:
            if self.runs is not None:
                raise ValueError(
                    "decide: sequential runs as many times as the verdict needs: give "
                    "max_runs: N (the most), not runs"
                )
            if self.max_runs is None:
                raise ValueError("decide: sequential needs max_runs: N, the most runs")
            self.plan()  # a margin that cannot tell two rates apart is refused here
        return self

    def plan(self) -> SequentialPlan | None:
        """The sequential plan (None for a fixed number of runs)."""
        if self.decide != "sequential" or self.max_runs is None:
            return None
        return SequentialPlan(
            max_runs=self.max_runs,
            min_pass_rate=1.0 if self.min_pass_rate is None else self.min_pass_rate,
            false_pass=self.false_pass,
            false_fail=self.false_fail,
            margin=self.margin,
        )


def _check_agent_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(f"agent name {name!r}: use 1 to 64 letters, digits, '_' or '-'")
    return name


class Scenario(BaseModel):
    """One ``*.scenario.yaml`` file."""

    model_config = CLOSED

    name: str | None = Field(
        default=None, description="default: the file name without .scenario.yaml"
    )
    description: str | None = None
    tags: list[Annotated[str, AfterValidator(check_tag)]] = Field(
        default_factory=list, description="become pytest markers"
    )
    seed: int | str | None = Field(default=None, description="seeds Faker; default: the name")
    repeat: Annotated[int, Field(ge=1, le=MAX_RUNS)] | RepeatSection = Field(
        default=1,
        description="run the scenario N times (ids path::name[k]); pass rates in results.json; "
        "{runs: N, min_pass_rate: R}: it passes when at least R of its runs pass",
    )
    agent: AgentSection = Field(default_factory=AgentSection)
    input: str | None = None
    history: str | list[dict[str, Any]] | None = Field(
        default=None, description="a saved conversation (JSON file) or a list of OpenAI messages"
    )
    tools: dict[Annotated[str, AfterValidator(_check_tool_name)], ToolSpec] = Field(
        default_factory=dict, json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}}
    )
    llm: LLMConfig = Field(default_factory=LLMConfig)
    agents: dict[Annotated[str, AfterValidator(_check_agent_name)], SubAgentSpec] = Field(
        default_factory=dict,
        description="named sub-agents; a tool entry {agent: NAME} exposes one",
        json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}},
    )
    matrix: dict[str, list[Any]] | None = Field(
        default=None,
        description="run the scenario once per combination: {model: [...], planner: [...], "
        "any agent setting: [...]}",
    )
    target: TargetSection | None = Field(
        default=None, description="an external agent to test instead of harness's own loop"
    )
    expect: ExpectSection | None = None
    invariants: ExpectSection | Literal["expect"] | None = Field(
        default=None,
        description="what must hold under every fault harness explore places (any expect "
        "key; termination a list of endings); expect: the scenario's own expect; default: "
        "the run ends, without a crash, with at most 5 requests for one reply "
        "(docs/explore.md)",
    )
    turns: list[TurnSpec] | None = Field(
        default=None,
        min_length=1,
        description="a conversation: one run of the loop per turn, instead of input:",
    )
    user: UserSection = Field(default_factory=UserSection)
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="USD per million tokens by model, for budget.cost (over the defaults and "
        "[tool.harness.prices])",
    )
    extends: str | None = Field(
        default=None,
        description="a file (relative to this one) whose keys this scenario starts from, "
        "merged as mappings: shared tools, agent and llm settings (docs/scenarios.md#extends)",
    )
    cases: list[dict[str, Any]] | str | None = Field(
        default=None,
        description="run the scenario once per case: a list of mappings, or a .jsonl / .csv "
        "file beside it; a case's scenario keys (input, expect, ...) are merged over the "
        "scenario's, every key is {{ case.KEY }} in its texts; ids path::name[case-id] "
        "(docs/scenarios.md#cases)",
    )

    # Set by the loader: where the file is (tools and history are built from it per run).
    _path: Path | None = PrivateAttr(default=None)
    _source: Any = PrivateAttr(default=None)
    _root: Path | None = PrivateAttr(default=None)
    _id_path: str | None = PrivateAttr(default=None)
    # A matrix combination this scenario is (harness.scenario._matrix), None otherwise.
    _combination: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def combination(self) -> dict[str, Any] | None:
        """The matrix combination this scenario runs (``{model: ..., planner: ...}``), if any."""
        return self._combination

    # Why the scenario cannot run here (its target needs what is not installed), if so.
    _skip: str | None = PrivateAttr(default=None)
    # Which run this is and the seed its stochastic steps are drawn with (for_run).
    _draw: tuple[int | None, int] = PrivateAttr(default=(None, 0))

    def for_run(self, run: int | None, seed: int) -> Scenario:
        """This scenario as run number ``run`` (None: run once) with ``seed``: what its
        stochastic steps (``one_of``) are drawn with."""
        copy = self.model_copy()
        copy._draw = (run, seed)
        return copy

    @property
    def draw(self) -> tuple[int | None, int]:
        """``(run, seed)`` its stochastic steps are drawn with (``for_run``)."""
        return self._draw

    @property
    def stochastic(self) -> bool:
        """A script of the scenario (its agent's, a sub-agent's, a conversation's or its
        judge's) has a ``one_of`` step: its runs may differ, as a live model's do."""
        configs = [self.llm, *(spec.llm for spec in self.agents.values())]
        scripts = [
            script
            for llm in configs
            for script in (llm.script, llm.judge_script, *(r.script for r in llm.conversations))
        ]
        return any(step.stochastic for script in scripts for step in script)

    # The case this scenario is (harness.scenario._cases): its id and keys; and, for the
    # scenario of a file with cases, every case's scenario.
    _case_id: str | None = PrivateAttr(default=None)
    _case_values: dict[str, Any] | None = PrivateAttr(default=None)
    _variants: list[Scenario] | None = PrivateAttr(default=None)

    @property
    def case_id(self) -> str | None:
        """The id of the case this scenario is (``cases:``), if any."""
        return self._case_id

    @property
    def case_values(self) -> dict[str, Any] | None:
        """The keys of the case this scenario is (``{{ case.KEY }}``), if any."""
        return self._case_values

    def set_case(self, case_id: str | None, values: dict[str, Any] | None) -> None:
        """Make this scenario the case ``case_id`` (the loader's)."""
        self._case_id, self._case_values = case_id, values

    @property
    def case_scenarios(self) -> list[Scenario]:
        """One scenario per case of a file with ``cases:`` (else this scenario alone)."""
        return list(self._variants) if self._variants is not None else [self]

    def set_variants(self, variants: list[Scenario]) -> None:
        """The scenarios of this file's cases (the loader's)."""
        self._variants = variants

    @property
    def variant(self) -> str | None:
        """The case and matrix combination as one label (``paris``, ``paris,model=a``):
        the name of a recorded variant's own cassette."""
        parts = [
            *([self._case_id] if self._case_id is not None else []),
            *([combination_label(self._combination)] if self._combination else []),
        ]
        return ",".join(parts) or None

    @property
    def runs(self) -> int:
        """How many times the scenario runs (``repeat:``, a number or ``{runs: N}``; the
        most, ``max_runs``, when decided sequentially)."""
        if isinstance(self.repeat, RepeatSection):
            return self.repeat.runs or self.repeat.max_runs or 1
        return self.repeat

    @property
    def sequential(self) -> SequentialPlan | None:
        """How its runs are decided sequentially (``decide: sequential``), if they are."""
        return self.repeat.plan() if isinstance(self.repeat, RepeatSection) else None

    @property
    def min_pass_rate(self) -> float | None:
        """The share of its runs that must pass (``repeat: {min_pass_rate: R}``), if set."""
        return self.repeat.min_pass_rate if isinstance(self.repeat, RepeatSection) else None

    def bind(
        self,
        path: Path | None,
        source: Any = None,
        *,
        root: Path | None = None,
        id_path: str | None = None,
    ) -> None:
        """Remember the file this scenario came from (and its located YAML); ``root`` and
        ``id_path`` when the caller found them already (else found on first use)."""
        self._path = path
        self._source = source
        self._root = root
        self._id_path = id_path

    def mark_skipped(self, reason: str) -> None:
        """Skip this scenario when it runs, saying ``reason``."""
        self._skip = reason

    @property
    def skip_reason(self) -> str | None:
        """Why this scenario is skipped (None when it runs)."""
        return self._skip

    @property
    def root(self) -> Path:
        """The project root of the scenario file (found once: it walks up the folders)."""
        if self._root is None:
            from harness._project import project_root

            self._root = project_root(self._path.parent if self._path else None)
        return self._root

    @property
    def id_path(self) -> str | None:
        """The file's POSIX path relative to the project root (absolute outside it).

        The path part of the scenario's id: the same wherever a run starts. None for a
        scenario built in Python.
        """
        if self._path is None:
            return None
        if self._id_path is None:  # found once: it resolves the path (a run asks often)
            from harness._project import project_relative

            self._id_path = project_relative(self._path, self.root)
        return self._id_path

    @property
    def path(self) -> Path | None:
        """The scenario file (None for a scenario built in Python)."""
        return self._path

    @property
    def source(self) -> Any:
        """The located YAML the scenario was loaded from (for line numbers), if any."""
        return self._source

    @property
    def display_name(self) -> str:
        """``name``, else the file name without ``.scenario.yaml``."""
        if self.name:
            return self.name
        return scenario_name(self._path) if self._path else "scenario"

    def cassette_path(self, **context: Any) -> Path:
        """The cassette a recorded model's ``llm:`` section names or implies (its
        ``cassette:``, else the default path from the file); ``context``: the rest of
        ``LLMContext`` (scenario_id, record_mode, ...) as the source gets it."""
        from harness.cassettes import resolve_cassette_path
        from harness.llm._config import LLMContext

        # A case's or combination's cassette is its own (as its run's source is told).
        context.setdefault("variant", self.variant)
        where = LLMContext(scenario_file=self._path, project_root=self.root, **context)
        return resolve_cassette_path(self.llm.with_context(where))

    def resolve(self, relative: str) -> Path:
        """A path given in the scenario, relative to the scenario file's folder."""
        candidate = Path(relative)
        if candidate.is_absolute() or self._path is None:
            return candidate
        return self._path.parent / candidate


def json_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (``harness schema``), for editors."""
    schema = Scenario.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "harness scenario (*.scenario.yaml)",
        **{k: v for k, v in schema.items() if k != "title"},
    }
