"""General constraints with a preference: the preferred point of a constrained Pareto set.

The M³ loop's merit u(x) = max over y dominating x needs a domain that x and y can both be projected
on; general constraints g(x) ≤ 0, h(x) = 0 have no projection. With them the preferred point is found
the way the unconstrained path finds it globally — a coarse front proposes, a polish and a Pareto test
certify:

1. **The coarse constrained front**: the front sweep with the constraints (`front_scan` evaluations;
   only points that keep every constraint within `constraint_tol` are archived) and φ at its points.
2. **The constrained polish** from the least point of each basin of φ: SLSQP in float64 on the
   Pareto-critical KKT system with an active set A (equalities, and the inequalities that hold with
   equality), in (x_free, λ, μ_A):

       min φ(x)  s.t.  ∇_free(Σ λ_i f_i + Σ_{a∈A} μ_a c_a)(x) = 0,  c_A(x) = 0,  c_I(x) ≤ 0,
                       Σ λ = 1,  λ ≥ 0,  μ_a ≥ 0 (inequalities),  lo ≤ x_free ≤ hi,

   coordinates on a box bound that the weighted gradient pushes against fixed there. A simplex
   variable adds its Σ x = 1 and a ball its ‖x‖² ≤ r² as constraints. An inequality that the solution
   reaches joins A; one whose multiplier vanishes while φ falls into its interior leaves; then SLSQP
   runs again (at most `ROUNDS` rounds).
3. **The certificate**: the KKT residual and the tangential stationarity of φ below `stat_tol` — the
   stationarity on every branch of a degenerate active inequality (μ_a = 0 with c_a = 0: the point may
   stay on it or leave it, and φ may fall along neither); the constraints hold in float64; a local
   Pareto test finds no feasible y that is no worse in every objective and better in the sum
   Σ_i (f_i(x) − f_i(y)) / (1 + |f_i(x)|) by more than `GAIN_TOL` (SLSQP from x and two nearby points:
   Benson's test, which also refuses a weakly Pareto face); and no scan point is better in every
   objective. Then `converged` — a local claim, never `optimal`. A refuted point restarts the polish
   from the point that beat it.

The float64 flat model (`Flat64`) and Benson's problem live in pareto_local.py (the neighbours test
uses them too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RawSolution, RunContext
from optlang.backends.multiobjective.end_test import end_applies
from optlang.backends.multiobjective.pareto_local import GAIN_TOL, Flat64, benson, pareto_test
from optlang.backends.multiobjective.polish import run_slsqp, scipy_bounds, tangential_projection
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem, TorchFunction
from optlang.result import Status

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

ROUNDS = 4  # active-set rounds of the constrained polish
NEAR = 1e-6  # a constraint (scaled) or a box bound (fraction of the width) this close counts as active at a start
BRANCH_TOL = 1e-8  # a branch exists where the multipliers with one row at zero leave at most this residual
PROBE_STEPS = (1e-3, 1e-4, 1e-5)  # a branch's probe: steps as fractions of the width
REFUTED_RESTARTS = 2  # polishes restarted from a point that refuted a candidate
SLSQP_STARTS = 4  # seeded starts of the SLSQP stand-in when the coarse front keeps no feasible point


@dataclass
class ConstrainedPolish:
    """A polished point: its flat vector, multipliers, active rows, residual and stationarity."""

    z: np.ndarray
    lam: np.ndarray
    active: list[int]
    mu: np.ndarray
    residual: float
    stationarity: float
    iterations: int


def _multipliers(
    JF: np.ndarray, JC: np.ndarray, active: list[int], eq: np.ndarray, at_lo: np.ndarray, at_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """(λ, μ_A, residual) of least ‖Σλ∇f + Σμ∇c − κ_lo + κ_hi‖ with λ ∈ Δ, μ ≥ 0 on inequalities and κ ≥ 0
    on the coordinates on a bound (bounded least squares, Σλ = 1 as a heavy row); the residual is the
    stationarity rows' 1-norm relative to 1 + max|∂f|."""
    from scipy.optimize import lsq_linear

    m, n = JF.shape
    E = np.eye(n)
    A = np.concatenate([JF.T, JC[active].T, -E[:, at_lo], E[:, at_hi]], 1)
    scale = 1.0 + float(np.abs(JF).max(initial=0.0))
    w = 1e3 * scale
    k = A.shape[1]
    row = np.zeros(k)
    row[:m] = w
    Aw = np.concatenate([A, row[None]], 0)
    b = np.zeros(n + 1)
    b[-1] = w
    lb = np.concatenate([np.zeros(m), np.where(eq[active], -np.inf, 0.0), np.zeros(k - m - len(active))])
    sol = lsq_linear(Aw, b, bounds=(lb, np.full(k, np.inf)), tol=1e-12)
    residual = (float(np.abs(A @ sol.x).sum()) + abs(float(sol.x[:m].sum()) - 1.0) * scale) / scale
    lam = np.clip(sol.x[:m], 0.0, None)
    lam = lam / lam.sum() if lam.sum() > 0 else np.full(m, 1.0 / m)
    return lam, sol.x[m : m + len(active)], residual


