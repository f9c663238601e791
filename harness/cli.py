"""The ``harness`` command."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``harness`` console script."""
    args = sys.argv[1:] if argv is None else argv
    print(f"harness {' '.join(args)}: not yet implemented", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
