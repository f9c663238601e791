"""Reading a judge's reply: the JSON verdict ``{pass, score, reason}``."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Verdict", "VerdictError", "parse_verdict"]

# Some models wrap JSON in a Markdown fence even in JSON mode.
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


class VerdictError(ValueError):
    """The judge's reply is not a verdict (the message says what is wrong)."""


@dataclass(frozen=True)
class Verdict:
    """The judge's decision: whether the criteria hold, how fully (0-1), and why."""

    passed: bool
    score: float
    reason: str


def parse_verdict(text: str | None) -> Verdict:
    """The verdict in a judge's reply; VerdictError when it is not one.

    ``score`` may be left out (1 for a pass, 0 for a fail); ``pass`` and ``reason`` may not.
    """
    if not text or not text.strip():
        raise VerdictError("the judge's reply is empty")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data: Any = json.loads(body)
    except ValueError:
        raise VerdictError(f"the judge's reply is not JSON: {_cut(text)}") from None
    if not isinstance(data, dict):
        raise VerdictError(f"the judge's reply is not a JSON object: {_cut(text)}")
    passed = data.get("pass")
    if not isinstance(passed, bool):
        raise VerdictError(f"the verdict's `pass` is not true or false: {_cut(text)}")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise VerdictError(f"the verdict gives no `reason`: {_cut(text)}")
    score = data.get("score", 1.0 if passed else 0.0)
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise VerdictError(f"the verdict's `score` is not a number: {_cut(text)}")
    # Some judges answer on a 0-10 or 0-100 scale despite the prompt: out of range is
    # an answer the threshold cannot be compared with, so it is refused, not rescaled.
    if not 0 <= score <= 1:
        raise VerdictError(f"the verdict's `score` {score} is not between 0 and 1")
    return Verdict(passed=passed, score=float(score), reason=reason.strip())


def _cut(text: str, limit: int = 200) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."
