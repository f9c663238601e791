"""Performance benchmarks (issue 7); never part of the test suite.

Every module here with a top-level ``main()`` is a benchmark: ``python -m benchmarks`` runs
them all, ``python -m benchmarks NAME [ARGS...]`` one of them. ``main()`` is called without
arguments (it reads ``sys.argv[1:]``, which holds the ARGS) and returns an exit status: 0 or
None when the benchmark ran and met its targets, non-zero (or False) when it missed one.
"""
