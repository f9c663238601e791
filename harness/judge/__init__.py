"""Judged expectations (docs/judges.md): a model grades the final answer or the
transcript against criteria, and its verdict's reason is the expectation's ``actual``.

- ``prompt``: the documented Jinja prompt asking for ``{pass, score, reason}``;
- ``verdict``: reading the reply;
- ``judges``: the ``Judge`` a run's checks use, and the checks themselves (a built-in
  plugin, registered through ``harness_register_expectations``).
"""

from harness.judge._judges import (
    Judge,
    JudgeSource,
    ScriptedJudge,
    check_final_judge,
    check_transcript_judge,
)
from harness.judge._prompt import judge_messages, prompt_source
from harness.judge._verdict import Verdict, VerdictError, parse_verdict

__all__ = [
    "Judge",
    "JudgeSource",
    "ScriptedJudge",
    "Verdict",
    "VerdictError",
    "check_final_judge",
    "check_transcript_judge",
    "judge_messages",
    "parse_verdict",
    "prompt_source",
]
