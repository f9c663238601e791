"""Why ``harness freeze`` refuses a frozen scenario, and what to do: its run does not
replay the recording, ends in error, or does not pass the expectations taken from it."""

from __future__ import annotations

from pathlib import Path

from harness._results import ScenarioResult
from harness.freeze._build import never_offered, replayed_calls
from harness.freeze._check import Sent, first_difference, run_error, run_offline, trace_hint
from harness.freeze._recorded import FreezeError
from harness.freeze._source import Source, unanswered

__all__ = ["check_passes", "check_replay"]


def _hint(source: Source, kind: str) -> str:
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
    called = unanswered(source)
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


def check_replay(source: Source, result: ScenarioResult, sent: list[Sent]) -> None:
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


def check_passes(source: Source, text: str, target: Path, first: ScenarioResult) -> None:
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
