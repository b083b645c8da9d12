"""Turn Results into the series a report plots (pure data: no drawing, no files).

Every plotted line is a quantity of the user's model (the per-run rule is in compare/traces.py):
solid = incumbent objective, dashed = valid bound, median over repeats with a min–max band. What
is left out of the objective lines (relaxation values, a backend's own surrogate loss) is kept in
`Convergence.own`, which a report shows only in a panel labelled as such, one backend per plot.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optlang.compare.stats import has_value
from optlang.compare.traces import Points, bound_trace, bound_valid, end_time, objective_trace, reports_model_objective

if TYPE_CHECKING:
    from optlang.compare.comparison import Comparison
    from optlang.result import Result

MAX_GRID = 240
__all__ = ["bound_trace", "bound_valid", "end_time", "objective_trace", "reports_model_objective"]


# ----------------------------------------------------------------------------- several runs
def time_grid(traces: Sequence[Points], log: bool) -> list[float]:
    """Sorted union of the traces' times, thinned to at most MAX_GRID points (log-spaced when log)."""
    ts = sorted({t for tr in traces for t, _ in tr if (t > 0 or not log)})
    if len(ts) <= MAX_GRID:
        return ts
    lo, hi = ts[0], ts[-1]
    if log:
        return [lo * (hi / lo) ** (i / (MAX_GRID - 1)) for i in range(MAX_GRID)]
    return [lo + (hi - lo) * i / (MAX_GRID - 1) for i in range(MAX_GRID)]


def band(traces: Sequence[Points], grid: Sequence[float]) -> tuple[list[float], list[float], list[float], list[float]]:
    """Median, min and max over runs at each grid time (a run holds its last value; absent before its start)."""
    xs, med, lo, hi = [], [], [], []
    for t in grid:
        vals = []
        for tr in traces:
            v = None
            for tt, vv in tr:
                if tt <= t * (1 + 1e-12):
                    v = vv
                else:
                    break
            if v is not None:
                vals.append(v)
        if vals:
            xs.append(t)
            med.append(statistics.median(vals))
            lo.append(min(vals))
            hi.append(max(vals))
    return xs, med, lo, hi


@dataclass
class Line:
    """One plotted line of one backend: the median over repeats and the min–max band."""

    backend: str
    quantity: str  # "objective" | "bound" | "own"
    xs: list[float]
    ys: list[float]
    lo: list[float] | None = None
    hi: list[float] | None = None
    runs: int = 1


@dataclass
class Convergence:
    """The convergence panel's data: model-quantity lines, and the left-out own reports per backend."""

    lines: list[Line] = field(default_factory=list)
    own: dict[str, list[Points]] = field(default_factory=dict)  # backend -> its runs' left-out reports
    logx: bool = False


def convergence(c: Comparison) -> Convergence:
    """Incumbent objective (solid) and valid bound (dashed) lines per backend, median and band over repeats."""
    best = c.best_objective
    obj: dict[str, list[Points]] = {}
    bnd: dict[str, list[Points]] = {}
    own: dict[str, list[Points]] = {}
    for b in c.backends:
        for r in c.runs(b):
            kept, left = objective_trace(r, c.sense)
            if kept:
                obj.setdefault(b, []).append(kept)
            if left:
                own.setdefault(b, []).append(left)
            bt = bound_trace(r, c.sense, best)
            if bt:
                bnd.setdefault(b, []).append(bt)
    pos = [t for d in (obj, bnd) for trs in d.values() for tr in trs for t, _ in tr if t > 0]
    logx = bool(pos) and max(pos) / min(pos) > 100
    out = Convergence(own=own, logx=logx)
    for b in c.backends:
        for quantity, traces in (("objective", obj.get(b, [])), ("bound", bnd.get(b, []))):
            if not traces:
                continue
            xs, med, lo, hi = band(traces, time_grid(traces, logx))
            many = len(traces) > 1
            out.lines.append(Line(b, quantity, xs, med, lo if many else None, hi if many else None, len(traces)))
    return out


