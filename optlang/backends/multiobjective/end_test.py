"""A preferred point at an end of the Pareto set (the minimizer of one objective), tested by samples.

Where the preferred point is the minimizer of one objective f_i and f_i has a kink there (√ of a
squared distance, `norm2`) or a degenerate minimum ((·)² of one), the polish's Pareto-critical system
has no smooth solution (or, at a degenerate minimum, a spurious one: its linearization vanishes) and
the loop, though it lands on the point to 1e-12, ends `iteration_limit`. The one-variable zoom handles
this for one scalar (scalar1d.py); with several variables the test is:

- **An end.** Steps of t · w along ± every coordinate and 32 seeded random directions (t = 1e-3 … 1e-6,
  w the box's width per coordinate, else 1 + |x|) raise no f_i below f_i(x*) by more than rounding for
  some i: x* is a sampled local minimizer of f_i; and no step dominates x* (no worse in every objective,
  exactly in float64, and better in one by more than rounding: a face where f_i is flat, weakly Pareto
  only, fails). A compass descent of f_i along the same directions (steps 1e-6 …
  1e-13 of the width) then settles x* below the samples' resolution.
- **φ rises along the front.** The Pareto points next to the end, P(ε) = argmin Σ w_k f_k subject to
  f_i ≤ f_i(x*) + ε, for w each other objective alone and (three or more objectives) their mean (SLSQP
  in float64 from a point of the sublevel set, ε = 1e-3 … 1e-6 relative, the constraint held to 0.1 %
  of ε): each must lower Σ w f (else the relaxation gains nothing and the test says nothing) and none
  may have a lower φ than x* by more than rounding.

Passing means no sampled step leaves the end downhill in φ along the Pareto set: like the one-variable
test, a sampled statement (status `converged`, never `optimal`; with three or more objectives the
Pareto set near the end is sampled along m − 1 + 1 curves only). ParetoM³ runs it when the polish does not
certify, and on a polished point whose multipliers sit on one objective (λ_i ≥ 1 − 1e-6: an end,
where a degenerate minimum makes the polish's own certificate unreliable), on models of box or free
variables; the merit test still applies. Under general constraints (constrained_pref.py) the samples,
the compass steps and the Pareto points next to the end are held inside the constraints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.common import FlatVariables, scalar_count
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

STEPS = (1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)  # sampled steps, as fractions of the width
EPSILONS = (1e-3, 1e-4, 1e-5, 1e-6)  # relaxations of f_i, relative to 1 + |f_i(x*)|
RANDOM_DIRECTIONS = 32
ROUNDING = 1e-13  # a difference counts only beyond this relative size (float64 evaluation)


@dataclass
class EndCertificate:
    """The tested point, whether it passed, and what the test saw."""

    values: dict[str, np.ndarray]
    passed: bool
    evaluations: int
    detail: str


def end_applies(problem: MultiObjectiveProblem, max_dim: int) -> bool:
    """A preference, box or free variables only, ≤ max_dim scalars (general constraints: the caller
    passes `feasible` and their SLSQP form to `certify_end`)."""
    return (
        problem.preference is not None
        and all(v.domain.kind in ("box", "free") for v in problem.variables)
        and scalar_count(problem.variables) <= max_dim
    )


class PointEval:
    """F (k, m) and φ (k,) at k flat points, float64 on the CPU, batched."""

    def __init__(self, problem: MultiObjectiveProblem, fl: FlatVariables) -> None:
        from optlang.backends.base import RunContext
        from optlang.backends.multiobjective.common import BatchEval

        self.fl = fl
        self.m = len(problem.objectives)
        self.ev = BatchEval(problem, RunContext(dtype="float64"), with_preference=True)

    def __call__(self, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with torch.no_grad():
            out = self.ev(self.fl.split(torch.as_tensor(np.atleast_2d(Z), dtype=torch.float64)))
        out_np = out.cpu().numpy().astype(np.float64)
        return out_np[:, : self.m], out_np[:, self.m]


def weighted_value_grad(fns: list[Any], fl: FlatVariables, w: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Σ w_k f_k (`fns` compiled in float64; zero weights skipped) at the flat point x, and its gradient by
    autograd: what SLSQP asks of an objective in the sampled tests."""
    zt = torch.as_tensor(x, dtype=torch.float64).requires_grad_(True)
    parts = fl.split(zt)
    v = sum(float(wk) * fns[k](parts).reshape(()) for k, wk in enumerate(w) if wk != 0.0)
    assert isinstance(v, torch.Tensor)
    (g,) = torch.autograd.grad(v, zt, allow_unused=True)
    return float(v.detach()), np.zeros(x.size) if g is None else g.numpy().copy()


