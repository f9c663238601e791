"""``harness freeze``: turn a recorded run into an editable scripted scenario.

The scenario replays the recorded run with no cassette: the model's replies become
``llm.script`` (with their call ids), the tools become stubs that return, call by call,
what the recorded tools returned, and ``expect`` holds the outcome. The agent's settings
(iteration limit, stagnation window, ...) are not in a cassette: they come from the
scenario that made the recording when it is given (``--scenario``). Before writing,
freeze runs the frozen scenario once, offline: the expectations are what that run did,
and a run that would not send the recorded requests is refused.

Modules: ``recorded`` reads the cassette (calls, replies, runs), ``build`` makes the
scenario, ``check`` runs it and compares. The command is ``harness.cli.freeze``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cassettes.format import (
    CassetteFormatError,
    LoadedInteraction,
    load_cassette_file,
    readable_yaml,
)
from harness.freeze.build import (
    build_scenario,
    build_target_scenario,
    never_offered,
    output_tools,
    replayed_calls,
    stopped_by_limit,
)
from harness.freeze.cases import case_recorded_in, check_cases_pass, combined, recordings
from harness.freeze.chains import rebuild_chains, skipped_interactions
from harness.freeze.check import (
    Sent,
    expectations,
    first_difference,
    run_error,
    run_offline,
    set_aside,
    trace_hint,
)
from harness.freeze.recorded import (
    FreezeError,
    RecordedCall,
    RecordedRun,
    fill_client_ids,
    read_calls,
    set_aside_blank_texts,
    split_runs,
)
from harness.freeze.served import served_stubs
from harness.llm.config import RECORDED_PROVIDERS
from harness.modelwires import wire_named
from harness.results import ScenarioResult
from harness.secrets import Scrubber

__all__ = ["FreezeError", "Frozen", "freeze"]


@dataclass
class Frozen:
    """A frozen scenario: its YAML text, the run it replays, and notes for the user."""

    text: str
    run: int
    runs: int
    notes: list[str] = field(default_factory=list)


@dataclass
class _Source:
    """What is frozen: the cassette (as the user named it), its runs, the chosen one, and
    the scenario that made the recording when given."""

    path: Path
    shown: str
    runs: list[RecordedRun]
    chosen: RecordedRun
    scenario: str | Path | None  # as given: messages name it so
    original: Any
    notes: list[str] = field(default_factory=list)  # what was skipped or set aside
    # A target's other conversations during the chosen run (a sub-agent's), frozen
    # into llm.conversations.
    conversations: list[RecordedRun] = field(default_factory=list)
    trace: bool = False  # a trace (--trace), not a cassette

    @property
    def target(self) -> bool:
        """The recording was made by a target scenario (an agent not written on harness)."""
        return self.original is not None and self.original.target is not None

    def compared(self) -> list[RecordedCall]:
        """The recorded requests the frozen run must send: a target's client sends its
        retries again, harness's own loop has none."""
        if not self.target:
            return replayed_calls(self.chosen)
        calls = [c for run in [self.chosen, *self.conversations] for c in run.calls]
        return sorted(calls, key=lambda call: call.number)

    def of_run(self) -> str:
        """`` (run N of M)`` when the cassette holds several runs."""
        if len(self.runs) > 1:
            return f" (run {self.chosen.number} of {len(self.runs)})"
        return ""


