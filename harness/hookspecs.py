"""Every hook a harness plugin can implement.

Plugins implement them with ``hookimpl`` (defined here; a plugin imports it, and the types
the hooks receive, from ``harness.plugin``: docs/plugins.md). Registration hooks receive a
``register`` callable; decision hooks are ``firstresult`` (the first non-None answer
wins); event hooks are observers whose return values are ignored. pluggy is
synchronous, so every hook is a plain function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from harness._actions import FinalResponse, ToolAction, ToolCallRecord
    from harness._messages import ToolCall
    from harness._results import Results
    from harness._run import Run
    from harness._sections import Section
    from harness.llm._base import LLMRequest, LLMResponse
    from harness.llm._chunks import LLMChunk

# The spec marker is private to this file; plugins use the implementation marker, defined
# here beside the specs (as pytest and tox do) so that a plugin module imports only this
# file, never the plugin manager.
hookspec = pluggy.HookspecMarker("harness")
hookimpl = pluggy.HookimplMarker("harness")

# --------------------------------------------------------------------------------------
# Registration: named components. Called once per plugin manager, when first needed.
# --------------------------------------------------------------------------------------


@hookspec
def harness_register_planners(register: Callable[[str, Callable[[Any], Any]], None]) -> None:
    """Add planners: call ``register(name, factory)`` where ``factory(config) -> planner``.

    A planner is any object with ``step(run) -> plan`` (sync or async). Scenarios
    (``agent.planner``) and ``Agent(planner=name)`` select it by name.
    """


@hookspec
def harness_register_tools(register: Callable[[Any], None]) -> None:
    """Add reusable tools: call ``register(tool)`` with a ``@tool`` function.

    The tool's name is its registry key; scenarios use it with ``{use: name}`` and
    ``Agent(tools=["name"])`` accepts it by name.
    """


@hookspec
def harness_register_llms(register: Callable[[str, Callable[[Any], Any]], None]) -> None:
    """Add LLM sources: call ``register(name, factory)``; a scenario's ``llm.provider`` picks one.

    ``factory(config)`` receives the scenario's ``llm`` section (a pydantic model) and
    returns an object with ``async complete(request) -> LLMResponse``.
    """


@hookspec
def harness_register_expectations(
    register: Callable[[str, Callable[[Any, Any], tuple[bool, Any]]], None],
) -> None:
    """Add ``expect:`` keys: call ``register(key, check)`` with ``check(result, expected)``.

    ``check`` returns ``(ok, actual)``; ``actual`` is shown next to ``expected`` in
    failure messages and reports.
    """


@hookspec
def harness_register_targets(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Add target kinds: call ``register(name, factory)``; a scenario's ``target: {name: ...}``
    picks one.

    ``factory()`` returns an object with ``check(value, root)`` (called when the file
    loads; raise ``harness.external.TargetError`` for a target that cannot run) and
    ``async run(value, call) -> str`` (runs the agent with the model served at
    ``call.base_url``; returns the final answer, raises to end the run; cancelled at the
    timeout). ``python`` and ``command`` are built-ins.
    """


@hookspec
def harness_register_detectors(register: Callable[[str, Callable[[Any, Any], Any]], None]) -> None:
    """Add stuck detectors: call ``register(name, factory)``; ``agent.detectors`` selects them.

    ``factory(settings, config)`` gets the detector's ``DetectorSettings`` (``window``
    None: the detector's default) and the run's ``AgentConfig``, and returns a detector
    built fresh for each run: an object with any of ``check_plan(run, calls,
    signature)``, ``add_plan(run, calls, signature)``, ``plan_ran(run, records)``,
    ``check_request(run)``; the checks return a ``harness.detectors.Stuck`` or None.
    """


@hookspec
def harness_register_users(register: Callable[[str, Callable[[Any], Any]], None]) -> None:
    """Add user simulators for ``turns:`` scenarios: call ``register(name, factory)``.

    ``factory(context)`` gets a ``harness._users.UserContext`` (the scenario's turn texts
    and the ``user.options``) and returns an object with ``next_message(conversation,
    turn)`` (sync or async; ``turn`` counts from 1) giving the next user message, or None
    to end the conversation early. The built-in ``scripted`` replays the turns' texts.
    """


