"""``harness explore``: every fault of the catalogue at every site of passing scenarios,
each failure written as a scenario that fails the same way (docs/explore.md).

Modules: ``catalogue`` (the fault kinds, sites, and a scenario mapping with a fault
placed: ``with_fault``), ``sites`` (a run's fault sites), ``oracle`` (the invariants and
a variant's verdict), ``running`` (variants run in this process or in workers),
``findings`` (each failure a file, rerun and shrunk; failures grouped), ``model`` (the
results' ``explore`` section), ``exploring`` (the entry point). The command is
``harness.cli._explore``; the report's section is ``harness.report._explore``.
"""

from harness.explore._catalogue import (
    ALL_FAULTS,
    MCP_FAULTS,
    SITE_KINDS,
    TOOL_FAULTS,
    FaultError,
    Site,
    with_fault,
)
from harness.explore._exploring import ExploreError, ExploreOptions, explore, scenario_files
from harness.explore._model import Exploration, ExploredScenario, Finding
from harness.explore._sites import sites_of
from harness.llm._faults import MODEL_FAULTS

__all__ = [
    "ALL_FAULTS",
    "MCP_FAULTS",
    "MODEL_FAULTS",
    "SITE_KINDS",
    "TOOL_FAULTS",
    "Exploration",
    "ExploreError",
    "ExploreOptions",
    "ExploredScenario",
    "FaultError",
    "Finding",
    "Site",
    "explore",
    "scenario_files",
    "sites_of",
    "with_fault",
]