def _system_jacobian(H: np.ndarray, JFf: np.ndarray, JCf: np.ndarray) -> np.ndarray:
    """Jacobian of [∇_free(Σλf + Σμc), c_A, Σλ − 1] in (x_free, λ, μ_A)."""
    nf, m, na = H.shape[0], JFf.shape[0], JCf.shape[0]
    top = np.concatenate([H, JFf.T, JCf.T], 1)
    mid = np.concatenate([JCf, np.zeros((na, m + na))], 1)
    bottom = np.concatenate([np.zeros(nf), np.ones(m), np.zeros(na)])[None]
    return np.concatenate([top, mid, bottom], 0)


@dataclass
class _Point:
    """A point of the Pareto-critical system with its first-order data: J_F, J_c, ∇φ."""

    z: np.ndarray
    JF: np.ndarray
    JC: np.ndarray
    gphi: np.ndarray


def _branch_stationarity(
    model: Flat64,
    p: _Point,
    cols: np.ndarray,
    rows: list[int],
    lam: np.ndarray,
    mu: np.ndarray,
    released_row: int | None = None,
) -> tuple[float, np.ndarray]:
    """The tangential stationarity of φ on one branch of the Pareto-critical set and its descent direction
    in x (−P∇φ, zero outside `cols`): the coordinates `cols` free (the others fixed on their bounds), the
    rows `rows` held with equality; `released_row` may fall below 0 (a slack s ≥ 0: ∇c·dx + ds = 0). The
    Hessian is taken at the branch's multipliers."""
    fl, m = model.fl, model.m
    wC = np.zeros(model.c)
    wC[rows] = mu
    H = model.hessian(p.z, lam, wC, cols)
    A = _system_jacobian(H, p.JF[:, cols], p.JC[rows][:, cols])
    g = np.concatenate([p.gphi[cols], np.zeros(m + len(rows))])
    mu_low = np.array([(not model.eq[j]) and mu[a] <= 1e-12 for a, j in enumerate(rows)], dtype=bool)
    low = np.concatenate([p.z[cols] <= fl.lo[cols] + 1e-12, lam <= 1e-12, mu_low])
    high = np.concatenate([p.z[cols] >= fl.hi[cols] - 1e-12, np.zeros(m + len(rows), bool)])
    if released_row is not None:
        extra = np.concatenate([p.JC[released_row][cols], np.zeros(m + len(rows)), [1.0]])
        A = np.concatenate([np.concatenate([A, np.zeros((A.shape[0], 1))], 1), extra[None]], 0)
        g, low, high = np.append(g, 0.0), np.append(low, True), np.append(high, False)
    measure, Pg = tangential_projection(g, A, low, high)
    d = np.zeros(model.n)
    d[cols] = -Pg[: cols.size]
    return measure, d


