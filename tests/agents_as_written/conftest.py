"""The scenarios here are run by tests/test_agents_as_written.py, stage by stage, in a copy
of this folder; a plain `pytest` of the repository must not collect them as scenario items
(some fail today on purpose, marked there as strict xfails). A file named on the command
line is still collected (`harness run tests/agents_as_written/anthropic-sync.scenario.yaml`)."""

collect_ignore_glob = ["*.scenario.yaml"]