def _load(path: Path, shown: str) -> list[LoadedInteraction]:
    try:
        interactions = load_cassette_file(path)
    except CassetteFormatError as exc:
        raise FreezeError(_scenario_instead(path, shown) or str(exc.in_file(shown))) from None
    except OSError as exc:
        raise FreezeError(f"cannot read cassette {shown}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FreezeError(f"{shown}: the cassette is not UTF-8 text ({exc.reason})") from None
    # The same masking as the cassette writer's: a cassette recorded elsewhere (or before
    # streams were masked whole) may hold secrets, and the scenario is written to disk.
    scrubber = Scrubber()
    for item in interactions:
        item.request = scrubber.value(item.request)
        item.request_json = scrubber.value(item.request_json)
        item.response = scrubber.value(item.response)
    return interactions


def _scenario_instead(path: Path, shown: str) -> str | None:
    """What to run instead when a scenario file was given where the cassette goes."""
    from harness.errors import HarnessError

    try:
        scenario = _original(path)
    except HarnessError:
        return None
    told = f"{shown} is a scenario file, not a cassette"
    if scenario.llm.provider in RECORDED_PROVIDERS:
        try:
            cassette = os.path.normpath(str(_cassette_of(scenario, shown)))
        except HarnessError:
            return None
        return (
            f"{told}: to freeze the run it recorded, give it as --scenario "
            f"(harness freeze --scenario {shown}: its cassette is {cassette})"
        )
    return (
        f"{told} (its llm is {scenario.llm.provider}: it records none): give the cassette "
        f"first (harness freeze CASSETTE --scenario {shown} takes this scenario's agent "
        "settings and tool definitions)"
    )


def _original(path: Path) -> Any:
    from harness.scenario import load_scenario

    return load_scenario(path)


def _cassette_of(original: Any, shown: str) -> Path:
    """The cassette the original scenario records to."""
    if original.llm.provider not in RECORDED_PROVIDERS:
        raise FreezeError(
            f"{shown} is not a recorded scenario (llm.provider is {original.llm.provider}): "
            "give the cassette to freeze as well"
        )
    return original.cassette_path()


def _recorded_runs(
    path: Path, shown: str, one_input: bool = False
) -> tuple[list[RecordedRun], list[str]]:
    """The runs the cassette recorded, all through one API, and notes on what was left out."""
    interactions = _load(path, shown)
    calls = read_calls(interactions, path, shown)
    if not calls:
        raise FreezeError(
            f"{shown} records no request to a model API harness reads (Chat Completions, "
            "the Responses API, Anthropic Messages, the Gemini API)"
        )
    rebuild_chains(calls, shown)
    notes = []
    blank = set_aside_blank_texts(calls)
    if blank:
        notes.append(
            f"the recording's client sent model turns back with a blank text the frozen run "
            f"does not send (interaction{'s' if len(blank) > 1 else ''} "
            f'{", ".join(map(str, blank))}; llm-anthropic puts a " " text block in front of '
            "tool_use blocks): set aside, not compared"
        )
    skipped = skipped_interactions(interactions)
    if skipped:
        notes.append(
            f"left out interaction{'s' if len(skipped) > 1 else ''} {', '.join(skipped)}: "
            "not requests to a model API harness reads"
        )
    if any(call.chained for call in calls):
        notes.append(
            "requests chained on earlier responses (previous_response_id, conversation) "
            "were compared on the whole conversation rebuilt from the recorded responses"
        )
    return split_runs(calls, one_input), notes


def _pick(runs: list[RecordedRun], wanted: int | None, shown: str) -> RecordedRun:
    listing = "; ".join(run.describe() for run in runs)
    if wanted is None:
        return runs[-1]
    if not 1 <= wanted <= len(runs):
        raise FreezeError(
            f"--run {wanted}: {shown} holds {len(runs)} run(s) ({listing}); "
            f"give --run 1 to {len(runs)}"
        )
    return runs[wanted - 1]


def _held_beside(runs: list[RecordedRun], chosen: RecordedRun) -> list[RecordedRun]:
    """The recorded conversations that started and ended while ``chosen`` was running
    (a sub-agent's, a worker's): those a run of the target holds beside its own."""
    first, last = chosen.calls[0].number, chosen.calls[-1].number
    return [
        run
        for run in runs
        if run is not chosen and first < run.calls[0].number and run.calls[-1].number < last
    ]


def _source(
    cassette: str | Path | None,
    scenario: str | Path | None,
    run: int | None,
    original: Any,
) -> _Source:
    """The cassette to freeze (``--scenario``'s by default) and the run chosen in it
    (``original``: the scenario ``scenario`` names, loaded)."""
    if cassette is None:
        if original is None:
            raise FreezeError("give a cassette, or --scenario with a recorded scenario")
        cassette = _cassette_of(original, str(scenario))
    path = Path(cassette)
    shown = os.path.normpath(str(cassette))
    # A target given one input: each user turn after the first is its client's own.
    one_input = original is not None and original.target is not None and not original.turns
    runs, notes = _recorded_runs(path, shown, one_input)
    chosen = _pick(runs, run, shown)
    replaced = fill_client_ids(chosen)
    if replaced:
        notes.append(
            f"the recording's client sent back call ids of its own ({'; '.join(replaced)}): "
            "the script uses the client's"
        )
    notes.extend(set_aside(replayed_calls(chosen)))
    source = _Source(path, shown, runs, chosen, scenario, original, notes)
    if source.target:
        _add_conversations(source)
    ended_by = output_tools(chosen)
    if ended_by and original is None:
        notes.append(
            f"the recording ends on a call to {', '.join(ended_by)} that no later request "
            "answers (an output tool, say): the frozen scenario marks it ends_run: true, so "
            "its run ends there, completed; if an iteration limit stopped the recording, "
            "pass --scenario with the scenario that made it"
        )
    elif original is None and stopped_by_limit(chosen):
        called = _unanswered(source)
        replies = sum(1 for call in replayed_calls(chosen) if call.reply is not None)
        made_up = never_offered(replayed_calls(chosen)[-1])
        unoffered = (
            f"; its request never offered {', '.join(dict.fromkeys(made_up))}: the model "
            "made the call up"
            if made_up
            else ""
        )
        notes.append(
            f"the recording ends on {len(called)} call(s) (to "
            f"{', '.join(dict.fromkeys(called))}{unoffered}) that no later request answers: "
            f"its client stopped the run there, so the frozen scenario says agent.max_iterations: "
            f"{2 * replies} (two iterations per recorded reply) and its run ends there, at "
            "the limit; if something else stopped the recording, pass --scenario with the "
            "scenario that made it"
        )
    return source


def _add_conversations(source: _Source) -> None:
    """A target's other conversations during the chosen run, and notes on them and on the
    APIs its requests went to."""
    chosen = source.chosen
    source.conversations = _held_beside(source.runs, chosen)
    apis = dict.fromkeys(wire_named(call.api).label for call in chosen.calls)
    if len(apis) > 1:
        source.notes.append(
            f"the run's requests went to {len(apis)} APIs ({', '.join(apis)}): harness serve "
            "holds a conversation per API, so the frozen scenario scripts the first one's in "
            "llm.script and each other one's in llm.conversations, matched by its wire"
        )
    if source.conversations:
        listing = "; ".join(run.describe() for run in source.conversations)
        source.notes.append(
            f"the target held {len(source.conversations)} more conversation(s) during the "
            f"run ({listing}): frozen into llm.conversations, each matched by its first "
            "request"
        )


def _trace_source(trace: str | Path, scenario: str | Path | None, run: int | None) -> _Source:
    """The run to freeze in a trace file (``--trace``): a trace each, the last by default."""
    from harness.freeze.trace import read_trace

    original = _original(Path(scenario)) if scenario is not None else None
    if original is not None and original.target is not None:
        raise FreezeError(
            f"--scenario {scenario} runs a target: a trace freezes into a scripted scenario "
            "(give a scenario without target, or none)"
        )
    path = Path(trace)
    shown = os.path.normpath(str(trace))
    found, notes = read_trace(path, shown)
    runs = [RecordedRun(number, calls) for number, calls in enumerate(found, 1)]
    chosen = _pick(runs, run, shown)
    # OpenInference's google-genai spans give the answer's calls no id; the next request
    # sends them back with the ids they had.
    replaced = fill_client_ids(chosen)
    if replaced:
        notes.append(
            f"the traced client sent back call ids of its own ({'; '.join(replaced)}): the "
            "script uses the client's"
        )
    notes.extend(set_aside(replayed_calls(chosen)))
    return _Source(path, shown, runs, chosen, scenario, original, notes, trace=True)


def _notes(source: _Source, run: int | None) -> list[str]:
    """Which run was frozen, when the cassette holds several."""
    runs = source.runs
    if len(runs) <= 1:
        return list(source.notes)
    # Runs on different APIs (an agent run on each vendor) are named with theirs.
    apis = len({call.api for r in runs for call in r.calls}) > 1
    listing = "; ".join(r.describe(apis) for r in runs)
    which = "the last recorded" if run is None else "as asked"
    left = len(runs) - 1 - len(source.conversations)
    rest = "the other runs' requests are left out" if left else "the others are held during it"
    return [
        f"{source.shown} holds {len(runs)} runs ({listing}): froze run {source.chosen.number}, "
        f"{which}; {rest}" + ("; --run N picks another" if run is None and left else ""),
        *source.notes,
    ]


def _header(source: _Source) -> str:
    if source.target and source.original.tools:
        edit = (
            "# Edit the replies and the served tools' results to make edge cases: the\n"
            "# target's own code runs, its tools: are served to it over MCP as stubs.\n"
        )
    elif source.target:
        edit = "# Edit the replies to make edge cases: the target's own tools run.\n"
    else:
        edit = "# Edit replies and tool results to make edge cases.\n"
    return (
        f"# Frozen from {source.path.name}{source.of_run()} by `harness freeze`:\n"
        "# a scripted scenario that replays the recorded run with no cassette.\n" + edit
    )


def _draft(source: _Source) -> dict[str, Any]:
    """The scenario's data, without expectations yet."""
    made_by = f" by {Path(source.scenario).name}" if source.scenario is not None else ""
    description = f"The run recorded{made_by} in {source.path.name}{source.of_run()}, as a script."
    try:
        if source.target:
            return build_target_scenario(
                source.chosen,
                description=description,
                original=source.original,
                conversations=source.conversations,
            )
        return build_scenario(source.chosen, description=description, original=source.original)
    except FreezeError as exc:  # about an interaction: name the file
        raise FreezeError(f"{source.shown}: {exc}") from None


def _unanswered(source: _Source) -> list[str]:
    """The tools the recording's last reply called, when no later request answers them."""
    last = replayed_calls(source.chosen)[-1].reply
    return [name for _, name, _ in last.tool_calls] if last is not None else []


def _hint(source: _Source, kind: str) -> str:
    """What to do when the frozen run does not replay the recording."""
    if kind == "contradiction":
        return (
            "the cassette was edited or damaged; restore it from the recording, or record "
            "the run again with the client that made it"
        )
    if source.target:
        return (
            f"has the agent {source.scenario} runs changed since it was recorded, or does it "
            "send something new on each run (a time, a random id)? record it again "
            "(--record-mode rewrite)"
        )
    if source.original is not None:
        return (
            f"has {source.scenario} changed since it was recorded? re-record the cassette "
            "(--record-mode rewrite)"
        )
    called = _unanswered(source)
    if kind == "count" and called:
        replies = sum(1 for call in replayed_calls(source.chosen) if call.reply is not None)
        made_up = never_offered(replayed_calls(source.chosen)[-1])
        if made_up:
            # The likeliest cause first: a client cannot run a tool it never offered.
            ends = (
                f"the recording ends on a call to {', '.join(dict.fromkeys(made_up))}, which "
                "its request never offered (the model made the call up), and no later request "
                "answers it: its client stopped the run there"
            )
        elif len(called) > 1:
            # An output tool is one call: several at once are a run stopped from outside.
            ends = (
                f"the recording ends on {len(called)} parallel calls (to "
                f"{', '.join(dict.fromkeys(called))}) that no later request answers: its "
                "client stopped the run there (an iteration limit, say)"
            )
        else:
            ends = (
                f"the recording ends on a call to {called[0]} that no later request answers: "
                "its client stopped the run there (an output tool such as pydantic-ai's "
                "final_result, the Agents SDK's stop_on_first_tool, an iteration limit)"
            )
        return (
            f"{ends}, which a scripted run does not do by itself: pass --scenario with the "
            "scenario that made the recording, or with any scenario file whose agent section "
            f"says max_iterations: {2 * replies} (two iterations per recorded reply), to end "
            "the frozen run there"
        )
    if kind == "count":
        return (
            "a cassette does not say how the run ended (max_iterations, the stagnation "
            "window, ...): pass --scenario with the scenario that made the recording"
        )
    return (
        "the recording's client sent this and harness's loop does not (if harness made the "
        "recording, pass --scenario with the scenario that made it)"
    )


def _check_replay(source: _Source, result: ScenarioResult, sent: list[Sent]) -> None:
    """Refuse a frozen run that sends other requests than the recorded ones, or errors."""
    difference = first_difference(source.compared(), sent, result)
    if difference is not None:
        kind, what = difference
        run_name = f"run {source.chosen.number} of " if len(source.runs) > 1 else ""
        raise FreezeError(
            f"{source.shown}: the frozen scenario would not replay {run_name}the recording: "
            f"{what}; {trace_hint(kind, result) if source.trace else _hint(source, kind)}"
        )
    if result.status == "error":
        # A run ending in `error` (a scenario or harness bug) fails whatever it expects.
        what = run_error(result) or "no message"
        if source.target:
            raise FreezeError(
                f"{source.shown}: the target's run ends in error ({what}), and a scenario whose "
                "run ends in error cannot pass as written: fix the target and record again"
            )
        raise FreezeError(
            f"{source.shown}: the recorded run ends in error ({what}), and a scenario whose "
            "run ends in error cannot pass as written: fix the cause (the scenario, a plugin) "
            "and record again"
        )


def _check_passes(source: _Source, text: str, target: Path, first: ScenarioResult) -> None:
    """The scenario with its expectations passes (they were taken from the same run,
    ``first``)."""
    check, _ = run_offline(text, target)
    if check.status == "passed":
        return
    unmet = ", ".join(e.path for e in check.expectations if not e.ok) or check.status
    what = run_error(check)
    if source.target:
        # The target ran again on the same replies and did otherwise: its doing.
        ended = f"ended {check.termination.value}" + (f": {what}" if what else "")
        raise FreezeError(
            f"{source.shown}: the target ran differently when the frozen scenario was run "
            f"again ({unmet} not met; the first run ended {first.termination.value}, this one "
            f"{ended}): the agent depends on more than the model's replies (a time, a random "
            "id, a file it left, state kept in the process since the first run, a timeout on "
            "a loaded machine); make it repeatable and freeze again"
        )
    raise FreezeError(
        f"{source.shown}: the frozen scenario does not pass as written ({unmet}"
        + (f"; its run ended {check.termination.value}: {what}" if what else "")
        + "): a bug in harness freeze, please report it"
    )


def _written(header: str, data: dict[str, Any]) -> str:
    """The scenario's text, masked as a cassette is (what reaches it was masked when the
    cassette was read: this is the last line of defence, and it is what the check runs)."""
    return header + readable_yaml(Scrubber().value(data), fast=False)


def freeze(
    cassette: str | Path | None = None,
    *,
    scenario: str | Path | None = None,
    run: int | None = None,
    output: str | Path | None = None,
    trace: str | Path | None = None,
) -> Frozen:
    """The scenario that replays a run recorded in ``cassette``.

    ``scenario``: the scenario that made the recording (its agent section and tool
    definitions are used; its cassette is the default). ``run``: which run of a cassette
    holding several (1-based; default the last recorded). ``output``: where the scenario
    will be written (its path names it; default ``<cassette name>.scenario.yaml`` here).
    ``trace``: an OTLP JSON trace to freeze instead of a cassette (harness.freeze.trace).
    A ``scenario`` with cases records a cassette per case: without ``cassette``, every
    case's recording is frozen into one scenario with ``cases:``; with one, its case alone.
    """
    if trace is not None:
        if cassette is not None:
            raise FreezeError("--trace freezes a trace: give no cassette with it")
        source = _trace_source(trace, scenario, run)
    else:
        original = _original(Path(scenario)) if scenario is not None else None
        if original is not None and original.cases is not None:
            if cassette is None:
                return _freeze_cases(original, scenario, run, output)
            original = case_recorded_in(original, Path(cassette), scenario, _cassette_of)
        source = _source(cassette, scenario, run, original)
    target = _target(source, output)
    header = _header(source)
    data, result = _frozen(source, target)
    text = _written(header, data)
    _check_passes(source, text, target, result)
    return Frozen(
        text=text, run=source.chosen.number, runs=len(source.runs), notes=_notes(source, run)
    )


def _target(source: _Source, output: str | Path | None) -> Path:
    """Where the frozen scenario goes (its path names it)."""
    return Path(output if output is not None else f"{source.path.stem}.scenario.yaml").resolve()


def _frozen(source: _Source, target: Path) -> tuple[dict[str, Any], ScenarioResult]:
    """The frozen scenario's data, checked to replay the recording, with its expectations,
    and the run they were taken from."""
    header, data = _header(source), _draft(source)
    result, sent = run_offline(_written(header, data), target)
    _check_replay(source, result, sent)
    if source.target and data.get("tools"):
        # The tools harness served the target, answering as they did in that run.
        data["tools"] = served_stubs(source.original, result)
        result, sent = run_offline(_written(header, data), target)
        _check_replay(source, result, sent)
    data["expect"] = expectations(result)
    return data, result


# -- a scenario with cases: each case's recording --------------------------------------------


def _freeze_cases(original: Any, given: Any, run: int | None, output: Any) -> Frozen:
    """Every case's recording frozen into one scenario with ``cases:``."""
    per_case: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []
    target = Path(output).resolve() if output is not None else None
    for case, cassette in recordings(original, given, _cassette_of):
        source = _source(cassette, given, run, case)
        data, _ = _frozen(source, target or _target(source, None))
        per_case.append((str(case.case_id), data))
        notes += [f"case {case.case_id!r}: {note}" for note in _notes(source, run)]
    header, data = combined(original, given, per_case)
    text = _written(header, data)
    check_cases_pass(text, target or Path(f"{original.display_name}.scenario.yaml").resolve())
    return Frozen(text=text, run=run or 0, runs=len(per_case), notes=notes)
