"""The pills of a scenario card that say what its run used: the model's tokens, and what
the judges cost apart from them (``judge_requests``, ``judge_prompt_tokens``, ...)."""

from __future__ import annotations

__all__ = ["usage_pills"]

# Usage keys under this prefix are the judges' (docs/judges.md): a pill of their own.
_JUDGE = "judge_"


def _pill(usage: dict[str, int]) -> str:
    """``2 requests · prompt 100 · completion 20 tokens``: counts first, then tokens."""
    counts = [
        f"{n} {key.replace('_', ' ').removesuffix('s') if n == 1 else key.replace('_', ' ')}"
        for key, n in usage.items()
        if "tokens" not in key
    ]
    tokens = [
        f"{key.removesuffix('_tokens').replace('_', ' ')} {n}"
        for key, n in usage.items()
        if "tokens" in key
    ]
    return " · ".join([*counts, *tokens]) + (" tokens" if tokens else "")


def usage_pills(usage: dict[str, int]) -> list[str]:
    """The run's usage as pill texts: the model's, then the judges' (``judge: ...``)."""
    model = {k: n for k, n in usage.items() if not k.startswith(_JUDGE)}
    judge = {k.removeprefix(_JUDGE): n for k, n in usage.items() if k.startswith(_JUDGE)}
    pills = [_pill(model)] if model else []
    return pills + ([f"judge: {_pill(judge)}"] if judge else [])