def _branches(
    model: Flat64,
    p: _Point,
    at_lo: np.ndarray,
    at_hi: np.ndarray,
    active: list[int],
    lam: np.ndarray,
    mu: np.ndarray,
) -> dict[tuple[str, int] | None, tuple[float, np.ndarray]]:
    """The stationarity on the polish's own branch (key None) and on every branch that leaves one active
    inequality or one fixed bound (keys ("row", j) / ("coord", k)) where multipliers with that one at zero
    exist: at a kink of the Pareto set (two constraints meeting, CONSTR's x = 2/3) the set goes on along
    each, and φ must not fall along any (on the Pareto set: `_probe` tells a weakly Pareto face apart).
    Values: (stationarity, descent direction in x)."""
    free = np.flatnonzero(~(at_lo | at_hi))
    out: dict[tuple[str, int] | None, tuple[float, np.ndarray]] = {
        None: _branch_stationarity(model, p, free, active, lam, mu)
    }
    for j in active:
        if model.eq[j]:
            continue
        rows = [r for r in active if r != j]
        lam_b, mu_b, residual = _multipliers(p.JF, p.JC, rows, model.eq, at_lo, at_hi)
        if residual <= BRANCH_TOL:
            out[("row", j)] = _branch_stationarity(model, p, free, rows, lam_b, mu_b, released_row=j)
    for k in np.flatnonzero(at_lo | at_hi):
        lo_b, hi_b = at_lo.copy(), at_hi.copy()
        lo_b[k] = hi_b[k] = False
        lam_b, mu_b, residual = _multipliers(p.JF, p.JC, active, model.eq, lo_b, hi_b)
        if residual <= BRANCH_TOL:
            cols = np.flatnonzero(~(lo_b | hi_b))
            out[("coord", int(k))] = _branch_stationarity(model, p, cols, active, lam_b, mu_b)
    return out


def _slsqp_round(
    model: Flat64,
    z0: np.ndarray,
    free: np.ndarray,
    active: list[int],
    v0: np.ndarray,
    maxiter: int,
    stop: Callable[[], bool] | None,
) -> tuple[np.ndarray, int] | None:
    """One SLSQP solve of the Pareto-critical system with the active rows `active` held as equalities and
    the other rows as inequalities, the coordinates outside `free` fixed at z0: (v, iterations)."""

    fl, m = model.fl, model.m
    nf, na = free.size, len(active)
    inactive = [j for j in range(model.c) if j not in active]
    cache: dict[bytes, tuple[np.ndarray, ...]] = {}

    def full(v: np.ndarray) -> np.ndarray:
        z = z0.copy()
        z[free] = v[:nf]
        return z

    def parts(v: np.ndarray) -> tuple[np.ndarray, ...]:
        key = v.tobytes()
        if key not in cache:
            cache.clear()
            z = full(v)
            _, JF, C, JC = model.jacobians(z)
            wC = np.zeros(model.c)
            wC[active] = v[nf + m :]
            cache[key] = (JF, C, JC, model.hessian(z, v[nf : nf + m], wC, free))
        return cache[key]

    def eq_fun(v: np.ndarray) -> np.ndarray:
        JF, C, JC, _ = parts(v)
        lam, mu = v[nf : nf + m], v[nf + m :]
        return np.concatenate([(JF.T @ lam + JC[active].T @ mu)[free], C[active], [lam.sum() - 1.0]])

    def eq_jac(v: np.ndarray) -> np.ndarray:
        JF, _, JC, H = parts(v)
        return _system_jacobian(H, JF[:, free], JC[active][:, free])

    def in_fun(v: np.ndarray) -> np.ndarray:
        return -parts(v)[1][inactive]

    def in_jac(v: np.ndarray) -> np.ndarray:
        return np.concatenate([-parts(v)[2][inactive][:, free], np.zeros((len(inactive), m + na))], 1)

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        p, g = model.phi(full(v))
        return p, np.concatenate([g[free], np.zeros(m + na)])

    bounds = scipy_bounds(fl.lo[free], fl.hi[free])
    bounds += [(0.0, 1.0)] * m + [(None, None) if model.eq[j] else (0.0, None) for j in active]
    cons: list[dict[str, Any]] = [{"type": "eq", "fun": eq_fun, "jac": eq_jac}]
    if inactive:
        cons.append({"type": "ineq", "fun": in_fun, "jac": in_jac})
    solved = run_slsqp(fun, v0, bounds, cons, maxiter, 1e-14, stop)
    if solved is None:
        return None
    v, nit = solved
    v[:nf] = np.clip(v[:nf], fl.lo[free], fl.hi[free])
    return v, nit


