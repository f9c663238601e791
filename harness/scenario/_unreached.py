"""A target that did not use the model harness served (docs/external.md#a-target-that-
bypasses-harness): it completed, but never called the model, or left scripted replies
unused. Its client most likely talks to another server: the scenario fails in one line.
"""

from __future__ import annotations

from harness._actions import RunResult, Termination
from harness._results import ExpectationResult
from harness._vendors import OPENAI
from harness.scenario._schema import Scenario

__all__ = ["unreached"]

_CAUSE = (
    f"its client was probably built before harness set {OPENAI.base_url_variable} (its "
    "module imported "
    "before harness loaded the scenario) and talks to another server: build it inside the "
    "target function, or take base_url (docs/external.md)"
)


def unreached(
    result: RunResult, remaining: int | None, scenario: Scenario
) -> ExpectationResult | None:
    """The failed expectation of a completed target run that bypassed harness, else None.

    Not when the scenario says how many calls or replies it expects (``llm_calls``,
    ``script_consumed``): then those checks speak.
    """
    expect = scenario.expect
    if result.termination != Termination.completed:
        return None
    if expect is not None and expect.script_consumed is not None:
        return None
    if result.llm_calls == 0 and (expect is None or expect.llm_calls is None):
        actual = f"the target completed without calling the model: {_CAUSE}"
    elif remaining:
        actual = (
            f"the target completed with {remaining} scripted replies never requested: {_CAUSE} "
            "(an agent meant to stop early: expect.script_consumed: false)"
        )
    else:
        return None
    return ExpectationResult(path="script_consumed", expected=True, actual=actual, ok=False)
