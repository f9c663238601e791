"""An observer plugin: one JSON line per event, written when a run ends.

Set ``HARNESS_TRACE=path/to/trace.jsonl`` to turn it on (off by default, so a test
suite does not write files it did not ask for). Lines are appended in one write per
run, so parallel workers do not interleave within a run. Secret values (an API key a
tool echoed, say) are masked like everywhere else harness writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.plugin import hookimpl, scrub_text


@hookimpl
def harness_agent_end(run: Any, final: Any) -> None:
    """Append the run's events, then a summary line, to $HARNESS_TRACE."""
    target = os.environ.get("HARNESS_TRACE")
    if not target:
        return
    run_id = f"{run.planner_name}:{len(run.events)}:{run.llm_calls}"
    lines = [
        json.dumps({"run": run_id, **event}, sort_keys=True, default=str) for event in run.events
    ]
    lines.append(
        json.dumps(
            {
                "run": run_id,
                "event": "summary",
                "termination": run.termination.value if run.termination else None,
                "iterations": run.iteration,
                "llm_calls": run.llm_calls,
                "tool_calls": len(run.records),
                "sim_time": run.sim_time,
            },
            sort_keys=True,
        )
    )
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(scrub_text("\n".join(lines)) + "\n")