@hookspec
def harness_register_wires(register: Callable[..., None]) -> None:
    """Add model APIs: call ``register(wire)`` or ``register(wire, vendor=WireVendor(...))``.

    ``wire`` is a ``harness.wires._neutral.Wire`` (its ``name`` is its registry key);
    ``harness serve`` answers its ``paths``, the external observer, cassette matching and
    freeze read its requests and answers with it. ``vendor`` (``harness.plugin.WireVendor``)
    says where the API lives for the recording proxy, which variables and header hold its
    key (masked in cassettes, replaced by a dummy in a target's environment). The four
    built-in wires are registered, each with its vendor (``harness._vendors``), by the
    built-in ``harness._modelwires`` (docs/plugins.md#a-model-api-from-a-plugin).
    """


# --------------------------------------------------------------------------------------
# Decisions (firstresult): the first plugin that answers wins.
# --------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def harness_action_signature(run: Run, tool_calls: list[ToolCall]) -> Any:
    """Return the stagnation signature of a tool plan, or None to leave it to others.

    Two plans with equal signatures count as the same plan. The built-in answer is a
    tuple of sorted ``(tool_name, canonical_json(arguments))``; return your own to,
    say, ignore a timestamp argument. Must be hashable and comparable with ``==``.
    """


@hookspec(firstresult=True)
def harness_classify_exception(exc: BaseException) -> str | None:
    """Return the termination an external target's exception stands for, or None.

    Called when a target (``target:`` in a scenario) raised ``exc``: answer
    ``"max_iterations"`` when it is the framework's own turn limit, or another
    termination name. The built-in answer recognizes pydantic-ai's
    ``UsageLimitExceeded``, the Agents SDK's ``MaxTurnsExceeded`` and LangGraph's
    ``GraphRecursionError`` by class name; with no answer, the run ends ``llm_error``
    (after an error answer from the model) or ``error``.
    """


# --------------------------------------------------------------------------------------
# Events (observers): called in order as the run proceeds; return values are ignored.
# --------------------------------------------------------------------------------------


@hookspec
def harness_agent_start(run: Run) -> None:
    """A run starts: called once, before the first iteration."""


@hookspec
def harness_iteration_start(run: Run, iteration: int) -> None:
    """An iteration (one trip through the loop) starts; ``iteration`` counts from 1."""


@hookspec
def harness_llm_request(run: Run, request: LLMRequest) -> None:
    """A request is about to be sent to the LLM (``request.messages``, ``request.tools``)."""


@hookspec
def harness_llm_chunk(run: Run, chunk: LLMChunk) -> None:
    """A piece of a streamed reply arrived (``chunk.content``, ``chunk.tool_calls``, ...).

    Called for every piece, empty ones included, in the order they arrive, after
    ``harness_llm_request`` and before ``harness_llm_response`` of the same call; only
    in streamed runs (``Agent.astream``, or a source that always streams: a scenario's
    ``llm.stream: true``). ``run.llm_calls`` is the number of the call being answered.
    """


@hookspec
def harness_llm_response(run: Run, response: LLMResponse) -> None:
    """The LLM answered; ``response.message`` is already appended to the conversation."""


@hookspec
def harness_action_executed(run: Run, action: ToolAction, result: ToolCallRecord) -> None:
    """One tool call of a plan was handled: it ran (``ok`` or ``error``), or it was
    answered with an error ToolMessage (``invalid`` under ``on_validation_error: retry``,
    ``unknown_tool``); ``result.status`` says which.

    Called once per call, in the model's order, after the whole plan finished. Not
    called for calls that never ran: the plan stopped by a validation error or by
    stagnation (their records have status ``invalid`` / ``not_run``).
    """


@hookspec
def harness_agent_end(run: Run, final: FinalResponse) -> None:
    """The run ended with ``final``; ``run.termination`` says why. Called exactly once."""


# --------------------------------------------------------------------------------------
# Reports: called when a session's reports are made (and by ``harness report``).
# --------------------------------------------------------------------------------------


@hookspec
def harness_report_sections(results: Results) -> Section | Sequence[Section] | None:
    """Return sections to add to the reports: a ``Section``, a list of them, or None.

    Called once per report, after the run (``results``: what results.json holds, its
    ``scenarios`` read from disk for a large suite: iterate them once). Each section is
    shown in the terminal's harness summary, the Markdown summary and the HTML report,
    built-in sections first, then each plugin's in the order plugins were registered.
    A plugin that raises is named in one ``report error:`` line (exit status 3); the
    reports are still written without its sections (docs/plugins.md#a-section-of-the-report).
    """
