"""What changed, said short enough for a CI log or a pull-request comment: the values of
a baseline change (``termination completed -> max_iterations``, the trajectory's first
differing plan, the answer's changed words), pass rates in words, and where repeated runs
part. The terminal summary (``harness.report._text``) and the Markdown summary
(``harness.report._markdown``) both say it this way; the HTML report shows it whole.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from harness._baseline import (
    SIGNIFICANCE,
    PassRateChange,
    RateTest,
    ScenarioChange,
    TrajectoryChange,
)
from harness._repeats import Divergence, Repeats, SequentialRepeats
from harness._runbudget import RunBudget

__all__ = [
    "budget_sentence",
    "change_details",
    "counted",
    "divergence_lines",
    "percent",
    "rate_sentence",
    "rate_test_sentence",
    "repeats_text",
    "sequential_text",
    "shorten",
    "trajectory_step",
    "word_changes",
]

# Each shown value is cut at this many characters.
LIMIT = 100

# Words of context kept before an answer's first change.
_CONTEXT_WORDS = 4

_TOKENS = re.compile(r"\S+\s*|\s+")


def shorten(text: str, limit: int = LIMIT) -> str:
    """One line of at most ``limit`` characters (white space runs become one space)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def counted(count: int, key: str) -> str:
    """``1 regression``, ``2 regressions``, ``0 fixed``."""
    return f"{count} {key[:-1] if key == 'regressions' and count == 1 else key}"


