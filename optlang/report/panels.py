"""Turn Results into chart data and SVG: convergence curves with bands, kind-specific panels.

Panels: cut/energy distribution over repeats (maxcut, ising), Pareto front scatter
(multiobjective, info["front"]), per-region table and bars (dro, any info["regions"]).
Shared by the HTML and Markdown renderers; nothing here writes files.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from optlang.compare.stats import has_value
from optlang.report import svg

if TYPE_CHECKING:
    from optlang.compare.comparison import Comparison
    from optlang.result import Result

MAX_GRID = 240


# ----------------------------------------------------------------------------- convergence
def run_trace(r: Result, column: int) -> list[tuple[float, float]]:
    """(time, value) points of one run: history column 1 = objective, 2 = bound; final value appended."""
    pts = [
        (float(row[0]), float(row[column]))
        for row in r.history
        if row[column] is not None and math.isfinite(float(row[column])) and math.isfinite(float(row[0]))
    ]
    final = r.objective if column == 1 else r.bound
    t_end = r.timing.get("solve", r.timing.get("total"))
    if final is not None and math.isfinite(final):
        if not pts:
            pts = [(float(t_end or 0.0), float(final))]
        elif t_end is not None and t_end > pts[-1][0] and column == 2:
            pts.append((float(t_end), pts[-1][1]))  # a bound holds until the run ends
    return pts


def time_grid(traces: Sequence[list[tuple[float, float]]], log: bool) -> list[float]:
    """Sorted union of the traces' times, thinned to at most MAX_GRID points (log-spaced when log)."""
    ts = sorted({t for tr in traces for t, _ in tr if (t > 0 or not log)})
    if len(ts) <= MAX_GRID:
        return ts
    lo, hi = ts[0], ts[-1]
    if log:
        return [lo * (hi / lo) ** (i / (MAX_GRID - 1)) for i in range(MAX_GRID)]
    return [lo + (hi - lo) * i / (MAX_GRID - 1) for i in range(MAX_GRID)]


def band(
    traces: Sequence[list[tuple[float, float]]], grid: Sequence[float]
) -> tuple[list[float], list[float], list[float], list[float]]:
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


def convergence_svg(c: Comparison, width: int = 760, height: int = 380) -> str:
    """Objective (solid) and bound (dashed) against time, one colour per backend, min–max bands over repeats."""
    obj_traces = {b: [run_trace(r, 1) for r in c.runs(b)] for b in c.backends}
    bnd_traces = {
        b: [run_trace(r, 2) for r in c.runs(b) if r.bound is not None or any(h[2] is not None for h in r.history)]
        for b in c.backends
    }
    all_t = [t for trs in list(obj_traces.values()) + list(bnd_traces.values()) for tr in trs for t, _ in tr]
    pos = [t for t in all_t if t > 0]
    logx = bool(pos) and max(pos) / min(pos) > 100
    series: list[svg.Series] = []
    for i, b in enumerate(c.backends):
        for traces, dash, label in ((obj_traces[b], "", b), (bnd_traces[b], "6,4", f"{b} bound")):
            traces = [tr for tr in traces if tr]
            if not traces:
                continue
            xs, med, lo, hi = band(traces, time_grid(traces, logx))
            many = len(traces) > 1
            series.append(
                svg.Series(
                    label,
                    xs,
                    med,
                    svg.color(i),
                    dash,
                    lo if many else None,
                    hi if many else None,
                    step=True,
                    markers=len(xs) <= 3,
                )
            )
    title = f"Convergence ({c.sense}; median line, min–max band over repeats)"
    if not series:
        return svg.empty(title, "no run reported a scalar objective or bound over time", width)
    ys = [y for s in series for y in list(s.ys) + list(s.lo or []) + list(s.hi or [])]
    ylim = robust_limits(ys)
    return svg.line_chart(
        series,
        title=title,
        xlabel="time since solve start (s)",
        ylabel="objective / bound",
        logx=logx,
        ylim=ylim,
        width=width,
        height=height,
    )


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
def distribution_svg(c: Comparison, width: int = 760) -> str:
    """Final objective (cut or energy) of every repeat, one column per backend, best bound dashed."""
    groups = [(b, [r.objective for r in c.runs(b) if has_value(r)]) for b in c.backends]
    label = "cut" if c.kind == "maxcut" else ("energy" if c.kind == "ising" else "objective")
    bound = c.best_bound
    return svg.strip_chart(
        groups,
        title=f"{label} over repeats (bar = median" + ("; dashed = tightest bound)" if bound is not None else ")"),
        ylabel=label,
        reference=bound,
        reference_label="tightest claimed bound",
        width=width,
    )


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


def front_svg(c: Comparison, width: int = 760) -> str | None:
    """Pareto front scatter of the first two objectives, every backend's fronts over repeats."""
    groups = []
    names: list[str] = []
    for b in c.backends:
        xs, ys = [], []
        for r in c.runs(b):
            n, pts = front_points(r)
            if len(n) >= 2:
                names = names or n
                xs += [p[0] for p in pts]
                ys += [p[1] for p in pts]
        groups.append((b, xs, ys))
    if not names:
        return None
    extra = f" (first two of {len(names)} objectives)" if len(names) > 2 else ""
    return svg.scatter_chart(
        groups, title=f"Pareto front{extra}", xlabel=names[0], ylabel=names[1], width=width, connect=False
    )


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


def regions_svg(c: Comparison, width: int = 760) -> str | None:
    """Grouped bars of the per-region metric of each backend's best run."""
    data = []
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
        data.append(
            (
                b,
                [float(row.get(metric, math.nan)) if _is_num(row.get(metric)) else math.nan for row in rows][
                    : len(categories)
                ],
            )
        )
    if not data or metric is None:
        return None
    return svg.bar_chart(
        categories, data, title=f"per-region {metric} (best run of each backend)", ylabel=metric, width=width
    )


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_regions(c: Comparison) -> bool:
    return any(region_rows(r) for r in c.results)


def has_front(c: Comparison) -> bool:
    return any(len(front_points(r)[0]) >= 2 for r in c.results)