def _probe(model: Flat64, z: np.ndarray, d: np.ndarray, gphi: np.ndarray) -> tuple[str, np.ndarray | None]:
    """Does φ fall along the Pareto set in the direction d (a branch's −P∇φ)? Steps of 1e-3, 1e-4, 1e-5 of
    the width along d, each taken onto the Pareto set by `benson`: ("descent", p) when some p lowers φ
    by at least a tenth of the first-order prediction; ("flat", None) when the steps came back without
    (the branch leaves the Pareto set: a weakly Pareto face, where Benson's y returns to z); ("unknown",
    None) when no step could be taken onto the Pareto set."""
    width = model.width(z)
    reach = float(np.max(np.abs(d) / width))
    slope = -float(gphi @ d)
    if reach <= 0.0 or slope <= 0.0:
        return "flat", None
    phi0 = model.phi_value(z)
    seen = False
    for frac in PROBE_STEPS:
        t = frac / reach
        y0 = np.clip(z + t * d, model.fl.lo, model.fl.hi)
        found = benson(model, y0, y0)
        if found is None:
            continue
        seen = True
        p = found[0]
        if phi0 - model.phi_value(p) > 0.1 * t * slope:
            return "descent", p
    return ("flat" if seen else "unknown"), None


def constrained_polish(
    model: Flat64, z_start: np.ndarray, stat_tol: float, maxiter: int = 100, stop: Callable[[], bool] | None = None
) -> ConstrainedPolish | None:
    """SLSQP on the constrained Pareto-critical system from `z_start` (first taken onto the Pareto set by
    `benson`), with an active-set loop: a row the solution reaches joins; where φ falls along another
    branch of the Pareto-critical set (one active inequality or fixed bound left) and a probe confirms it
    on the Pareto set, the next round starts from the probe's point. The stationarity reported is the
    held branch's, and an unconfirmed branch's where the probe could not tell. None when SLSQP fails at
    once."""
    fl, m = model.fl, model.m
    z0 = np.clip(np.asarray(z_start, dtype=np.float64), fl.lo, fl.hi)
    if not np.all(np.isfinite(z0)):
        return None
    onto = benson(model, z0, z0)  # onto the Pareto set first: its active rows and bounds are then exact
    if onto is not None:
        z0 = onto[0]
    iterations = 0
    result: ConstrainedPolish | None = None
    for _ in range(ROUNDS):
        _, JF, C0, JC = model.jacobians(z0)
        if not (np.all(np.isfinite(JF)) and np.all(np.isfinite(JC)) and np.all(np.isfinite(C0))):
            return result
        width = model.width(z0)
        near_lo = z0 - fl.lo <= NEAR * width
        near_hi = (fl.hi - z0 <= NEAR * width) & ~near_lo
        active = [j for j in range(model.c) if model.eq[j] or C0[j] >= -NEAR]
        lam0, mu0, _ = _multipliers(JF, JC, active, model.eq, near_lo, near_hi)
        g0 = JF.T @ lam0 + JC[active].T @ mu0
        push = 1e-8 * (1.0 + float(np.abs(JF).max(initial=0.0)))
        at_lo, at_hi = near_lo & (g0 > push), near_hi & (g0 < -push)
        z0 = np.where(at_lo, fl.lo, np.where(at_hi, fl.hi, z0))
        free = np.flatnonzero(~(at_lo | at_hi))
        step = _slsqp_round(model, z0, free, active, np.concatenate([z0[free], lam0, mu0]), maxiter, stop)
        if step is None:
            return result
        v, nit = step
        iterations += nit
        z = z0.copy()
        z[free] = v[: free.size]
        lam, mu = v[free.size : free.size + m], v[free.size + m :]
        _, JFz, Cz, JCz = model.jacobians(z)
        _, gphi = model.phi(z)
        if not (np.all(np.isfinite(JFz)) and np.all(np.isfinite(JCz)) and np.all(np.isfinite(gphi))):
            return result
        stat_rows = (JFz.T @ lam + JCz[active].T @ mu)[free]
        residual = (float(np.abs(stat_rows).sum()) + float(np.abs(Cz[active]).sum()) + abs(float(lam.sum()) - 1.0)) / (
            1.0 + float(np.abs(JFz).max(initial=0.0))
        )
        branches = _branches(model, _Point(z, JFz, JCz, gphi), at_lo, at_hi, active, lam, mu)
        stationarity = branches[None][0]
        restart: np.ndarray | None = None
        for key, (measure, d) in branches.items():
            if key is None or measure <= stat_tol:
                continue
            verdict, p = _probe(model, z, d, gphi)
            if verdict == "descent":
                restart = p
                break
            if verdict == "unknown":
                stationarity = max(stationarity, measure)
        result = ConstrainedPolish(z, lam.copy(), list(active), mu.copy(), residual, stationarity, iterations)
        if restart is not None:
            result.stationarity = max(stationarity, 1.0)  # φ falls along the Pareto set from here
            z0 = restart
            continue
        if any(Cz[j] >= -1e-9 for j in range(model.c) if j not in active):  # a row reached: it joins
            z0 = z
            continue
        break
    return result


