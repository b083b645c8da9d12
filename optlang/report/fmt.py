"""Number and text formatting shared by the HTML, Markdown and console renderers."""

from __future__ import annotations

import math
from typing import Any

from optlang.compare.stats import BackendSummary

DASH = "—"


def num(v: float | None, digits: int = 7) -> str:
    """A number in up to `digits` significant digits; None/NaN as a dash."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return DASH
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e12):
        return str(int(v))
    return f"{v:.{digits}g}"


def pct(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return DASH
    return f"{v:.3%}" if v < 0.1 else f"{v:.1%}"


def seconds(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return DASH
    if v < 0.01:
        return f"{v * 1000:.2g} ms"
    return f"{v:.3g} s" if v < 100 else f"{v:.0f} s"


def time_range(s: BackendSummary) -> str:
    """Median time and, over several runs, the [min–max] range."""
    if s.time_median is None:
        return DASH
    if s.time_min is not None and s.time_max is not None and s.runs > 1 and s.time_max > s.time_min:
        return f"{seconds(s.time_median)} [{seconds(s.time_min)}–{seconds(s.time_max)}]"
    return seconds(s.time_median)


SUMMARY_HEADER = ("backend", "runs", "status", "best", "median", "spread", "bound", "gap", "time", "checks", "flags")


def summary_row(s: BackendSummary) -> list[str]:
    """One summary table row as text cells (columns of SUMMARY_HEADER)."""
    spread = DASH if s.spread is None else num(s.spread)
    if s.stdev is not None:
        spread += f" (sd {num(s.stdev, 3)})"
    return [
        s.backend,
        f"{s.solved}/{s.runs}",
        s.status_text or DASH,
        num(s.best),
        num(s.median),
        spread,
        num(s.bound),
        pct(s.gap),
        time_range(s),
        s.checks_text,
        "CONTRADICTED" if s.flagged else "",
    ]


def cell(v: Any) -> str:
    """A generic table cell value (regions tables, environment)."""
    if isinstance(v, float):
        return num(v, 5)
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v)
    if isinstance(v, dict):
        return ", ".join(f"{k}={cell(x)}" for k, x in v.items())
    return DASH if v is None else str(v)


BENCH_COLUMNS = (
    "backend",
    "models",
    "reached best",
    "fastest",
    "ρ(1)",
    "ρ(2)",
    "ρ(10)",
    "median gap",
    "failed models",
    "error runs",
    "runs",
)


def bench_rows(backend_table: list[dict[str, Any]]) -> list[list[str]]:
    """The cells of a bench report's backend table, in BENCH_COLUMNS order (HTML and Markdown)."""
    return [
        [
            r["backend"],
            str(r["models"]),
            str(r["reached_best"]),
            str(r["fastest"]),
            f"{r['rho_1']:.2f}",
            f"{r['rho_2']:.2f}",
            f"{r['rho_10']:.2f}",
            pct(r["median_gap"]),
            str(r["failed_models"]),
            str(r["error_runs"]),
            str(r["runs"]),
        ]
        for r in backend_table
    ]
