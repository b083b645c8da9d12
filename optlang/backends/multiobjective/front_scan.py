"""Several variables: a coarse front as a global look at a preferred point.

The polish and the merit test are local. With two or more variables a preference that is not convex
along the Pareto set (a weighted sum on a concave front, whose minima sit at the two ends; the distance
to a point) keeps the local minimum the loop fell into, and a point that is only locally Pareto passes
the merit test. `scan_front` runs the front sweep (`front.sweep`, stage 0 and refinement, no
exploration) on a small budget and returns its non-dominated points with their preference values; the
caller restarts the polish from the best of them (one per region of the front) and counts the ones
better than its answer in every objective. As in the one-variable scan, the scan proposes, a point that
dominates refutes, and only the polish and the merit test certify: a scan point just off the Pareto
set can have a lower φ than every Pareto point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RunContext
from optlang.backends.multiobjective.common import Archive, BatchEval
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem, TorchFunction

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

# stage-0 directions of the coarse constrained scan by number of objectives (more objectives: 35); the scan
# without general constraints takes the front's own (`front_points`, 40 for two objectives): with 16, the
# rays of WFG2 (a disconnected front, 24 variables) reached none of the piece that held the preferred point,
# and the answer on another piece's end was certified `converged` 1.02 above the least φ
SCAN_DIRECTIONS = {2: 16, 3: 21}
# a start is skipped when it lies within this normalized objective distance of one already taken
SEPARATION = 0.05
# the default `front_scan` (ParetoM3Options): a budget above it lets the coarse front explore (front_explore),
# as front mode does
SCAN_EXPLORES_ABOVE = 4000


class _ScanContext(RunContext):
    """The run's clock and interrupt, but its own history and no `max_iter` (the scan has a budget)."""

    def __init__(self, parent: RunContext) -> None:
        super().__init__(seed=parent.seed, device=parent.device, dtype=parent.dtype_name)
        self.parent = parent

    def should_stop(self) -> bool:
        return self.parent.should_stop()


@dataclass
class FrontScan:
    """The scan's non-dominated points: objective vectors (n, m), points, preference values (n,)."""

    F: np.ndarray
    X: dict[str, np.ndarray]
    phi: np.ndarray
    evaluations: int
    points: int  # non-dominated points found
    scale: np.ndarray | None = None  # per general-constraint column: the sweep's scale (constrained scans)

    def _normalized(self, *rows: np.ndarray) -> list[np.ndarray]:
        lo, span = self.F.min(0), np.ptp(self.F, axis=0)
        span = np.where(span > 1e-12, span, 1.0)
        return [(np.asarray(r, dtype=np.float64) - lo) / span for r in (self.F, *rows)]

    def lowest_elsewhere(self, f: np.ndarray) -> int | None:
        """The point of least φ farther than SEPARATION (normalized objectives) from the objective vector
        f: a scan point next to the answer can be lower in φ only because it is off the front by what the
        merit tolerance lets pass (δ ≈ √tol on a quadratic front), one in another region cannot."""
        Fn, fn = self._normalized(f)
        far = np.linalg.norm(Fn - fn, axis=1) > SEPARATION
        phi = np.where(far & np.isfinite(self.phi), self.phi, np.inf)
        i = int(np.argmin(phi)) if phi.size else 0
        return i if phi.size and np.isfinite(phi[i]) else None

    def apart(self, f: np.ndarray, g: np.ndarray) -> bool:
        """The objective vectors f and g lie in different regions (normalized distance > SEPARATION)."""
        _, fn, gn = self._normalized(f, g)
        return bool(np.linalg.norm(fn - gn) > SEPARATION)

    def dominating(self, f: np.ndarray, tol: float) -> int | None:
        """The point of least φ among those better than f in every objective by more than tol, if any."""
        beat = np.all(self.F < np.asarray(f, dtype=np.float64) - tol, axis=1) & np.isfinite(self.phi)
        if not beat.any():
            return None
        idx = np.flatnonzero(beat)
        return int(idx[np.argmin(self.phi[idx])])

    def pareto_dominating(self, f: np.ndarray, tol: float) -> list[int]:
        """The points no worse than f in any objective (to 1e-9, relative) and better in one by more than tol,
        by φ: f is then not Pareto optimal, though it may be weakly so (ZDT1's face f1 = 0)."""
        f = np.asarray(f, dtype=np.float64)
        beat = np.all(self.F <= f + 1e-9 * (1.0 + np.abs(f)), axis=1) & np.any(self.F < f - tol, axis=1)
        idx = np.flatnonzero(beat & np.isfinite(self.phi))
        return [int(i) for i in idx[np.argsort(self.phi[idx], kind="stable")]]

    def point(self, i: int) -> dict[str, np.ndarray]:
        return {n: np.asarray(v[i], dtype=np.float64) for n, v in self.X.items()}

    def starts(self, k: int) -> list[int]:
        """Up to k points: first the least point of each basin (no point of lower φ within SEPARATION,
        objectives normalized by the scan's range), by φ; then the points of least φ farther than
        SEPARATION from every one taken. Not only points below the answer's φ: a start just above it on
        the far side of the answer can polish to a lower point, while the lowest one, next to a bound,
        is snapped onto it (the polish fixes coordinates within 1e-3 of a bound)."""
        (Fn,) = self._normalized()
        phi = np.where(np.isfinite(self.phi), self.phi, np.inf)
        order = [int(i) for i in np.argsort(phi) if np.isfinite(phi[i])]
        near = [np.flatnonzero(np.linalg.norm(Fn - Fn[i], axis=1) < SEPARATION) for i in order]
        basins = [i for i, nb in zip(order, near, strict=True) if not np.any(phi[nb] < phi[i])]
        taken = basins[:k]
        for i in order:
            if len(taken) >= k:
                break
            if all(np.linalg.norm(Fn[i] - Fn[j]) >= SEPARATION for j in taken):
                taken.append(i)
        return taken


