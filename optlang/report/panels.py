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

from optlang.compare.stats import FrontHypervolumes, front_matrix, has_value
from optlang.compare.traces import Points, bound_trace, bound_valid, end_time, objective_trace, reports_model_objective
from optlang.report import fmt

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
    return front_matrix(r)


def hypervolume_sentence(fh: FrontHypervolumes) -> str:
    """How the fronts' hypervolumes were measured, for the reports and the console."""
    ref = ", ".join(f"{n} = {fmt.num(v, 6)}" for n, v in zip(fh.objectives, fh.reference, strict=True))
    return (
        f"Hypervolume: the volume each front dominates up to one reference point for every run ({ref}: the "
        "worst value of each objective over all fronts plus 10 % of their range); larger is better. Each "
        "run's own info.hypervolume uses a reference of its own front and does not compare across runs."
    )


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


# ----------------------------------------------------------------------------- validation (auto)
SCORES = ("val_mse", "val_tail", "admissible")


@dataclass
class Validation:
    """One run's `auto` choice (info["auto"], backends/dro/auto.py): its candidates and their scores.

    x: the candidate's value of the one parameter that varies (radius, outer_radius or bins), or its
    index when several vary (then `ticks` label each candidate); scale: linear, or log / symlog
    (with zero) when the positive values span at least 100×.
    """

    run: str  # "backend (seed k)"
    params: list[dict[str, Any]]  # each candidate's parameter values
    mse: list[float]
    tail: list[float]
    admissible: list[bool]
    chosen: int | None
    varying: list[str]
    xs: list[float]
    xlabel: str
    ticks: list[str] | None
    scale: str
    threshold: float | None
    method: str = ""
    criterion: str = ""
    how: str = ""


def _num(v: Any) -> float:
    return float(v) if _is_num(v) else math.nan


def _param_text(p: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v:g}" if _is_num(v) else f"{k} = {v}" for k, v in p.items())


def validation(r: Result) -> Validation | None:
    """The validation panel's data of a run with a well-formed info["auto"] record, else None."""
    rec = r.info.get("auto")
    if not isinstance(rec, dict):
        return None
    cands = rec.get("candidates")
    if not isinstance(cands, list) or not cands or not all(isinstance(c, dict) for c in cands):
        return None
    params = [{k: v for k, v in c.items() if k not in SCORES} for c in cands]
    keys = list(dict.fromkeys(k for p in params for k in p))
    varying = [k for k in keys if len({repr(p.get(k)) for p in params}) > 1]
    chosen_rec = rec.get("chosen")
    chosen = None
    if isinstance(chosen_rec, dict):
        chosen = next((i for i, p in enumerate(params) if all(p.get(k) == v for k, v in chosen_rec.items())), None)
    one = varying[0] if len(varying) == 1 else ("radius" if not varying and "radius" in keys else None)
    ticks: list[str] | None = None
    if one is not None and all(_is_num(p.get(one)) for p in params):
        xs = [float(p[one]) for p in params]
        xlabel = f"candidate {one}"
        pos = [x for x in xs if x > 0]
        scale = "linear"
        if len(pos) >= 2 and max(pos) / min(pos) >= 100:
            scale = "log" if len(pos) == len(xs) else "symlog"
    else:
        xs = [float(i) for i in range(len(params))]
        shown = varying or keys
        ticks = [" / ".join(f"{p.get(k):g}" if _is_num(p.get(k)) else str(p.get(k)) for k in shown) for p in params]
        xlabel = f"candidate ({' / '.join(shown)})"
        scale = "linear"
    threshold: float | None = _num(rec.get("val_mse_threshold"))  # admissible: val_mse ≤ threshold
    if threshold is None or math.isnan(threshold):  # older records: ERM's score × the slack, when both are there
        threshold = _num(rec.get("erm_val_mse")) * _num(rec.get("val_slack"))
        threshold = None if math.isnan(threshold) else threshold
    return Validation(
        run=f"{r.backend} (seed {r.seed})",
        params=params,
        mse=[_num(c.get("val_mse")) for c in cands],
        tail=[_num(c.get("val_tail")) for c in cands],
        admissible=[c.get("admissible") is True for c in cands],
        chosen=chosen,
        varying=varying,
        xs=xs,
        xlabel=xlabel,
        ticks=ticks,
        scale=scale,
        threshold=threshold,
        method=str(rec.get("method", "")),
        criterion=str(rec.get("criterion", "")),
        how=str(rec.get("how", "")),
    )


def validations(c: Comparison) -> list[Validation]:
    """The validation records of every run that chose `auto` parameters, in report order."""
    return [v for r in c.results if (v := validation(r)) is not None]


