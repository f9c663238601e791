"""The frozen scenario, run once offline: what it sends, and whether that is the recording.

A scripted run is deterministic and cheap, so ``harness freeze`` runs what it is about to
write instead of guessing: the expectations it writes are the ones that run meets, and a
frozen run that would send other requests than the recorded ones (a cassette does not
say whether the run stopped at its iteration limit, on stagnation, or on an answer) is
refused rather than written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._modelwires import wire_named
from harness._results import ScenarioResult
from harness._secrets import masked_repr, scrub_text
from harness.freeze._recorded import Item, RecordedCall, blank_free, dialogue, shape, tool_items
from harness.hookspecs import hookimpl
from harness.wires import OPENAI_CHAT

__all__ = [
    "Sent",
    "expectations",
    "first_difference",
    "run_error",
    "run_offline",
    "set_aside",
    "trace_hint",
]


def _short(value: Any) -> str:
    # Masked before it is shortened: a shortened key is a prefix no masking finds.
    return masked_repr(value, 60)


@dataclass
class Sent:
    """One request of the frozen run, normalized like the recorded ones."""

    conversation: tuple[Item, ...]
    tools: tuple[Item, ...]
    tool_choice: Any


def _choice(value: Any) -> Any:
    """tool_choice in one form for both APIs (a named function by its name)."""
    if isinstance(value, dict):
        function = value.get("function")
        if not isinstance(function, dict):
            function = value
        return ("function", function.get("name"))
    return value


class _Requests:
    """An observer plugin keeping every request of the run, normalized."""

    def __init__(self) -> None:
        self.seen: list[Sent] = []

    @hookimpl
    def harness_llm_request(self, run: Any, request: Any) -> None:
        """Keep this request."""
        self.seen.append(
            Sent(
                blank_free(OPENAI_CHAT.normalized({"messages": request.messages})),
                tool_items(request.tool_schemas),
                _choice(request.options.get("tool_choice")),
            )
        )


def run_offline(text: str, path: Path) -> tuple[ScenarioResult, list[Sent]]:
    """Run the scenario ``text`` (as if it were the file ``path``) and keep its requests."""
    from harness.scenario import run_scenario
    from harness.scenario._loader import load_scenario_text

    scenario = load_scenario_text(text, path)
    capture = _Requests()
    result = run_scenario(scenario, plugins=[capture])
    return result, capture.seen


def _item(item: Item | None) -> str:
    if item is None:
        return "nothing"
    kind = item[0]
    if kind == "message":
        return f"{item[1]} message {_short(item[2])}"
    if kind == "call":
        args = item[3][1] if isinstance(item[3], tuple) else item[3]
        return f"call {item[1]} {item[2]}({_short(args)[1:-1]})"
    if kind == "result":
        return f"result of {item[1]} {_short(item[2])}"
    return _short(item[-1])


def _conversation_difference(sent: tuple[Item, ...], recorded: tuple[Item, ...]) -> str:
    at = next(
        (i for i, (a, b) in enumerate(zip(shape(sent), shape(recorded), strict=False)) if a != b),
        min(len(sent), len(recorded)),
    )
    mine = sent[at] if at < len(sent) else None
    theirs = recorded[at] if at < len(recorded) else None
    return (
        f"conversation item {at + 1} is {_item(mine)} in the frozen run, "
        f"{_item(theirs)} in the recording"
    )


def _contradiction(
    before: list[RecordedCall], sent: tuple[Item, ...], recorded: tuple[Item, ...]
) -> str | None:
    """The recorded reply and the recorded request that sends its call back naming two
    tools under one call id, when that is the first difference.

    The frozen run sends back the recorded reply's calls as they were: a request that
    sends one back under its id with another tool's name was edited, not made so by a
    client.
    """
    at = next((i for i, (a, b) in enumerate(zip(sent, recorded, strict=False)) if a != b), None)
    if at is None or sent[at][0] != "call" or recorded[at][0] != "call":
        return None
    (_, call_id, called, _), (_, sent_id, named, _) = sent[at][:4], recorded[at][:4]
    if call_id != sent_id or called == named:
        return None
    for number, call in enumerate(before, 1):
        if call.reply is not None and any(c[0] == call_id for c in call.reply.tool_calls):
            return (
                f"the cassette contradicts itself: the reply to request {number} (interaction "
                f"{call.number}) calls {called} under id {call_id}, and this request sends "
                f"back a call to {named} under the same id"
            )
    return None


def _tools_difference(sent: tuple[Item, ...], recorded: tuple[Item, ...]) -> str:
    names, recorded_names = [t[0] for t in sent], [t[0] for t in recorded]
    if names != recorded_names:
        return f"the tools are {names} in the frozen run, {recorded_names} in the recording"
    mine, theirs = next((a, b) for a, b in zip(sent, recorded, strict=True) if a != b)
    which = "description differs" if mine[1] != theirs[1] else "parameters differ"
    return f"tool {mine[0]}'s {which} from the recording's"


def _system(items: tuple[Item, ...]) -> Any:
    return next((item[2] for item in items if item[:2] == ("message", "system")), None)


def set_aside(recorded: list[RecordedCall]) -> list[str]:
    """What the recording's client changed inside the run that a scenario cannot: the
    system text (a handoff's next instructions) and the tools offered. Freeze compares
    the rest (roles, texts, tool names, arguments, results, their order)."""
    notes = []
    systems: list[Any] = []
    for call in recorded:
        system = _system(call.conversation)
        # A chained request that sends no instructions continues under the earlier ones
        # (its rebuilt conversation holds only the items): no change of system text.
        if system is None and call.chained and systems:
            system = systems[-1]
        systems.append(system)
    if len(set(systems)) > 1:
        changed = next(n for n, s in enumerate(systems, 1) if s != systems[0])
        notes.append(
            f"the system text changes at request {changed} of the recording "
            f"({_short(systems[0])} -> {_short(systems[changed - 1])}): a scenario "
            "sends one, so the frozen run keeps the first and the system text is not compared"
        )
    builtin = _api_tools(recorded)
    if builtin:
        notes.append(
            f"the recording offers tools the API runs itself ({', '.join(builtin)}), which a "
            "scenario cannot offer: set aside, not compared"
        )
    offered = [tuple(t[0] for t in _recorded_tools(call)) for call in recorded]
    if len(set(offered)) > 1:
        listing = "; ".join(
            f"request {n}: {', '.join(names) or 'none'}" for n, names in enumerate(offered, 1)
        )
        notes.append(
            f"the recording offers different tools on different requests ({listing}): a "
            "scenario offers one set, so the frozen run offers them all and tool definitions "
            "are not compared"
        )
    return notes


def first_difference(
    recorded: list[RecordedCall],
    sent: list[Sent],
    result: ScenarioResult,
) -> tuple[str, str] | None:
    """(kind, what differs) between the frozen run's requests and the recorded ones, or None.

    kind is ``count`` (the frozen run goes on past the recording, or stops before it
    ends), ``contradiction`` (a request sends back a recorded call under another tool's
    name) or ``content``. When the recording's client changed the system text or the
    tools inside the run (``set_aside``), that one is not compared.
    """
    # tool_choice set on every request (llm.options) is the recording's configuration,
    # not the agent's doing: only a change from the first request's value is compared.
    recorded_base = recorded[0].body.get("tool_choice")
    sent_base = sent[0].tool_choice if sent else None
    system_changes = len({_system(call.conversation) for call in recorded}) > 1
    tools_change = len({_recorded_tools(call) for call in recorded}) > 1
    for number, (call, request) in enumerate(zip(recorded, sent, strict=False), 1):
        where = f"request {number} (interaction {call.number})"
        mine, theirs = request.conversation, call.conversation
        if system_changes:
            mine, theirs = dialogue(mine), dialogue(theirs)
        # Call ids compared by which call each result answers (a client may make them up:
        # docs/recording.md#matching), as the cassette matches them.
        if shape(mine) != shape(theirs):
            contradiction = _contradiction(recorded[: number - 1], mine, theirs)
            if contradiction is not None:
                return "contradiction", f"{where}: {contradiction}"
            return "content", f"{where}: {_conversation_difference(mine, theirs)}"
        tools = _recorded_tools(call)
        if not tools_change and request.tools != tools:
            return "content", f"{where}: {_tools_difference(request.tools, tools)}"
        their_choice = call.body.get("tool_choice")
        their_choice = None if their_choice == recorded_base else _choice(their_choice)
        my_choice = None if request.tool_choice == sent_base else request.tool_choice
        if my_choice != their_choice:
            return "content", (
                f"{where}: tool_choice is {my_choice!r} in the frozen run, {their_choice!r} in "
                "the recording"
            )
    ended = result.termination.value
    what = run_error(result)
    if what and result.termination.value not in ("completed", "max_iterations"):
        ended += f": {what}"
    if len(sent) > len(recorded):
        return "count", (
            f"the recording ends after {len(recorded)} request(s) but the frozen run goes on "
            f"and sends request {len(recorded) + 1} (it ends {ended})"
        )
    if len(sent) < len(recorded):
        return "count", (
            f"the frozen run ends ({ended}) after {len(sent)} request(s), the recording has "
            f"{len(recorded)}"
        )
    return None


def run_error(result: ScenarioResult) -> str:
    """A run's error in a line: the exception, its message and where a target raised it
    (``ValueError: boom (agent.py:5 in answer)``), or empty."""
    error = result.final.error
    if error is None:
        return ""
    text = f"{error.exception}: {error.message}" if error.exception else error.message
    if error.where:
        text += f" ({error.where})"
    # Masked before it is cut short (a cut key is a prefix no masking finds), on one line.
    text = " ".join(scrub_text(text).split())
    return text if len(text) <= 300 else text[:297] + "..."


def expectations(result: ScenarioResult) -> dict[str, Any]:
    """The ``expect`` section the run meets: how it ended, its calls, its final answer."""
    expect: dict[str, Any] = {"termination": result.termination.value}
    expect["llm_calls"] = result.llm_calls
    # Every call the model asked for, run or not (docs/scenarios.md#which-calls-count).
    called = [r.name for r in result.tool_calls]
    if called:
        expect["tool_calls"] = {"sequence": called, "exact": True}
    if result.parallel_groups:
        expect["parallel_groups"] = [list(group) for group in result.parallel_groups]
    final: dict[str, Any] = {}
    if result.final.content is not None:
        final["equals"] = result.final.content
    data = result.final.data
    if data.truncated:
        final["data"] = {"truncated": True}
    if "output_tool" in data:
        # Ended by an output tool (ends_run): its call's arguments are the run's output.
        final["data"] = {"output_tool": data.output_tool, "output": data.output}
    error = result.final.error
    if error is not None and error.status is not None:
        final["error"] = {"status": error.status}
    if final:
        expect["final"] = final
    expect["script_consumed"] = True
    return expect


def _recorded_tools(call: RecordedCall) -> tuple[Item, ...]:
    """The normalized definitions of the function tools a recorded request offers (the
    tools the API runs itself are set aside: ``_api_tools``)."""
    return tuple(
        t for t in tool_items(call.body.get("tools"), wire_named(call.api)) if t[0] != "other"
    )


def _api_tools(recorded: list[RecordedCall]) -> list[str]:
    """The kinds of tool the recording offers that are no function: the API's own (web
    search, code execution, file search), which it runs itself and a scenario cannot offer."""
    kinds: dict[str, None] = {}
    for call in recorded:
        for spec in wire_named(call.api).tools(call.body.get("tools") or []):
            if spec.name is None:
                raw = spec.raw
                kind = raw.get("type") or next(iter(raw), None) if isinstance(raw, dict) else None
                kinds.setdefault(str(kind or _short(raw)))
    return list(kinds)


def trace_hint(kind: str, result: ScenarioResult) -> str:
    """What to do when a trace's frozen run does not replay it: a trace comes from an
    instrumentation, not from a scenario harness could re-record."""
    if kind == "contradiction":
        return "the trace was edited or damaged; export it again from the run"
    if result.termination.value == "validation_error":
        return (
            "a call the trace recorded does not fit the tool's schema as the trace gives it: "
            "if the instrumentation wrote the schema in a form harness reads otherwise, "
            "report it with the instrumentation's name and version"
        )
    if kind == "count":
        return (
            "a trace does not say how the run ended (the agent's iteration limit, its "
            "stagnation window, an output tool): pass --scenario with a scenario file whose "
            "agent section has the agent's settings"
        )
    return (
        "the traced client sent this and harness's loop does not: if the instrumentation "
        "recorded it in a form harness reads otherwise, report it with the "
        "instrumentation's name and version"
    )