@dataclass
class _Candidate:
    """A polished (or scanned) point and what its certificate found."""

    z: np.ndarray
    F: np.ndarray
    phi: float
    feasible: bool
    stationary: bool
    pareto: bool
    dominated: bool
    how: str
    polish: ConstrainedPolish | None = None
    gain: float = 0.0
    refuter: np.ndarray | None = None  # a feasible point better than this one (the Pareto test's y, or a scan point)
    end: str | None = None  # the end test's certificate (a kink or degenerate minimum at an end of the Pareto set)

    @property
    def certified(self) -> bool:
        return self.feasible and (self.stationary or self.end is not None) and self.pareto and not self.dominated

    @property
    def admissible(self) -> bool:
        """Feasible and not refuted: a point that may be returned without a claim."""
        return self.feasible and self.pareto and not self.dominated


def _judge(
    model: Flat64, scan: Any, z: np.ndarray, o: Any, seed: int, how: str, r: ConstrainedPolish | None
) -> _Candidate:
    """The certificate's parts at z: feasibility in float64, stationarity (from the polish), Benson's
    test, and domination by a scan point (better in every objective by more than the merit tolerance)."""
    F, C = model.values(z)
    phi = model.phi_value(z)
    feasible = bool(np.all(np.isfinite(F)) and np.isfinite(phi) and model.violation(C) <= o.constraint_tol)
    stationary = r is not None and r.residual <= o.stat_tol and r.stationarity <= o.stat_tol
    pareto, gain, y = pareto_test(model, z, seed) if feasible else (False, 0.0, None)
    k = scan.dominating(F, o.merit_tol * (1.0 + float(np.abs(F).max()))) if np.all(np.isfinite(F)) else None
    refuter = y if y is not None else (model.fl.flat(scan.point(k)) if k is not None else None)
    return _Candidate(z, F, phi, feasible, stationary, pareto, k is not None, how, r, gain, refuter)