def validation_rows(v: Validation) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the candidates table (parameters, both scores, admissible, chosen)."""
    keys = list(dict.fromkeys(k for p in v.params for k in p))
    header = ["#", *keys, "validation mean loss", "validation tail loss", "admissible", "chosen"]
    rows = []
    for i, p in enumerate(v.params):
        vals = [f"{p[k]:g}" if _is_num(p.get(k)) else str(p.get(k, "—")) for k in keys]
        rows.append(
            [
                str(i),
                *vals,
                fmt.num(v.mse[i], 6),
                fmt.num(v.tail[i], 6),
                "yes" if v.admissible[i] else "no",
                "✓" if i == v.chosen else "",
            ]
        )
    return header, rows


def chosen_text(v: Validation) -> str:
    return _param_text(v.params[v.chosen]) if v.chosen is not None else "—"


# ----------------------------------------------------------------------------- auto options (lr = auto)
@dataclass
class AutoOptions:
    """One run's `auto` optimizer options (info["auto_options"], backends/autotune.py): each candidate's score.

    x: the candidate's value when one option is auto (log scale when every value is positive and they
    span at least 10×, as a step-size grid does), else the candidate's index with `ticks`. Scores that
    are not finite (a diverged fit) are None: left out of the plot, "—" in the table.
    """

    run: str
    names: list[str]  # the auto options
    params: list[dict[str, Any]]
    scores: list[float | None]
    chosen: int | None
    xs: list[float]
    xlabel: str
    ticks: list[str] | None
    logx: bool
    rule: str  # "validation" | "budget"
    rule_text: str  # the rule named for a reader
    method: str = ""
    criterion: str = ""
    how: str = ""
    execution: str = ""  # how the candidates ran (batched or one fit each), when recorded
    # validation records since the one-standard-error rule: each candidate's standard error and whether every
    # one of its fits converged (None where the record has no such entry)
    errors: list[float | None] | None = None
    converged: list[bool | None] | None = None


def rule_text(rule: str, method: str) -> str:
    """The selection rule in words: K-fold / holdout validation, or the objective under an equal budget."""
    if rule == "validation":
        head = method.split(" validation", 1)[0].strip()
        return f"{head} validation".strip() if head else "K-fold validation"
    return "objective under an equal budget — not statistical validation"


def auto_options(r: Result) -> AutoOptions | None:
    """The auto-options panel's data of a run with a well-formed info["auto_options"] record, else None."""
    rec = r.info.get("auto_options")
    if not isinstance(rec, dict):
        return None
    cands = rec.get("candidates")
    names = rec.get("parameters")
    if not isinstance(cands, list) or not cands or not all(isinstance(c, dict) for c in cands):
        return None
    if not isinstance(names, list) or not names:
        names = list(dict.fromkeys(k for c in cands for k in c if k != "score"))
    names = [str(n) for n in names]
    params = [{k: c.get(k) for k in names} for c in cands]
    scores: list[float | None] = []
    for c in cands:
        s = c.get("score")
        scores.append(float(s) if _is_num(s) and math.isfinite(float(s)) else None)
    chosen_rec = rec.get("chosen")
    chosen = None
    if isinstance(chosen_rec, dict):
        chosen = next((i for i, p in enumerate(params) if all(p.get(k) == v for k, v in chosen_rec.items())), None)
    ticks: list[str] | None = None
    logx = False
    if len(names) == 1 and all(_is_num(p[names[0]]) for p in params):
        xs = [float(p[names[0]]) for p in params]
        xlabel = f"candidate {names[0]}"
        logx = min(xs) > 0 and max(xs) / min(xs) >= 10
    else:
        xs = [float(i) for i in range(len(params))]
        ticks = [" / ".join(f"{p[k]:g}" if _is_num(p[k]) else str(p[k]) for k in names) for p in params]
        xlabel = f"candidate ({' / '.join(names)})"
    rule = str(rec.get("rule", ""))
    method = str(rec.get("method", ""))
    errors: list[float | None] | None = None
    conv: list[bool | None] | None = None
    if any("standard_error" in c or "converged" in c for c in cands):
        errors = [
            float(e) if _is_num(e := c.get("standard_error")) and math.isfinite(float(e)) else None for c in cands
        ]
        conv = [c["converged"] if isinstance(c.get("converged"), bool) else None for c in cands]
    return AutoOptions(
        run=f"{r.backend} (seed {r.seed})",
        names=names,
        params=params,
        scores=scores,
        chosen=chosen,
        xs=xs,
        xlabel=xlabel,
        ticks=ticks,
        logx=logx,
        rule=rule,
        rule_text=rule_text(rule, method),
        method=method,
        criterion=str(rec.get("criterion", "")),
        how=str(rec.get("how", "")),
        execution=str(rec.get("execution", "")),
        errors=errors,
        converged=conv,
    )


def auto_options_all(c: Comparison) -> list[AutoOptions]:
    """The auto-options records of every run that chose optimizer options, in report order."""
    return [v for r in c.results if (v := auto_options(r)) is not None]


def auto_option_rows(v: AutoOptions) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the candidates table (option values, score, standard error and convergence of the
    fits where recorded, chosen)."""
    extra = v.errors is not None and v.converged is not None
    header = ["#", *v.names, "score", *(["standard error", "fits converged"] if extra else []), "chosen"]
    rows = []
    for i, p in enumerate(v.params):
        row = [
            str(i),
            *(f"{p[k]:g}" if _is_num(p[k]) else str(p[k]) for k in v.names),
            fmt.num(v.scores[i], 6) if v.scores[i] is not None else f"{fmt.DASH} (no finite score)",
        ]
        if v.errors is not None and v.converged is not None:
            e, c = v.errors[i], v.converged[i]
            row += [fmt.num(e, 3) if e is not None else fmt.DASH, fmt.DASH if c is None else ("yes" if c else "no")]
        rows.append([*row, "✓" if i == v.chosen else ""])
    return header, rows


def auto_options_chosen_text(v: AutoOptions) -> str:
    return _param_text(v.params[v.chosen]) if v.chosen is not None else "—"
