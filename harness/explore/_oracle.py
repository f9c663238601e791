"""The oracle: what must hold under every fault (a scenario's ``invariants:``, or the
default invariants), as the ``expect:`` of each variant, and a variant's verdict
(docs/explore.md#the-invariants)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness._results import ScenarioResult

__all__ = ["DEFAULT_MAX_REQUESTS", "Verdict", "invariants_of", "judge"]

# A retry storm: more requests than this for one reply of the model.
DEFAULT_MAX_REQUESTS = 5

# The endings of a run that ended, without a crash, within its limits. The own loop's
# `error` is a crash (a planner's, a hook's, harness's); a target's `llm_error`,
# `tool_error` and `error` are its raising (or being stopped at its timeout).
_OWN_LOOP_ENDINGS = [
    "completed",
    "empty",
    "max_iterations",
    "stagnation",
    "validation_error",
    "llm_error",
    "budget",
    "tool_error",
]
_TARGET_ENDINGS = ["completed", "empty", "max_iterations", "stagnation", "budget"]


def invariants_of(data: dict[str, Any]) -> dict[str, Any]:
    """The invariants of the scenario mapping ``data`` as an ``expect:`` mapping: its
    ``invariants:`` (``expect`` meaning its own expect), else the defaults."""
    given = data.get("invariants")
    if given == "expect":
        return dict(data.get("expect") or {})
    if isinstance(given, dict) and given:
        return dict(given)
    endings = _TARGET_ENDINGS if data.get("target") is not None else _OWN_LOOP_ENDINGS
    return {"termination": list(endings), "max_requests_per_call": DEFAULT_MAX_REQUESTS}


@dataclass(frozen=True)
class Verdict:
    """A variant's outcome: ``held``, ``broken`` (the invariants it broke, sorted) or
    ``crashed`` (it could not run: ``message`` says why)."""

    outcome: str
    broken: tuple[str, ...] = ()
    message: str = ""


def judge(result: ScenarioResult, invariants: dict[str, Any]) -> Verdict:
    """The verdict of a variant's run, whose expectations were the invariants."""
    keys = _paths(invariants)
    broken = sorted({e.path for e in result.expectations if not e.ok and _belongs(e.path, keys)})
    if broken:
        return Verdict("broken", tuple(broken))
    return Verdict("held")


def _paths(invariants: dict[str, Any]) -> set[str]:
    """The top-level keys of the invariants (a section's checks are ``key.sub``)."""
    return {str(key).split(".")[0] for key in invariants}


def _belongs(path: str, keys: set[str]) -> bool:
    # A completed target that left scripted replies unused fails `script_consumed` by
    # itself (docs/external.md): an invariant only when the scenario asks for it.
    return path.split(".")[0] in keys
