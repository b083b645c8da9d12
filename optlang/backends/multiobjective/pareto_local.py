"""The float64 flat model of a multi-objective problem and Benson's local Pareto test.

`Flat64` puts the objectives, the preference and the constraint rows (general constraints scaled per
column, then a simplex's Σ x = 1 and a ball's ‖x‖² ≤ r²) on one float64 vector with torch-autograd
Jacobians; `benson` solves Benson's problem (maximize the scaled sum of improvements over feasible
points no worse than z in any objective) and `pareto_test` uses it as a local Pareto test that refutes
only by a point no worse to float rounding. Shared by the constrained preferred point
(constrained_pref.py) and the neighbours test (neighbours.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.common import FlatVariables
from optlang.backends.multiobjective.polish import run_slsqp, scipy_bounds
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem, TorchFunction

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

GAIN_TOL = 1e-6  # the Pareto test refutes a point only by a y better in the scaled sum by more than this
Y_FEASIBLE = 1e-10  # ... and keeping every scaled constraint to this (a looser y could gain by violation)
ROUNDING = 1e-12  # "no worse" in an objective for Benson's end point, relative to 1 + |f_i(x)|
EXACT = 1e-15  # ... and for a point that refutes: float rounding only
SQRT_GAIN = 1e4  # ... or a gain above this times √(its excess): more than the excess could buy
END_FEASIBLE = 1e-10  # the sampled tests' steps and Pareto points keep every scaled constraint to this


class Flat64:
    """The problem on a flat float64 vector: objectives, preference, and the constraint rows c(x) — the
    general ones (each column divided by the scan's scale), then Σ x − 1 = 0 per simplex variable and
    ‖x‖² − r² ≤ 0 per ball — with their Jacobians by torch autograd. `count` counts point evaluations
    (with or without gradient; a Hessian row counts as one)."""

    def __init__(self, problem: MultiObjectiveProblem, preference: TorchFunction, scale: np.ndarray | None) -> None:
        self.fl = FlatVariables(problem.variables)
        self.joint = problem.joint.compile("cpu", torch.float64)  # the objectives in one pass
        self.pref = preference.compile("cpu", torch.float64)
        self.cons = [(c.fn.compile("cpu", torch.float64), c.sense) for c in problem.constraints]
        self.texts = [c.text for c in problem.constraints]
        self.m = len(problem.objectives)
        self.n = self.fl.lo.size
        self.count = 0
        # a point of the domain to read the constraint rows' sizes at: a box's middle, else a finite bound or 0
        lo, hi = self.fl.lo, self.fl.hi
        lo_f, hi_f = np.isfinite(lo), np.isfinite(hi)
        z = np.zeros(self.n)
        z[lo_f & hi_f] = (lo[lo_f & hi_f] + hi[lo_f & hi_f]) / 2
        z[lo_f & ~hi_f] = lo[lo_f & ~hi_f]
        z[~lo_f & hi_f] = hi[~lo_f & hi_f]
        with torch.no_grad():
            vals = self.fl.split(torch.as_tensor(z, dtype=torch.float64))
            sizes = [int(g(vals).reshape(-1).shape[0]) for g, _ in self.cons]
        self.owner = np.concatenate(
            [np.full(s, k) for k, s in enumerate(sizes)] + [np.full(len(self.fl.groups) + len(self.fl.balls), -1)]
        ).astype(int)
        eq = [np.full(s, sense == "==") for (_, sense), s in zip(self.cons, sizes, strict=True)]
        self.eq = np.concatenate(eq + [np.ones(len(self.fl.groups), bool), np.zeros(len(self.fl.balls), bool)])
        general = np.ones(sum(sizes)) if scale is None or scale.size != sum(sizes) else np.asarray(scale, np.float64)
        radii = [rad for _, rad in self.fl.balls]
        self.scale = np.concatenate([general, np.ones(len(self.fl.groups)), 1.0 + np.square(radii)])
        self._scale_t = torch.as_tensor(self.scale, dtype=torch.float64)

    @property
    def c(self) -> int:
        return int(self.eq.size)

    def _rows(self, zt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        vals = self.fl.split(zt)
        F = torch.stack(self.joint(vals))
        parts = [g(vals).reshape(-1).to(torch.float64) for g, _ in self.cons]
        parts += [(zt[self.fl.grp == gi].sum() - 1.0).reshape(1) for gi in self.fl.groups]
        parts += [(zt[self.fl.bgrp == gi] @ zt[self.fl.bgrp == gi] - rad**2).reshape(1) for gi, rad in self.fl.balls]
        C = torch.cat(parts) / self._scale_t if parts else zt.new_zeros(0)
        return F, C

    def values(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(F, c) at z, without gradients."""
        with torch.no_grad():
            F, C = self._rows(torch.as_tensor(z, dtype=torch.float64))
        self.count += 1
        return F.numpy().copy(), C.numpy().copy()

    def jacobians(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(F, J_F, c, J_c) at z."""
        zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
        F, C = self._rows(zt)
        out = torch.cat([F, C])
        J = np.zeros((out.shape[0], self.n))
        for k in range(out.shape[0]):
            (g,) = torch.autograd.grad(out[k], zt, retain_graph=True, allow_unused=True)
            if g is not None:
                J[k] = g.numpy()
        self.count += 1
        return F.detach().numpy().copy(), J[: self.m], C.detach().numpy().copy(), J[self.m :]

    def hessian(self, z: np.ndarray, wF: np.ndarray, wC: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Rows `rows` (and the same columns) of the Hessian of Σ wF_i f_i + Σ wC_j c_j at z."""
        zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
        F, C = self._rows(zt)
        L = (torch.as_tensor(wF) * F).sum() + (torch.as_tensor(wC) * C).sum()
        (g,) = torch.autograd.grad(L, zt, create_graph=True)
        H = np.zeros((rows.size, rows.size))
        for r, k in enumerate(rows):
            if g[k].requires_grad:
                (h,) = torch.autograd.grad(g[k], zt, retain_graph=True, allow_unused=True)
                if h is not None:
                    H[r] = h.detach().numpy()[rows]
        self.count += 1 + rows.size
        return H

    def phi_value(self, z: np.ndarray) -> float:
        """φ at z, without its gradient."""
        with torch.no_grad():
            p = self.pref(self.fl.split(torch.as_tensor(z, dtype=torch.float64))).reshape(())
        self.count += 1
        return float(p)

    def phi(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
        p = self.pref(self.fl.split(zt)).reshape(())
        (g,) = torch.autograd.grad(p, zt, allow_unused=True)
        self.count += 1
        return float(p.detach()), (np.zeros(self.n) if g is None else g.numpy().copy())

    def violation(self, C: np.ndarray) -> float:
        """The largest scaled violation of the rows c (|c| for equalities, max(c, 0) otherwise)."""
        if C.size == 0:
            return 0.0
        return float(np.max(np.where(self.eq, np.abs(C), np.maximum(C, 0.0))))

    def feasible_rows(self, Z: np.ndarray) -> np.ndarray:
        """Mask of the rows of Z (flat points) that keep every constraint to `END_FEASIBLE` (scaled)."""
        return np.array([self.violation(self.values(z)[1]) <= END_FEASIBLE for z in np.atleast_2d(Z)], dtype=bool)

    def slsqp_constraints(self) -> list[dict[str, Any]]:
        """The constraint rows in scipy's SLSQP form (equalities, and −c ≥ 0 for the inequalities)."""
        eq, ineq = np.flatnonzero(self.eq), np.flatnonzero(~self.eq)
        out: list[dict[str, Any]] = []
        if eq.size:
            out.append(
                {"type": "eq", "fun": lambda y: self.values(y)[1][eq], "jac": lambda y: self.jacobians(y)[3][eq]}
            )
        if ineq.size:
            out.append(
                {
                    "type": "ineq",
                    "fun": lambda y: -self.values(y)[1][ineq],
                    "jac": lambda y: -self.jacobians(y)[3][ineq],
                }
            )
        return out

    def width(self, z: np.ndarray) -> np.ndarray:
        return np.where(np.isfinite(self.fl.hi - self.fl.lo), self.fl.hi - self.fl.lo, 1.0 + np.abs(z))

    def split(self, z: np.ndarray) -> dict[str, np.ndarray]:
        return {k: t.numpy().copy() for k, t in self.fl.split(torch.as_tensor(z, dtype=torch.float64)).items()}


def _benson_solve(model: Flat64, F0: np.ndarray, sig: np.ndarray, y0: np.ndarray, maxiter: int) -> np.ndarray | None:
    """SLSQP on min Σ f_i(y)/σ_i s.t. f(y) ≤ F0, the constraints and the bounds, from y0; the end point
    when it keeps every constraint to `Y_FEASIBLE` and every objective to `ROUNDING` (relative)."""

    fl = model.fl
    eq, ineq = np.flatnonzero(model.eq), np.flatnonzero(~model.eq)
    cache: dict[bytes, tuple[np.ndarray, ...]] = {}

    def rows(y: np.ndarray) -> tuple[np.ndarray, ...]:
        key = y.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = model.jacobians(y)
        return cache[key]

    def fun(y: np.ndarray) -> tuple[float, np.ndarray]:
        F, JF, _, _ = rows(y)
        return float((F / sig).sum()), (JF / sig[:, None]).sum(0)

    cons: list[dict[str, Any]] = [{"type": "ineq", "fun": lambda y: F0 - rows(y)[0], "jac": lambda y: -rows(y)[1]}]
    if eq.size:
        cons.append({"type": "eq", "fun": lambda y: rows(y)[2][eq], "jac": lambda y: rows(y)[3][eq]})
    if ineq.size:
        cons.append({"type": "ineq", "fun": lambda y: -rows(y)[2][ineq], "jac": lambda y: -rows(y)[3][ineq]})
    solved = run_slsqp(fun, y0, scipy_bounds(fl.lo, fl.hi), cons, maxiter, 1e-15)
    if solved is None:
        return None
    y = np.clip(solved[0], fl.lo, fl.hi)
    F, C = model.values(y)
    if not (np.all(np.isfinite(F)) and model.violation(C) <= Y_FEASIBLE and np.all(F <= F0 + ROUNDING * sig)):
        return None
    return y


def benson(model: Flat64, z: np.ndarray, y0: np.ndarray, maxiter: int = 100) -> tuple[np.ndarray, float, bool] | None:
    """Benson's problem from y0: maximize Σ_i (f_i(z) − f_i(y)) / (1 + |f_i(z)|) over feasible y no worse
    than z in any objective. (y, gain, exact) or None when SLSQP ends outside the constraints or worse
    than z by more than `ROUNDING`. At its end y is (locally) Pareto optimal, so it also serves as z's
    projection onto the Pareto set. `exact`: y is no worse than z to `EXACT` (float rounding) — only such
    a y may refute z: a y worse by δ in one objective can gain O(√δ) in another where that objective has
    a minimum along the constraints (a point 1e-6 along a tangent, worse by 2e-12, better by 3e-6). A y
    worse by less than `ROUNDING` is solved again against f(z) lowered by ten times its excess (at least ten
    times `ROUNDING`, above SLSQP's own constraint tolerance); failing that, y still counts when its gain
    exceeds `SQRT_GAIN` · √excess, far beyond what the excess could buy (a scan point 0.4 off the Pareto
    set: gain 0.063 at an excess of 3.5e-15, where the re-solve did not move)."""
    F0, _ = model.values(z)
    if not np.all(np.isfinite(F0)):
        return None
    sig = 1.0 + np.abs(F0)
    y = _benson_solve(model, F0, sig, y0, maxiter)
    if y is None:
        return None
    F, _ = model.values(y)
    excess = float(np.max((F - F0) / sig))
    if excess > EXACT:
        again = _benson_solve(model, F0 - max(10.0 * excess, 10.0 * ROUNDING) * sig, sig, y, maxiter)
        if again is not None:
            F2, _ = model.values(again)
            if float(np.max((F2 - F0) / sig)) <= EXACT:
                return again, float(((F0 - F2) / sig).sum()), True
    gain = float(((F0 - F) / sig).sum())
    # a gain far beyond what the excess could buy (√-effect: at most ~SQRT_GAIN · √excess) refutes too
    return y, gain, excess <= EXACT or gain > SQRT_GAIN * float(np.sqrt(max(excess, 0.0)))


SNAP = 1e-6  # `snapped`: coordinates this close (relative to the width) to 0 or a bound are tried there


def snapped(model: Flat64, z: np.ndarray) -> np.ndarray:
    """z with the coordinates within `SNAP` of the width from 0 or a bound set there exactly, when that point
    keeps the constraints and is no worse in any objective (to float rounding); else z. A kink of a norm
    at its centre (‖x‖^¼: f 0.003 at |x| = 8e-11) has an infinite slope that no descent reaches and that
    makes every nearby point refutable by a step closer; the centre itself is where the front ends."""
    width = model.width(z)
    near = SNAP * width
    y = np.where(np.abs(z) <= near, 0.0, z)
    y = np.where(np.abs(z - model.fl.lo) <= near, model.fl.lo, y)
    y = np.where(np.abs(z - model.fl.hi) <= near, model.fl.hi, y)
    if np.array_equal(y, z):
        return z
    F0, _ = model.values(z)
    F, C = model.values(y)
    ok = np.all(np.isfinite(F)) and model.violation(C) <= Y_FEASIBLE
    return y if ok and bool(np.all(F <= F0 + EXACT * (1.0 + np.abs(F0)))) else z


def pareto_test_rounded(model: Flat64, z: np.ndarray, seed: int) -> tuple[np.ndarray, bool]:
    """`pareto_test` at `snapped(z)`, and where a point refutes it, once more at that point (rounded the
    same way): (the point tested last, passed). Next to a norm's centre every point is refuted by a step
    closer (‖x‖^¼, 1e-10 from the front's end); the rounding or one step of Benson's problem reaches it."""
    z_s = snapped(model, z)
    passed, _, refuter = pareto_test(model, z_s, seed)
    if passed or refuter is None:
        return z_s, passed
    z_s = snapped(model, refuter)
    return z_s, pareto_test(model, z_s, seed)[0]


def pareto_test(
    model: Flat64, z: np.ndarray, seed: int, from_z: tuple[np.ndarray, float, bool] | None = None
) -> tuple[bool, float, np.ndarray | None]:
    """Benson's test, local: `benson` from z and from two points 1e-3 of the width away (`from_z`: the
    caller's `benson(model, z, z)`, not solved again). (passed, best gain, the y that refuted z or None):
    refuted by a gain above `GAIN_TOL`."""
    rng = np.random.default_rng(seed)
    width = model.width(z)
    fl = model.fl
    starts = [z] + [
        np.clip(z + 1e-3 * width * d / np.linalg.norm(d), fl.lo, fl.hi) for d in rng.standard_normal((2, z.size))
    ]
    best = 0.0
    for k, y0 in enumerate(starts):
        found = from_z if k == 0 and from_z is not None else benson(model, z, y0)
        if found is None or not found[2]:
            continue
        y, gain, _ = found
        best = max(best, gain)
        if gain > GAIN_TOL:
            return False, gain, y
    return True, best, None
