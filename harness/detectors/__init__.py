"""Stuck detectors (docs/loop.md#stuck-detectors): plugins that notice an agent going round
in circles.

A plugin adds one with ``harness_register_detectors(register)``: ``register(name,
factory)`` where ``factory(settings, config)`` gets the detector's ``DetectorSettings``
(``window`` None means the detector's default) and the run's ``AgentConfig``, and returns
a detector (see ``harness.detectors._base`` for its methods). ``agent.detectors`` selects
them by name; without it, the seed's ``repeat`` runs alone with ``stagnation.window``.
"""

from harness.detectors._base import Detectors, Stuck, nudge_text
from harness.detectors._builtin import (
    AlternatingDetector,
    MonologueDetector,
    RepeatDetector,
    RepeatedErrorDetector,
    SameResultDetector,
)

__all__ = [
    "AlternatingDetector",
    "Detectors",
    "MonologueDetector",
    "RepeatDetector",
    "RepeatedErrorDetector",
    "SameResultDetector",
    "Stuck",
    "nudge_text",
]