def sampled_start(
    problem: MultiObjectiveProblem,
    values: dict[str, np.ndarray],
    seed: int,
    stream: int,
    feasible: Callable[[np.ndarray], np.ndarray] | None,
) -> tuple[Any, ...] | None:
    """What both sampled tests start from: (fl, z, ev, F(z), φ(z), width, the directions D (± coordinates,
    then the random ones R), R, the feasible sampled steps Z, the feasibility mask function); None when
    the point or its values are not finite."""

    def inside(Z: np.ndarray) -> np.ndarray:
        return np.ones(np.atleast_2d(Z).shape[0], bool) if feasible is None else feasible(np.atleast_2d(Z))

    fl = FlatVariables(problem.variables)
    z = fl.flat(values)
    if not np.all(np.isfinite(z)):
        return None
    ev = PointEval(problem, fl)
    F0_rows, phi0_rows = ev(z)
    F0, phi0 = F0_rows[0], float(phi0_rows[0])
    if not (np.all(np.isfinite(F0)) and np.isfinite(phi0)):
        return None
    dim = z.size
    width = np.where(np.isfinite(fl.hi - fl.lo), fl.hi - fl.lo, 1.0 + np.abs(z))
    R = np.random.default_rng([seed, stream]).standard_normal((RANDOM_DIRECTIONS, dim))
    D = np.concatenate([np.eye(dim), -np.eye(dim), R / np.linalg.norm(R, axis=1, keepdims=True)])
    Z = np.clip(z + (np.asarray(STEPS)[:, None, None] * D[None] * width).reshape(-1, dim), fl.lo, fl.hi)
    Z = Z[np.any(Z != z, axis=1)]
    Z = Z[inside(Z)] if Z.shape[0] else Z
    return fl, z, ev, F0, phi0, width, D, R, Z, inside


def dominated_by_a_sampled_step(problem: MultiObjectiveProblem, values: dict[str, np.ndarray], seed: int = 0) -> bool:
    """Whether one of the sampled steps of `sampled_start` (1e-3 … 1e-6 of the width along ± every
    coordinate and 32 random directions) Pareto-dominates the point (no worse in any objective, exactly in
    float64, and better in one by more than rounding): a local refutation of Pareto optimality, as on a
    weakly Pareto face (ZDT1's f1 = 0 with g above its least), unlike a point that only a distant one
    dominates (ZDT3's first point of a piece, which the previous piece's end dominates by 1e-13)."""
    start = sampled_start(problem, values, seed, 4127, None)
    if start is None:
        return False
    _, _, ev, F0, _, _, _, _, Z, _ = start
    if Z.shape[0] == 0:
        return False
    Fs, _ = ev(Z)
    rnd = ROUNDING * (1.0 + np.abs(F0))
    ok = np.all(np.isfinite(Fs), axis=1)
    return bool(np.any(ok & np.all(Fs <= F0, axis=1) & np.any(Fs < F0 - rnd, axis=1)))


