"""The exit statuses of every harness front end (the ``harness`` command and the pytest
plugin), in one table.

0 all passed; 1 a scenario failed or errored; 2 bad input (a scenario file, a flag);
3 an internal error (harness itself crashed, a report could not be written); 5 nothing
selected. Stopped from outside (harness.cli._stops): 130 interrupted (Ctrl-C) and 141 the
reader of the output gone (a closed pipe), 128 + the signal's number as a shell reports
SIGINT and SIGPIPE. pytest's own statuses agree where they overlap (0, 1, 5); plain pytest
says 2 for Ctrl-C.
"""

__all__ = ["EXIT"]

EXIT = {
    "passed": 0,
    "failed": 1,
    "bad_input": 2,
    "internal": 3,
    "nothing": 5,
    "interrupted": 130,
    "reader_gone": 141,
}
