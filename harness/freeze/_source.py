"""What ``harness freeze`` freezes: the recording read (a cassette, or a trace with
``--trace``), its runs, the run chosen, the scenario that made it, and notes on what was
left out or set aside."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._modelwires import wire_named
from harness._secrets import Scrubber
from harness.cassettes._format import CassetteFormatError, LoadedInteraction, load_cassette_file
from harness.freeze._build import never_offered, output_tools, replayed_calls, stopped_by_limit
from harness.freeze._chains import rebuild_chains, skipped_interactions
from harness.freeze._check import set_aside
from harness.freeze._recorded import (
    FreezeError,
    RecordedCall,
    RecordedRun,
    fill_client_ids,
    read_calls,
    set_aside_blank_texts,
    split_runs,
)
from harness.llm._config import RECORDED_PROVIDERS

__all__ = [
    "Source",
    "cassette_of",
    "cassette_source",
    "load_original",
    "run_notes",
    "trace_source",
    "unanswered",
]


@dataclass
class Source:
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
    from harness._errors import HarnessError

    try:
        scenario = load_original(path)
    except HarnessError:
        return None
    told = f"{shown} is a scenario file, not a cassette"
    if scenario.llm.provider in RECORDED_PROVIDERS:
        try:
            cassette = os.path.normpath(str(cassette_of(scenario, shown)))
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


def load_original(path: Path) -> Any:
    """The scenario file that made the recording (``--scenario``), loaded."""
    from harness.scenario import load_scenario

    return load_scenario(path)


def cassette_of(original: Any, shown: str) -> Path:
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


def _client_notes(chosen: RecordedRun, client: str) -> list[str]:
    """The notes on what the chosen run's client did: call ids of its own sent back (the
    script takes them), and what it changed inside the run that a scenario cannot."""
    notes = []
    replaced = fill_client_ids(chosen)
    if replaced:
        notes.append(
            f"{client} sent back call ids of its own ({'; '.join(replaced)}): "
            "the script uses the client's"
        )
    return notes + set_aside(replayed_calls(chosen))


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


def cassette_source(
    cassette: str | Path | None,
    scenario: str | Path | None,
    run: int | None,
    original: Any,
) -> Source:
    """The cassette to freeze (``--scenario``'s by default) and the run chosen in it
    (``original``: the scenario ``scenario`` names, loaded)."""
    if cassette is None:
        if original is None:
            raise FreezeError("give a cassette, or --scenario with a recorded scenario")
        cassette = cassette_of(original, str(scenario))
    path = Path(cassette)
    shown = os.path.normpath(str(cassette))
    # A target given one input: each user turn after the first is its client's own.
    one_input = original is not None and original.target is not None and not original.turns
    runs, notes = _recorded_runs(path, shown, one_input)
    chosen = _pick(runs, run, shown)
    notes.extend(_client_notes(chosen, "the recording's client"))
    source = Source(path, shown, runs, chosen, scenario, original, notes)
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
        called = unanswered(source)
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


def _add_conversations(source: Source) -> None:
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


def trace_source(trace: str | Path, scenario: str | Path | None, run: int | None) -> Source:
    """The run to freeze in a trace file (``--trace``): a trace each, the last by default."""
    from harness.freeze._trace import read_trace

    original = load_original(Path(scenario)) if scenario is not None else None
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
    notes.extend(_client_notes(chosen, "the traced client"))
    return Source(path, shown, runs, chosen, scenario, original, notes, trace=True)


def unanswered(source: Source) -> list[str]:
    """The tools the recording's last reply called, when no later request answers them."""
    last = replayed_calls(source.chosen)[-1].reply
    return [name for _, name, _ in last.tool_calls] if last is not None else []


def run_notes(source: Source, run: int | None) -> list[str]:
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