def certify_end(
    problem: MultiObjectiveProblem,
    values: dict[str, np.ndarray],
    seed: int = 0,
    feasible: Callable[[np.ndarray], np.ndarray] | None = None,
    constraints: list[dict[str, Any]] | None = None,
) -> EndCertificate | None:
    """Test `values` as the preferred end of the Pareto set (module docstring); None when the point is
    not a sampled local minimizer of any objective (not an end: nothing to say). With general
    constraints, `feasible` (flat rows → mask) keeps the samples and the compass steps inside them and
    `constraints` (scipy's SLSQP form) holds the Pareto points next to the end to them."""
    from scipy import optimize

    start = sampled_start(problem, values, seed, 4099, feasible)
    if start is None:
        return None
    fl, z, ev, F0, phi0, width, D, R, Z, inside = start
    dim = z.size
    if Z.shape[0] == 0:
        return None
    FZ, _ = ev(Z)  # the sampled steps' objectives, row for row (also starts of the relaxed problems below)
    Fs = FZ[np.all(np.isfinite(FZ), axis=1)]
    rnd = ROUNDING * (1.0 + np.abs(F0))
    m = F0.size
    ends = [i for i in range(m) if Fs.shape[0] and bool(np.all(Fs[:, i] >= F0[i] - rnd[i]))]
    if constraints:
        # on a constraint's boundary the feasible steps are a thin cone that the samples can miss (CONSTR:
        # decreasing x needs y up by 9×): f_i's least value near the point is asked of SLSQP too
        ends = [i for i in ends if not _descends(problem, fl, z, i, F0[i] - rnd[i], constraints, inside)]
    if not ends:
        return None
    i = ends[0]
    names = [n for n, _ in problem.objectives]
    # Pareto domination, with "no worse" exact in float64: on a face where f_i is flat (DTLZ5's f3 = 0
    # for every g at θ = 0) a step keeps f_i exactly and lowers the others, while at a degenerate minimum
    # (q², unique) every step raises f_i, if only by 1e-22
    dominated = np.all(Fs <= F0, axis=1) & np.any(Fs < F0 - rnd, axis=1)
    if bool(np.any(dominated)):
        return EndCertificate(values, False, len(Z) + 1, "a sampled step dominates the point (not Pareto)")
    # the samples stop at 1e-6 of the width: below that the point walks down f_i (compass steps)
    z, used = _settle(ev, z, i, D, width, fl.lo, fl.hi, inside)
    values = {k: np.asarray(v, dtype=np.float64) for k, v in fl.split(torch.as_tensor(z)).items()}
    F0_rows, phi0_rows = ev(z)
    F0, phi0 = F0_rows[0], float(phi0_rows[0])
    fns = [f.compile("cpu", torch.float64) for _, f in problem.objectives]

    def value_grad(w: np.ndarray, x: np.ndarray) -> tuple[float, np.ndarray]:
        return weighted_value_grad(fns, fl, w, x)

    # the other objectives: each alone (two objectives: f_j), and with more, their mean too
    # the objectives that relaxing f_i should lower: not those at a sampled minimum here too (DTLZ5's end
    # x₀ = 1 has f1 = f2 = 0: relaxing f1 cannot lower f2, only f3)
    others = [k for k in range(m) if k != i and k not in ends]
    if not others:
        return None
    weights = [np.eye(m)[k] for k in others]
    if len(others) > 1:
        weights.append(np.where(np.isin(np.arange(m), others), 1.0 / len(others), 0.0))
    e_i = np.eye(m)[i]
    calls = [len(Z) + 2 + used]
    bounds = [
        (float(a) if np.isfinite(a) else None, float(b) if np.isfinite(b) else None)
        for a, b in zip(fl.lo, fl.hi, strict=True)
    ]
    rnd_phi = ROUNDING * (1.0 + abs(phi0))
    lowest = float("inf")
    for w in weights:
        label = " + ".join(f"{wk:g} {names[k]}" if wk != 1.0 else names[k] for k, wk in enumerate(w) if wk)
        gw0, gw = value_grad(w, z)
        gn = float(np.linalg.norm(gw * width))
        if not np.isfinite(gn):
            # an infinite slope at a bound (ZDT1's √f1 at f1 = 0, the very end this test is for): the
            # descent start is read a hair inside the box (1e-7 of the width off each bound the point is on)
            inward = np.where(z <= fl.lo, 1.0, np.where(z >= fl.hi, -1.0, 0.0))
            _, gw = value_grad(w, np.clip(z + 1e-7 * width * inward, fl.lo, fl.hi))
            gn = float(np.linalg.norm(gw * width))
            calls[0] += 1
        if not np.isfinite(gn):
            return EndCertificate(values, False, calls[0], f"{label} has no finite gradient at the point")
        down = -gw * width / gn if gn > 0.0 else np.zeros(dim)  # steepest descent of Σ w f (width units)
        rnd_w = ROUNDING * (1.0 + abs(gw0))
        x_prev = z
        # starts: down Σ w f, and two seeded random directions (at a point where Σ w f is flat to first
        # order — DTLZ5's θ = 0 end, cos being flat there — the descent start does not move)
        rays = [down, *(R[k] / np.linalg.norm(R[k]) for k in range(min(2, R.shape[0])))]
        for eps_rel in EPSILONS:
            cap = F0[i] + eps_rel * (1.0 + abs(F0[i]))
            best_res: tuple[float, np.ndarray] | None = None
            starts = []
            for ray in rays:
                x0 = x_prev
                h = 0.1
                while h > 1e-12:  # a start inside the relaxed sublevel set, along the ray from the end
                    cand = np.clip(z + h * ray * width, fl.lo, fl.hi)
                    calls[0] += 1
                    if float(ev(cand)[0][0, i]) <= cap:
                        x0 = cand
                        break
                    h *= 0.5
                starts.append(x0)
            # and the sampled step of least Σ w f inside the relaxed sublevel set, when it is below the end: at
            # an end where Σ w f is stationary (ZDT6's x₀ at the least f1, where f2 = 1 − f1² has its largest
            # value along the front) the descent start does not move, and a random direction also moves the
            # distance coordinates off a bound where g has an infinite slope (ZDT6's mean(x)^0.25), from
            # which SLSQP does not come back: one step of 1e-3 … 1e-6 of the width along x₀ does lower f2
            fine = np.flatnonzero(np.all(np.isfinite(FZ), axis=1) & (FZ[:, i] <= cap))
            if fine.size:
                k = fine[int(np.argmin(FZ[fine] @ w))]
                if float(FZ[k] @ w) < gw0 - rnd_w:
                    starts.append(Z[k])
            for x0 in starts:
                res = optimize.minimize(
                    lambda x, w=w: value_grad(w, x),
                    x0,
                    jac=True,
                    method="SLSQP",
                    bounds=bounds,
                    constraints=[
                        {
                            "type": "ineq",
                            "fun": lambda x, cap=cap: cap - value_grad(e_i, x)[0],
                            "jac": lambda x: -value_grad(e_i, x)[1],
                        },
                        *(constraints or []),
                    ],
                    options={"ftol": 1e-15, "maxiter": 200},
                )
                calls[0] += int(res.nfev) + int(res.njev)
                xr = np.asarray(res.x, dtype=np.float64)
                Fr = ev(xr)[0][0]
                ok = bool(np.all(np.isfinite(Fr))) and Fr[i] <= cap + 1e-3 * (cap - F0[i]) and bool(inside(xr)[0])
                if ok and (best_res is None or float(w @ Fr) < best_res[0]):
                    best_res = (float(w @ Fr), xr)
            if best_res is None:
                why = f"no Pareto point found with {names[i]} ≤ {cap:.3g} (argmin {label})"
                return EndCertificate(values, False, calls[0], why)
            P = best_res[1]
            FP_rows, phiP_rows = ev(P)
            FP, phiP = FP_rows[0], float(phiP_rows[0])
            if not (np.all(np.isfinite(FP)) and np.isfinite(phiP)) or FP[i] > cap + 1e-3 * (cap - F0[i]):
                why = f"no Pareto point found with {names[i]} ≤ {cap:.3g} (argmin {label})"
                return EndCertificate(values, False, calls[0], why)
            if not float(w @ FP) < gw0 - rnd_w:
                why = f"relaxing {names[i]} by {eps_rel:g} does not lower {label}"
                return EndCertificate(values, False, calls[0], why)
            if phiP < phi0 - rnd_phi:
                why = f"relaxing {names[i]} by {eps_rel:g} (argmin {label}) lowers φ to {phiP:.15g} (from {phi0:.15g})"
                return EndCertificate(values, False, calls[0], why)
            lowest = min(lowest, phiP - phi0)
            x_prev = P
    detail = (
        f"an end of the Pareto set: {names[i]} at a sampled local minimum ({len(Z)} steps of 1e-3 to 1e-6 of "
        f"the width), no step dominating it; along the front (argmin of "
        f"{', '.join(' + '.join(names[k] for k in range(m) if w[k]) for w in weights)} with {names[i]} relaxed "
        f"by {EPSILONS[0]:g} to {EPSILONS[-1]:g}) φ rises by at least {lowest:.3g}"
    )
    return EndCertificate(values, True, calls[0], detail)


