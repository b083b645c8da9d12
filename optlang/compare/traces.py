"""Model-quantity traces of one run: the incumbent objective and the valid bound over time.

A backend's history holds what the backend reported while it ran, which is not always the model's
objective (an SDP relaxation value before rounding, a baseline's own training loss). The rule used by
reports and profiles: a run's history is read as its incumbent objective only when the backend's last
report equals the objective Result recomputed from the model (the backend reports the model's
quantity); it is then taken as a running best, and every report beyond the final recomputed objective
is left out (an incumbent cannot be better than where it ends: such values are relaxations or
surrogates). Otherwise only the recomputed final value is used. A bound is used only when valid (its
check passed and no run's recomputed objective beats it), as a running tightest bound.
"""

from __future__ import annotations

import math

from optlang.compare.stats import usable_objective
from optlang.result import Result

# A backend's last report "equals" the recomputed objective within this relative tolerance (float32 backends).
SAME_QUANTITY_RTOL = 1e-4

Points = list[tuple[float, float]]


def end_time(r: Result) -> float | None:
    t = r.timing.get("solve", r.timing.get("total"))
    return None if t is None or not math.isfinite(t) else float(t)


def _tol(v: float) -> float:
    return SAME_QUANTITY_RTOL * max(1.0, abs(v))


def _finite_rows(r: Result, column: int) -> Points:
    return [
        (float(row[0]), float(v))
        for row in r.history
        if (v := row[column]) is not None and math.isfinite(float(v)) and math.isfinite(float(row[0]))
    ]


def reports_model_objective(r: Result) -> bool:
    """Does the backend's history report the model's objective? (its last report equals the recomputed one)"""
    rows = _finite_rows(r, 1)
    objective = usable_objective(r)
    return objective is not None and bool(rows) and abs(rows[-1][1] - float(objective)) <= _tol(float(objective))


def objective_trace(r: Result, sense: str) -> tuple[Points, Points]:
    """(incumbent points, left-out own reports) of one run; the incumbent ends at the recomputed objective."""
    rows = _finite_rows(r, 1)
    objective = usable_objective(r)
    if objective is None:
        return [], rows
    final = float(objective)
    sign = 1.0 if sense == "maximize" else -1.0
    kept: Points = []
    own: Points = []
    if reports_model_objective(r):
        best = None
        for t, v in rows:
            if sign * (v - final) > _tol(final):  # beyond where the incumbent ends: not an incumbent value
                own.append((t, v))
                continue
            best = v if best is None or sign * (v - best) > 0 else best
            kept.append((t, best))
    else:
        own = rows
    t_end = end_time(r)
    t_last = kept[-1][0] if kept else (t_end if t_end is not None else 0.0)
    if t_end is not None and t_end > t_last:
        t_last = t_end
    if not kept or kept[-1][1] != final or kept[-1][0] < t_last:
        kept.append((t_last, final))
    return kept, own


def bound_valid(r: Result, best_objective: float | None, sense: str) -> bool:
    """A run's bound is plotted when its own bound check passed and no run's objective beats it."""
    if any((not c.passed) and "bound" in c.name.lower() for c in r.checks):
        return False
    if r.bound is None or best_objective is None:
        return r.bound is not None
    sign = 1.0 if sense == "maximize" else -1.0
    return sign * (best_objective - r.bound) <= 1e-6 + 1e-6 * max(1.0, abs(r.bound))


def bound_trace(r: Result, sense: str, best_objective: float | None) -> Points:
    """Running tightest valid bound of one run (dashed); empty when the run claims no valid bound."""
    if r.bound is None or not math.isfinite(r.bound) or not bound_valid(r, best_objective, sense):
        return []
    sign = 1.0 if sense == "maximize" else -1.0
    pts: Points = []
    tight = None
    for t, v in _finite_rows(r, 2):
        if best_objective is not None and sign * (best_objective - v) > 1e-6 + 1e-6 * max(1.0, abs(v)):
            continue  # an intermediate value the best objective beats is no bound
        tight = v if tight is None or sign * (v - tight) < 0 else tight
        pts.append((t, tight))
    t_end = end_time(r)
    final = float(r.bound)
    if not pts:
        pts = [(t_end or 0.0, final)]
    elif t_end is not None and t_end > pts[-1][0]:
        pts.append((t_end, pts[-1][1]))
    return pts