def scan_front(
    problem: MultiObjectiveProblem, preference: TorchFunction, options: Any, ctx: RunContext
) -> FrontScan | None:
    """The coarse front of `problem` within `options.front_scan` evaluations, with φ at each point;
    None when the budget is below what stage 0 needs or no point was kept. General constraints are
    honoured as the front honours them: only points that keep every one are archived."""
    from optlang.backends.multiobjective.front import min_front_evals, sweep

    m = len(problem.objectives)
    o = dataclasses.replace(
        options,
        front_points=SCAN_DIRECTIONS.get(m, 35) if problem.constraints else options.front_points,
        front_evals=int(options.front_scan),
        # exploration (explore.py) only on a budget raised above the default: it finds the global front of a
        # multimodal problem (ZDT4's Rastrigin g: f1 + 1.632 f2 `converged` exact at 25 000, 30 off without),
        # and at 4 000 it would take evaluations the rays need
        front_explore=options.front_explore if int(options.front_scan) > SCAN_EXPLORES_ABOVE else 0.0,
        front_solver="adam",
        # no SLSQP retests of the scan's gaps (front.py, `front_gap_retest`): a scan's budget goes to its rays,
        # and which points a preference solve polishes stays what the preference batteries measured
        front_gap_retest=0.0,
        # rays that start on their curved kinks (front.py): UF4's distance preference went from `converged`
        # exact to `feasible` 2e-2 below the least and 0.07 off the front when its scan started there
        front_kink_starts=False,
        # the ends by SLSQP and their probes (front.py): ZDT3's last piece, which no ray of the scan reached on
        # seed 4, held the answer of f1 + 2.32 f2 (a certified local one on the fourth piece was 0.53 above).
        # Off before 2026-12-05 without general constraints: then they moved which points were polished and
        # one preference of mo_prefnd (8 variables, a √ objective) went from `converged` to `iteration_limit`;
        # with them now, mo_prefnd seeds 0, 1, 4 are 30/30 each, and `cheb,l1` and `zdtabs` 20/20
        front_extremes=bool(options.front_extremes),
    )
    if o.front_evals < min_front_evals(m, o, False) and o.front_points != SCAN_DIRECTIONS.get(m, 35):
        o = dataclasses.replace(o, front_points=SCAN_DIRECTIONS.get(m, 35))  # a budget below the front's own
    if o.front_evals < min_front_evals(m, o, False):
        return None
    sub = _ScanContext(ctx)
    archive = Archive()
    ev = BatchEval(problem, sub, with_preference=False, with_constraints=bool(problem.constraints))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(ctx.seed + 7919)
        run = sweep(problem, o, sub, archive, ev)
    F, X = archive.front()
    if X is None or F.shape[0] == 0:
        return None
    pts = [{n: v[i] for n, v in X.items()} for i in range(F.shape[0])]
    phi = np.array([float(preference.value(p)) for p in pts])
    scale = ev.scale.detach().cpu().double().numpy() if ev.scale is not None else None
    return FrontScan(F=F, X=X, phi=phi, evaluations=int(run.evaluations), points=int(F.shape[0]), scale=scale)