def _end_tests(
    problem: MultiObjectiveProblem, model: Flat64, scan: Any, cands: list[_Candidate], o: Any, ctx: RunContext
) -> None:
    """The end test (end_test.py) and the neighbours test (neighbours.py) under the constraints. A
    certified polish whose weights sit on one objective is end-tested too (a degenerate minimum there
    makes the polish's certificate spurious): failing, it loses its claim. Without a certified point, the
    admissible points of least φ are tested in turn (at most two): the end test (`end_test`), then the
    neighbours test (`neighbour_test`); one that passes joins the candidates, certified."""
    from optlang.backends.multiobjective.end_test import certify_end
    from optlang.backends.multiobjective.neighbours import certify_neighbours

    def test(c: _Candidate, certify: Any = certify_end) -> Any:
        return certify(
            problem, model.split(c.z), ctx.seed, feasible=model.feasible_rows, constraints=model.slsqp_constraints()
        )

    if o.end_test:
        for c in cands:
            at_end = c.polish is not None and float(np.max(c.polish.lam)) >= 1.0 - 1e-6
            if c.certified and at_end and not ctx.should_stop():
                cert = test(c)
                if cert is not None and not cert.passed:
                    c.stationary = False
    # the points a sampled test may certify: admissible, not certified, and lower in φ than every certified
    # one (a certified local end must not shadow a lower kink: ZDT-like, |f2 − 0.79| in φ)
    floor = min((c.phi for c in cands if c.certified), default=np.inf)
    lower = [c for c in cands if c.admissible and not c.certified and c.phi < floor - _rounding(floor)]
    if not lower:
        return
    tests = (
        [(certify_end, "the end test (an end of the Pareto set: a kink or degenerate minimum)")] if o.end_test else []
    )
    if o.neighbour_test:
        tests.append((certify_neighbours, "the neighbours test (inside the Pareto set: a kink of φ or an objective)"))
    for c in sorted(lower, key=lambda c: c.phi)[:2]:
        for certify, what in tests:
            if ctx.should_stop():
                return
            cert = test(c, certify)
            if cert is not None and cert.passed:
                found = _judge(model, scan, model.fl.flat(cert.values), o, ctx.seed, "certified by " + what, None)
                found.end = cert.detail
                cands.append(found)
                return


def _rounding(phi: float) -> float:
    """φ differences below this are rounding (relative 1e-12)."""
    return 1e-12 * (1.0 + abs(phi)) if np.isfinite(phi) else 0.0


def _active_texts(model: Flat64, r: ConstrainedPolish) -> list[str]:
    """The active rows of a polish, named by the constraint's source text (domain rows by their kind)."""
    out: list[str] = []
    for j in r.active:
        k = int(model.owner[j])
        text = model.texts[k] if k >= 0 else ("a simplex's sum" if model.eq[j] else "a ball's radius")
        if text not in out:
            out.append(text)
    return out


