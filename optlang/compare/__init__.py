"""`optlang compare`: run several backends × repeats on one model with the same budget and seeds.

Rooms, importing one way (stats ← comparison ← orchestrate ← cli; report/ imports stats and
comparison, and only cli imports report/):
- stats.py: per-backend summaries and contradiction flags (pure functions of Results);
- comparison.py: Comparison, the data a report shows;
- orchestrate.py: backend selection and running the jobs on an executor (executors.py);
- cli.py: the subcommand (flags, console table, report file, exit code).
"""

from __future__ import annotations

from typing import Any

from optlang.compare.comparison import Comparison
from optlang.compare.orchestrate import DEFAULT_TIME_LIMIT, candidate_backends, compare
from optlang.compare.stats import (
    ATOL,
    RTOL,
    BackendSummary,
    Contradiction,
    StatusConflict,
    best_of,
    better,
    find_contradictions,
    find_status_conflicts,
    has_value,
    relative_gap,
    summarize,
    tightest_bound,
)

_CLI = ("add_common_arguments", "add_parser", "report_format", "run")

__all__ = [
    "ATOL",
    "DEFAULT_TIME_LIMIT",
    "RTOL",
    "BackendSummary",
    "Comparison",
    "Contradiction",
    "StatusConflict",
    "best_of",
    "better",
    "candidate_backends",
    "compare",
    "find_contradictions",
    "find_status_conflicts",
    "has_value",
    "relative_gap",
    "summarize",
    "tightest_bound",
    *_CLI,
]


def __getattr__(name: str) -> Any:
    """The CLI names load on first use, so importing the statistics never pulls in report/."""
    if name in _CLI:
        from optlang.compare import cli

        return getattr(cli, name)
    raise AttributeError(f"module 'optlang.compare' has no attribute {name!r}")