def _descends(
    problem: MultiObjectiveProblem,
    fl: FlatVariables,
    z: np.ndarray,
    i: int,
    below: float,
    constraints: list[dict[str, Any]],
    inside: Callable[[np.ndarray], np.ndarray],
) -> bool:
    """SLSQP (float64, from z, under the constraints) finds a point with f_i < `below` that keeps the
    constraints (`inside`) or violates them no more than z itself: z is not a local minimizer of f_i among
    the points at least as feasible as it is. (OSY's answer kept a + b ≥ 2 to 6e-8, the end of the front
    5e-5 lower in f2 along it; SLSQP stopped 1.5e-8 outside, `inside` refused that, and the end test
    certified a point 4e-4 above the least φ.)"""
    from optlang.backends.multiobjective.polish import run_slsqp, scipy_bounds

    fns = [problem.objectives[i][1].compile("cpu", torch.float64)]

    def value_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        return weighted_value_grad(fns, fl, np.ones(1), x)

    solved = run_slsqp(value_grad, z, scipy_bounds(fl.lo, fl.hi), constraints, 50, 1e-15)
    if solved is None:
        return False
    x = np.clip(solved[0], fl.lo, fl.hi)
    if not value_grad(x)[0] < below:
        return False
    return bool(inside(x)[0]) or _violation(constraints, x) <= _violation(constraints, z)


