"""pytest integration: scenario files are test items, their results become results.json.

Loaded through the ``pytest11`` entry point, so it is active in every pytest session of
the environment: everything here stays inert (and cheap to import) until a
``*.scenario.yaml`` file is collected or a ``--harness-*`` option is given.

- ``options``: every option of a session, declared once (the plugin's and ``harness
  run``'s flags are made from it), and ``SessionOptions``, what a session reads of them;
- ``session``: the per-session state (its options, its ledger and its outputs), the
  baseline diff and the exit status;
- ``_gather``: what the test reports carry (results, coverage, spending, errors, also
  from xdist workers), gathered into the session's ledger and outputs;
- ``outputs``: what the session made (``SessionOutputs``), what it writes at its end
  (results.json, the HTML report, the Markdown summary) and the summary it prints;
- ``_parts``: a session that is one part of a run in parts (``harness run
  --chunk-size``);
- ``ledger``: what a session collected, deselected, skipped and could not load (xdist
  workers send theirs to the controller);
- ``items``: collection of scenario files, the item that runs one, how its failure
  reads and whose code an escaped exception came from;
- ``fixture``: the ``harness`` fixture for hand-written tests;
- ``sharding``: ``--harness-shard K/N``, one shard of the selection;
- ``live``: ``--harness-concurrency N``, scenario runs in flight at once;
- ``sequential``: sequential repeats, the runs their verdict did not need skipped.

pytest registers this module (the entry point names it), so the hooks of these modules
are imported here: pytest finds a plugin's hooks among its module's attributes.

PYTEST_DONT_REWRITE: ``harness run`` imports this package (for its table of options)
before it starts pytest, which then warned that the module, already imported, could not
be assertion-rewritten; the plugin holds no test assertions to rewrite.
"""

from harness.pytest_plugin._fixture import HarnessFixture, harness
from harness.pytest_plugin._items import (
    ScenarioFile,
    ScenarioItem,
    pytest_collect_file,
    pytest_ignore_collect,
    pytest_itemcollected,
    pytest_report_teststatus,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
)
from harness.pytest_plugin._logs import pytest_sessionstart
from harness.pytest_plugin._options import pytest_addoption
from harness.pytest_plugin._session import pytest_configure, pytest_unconfigure
from harness.pytest_plugin._sharding import pytest_collection_modifyitems

__all__ = [
    "HarnessFixture",
    "ScenarioFile",
    "ScenarioItem",
    "harness",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_ignore_collect",
    "pytest_itemcollected",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
    "pytest_runtest_protocol",
    "pytest_sessionstart",
    "pytest_unconfigure",
]