def robust_limits(ys: Sequence[float]) -> tuple[float, float] | None:
    """Y limits that keep the late, interesting range readable when early iterates are far off."""
    vals = sorted(v for v in ys if math.isfinite(v))
    if len(vals) < 8:
        return None
    lo, hi = vals[0], vals[-1]
    q_lo, q_hi = vals[len(vals) // 10], vals[(len(vals) * 9) // 10]
    core = q_hi - q_lo
    if core > 0 and (hi - lo) > 20 * core:
        pad = core * 0.6
        return q_lo - pad, q_hi + pad
    return None


# ----------------------------------------------------------------------------- kind panels
def front_points(r: Result) -> tuple[list[str], list[list[float]]]:
    """Objective names and points of a run's Pareto front (info["front"]: [{"objectives": {...}}, ...])."""
    front = r.info.get("front") or []
    names: list[str] = []
    pts: list[list[float]] = []
    for p in front:
        objs = p.get("objectives") if isinstance(p, dict) else None
        if not isinstance(objs, dict):
            continue
        if not names:
            names = list(objs)
        try:
            pts.append([float(objs[n]) for n in names])
        except (KeyError, TypeError, ValueError):
            continue
    return names, pts


def returned_point(r: Result) -> tuple[list[str], list[float]] | None:
    """The objective vector of the point a multi-objective run returned (info["objectives"]), if any."""
    objs = r.info.get("objectives")
    if not isinstance(objs, dict) or len(objs) < 2 or not r.status.has_solution:
        return None
    try:
        return list(objs), [float(v) for v in objs.values()]
    except (TypeError, ValueError):
        return None


def has_front(c: Comparison) -> bool:
    """A multi-objective comparison with anything to draw in objective space (a front or returned points)."""
    return any(len(front_points(r)[0]) >= 2 or returned_point(r) is not None for r in c.results)


def region_rows(r: Result) -> list[dict[str, Any]]:
    """A run's info["regions"] as a list of dicts (empty when absent or malformed)."""
    regions = r.info.get("regions")
    if not isinstance(regions, list):
        return []
    return [row for row in regions if isinstance(row, dict)]


def region_metric(rows: Sequence[dict[str, Any]]) -> str | None:
    """The column to plot per region: the first numeric one named like an error/loss/risk."""
    numeric = [k for k in rows[0] if all(_is_num(row.get(k)) for row in rows)]
    for hint in ("err", "loss", "risk", "mse", "mae"):
        for k in numeric:
            if hint in k.lower():
                return k
    rest = [k for k in numeric if k.lower() not in ("region", "index", "bin", "n", "count", "size", "lo", "hi")]
    return rest[0] if rest else None


def region_label(row: dict[str, Any], i: int) -> str:
    for k in ("region", "label", "name", "bin", "range"):
        if k in row:
            v = row[k]
            return f"{v:.3g}" if isinstance(v, float) else str(v)
    return str(i)


def best_run(c: Comparison, backend: str) -> Result | None:
    """The run of `backend` with the best objective (or its first run when none has one)."""
    runs = c.runs(backend)
    good = [r for r in runs if has_value(r)]
    if good:
        key = (lambda r: -r.objective) if c.sense == "maximize" else (lambda r: r.objective)
        return min(good, key=key)
    return runs[0] if runs else None


def regions(c: Comparison) -> tuple[str, list[str], list[tuple[str, list[float]]]] | None:
    """(metric, region labels, [(backend, values)]) of each backend's best run, or None."""
    data: list[tuple[str, list[float]]] = []
    categories: list[str] = []
    metric = None
    for b in c.backends:
        r = best_run(c, b)
        rows = region_rows(r) if r else []
        if not rows:
            continue
        metric = metric or region_metric(rows)
        if metric is None:
            continue
        categories = categories or [region_label(row, i) for i, row in enumerate(rows)]
        vals = [float(row[metric]) if _is_num(row.get(metric)) else math.nan for row in rows]
        data.append((b, vals[: len(categories)]))
    if not data or metric is None:
        return None
    return metric, categories, data


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_regions(c: Comparison) -> bool:
    return any(region_rows(r) for r in c.results)
