"""One scalar variable: the preferred point refined by a zooming grid and certified by one-sided samples.

With a single scalar decision x, the preferred point often lies where the polish's Pareto-critical
system has no smooth solution: at a kink of |x − a| that ends the Pareto set, or at a degenerate end
such as the minimum of (x − a)⁴. There the loop's Adam steps straddle the answer until the budget ends
(`iteration_limit` after 800 iterations and eleven failed polishes, 13–24 s on a one-line model). In
one dimension both the search and the test are cheap and need no derivative:

- **Zoom.** F and φ on 201 grid points of a window around the start (±2 % of the domain's width),
  the window's non-dominated points, the one of least φ; then a window of two grid cells around it,
  six levels in all (resolution ~1e-12 of the width), in float64 and batched. While the first
  window's best is its own edge (every point of it dominated by the one nearest the Pareto set), the
  window first walks that way.
- **Test.** At the zoomed point x*, no sampled step may dominate x* (else x* is not Pareto), and for
  each direction d = ±1 that stays in the domain and each step t = w·10⁻³ … w·10⁻⁶ (w the width),
  either φ(x* + t d) exceeds φ(x*) by more than rounding, or x* strictly dominates x* + t d (every
  objective larger by more than rounding: that point is not even weakly Pareto). Passing means no
  sampled step along the Pareto set lowers φ: x* is within about
  w·10⁻⁶/2 of a local minimizer of φ over the weakly Pareto points, as sampled (not a proof — a
  function can turn between samples; the status it earns is `converged`, never `optimal`).

ParetoM³ runs this only when the polish fails to certify, on models with one scalar variable; the
caller still applies the merit test (x* weakly Pareto) before it claims anything.

- **Scan.** Both the polish and the zoom are local: a preference that is not convex along the Pareto
  set (the distance to a point, whose two local minima can sit at the two ends of the set) keeps the
  local minimum the loop fell into, and the merit test (an ascent from the point) is local too: a
  point that is Pareto only locally (another valley of a sin term lower in every objective) passes
  it. In a finite box the whole domain is cheap to sample, so `scan_scalar` evaluates `scalar_scan`
  evenly spaced points and returns the one of least φ among their non-dominated ones. When it beats
  the certified point by more than rounding, or when any sample is better than that point in every
  objective by more than the merit tolerance (the point is then not even weakly Pareto), the zoom and
  the test run from the scan's point, and its point replaces the answer if it passes them and the
  merit test (with a lower φ, unless the answer was dominated). The scan proposes, and only a sample
  that dominates refutes; the zoom, the test and the merit test certify (a grid point just outside
  the Pareto set can be non-dominated among the grid's and have lower φ).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.common import scalar_count
from optlang.backends.multiobjective.metrics import nondominated_mask
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

GRID = 201  # points per zoom window
LEVELS = 6  # zoom levels
MOVES = 25  # the first window walks at most this many times (by its half-width) towards its best edge
FIRST_WINDOW = 0.02  # half-width of the first window, as a fraction of the domain's width
STEPS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)  # the test's steps, as fractions of the width
ROUNDING = 1e-13  # a difference counts only beyond this relative size (float64 evaluation)
SCAN_CHUNK = 2048  # points per evaluated batch of the scan (bounds the memory of sample-axis objectives)


@dataclass
class ScalarCertificate:
    """The zoomed point, whether it passed the one-sided test, and what the test saw."""

    values: dict[str, np.ndarray]
    passed: bool
    evaluations: int
    detail: str


def scalar_applies(problem: MultiObjectiveProblem) -> bool:
    """True for a preference model whose decision is one scalar in a box (either side may be infinite)
    or free, with no general constraints."""
    if problem.preference is None or problem.constraints or scalar_count(problem.variables) != 1:
        return False
    return problem.variables[0].domain.kind in ("box", "free")


class _Eval:
    """F (n, m) and φ (n,) at n values of the one scalar, in float64 on the CPU; counts evaluations."""

    def __init__(self, problem: MultiObjectiveProblem) -> None:
        from optlang.backends.base import RunContext
        from optlang.backends.multiobjective.common import BatchEval

        self.var = problem.variables[0]
        self.m = len(problem.objectives)
        self.ev = BatchEval(problem, RunContext(dtype="float64"), with_preference=True)

    def __call__(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = torch.as_tensor(np.asarray(xs, dtype=np.float64)).reshape((-1, *self.var.shape))
        with torch.no_grad():
            out = self.ev({self.var.name: t}).cpu().numpy().astype(np.float64)
        return out[:, : self.m], out[:, self.m]

    @property
    def count(self) -> int:
        return int(self.ev.count)


def certify_scalar(problem: MultiObjectiveProblem, start: float) -> ScalarCertificate | None:
    """Zoom from `start` to the window-wise best non-dominated point and test it (module docstring);
    None when no evaluated point of the first window is finite."""
    var = problem.variables[0]
    lo, hi = (var.domain.lo, var.domain.hi) if var.domain.kind == "box" else (-np.inf, np.inf)
    x0 = float(np.clip(start, lo, hi))
    width = float(hi - lo) if np.isfinite(hi - lo) else 2.0 * max(1.0, abs(x0))
    ev = _Eval(problem)
    best, half = x0, FIRST_WINDOW * width
    level = moves = 0
    while level < LEVELS:
        xs = np.unique(np.r_[np.linspace(max(lo, best - half), min(hi, best + half), GRID), best])
        F, phi = ev(xs)
        ok = np.all(np.isfinite(F), axis=1) & np.isfinite(phi)
        if not ok.any():
            return None
        idx = np.flatnonzero(ok)
        nd = idx[nondominated_mask(F[idx])]
        i = int(nd[np.argmin(phi[nd])])
        best = float(xs[i])
        # the first window's best at its edge (not the domain's): the answer may lie beyond, e.g. every
        # point of the window dominated by the one nearest the Pareto set; the window walks that way
        at_edge = (i == 0 and xs[0] > lo) or (i == xs.size - 1 and xs[-1] < hi)
        if level == 0 and at_edge and moves < MOVES:
            moves += 1
            continue
        level += 1
        half = 2.0 * (xs[-1] - xs[0]) / (GRID - 1)
    passed, detail = _one_sided(ev, best, lo, hi, width)
    values = {var.name: np.asarray(best, dtype=np.float64).reshape(var.shape)}
    return ScalarCertificate(values, passed, ev.count, detail)


def _one_sided(ev: Any, x: float, lo: float, hi: float, width: float) -> tuple[bool, str]:
    """The sampled one-sided test at x (module docstring): (passed, what it found)."""
    steps = width * np.asarray(STEPS)
    cand = np.r_[x + steps, x - steps]
    side = np.r_[np.ones(len(STEPS)), -np.ones(len(STEPS))]
    inside = (cand >= lo) & (cand <= hi) & (cand != x)  # steps that leave the domain are not taken
    pts, side = cand[inside], side[inside]
    F, phi = ev(np.r_[x, pts])
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(phi))):
        return False, "the point or a sample near it is not finite"
    F0, p0 = F[0], phi[0]
    rises = dominated = 0
    for r in range(pts.size):
        noise = ROUNDING * (np.abs(F0) + np.abs(F[1 + r]))
        if np.all(F[1 + r] <= F0 + noise) and np.any(F[1 + r] < F0 - noise):
            where = "right" if side[r] > 0 else "left"
            return False, f"a step of {abs(pts[r] - x):.2g} to the {where} dominates the point: it is not Pareto"
        if phi[1 + r] - p0 > ROUNDING * (1.0 + abs(p0) + abs(phi[1 + r])):
            rises += 1
        elif np.all(F[1 + r] - F0 > noise):
            dominated += 1
        else:
            where = "right" if side[r] > 0 else "left"
            return False, (
                f"a step of {abs(pts[r] - x):.2g} to the {where} keeps φ within rounding or lowers it "
                "and is not dominated by the point"
            )
    return True, (
        f"one-sided test: {rises} sampled steps raise φ, {dominated} are strictly dominated by the point "
        f"(steps {STEPS[-1]:g}–{STEPS[0]:g} of the width {width:.3g}, each side inside the domain)"
    )


@dataclass
class Scan:
    """The whole-box scan: the sample of least φ among the non-dominated ones (x, φ), every sample's
    objectives (F, rows of finite samples only) and the evaluations spent."""

    x: float
    phi: float
    F: np.ndarray
    evaluations: int

    def dominating(self, f: np.ndarray, tol: float) -> int:
        """How many samples are better than the objectives `f` in every objective by more than `tol`: any
        one proves that a point with objectives f is not even weakly Pareto."""
        return int(np.all(self.F < np.asarray(f, dtype=np.float64) - tol, axis=1).sum())


def scan_scalar(problem: MultiObjectiveProblem, points: int) -> Scan | None:
    """Sample `points` evenly spaced values of the one scalar across its finite box (module docstring,
    "Scan"); None for an unbounded domain or when no sampled point is finite."""
    var = problem.variables[0]
    if var.domain.kind != "box" or not (np.isfinite(var.domain.lo) and np.isfinite(var.domain.hi)) or points < 2:
        return None
    xs = np.linspace(float(var.domain.lo), float(var.domain.hi), points)
    ev = _Eval(problem)
    parts = [ev(xs[i : i + SCAN_CHUNK]) for i in range(0, xs.size, SCAN_CHUNK)]
    F = np.concatenate([f for f, _ in parts])
    phi = np.concatenate([p for _, p in parts])
    idx = np.flatnonzero(np.all(np.isfinite(F), axis=1) & np.isfinite(phi))
    if idx.size == 0:
        return None
    nd = idx[nondominated_mask(F[idx])]
    i = int(nd[np.argmin(phi[nd])])
    return Scan(float(xs[i]), float(phi[i]), F[idx], ev.count)
