"""The ``harness`` command: every front end, one module per command.

Every command has one shape: a module named in ``COMMANDS`` with ``add_arguments(parser)``
(its description and options, on the subcommand's ``Parser``) and ``handle(options)``
(what it does; its exit status). ``_main`` holds ``COMMANDS`` and ``main`` (the console
script), ``parsing`` the argument parser, ``exitcodes`` the one table of exit statuses,
``baseline`` the baseline's reading and writing. A command's module is imported only when
that command runs (``harness --help`` needs only the lines in ``COMMANDS``), so that
``harness --version`` and the pytest plugin (which reads ``exitcodes``) stay light.
"""

from harness._exitcodes import EXIT
from harness.cli._main import COMMANDS, main

__all__ = ["COMMANDS", "EXIT", "main"]