def _slsqp_scan(model: Flat64, seed: int, tol: float) -> Any:
    """A stand-in for the coarse front: SLSQP minimizes each objective and their mean (objectives scaled
    by 1 + |f| at the start) under the constraints from `SLSQP_STARTS` seeded points of the box; the
    feasible, mutually non-dominated ends, with φ. None when no end keeps the constraints."""
    from optlang.backends.multiobjective.front_scan import FrontScan
    from optlang.backends.multiobjective.metrics import nondominated_mask

    fl, m = model.fl, model.m
    rng = np.random.default_rng([seed, 7717])
    finite = np.isfinite(fl.lo) & np.isfinite(fl.hi)
    lo, hi = np.where(finite, fl.lo, -1.0), np.where(finite, fl.hi, 1.0)
    weights = [np.eye(m)[i] for i in range(m)] + [np.full(m, 1.0 / m)]
    bounds, cons = scipy_bounds(fl.lo, fl.hi), model.slsqp_constraints()
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(SLSQP_STARTS):
        z0 = np.clip(rng.uniform(lo, hi), fl.lo, fl.hi)
        F0, _ = model.values(z0)
        sig = 1.0 + np.abs(np.where(np.isfinite(F0), F0, 0.0))
        for w in weights:

            def fun(y: np.ndarray, w: np.ndarray = w, sig: np.ndarray = sig) -> tuple[float, np.ndarray]:
                F, JF, _, _ = model.jacobians(y)
                return float((w * F / sig).sum()), (w / sig) @ JF

            solved = run_slsqp(fun, z0, bounds, cons, 100, 1e-12)
            if solved is None:
                continue
            y = np.clip(solved[0], fl.lo, fl.hi)
            F, C = model.values(y)
            if np.all(np.isfinite(F)) and model.violation(C) <= tol:
                found.append((y, F))
    if not found:
        return None
    Z = np.stack([y for y, _ in found])
    F = np.stack([F for _, F in found])
    keep = nondominated_mask(F)
    Z, F = Z[keep], F[keep]
    points = [model.split(z) for z in Z]
    X = {name: np.stack([p[name] for p in points]) for name in points[0]}
    phi = np.array([model.phi_value(z) for z in Z])
    return FrontScan(F=F, X=X, phi=phi, evaluations=0, points=int(F.shape[0]))


