"""A preferred point inside the Pareto set where the polish cannot balance, tested by its Pareto neighbours.

The polish certifies a first-order point of φ on the Pareto-critical manifold; where φ has a kink at the
answer (a Chebyshev preference max_k w_k (f_k − z_k), the reference-point method's, sits exactly where
two pieces meet) or an objective has one inside the Pareto set (|·|, `norm1`), the projected gradient
does not vanish and the answer, though found to 1e-14, ended `iteration_limit`. The test:

- **Pareto, sampled.** Steps of 1e-3 … 1e-6 of the width along ± every coordinate and 32 seeded random
  directions (end_test.py's samples) — none dominates the point (no worse in every objective exactly in
  float64, better in one beyond rounding) — and Benson's problem (pareto_local.py's local Pareto
  test: SLSQP from the point and two nearby starts) finds no point that dominates it.
- **The neighbours.** For each sign pattern d ∈ {−1, +1}^{m−1} and ε = 1e-3 … 1e-6 (relative), the
  Pareto point P_d(ε) = argmin f₁ s.t. f_k ≤ f_k(x*) + d_k ε (1 + |f_k(x*)|), k ≥ 2 (SLSQP in float64
  from x*, each constraint met to 0.1 % of ε): a neighbour of x* along the front in the direction d of
  objective space. Every neighbour found must have φ ≥ φ(x*) − rounding; a pattern with no neighbour
  at any ε (the front ends that way) is skipped; at least two patterns must give neighbours (else the
  point is an end: end_test.py's case, and nothing is said). A neighbour that dominates x* refutes it:
  x* is then off the Pareto set, and its φ below its neighbours' is a dominated point's.

The 2^(m−1) directions bracket every direction of descent of a smooth φ along an (m−1)-dimensional
front (one of them makes an acute angle with it); with a kink, the sampled scales 1e-3 … 1e-6 are what is
claimed. Passing means `converged` (sampled, never `optimal`), as for the end test; the merit test (or,
under general constraints, Benson's test) still applies.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from optlang.backends.multiobjective.common import JointJacobian
from optlang.backends.multiobjective.end_test import (
    EPSILONS,
    ROUNDING,
    EndCertificate,
    sampled_start,
)
from optlang.problem import MultiObjectiveProblem

MAX_OBJECTIVES = 4  # 2^(m−1) sign patterns: at most 8


def certify_neighbours(
    problem: MultiObjectiveProblem,
    values: dict[str, np.ndarray],
    seed: int = 0,
    feasible: Callable[[np.ndarray], np.ndarray] | None = None,
    constraints: list[dict[str, Any]] | None = None,
) -> EndCertificate | None:
    """Test `values` as a preferred point inside the Pareto set (module docstring); None when fewer than
    two directions have neighbours (an end) or the point cannot be evaluated. General constraints:
    `feasible` (flat rows → mask) and `constraints` (scipy's SLSQP form), as for `certify_end`."""
    from optlang.backends.multiobjective.polish import run_slsqp, scipy_bounds, steep_bounds

    m = len(problem.objectives)
    if m > MAX_OBJECTIVES:
        return None

    start = sampled_start(problem, values, seed, 4111, feasible)
    if start is None:
        return None
    fl, z, ev, F0, phi0, width, _, _, Z, inside = start
    calls = Z.shape[0] + 1
    rnd = ROUNDING * (1.0 + np.abs(F0))
    if Z.shape[0]:
        Fs, _ = ev(Z)
        Fs = Fs[np.all(np.isfinite(Fs), axis=1)]
        if bool(np.any(np.all(Fs <= F0, axis=1) & np.any(Fs < F0 - rnd, axis=1))):
            return EndCertificate(values, False, calls, "a sampled step dominates the point (not Pareto)")
    if constraints is None and problem.preference is not None:
        # the samples miss a thin cone of common descent (three collinear centres, a point 0.15 off their
        # segment: no sampled step dominated it), so Benson's problem is asked too (pareto_local.py's
        # test; under constraints the caller has run it)
        from optlang.backends.multiobjective.pareto_local import Flat64, pareto_test

        model = Flat64(problem, problem.preference, None)
        passed, gain, _ = pareto_test(model, z, seed)
        calls += model.count
        if not passed:
            return EndCertificate(
                values, False, calls, f"Benson's problem finds a point that dominates it (gain {gain:.3g})"
            )
    jac = JointJacobian(problem, fl)  # SLSQP asks for f₁ and the caps at one point in separate calls

    # coordinates held on a bound by an infinite slope (ZDT6's mean(x)^¼ at 0): fixed there, their
    # gradients left out, as in the polish (else SLSQP sees ∞ and finds no neighbour)
    J0 = jac(z)[1]
    calls += 1
    held = np.zeros(z.size, bool)
    if not np.all(np.isfinite(J0)):
        sides = steep_bounds(J0, z, fl.lo, fl.hi, width, (fl.grp >= 0) | (fl.bgrp >= 0))
        if sides is None:
            return None
        held = sides != 0
        z = np.where(sides < 0, fl.lo, np.where(sides > 0, fl.hi, z))

    def f_grad(k: int, x: np.ndarray) -> tuple[float, np.ndarray]:
        """f_k and its gradient at x (every objective's evaluated once per point: `JointJacobian`)."""
        F, J = jac(x)
        return float(F[k]), np.where(held, 0.0, J[k])

    bounds = scipy_bounds(np.where(held, z, fl.lo), np.where(held, z, fl.hi))
    names = [n for n, _ in problem.objectives]
    rnd_phi = ROUNDING * (1.0 + abs(phi0))
    found_patterns = 0
    least = np.inf
    patterns = list(itertools.product((-1.0, 1.0), repeat=m - 1))
    for i, d in enumerate(patterns):
        if found_patterns + len(patterns) - i < 2:
            return None  # too few patterns left to find two: an end (DTLZ2's corners, 3 of 4 patterns empty)
        found = False
        for eps_rel in EPSILONS:
            caps = F0[1:] + np.asarray(d) * eps_rel * (1.0 + np.abs(F0[1:]))
            cons: list[dict[str, Any]] = [
                {
                    "type": "ineq",
                    "fun": lambda x, k=k, cap=float(caps[k - 1]): cap - f_grad(k, x)[0],
                    "jac": lambda x, k=k: -f_grad(k, x)[1],
                }
                for k in range(1, m)
            ]
            solved = run_slsqp(lambda x: f_grad(0, x), z, bounds, cons + list(constraints or []), 200, 1e-15)
            calls += 1 if solved is None else 2 * solved[1] + 2
            if solved is None:
                continue
            P = np.clip(solved[0], fl.lo, fl.hi)
            FP_rows, phiP_rows = ev(P)
            FP, phiP = FP_rows[0], float(phiP_rows[0])
            slack = 1e-3 * eps_rel * (1.0 + np.abs(F0[1:]))
            if not (np.all(np.isfinite(FP)) and np.isfinite(phiP) and bool(inside(P)[0])):
                continue
            if np.any(FP[1:] > caps + slack) or np.all(np.abs(FP - F0) <= rnd):
                continue  # the cap is not met, or P did not move (the front ends in this direction)
            if bool(np.all(FP <= F0 + rnd) and np.any(FP < F0 - rnd)):
                # x* is off the Pareto set by more than a step of `sampled` found (distance variables
                # 2e-3 off the kinks of WFG7's s_linear, with the position variables' bias depending
                # on them: no one-coordinate step dominated, and Benson's SLSQP stopped at the kinks);
                # its lower φ than every neighbour's is then that of a dominated point
                sign = "".join("+" if s > 0 else "−" for s in d)
                why = f"a Pareto neighbour ({sign} in {', '.join(names[1:])} by {eps_rel:g}) dominates the point"
                return EndCertificate(values, False, calls, why)
            calls += 2 * P.size
            if _dominated_by_a_step(P, FP, ev, width, fl, inside):
                continue  # SLSQP stopped off the Pareto set: its φ says nothing of the true neighbour's
            found = True
            if phiP < phi0 - rnd_phi:
                sign = "".join("+" if s > 0 else "−" for s in d)
                why = (
                    f"a Pareto neighbour ({sign} in {', '.join(names[1:])} by {eps_rel:g}) lowers φ to "
                    f"{phiP:.15g} (from {phi0:.15g})"
                )
                return EndCertificate(values, False, calls, why)
            least = min(least, phiP - phi0)
        found_patterns += found
    if found_patterns < 2:
        return None
    detail = (
        f"inside the Pareto set: no sampled step ({Z.shape[0]} of 1e-3 to 1e-6 of the width) dominates it; its "
        f"Pareto neighbours (argmin {names[0]} with {', '.join(names[1:])} moved by ±{EPSILONS[0]:g} to "
        f"±{EPSILONS[-1]:g}, {found_patterns} of {2 ** (m - 1)} directions) raise φ by at least {least:.3g}"
    )
    return EndCertificate(values, True, calls, detail)


def _dominated_by_a_step(
    P: np.ndarray,
    FP: np.ndarray,
    ev: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    width: np.ndarray,
    fl: Any,
    inside: Callable[[np.ndarray], np.ndarray],
) -> bool:
    """Whether a step of 1e-6 of the width along ± one coordinate dominates the neighbour P. A neighbour
    solve can stop at a kink off the Pareto set (distance variables 1e-14 off the kinks of |y − c| got the
    slope ±1 and ended 3e-3 away, f1 0.02 too high): such a P is dominated, its higher φ says nothing of
    the true neighbour's, and counting it certified a point 4e-3 from the answer."""
    E = 1e-6 * np.diag(width)
    Z = np.clip(np.concatenate([P + E, P - E]), fl.lo, fl.hi)
    Z = Z[np.any(Z != P, axis=1)]
    Z = Z[inside(Z)] if Z.shape[0] else Z
    if not Z.shape[0]:
        return False
    Fs, _ = ev(Z)
    rnd = ROUNDING * (1.0 + np.abs(FP))
    ok = np.all(np.isfinite(Fs), axis=1)
    return bool(np.any(ok & np.all(Fs <= FP, axis=1) & np.any(Fs < FP - rnd, axis=1)))
