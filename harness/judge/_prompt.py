"""The judge's prompt: a Jinja template shipped with harness (``templates/judge.j2``).

It asks for a JSON verdict ``{pass, score, reason}``. The run's texts are data handed to
the template, never templates themselves: a model's answer holding ``{{ ... }}`` is
shown as it is.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

__all__ = ["PROMPT_FILE", "SPLIT", "judge_messages", "prompt_source"]

PROMPT_FILE = "judge.j2"
# The line that ends the system message and starts the user message.
SPLIT = "=== user ==="


def prompt_source() -> str:
    """The template's text (as documented in docs/judges.md)."""
    return resources.files("harness.judge").joinpath("templates", PROMPT_FILE).read_text("utf-8")


@cache
def _template() -> Any:
    # Jinja is imported here, not at module level: a run without judges never loads it.
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, autoescape=False)
    return env.from_string(prompt_source())


def judge_messages(
    subject: str,
    criteria: str,
    *,
    task: str | None,
    final: str | None,
    transcript: list[dict[str, Any]],
) -> list[dict[str, str]]:
    """The judge request's Chat Completions ``messages``: the system and the user message.

    ``subject`` is ``final answer`` or ``transcript``.
    """
    text = _template().render(
        subject=subject, criteria=criteria, task=task, final=final, transcript=transcript
    )
    system, _, user = text.partition(SPLIT)
    return [
        {"role": "system", "content": system.strip()},
        {"role": "user", "content": user.strip()},
    ]