def percent(rate: float) -> str:
    """``70%``; ``2.9%`` under 10%, so that small shares do not read as 0%."""
    value = rate * 100
    return f"{value:.2g}%" if 0 < value < 10 else f"{value:.0f}%"


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def word_changes(old: str, new: str, limit: int = LIMIT) -> str:
    """The answer with its changed words marked as ``git diff --word-diff`` marks them
    (``[-old-]{+new+}``), from a few words before the first change, cut at ``limit``."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    matcher = difflib.SequenceMatcher(
        a=[t.strip() for t in a], b=[t.strip() for t in b], autojunk=False
    )
    parts: list[str] = []
    first_change = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            parts.extend(b[j1:j2])
            continue
        if first_change is None:
            first_change = len(parts)
        removed, added = "".join(a[i1:i2]).strip(), "".join(b[j1:j2]).strip()
        last = b[j2 - 1] if j2 > j1 else a[i2 - 1]
        space = last[len(last.rstrip()) :] or " "  # the white space after the chunk
        marked = (f"[-{removed}-]" if removed else "") + (f"{{+{added}+}}" if added else "")
        parts.append(marked + space)
    start = max((first_change or 0) - _CONTEXT_WORDS, 0)
    text = ("…" if start else "") + "".join(parts[start:]).strip()
    return shorten(text, limit)


def trajectory_step(change: TrajectoryChange, limit: int = LIMIT) -> str:
    """The trajectory's first differing plan: ``plan 2: a {..} -> b {..}``."""
    number = 1
    for op in change.ops:
        if op.op == "equal":
            number += len(op.old)
            continue
        if op.op == "replace":
            half = max(limit // 2 - 10, 20)
            return f"plan {number}: {shorten(op.old[0], half)} -> {shorten(op.new[0], half)}"
        if op.op == "delete":
            return f"plan {number} gone: {shorten(op.old[0], limit)}"
        return f"plan {number} new: {shorten(op.new[0], limit)}"
    return "the plans are the same"


def _final_lines(old: dict[str, Any], new: dict[str, Any], limit: int) -> list[str]:
    """What differs in the final response: the answer's words, its error, its data."""
    lines = []
    a, b = old.get("content"), new.get("content")
    if a != b:
        if isinstance(a, str) and isinstance(b, str):
            lines.append(f"answer: {word_changes(a, b, limit)}")
        else:
            lines.append(
                f"answer: {shorten(_value(a), limit // 2)} -> {shorten(_value(b), limit // 2)}"
            )
    for key in ("error", "data"):
        if old.get(key) != new.get(key):
            lines.extend(_mapping_lines(key, old.get(key), new.get(key), limit))
    return lines


def _mapping_lines(name: str, old: Any, new: Any, limit: int) -> list[str]:
    """``error.message: Max iterations reached {+(3): ...+}``: the keys of two mappings that
    differ, each with its change (two long values cut to a width would often read the
    same on both sides); other values whole, shortened."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [f"{name}: {shorten(_value(old), limit // 2)} -> {shorten(_value(new), limit // 2)}"]
    lines = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, str) and isinstance(b, str):
            lines.append(f"{name}.{key}: {word_changes(a, b, limit)}")
        else:
            half = limit // 2
            lines.append(f"{name}.{key}: {shorten(_value(a), half)} -> {shorten(_value(b), half)}")
    return lines


def change_details(change: ScenarioChange, limit: int = LIMIT) -> list[str]:
    """Each changed field of a scenario with its values, one short line each."""
    lines = []
    for name in ("status", "termination"):
        field = getattr(change, name)
        if field is not None:
            lines.append(f"{name}: {field.old} -> {field.new}")
    for name, label in (("detector", "stuck detector"), ("budget", "budget")):
        field = getattr(change, name)
        if field is not None:
            lines.append(
                f"{label}: {shorten(_value(field.old), limit // 2)} -> "
                f"{shorten(_value(field.new), limit // 2)}"
            )
    for name, label in (("iterations", "iterations"), ("llm_calls", "LLM calls")):
        field = getattr(change, name)
        if field is not None:
            lines.append(f"{label}: {field.old} -> {field.new} ({field.delta:+})")
    if change.tool_calls is not None:
        lines.append(f"trajectory: {trajectory_step(change.tool_calls, limit)}")
    if change.final is not None:
        lines.extend(_final_lines(change.final.old or {}, change.final.new or {}, limit))
    return lines


# How each correction is named in words.
_CORRECTED = {"holm": "Holm's correction", "bh": "the Benjamini-Hochberg correction"}


def rate_test_sentence(test: RateTest) -> str:
    """How pass rates were compared, in words: the test and the correction."""
    compared = f"{test.compared} scenario(s) compared by pass rate"
    if test.correction == "none":
        return (
            f"{compared}, each by a one-sided Fisher exact test at {test.significance:g}, "
            "uncorrected (--regression-correction none)"
        )
    return (
        f"{compared}: one-sided Fisher exact tests, p-values adjusted by "
        f"{_CORRECTED[test.correction]} for the {test.compared} compared "
        f"(--regression-correction {test.correction}), each at {test.significance:g}"
    )


def rate_sentence(change: PassRateChange, test: RateTest | None = None) -> str:
    """A moved pass rate in words: from what to what, the test (and its p-value adjusted
    for the scenarios compared, ``test``), and what it means."""
    old, new = change.old, change.new
    moved = (
        f"pass rate {'rose' if change.verdict == 'rose' else 'fell'} from "
        f"{percent(old.pass_rate)} ({old.passed}/{old.runs} runs) to "
        f"{percent(new.pass_rate)} ({new.passed}/{new.runs})"
    )
    if change.p_value is None:
        return moved
    p = change.p_value
    often = f"{percent(p)} of the time" if p else "less than once in a million times"
    chance = (
        f"a one-sided Fisher exact test gives {_p(p)}: a drop this large comes by "
        f"chance {often} when nothing changed"
    )
    adjusted = change.adjusted_p_value
    if adjusted is not None and test is not None and test.correction != "none":
        chance += (
            f"; adjusted for the {test.compared} scenarios compared "
            f"({_CORRECTED[test.correction]}), {_p(adjusted)}"
        )
    if change.verdict == "regression":
        return f"{moved}; {chance}, at most {SIGNIFICANCE:g}: a significant drop, a regression"
    return f"{moved}; {chance}, more than {SIGNIFICANCE:g}: within noise, not a regression"


def _p(p: float) -> str:
    """``p = 0.012``; ``p < 1e-06`` for one too small to keep (p-values have 6 decimals)."""
    return f"p = {p:.2g}" if p else "p < 1e-06"


def budget_sentence(budget: RunBudget) -> str:
    """A live run's budget in words: the limits, what was spent, and what was left."""
    limits = [
        f"--max-requests {budget.max_requests}" if budget.max_requests is not None else "",
        f"--max-cost {budget.max_cost:g}" if budget.max_cost is not None else "",
    ]
    spent = f"{budget.requests} request(s) made, ${budget.cost:.4f} spent"
    text = f"budget ({', '.join(filter(None, limits))}): {spent}"
    if not budget.reached:
        return text + ", within it"
    left = len(budget.not_run)
    return text + (
        f": reached; {left} scenario run(s) not run for the budget (not passed: exit 1)"
        if left
        else ": reached as the last scenario ran"
    )


def repeats_text(repeats: Repeats) -> str:
    """``7/10 runs passed (70%, 95% CI 40%-89%)``, and the verdict of a min_pass_rate."""
    interval = repeats.interval
    text = f"{repeats.passed}/{repeats.runs} runs passed ({percent(repeats.pass_rate)}"
    if len(interval) == 2:
        text += f", 95% CI {percent(interval[0])}-{percent(interval[1])}"
    text += ")"
    if repeats.min_pass_rate is not None:
        verdict = "passes" if repeats.passes else "FAILS"
        text += f"; min_pass_rate {percent(repeats.min_pass_rate)}: {verdict}"
    if repeats.sequential is not None:
        text += f"; {sequential_text(repeats.sequential)}"
    return text


def sequential_text(sequential: SequentialRepeats) -> str:
    """When and why sequential repeats stopped, in words."""
    plan, decision = sequential, sequential.decision
    errors = (
        f"Wald's test: at most {percent(plan.false_pass)} passing at "
        f"{percent(plan.p_fail)}, {percent(plan.false_fail)} failing at {percent(plan.p_pass)}"
    )
    if decision is None:
        return (
            f"sequential, undecided ({errors}): fewer runs ran than the test needed, "
            "judged by its pass rate"
        )
    if decision.by == "max_runs":
        return (
            f"sequential: still undecided at max_runs {plan.max_runs} ({errors}), judged by "
            "its pass rate"
        )
    return (
        f"sequential: decided after {decision.after} of at most {plan.max_runs} runs, the "
        f"evidence clear ({errors})"
    )


def divergence_lines(divergence: Divergence, limit: int = LIMIT) -> list[str]:
    """Where repeated runs part: the step, then each variant with how many runs took it."""
    lines = [f"first divergence at step {divergence.step} ({divergence.at}):"]
    for variant in divergence.variants:
        runs = ", ".join(str(r) for r in variant.runs[:8])
        more = f", … ({len(variant.runs) - 8} more)" if len(variant.runs) > 8 else ""
        lines.append(f"  {variant.count} run(s) [{runs}{more}]: {shorten(variant.step, limit)}")
    return lines