def _violation(constraints: list[dict[str, Any]], x: np.ndarray) -> float:
    """The largest violation of SLSQP-form constraints at x (|c| for "eq", max(−c, 0) for "ineq")."""
    worst = 0.0
    for c in constraints:
        v = np.asarray(c["fun"](x), dtype=np.float64).ravel()
        if v.size:
            worst = max(worst, float(np.max(np.abs(v) if c["type"] == "eq" else np.maximum(-v, 0.0))))
    return worst


def _settle(
    ev: PointEval,
    z: np.ndarray,
    i: int,
    D: np.ndarray,
    width: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    inside: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, int]:
    """Compass descent of f_i from z along the rows of D (steps that keep the constraints), steps 1e-6 …
    1e-13 of the width: (the point, evaluations). A kink is reached to rounding where the samples could
    only resolve 1e-6."""
    fz = float(ev(z)[0][0, i])
    t, used = STEPS[-1], 1
    for _ in range(400):
        if t < 1e-13:
            break
        C = np.clip(z + t * D * width, lo, hi)
        C = C[inside(C)]
        if C.shape[0] == 0:
            t /= 4.0
            continue
        f = ev(C)[0][:, i]
        used += C.shape[0]
        k = int(np.nanargmin(f)) if np.isfinite(f).any() else 0
        if np.isfinite(f[k]) and f[k] < fz - ROUNDING * (1.0 + abs(fz)):
            z, fz = C[k], float(f[k])
            t = min(2.0 * t, STEPS[-1])
        else:
            t /= 4.0
    return z, used
