"""Rio's benchmark suite: `python -m tests.bench` (never part of the test run; never gates CI)."""
