"""``harness shrink``: the smallest scenario that fails the same way (docs/shrink.md).

Modules: ``failure`` says what "the same way" is, ``source`` reads and runs the scenario
given, ``draft`` holds a shrinking scenario and its edits, ``elements`` finds its steps,
tools, expectations and faults, ``passes`` what each pass tries, ``ddmin`` is delta
debugging, ``engine`` runs the passes to a fixpoint, ``rerun`` runs one candidate in this
process, ``output`` writes the original's YAML with the edits made, and ``shrinking`` is
the entry point. The command is ``harness.cli._shrink``.
"""

from harness.shrink._elements import Size
from harness.shrink._engine import Progress
from harness.shrink._failure import Failure, ShrinkError
from harness.shrink._shrinking import ShrinkInterrupted, ShrinkResult, shrink, verify

__all__ = [
    "Failure",
    "Progress",
    "ShrinkError",
    "ShrinkInterrupted",
    "ShrinkResult",
    "Size",
    "shrink",
    "verify",
]
