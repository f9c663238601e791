"""``python -m harness.cli``: the ``harness`` command."""

import sys

from harness.cli import main

# Guarded: harness explore's worker processes import the main module again.
if __name__ == "__main__":
    sys.exit(main())
