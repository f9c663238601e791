"""``harness freeze``: turn a recorded run into an editable scripted scenario.

The scenario replays the recorded run with no cassette: the model's replies become
``llm.script`` (with their call ids), the tools become stubs that return, call by call,
what the recorded tools returned, and ``expect`` holds the outcome. The agent's settings
(iteration limit, stagnation window, ...) are not in a cassette: they come from the
scenario that made the recording when it is given (``--scenario``). Before writing,
freeze runs the frozen scenario once, offline: the expectations are what that run did,
and a run that would not send the recorded requests is refused.

Modules: ``recorded`` reads the cassette (calls, replies, runs; ``chains`` rebuilds the
conversations other clients chained), ``trace`` a trace file (``otlp`` reads it,
``conventions`` its messages), ``_source`` holds what is frozen (the recording, the run
chosen, notes), ``build`` makes the scenario (``served`` a target's served tools),
``check`` runs it and compares, ``_refusals`` says why a frozen scenario is refused and
what to do, ``cases`` freezes a scenario's cases together, and ``_run`` is ``freeze()``
itself. The command is ``harness.cli._freeze``.
"""

from harness.freeze._recorded import FreezeError
from harness.freeze._run import Frozen, freeze

__all__ = ["FreezeError", "Frozen", "freeze"]