def solve_constrained(
    problem: MultiObjectiveProblem, preference: TorchFunction, o: Any, ctx: RunContext
) -> RawSolution:
    """The preferred point of a model with general constraints (see the module's docstring)."""
    from optlang.backends.multiobjective.front_scan import scan_front

    names = [n for n, _ in problem.objectives]
    scan = scan_front(problem, preference, o, ctx)
    model = Flat64(problem, preference, None if scan is None else scan.scale)
    if scan is None and model.n <= o.polish_max_dim:
        # the sweep kept no feasible point (two equalities leave a curve its penalty steps rarely land
        # on): SLSQP under the constraints, from seeded starts, gives the polish its starts instead
        scan = _slsqp_scan(model, ctx.seed, o.constraint_tol)
        source = "SLSQP from seeded starts (the coarse front kept no feasible point)"
        if scan is not None:
            scan.evaluations = int(o.front_scan)  # the sweep's budget, spent without a feasible point
    else:
        source = "the coarse constrained front"
    if scan is None:
        return RawSolution(
            status=ctx.stop_status(Status.ERROR) if ctx.should_stop() else Status.ERROR,
            values={},
            info={
                "error": f"no point of the coarse constrained front, nor of SLSQP from {SLSQP_STARTS} seeded starts, "
                f"kept every constraint within constraint_tol = {o.constraint_tol:g} (no proof that none exists): "
                "raise front_scan, or check the constraints"
            },
        )
    cands: list[_Candidate] = []
    polish_ok = model.n <= o.polish_max_dim and o.polish
    queue = [model.fl.flat(scan.point(i)) for i in scan.starts(o.polish_restarts + 2)] if polish_ok else []
    restarts_left = REFUTED_RESTARTS
    attempts = 0
    while queue and not ctx.should_stop():
        z_start = queue.pop(0)
        attempts += 1
        r = constrained_polish(model, z_start, o.stat_tol, stop=ctx.should_stop)
        if r is None:
            continue
        c = _judge(model, scan, r.z, o, ctx.seed, f"polished from a point of {source}", r)
        cands.append(c)
        if c.refuter is not None and restarts_left > 0:
            restarts_left -= 1
            queue.insert(0, c.refuter)
    # the scan's own points: feasible and non-dominated among the scan's; returned only without a certificate
    best_scan = int(np.nanargmin(np.where(np.isfinite(scan.phi), scan.phi, np.inf)))
    scanned = model.fl.flat(scan.point(best_scan))
    c_scan = _judge(model, scan, scanned, o, ctx.seed, f"a point of {source} (not polished)", None)
    cands.append(c_scan)
    # ... and where a point better in every objective refutes it (a scan point just off the Pareto set),
    # that point in turn, at most `REFUTED_RESTARTS` times: near an end where no polish was certified (a
    # two-distance front bent onto a half-space, the end P_K(b) of least φ) it is the only candidate there,
    # and it keeps a certified local minimum of φ (1.1 above, along the segment) from claiming `converged`
    for _ in range(REFUTED_RESTARTS):
        if c_scan.refuter is None or ctx.should_stop():
            break
        how = f"a point of {source} moved onto the Pareto set by Benson's problem (not polished)"
        c_scan = _judge(model, scan, c_scan.refuter, o, ctx.seed, how, None)
        cands.append(c_scan)
    if (o.end_test or o.neighbour_test) and end_applies(problem, o.polish_max_dim):
        _end_tests(problem, model, scan, cands, o, ctx)
    certified = [c for c in cands if c.certified]
    pool = certified or [c for c in cands if c.admissible] or [c for c in cands if c.feasible] or cands
    best = min(pool, key=lambda c: c.phi)
    admissible = [c for c in cands if c.admissible]
    if best.certified and admissible:
        # a feasible point that Benson's test could not improve and no scan point beats, clearly lower in
        # φ than the certified one (in another basin, where no test could certify): the certificate is
        # local, so the lower point is returned — without the claim
        low = min(admissible, key=lambda c: c.phi)
        if low.phi < best.phi - 1e-3 * (1.0 + abs(best.phi)):
            best = low
    status = Status.CONVERGED if best.certified else Status.FEASIBLE if best.feasible else Status.ERROR
    if ctx.should_stop() and not best.certified:
        status = ctx.stop_status(status)
    F_all, C_all = model.values(best.z)
    info: dict[str, Any] = {
        "preference": best.phi,
        "objectives": {n: float(best.F[j]) for j, n in enumerate(names)},
        "returned": best.how,
        "stationarity": best.polish.stationarity if best.polish else None,
        "kkt_residual": best.polish.residual if best.polish else None,
        "weights": best.polish.lam.tolist() if best.polish else None,
        "active_constraints": _active_texts(model, best.polish) if best.polish else [],
        "certificate": best.end,
        "pareto_gain": best.gain,
        "polish_attempts": attempts,
        "certified_points": len(certified),
        "scan": {"points": scan.points, "evaluations": scan.evaluations, "source": source},
        "evaluations": int(scan.evaluations + model.count),
        "evaluation_unit": "one point evaluation = the objective vector and the constraints at one point, with or "
        "without their gradients (a Hessian row counts as one)",
        "constraint_scale": model.scale.tolist(),
    }
    if not polish_ok:
        info["note"] = (
            f"not polished: {model.n} scalars exceed polish_max_dim = {o.polish_max_dim}"
            if o.polish
            else "not polished (polish = false)"
        )
    checks = {
        "constraints_hold": (
            model.violation(C_all) <= o.constraint_tol,
            f"largest scaled violation {model.violation(C_all):.3g} in float64 (limit {o.constraint_tol:g})",
        ),
        "pareto_local": (
            best.pareto,
            f"Benson's test from the point and two nearby starts: best gain {best.gain:.3g} in the scaled sum "
            f"of the objectives (refuted above {GAIN_TOL:g})",
        ),
        "not_dominated_by_seen": (
            not best.dominated,
            f"none of the coarse front's {scan.points} points is better in every objective by more than the "
            f"merit tolerance"
            if not best.dominated
            else "a point of the coarse front is better in every objective",
        ),
    }
    ctx.report(best.phi, None)
    return RawSolution(
        status=status,
        values=model.split(best.z),
        objective=best.phi,
        iterations=sum(c.polish.iterations for c in cands if c.polish),
        history=list(ctx.history),
        info=info,
        checks=checks,
    )
