"""`slsqp`: smooth models with general constraints — scipy's SLSQP in float64, gradients by torch.

The method users reach for on a small smooth nonlinear program, min f(x) s.t. g(x) ≤ 0, h(x) = 0:
sequential quadratic programming (Kraft's SLSQP, as scipy.optimize ships it). The objective, every
constraint and their gradients / Jacobians are evaluated in float64 on the CPU by torch autograd. Box
and one-sided domains are SLSQP's bounds; a simplex is Σ x = 1 with bounds [0, 1]; a ball one more
inequality ‖x‖² ≤ r².

Claims. `converged`: SLSQP's own test passed (the KKT conditions of its quadratic model, to `tol`), or
it stopped short (a line search that cannot improve, typical once the iterate is as exact as float64
allows) at a point whose KKT residual — ‖∇f − Σ λ ∇c‖ / (1 + ‖∇f‖), least over nonnegative multipliers
of the active inequalities and bounds, by NNLS — is at most `kkt_tol`; and every constraint holds in a
float64 re-evaluation — a violation counts after dividing it by 1 + the
constraint's magnitude at the start (as paretom3's fronts scale them), and must be ≤ `feas_tol`. That
is a local KKT point, never a proof of global optimality (`optimal` is not claimed, even on convex
models). An end that breaks a constraint is returned with status `error` only when no start found a
point that keeps them: "no feasible point found" is not a proof that none exists.

Dense: SLSQP's quadratic subproblem is O(n³) in the number of scalars, so larger models are refused
(`max_dim`). Models without general constraints are left to `gd` (this backend refuses them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.analysis import Form
from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.common import FlatVariables, init_tensors, scalar_count
from optlang.lazy import lazy_module
from optlang.problem import SmoothProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class SLSQPOptions:
    """SLSQP's iterations and tolerance per start, the feasibility tolerance, starts, and the size limit."""

    max_iter: int = 500  # SLSQP iterations per start (the common max_iter overrides)
    tol: float = 1e-10  # SLSQP's ftol: its KKT test on the quadratic model (the common tol overrides)
    feas_tol: float = 1e-6  # a constraint holds when its violation / (1 + |value at the start|) is at most this
    kkt_tol: float = 1e-8  # SLSQP stopped short: converged anyway when the KKT residual (relative) is at most this
    restarts: int = 3  # starts: the variables' init (or a seeded point), then seeded random points in the domain
    max_dim: int = 2000  # refuse models with more scalars (the quadratic subproblem is dense)
    max_evals: int = 0  # stop after this many point evaluations in all (0 = no cap): iteration_limit


class _Stop(Exception):
    """The time limit or an interrupt, raised from inside SLSQP's callbacks."""


class _Spent(Exception):
    """`max_evals` point evaluations were made."""


class _NonFinite(Exception):
    """The objective or a constraint is NaN or infinite at a point SLSQP asked for."""


class SLSQP(Backend):
    name = "slsqp"
    kinds = frozenset({"smooth"})
    summary = "SLSQP (scipy, float64, torch gradients): smooth models with general constraints; a local KKT point"
    priority = 70
    Options = SLSQPOptions
    option_ranges = {"feas_tol": ">0", "kkt_tol": ">0", "restarts": ">=1", "max_dim": ">=1", "max_evals": ">=0"}

    def refuse(self, form: Form) -> str | None:
        base = super().refuse(form) or without_general_constraints(form)
        if base:
            return base
        if form.n_scalar > SLSQPOptions.max_dim:
            return (
                f"{form.n_scalar} scalar variables: SLSQP's quadratic subproblem is dense "
                f"(at most {SLSQPOptions.max_dim})"
            )
        return None

    def solve(self, problem: SmoothProblem, options: SLSQPOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)
        from scipy import optimize  # ≈0.2 s to import: only when this backend runs

        n = scalar_count(problem.variables)
        if n > options.max_dim:
            return _error(f"{n} scalar variables exceed max_dim = {options.max_dim}", 0, 0)
        nlp = _NLP(problem, ctx, options.max_evals)
        max_iter = ctx.max_iter or options.max_iter
        tol = ctx.tol or options.tol
        rng = np.random.default_rng([ctx.seed, 4099])
        ends: list[tuple[np.ndarray, float, float, str, int, int]] = []  # z, f, violation, how it ended, code, iters
        stopped = diverged = spent = False
        for r in range(options.restarts):
            z0 = nlp.start(ctx, rng, r)
            if r == 0:
                nlp.set_scale(z0)
            try:
                res = optimize.minimize(
                    nlp.fun,
                    z0,
                    jac=True,
                    method="SLSQP",
                    bounds=nlp.bounds,
                    constraints=nlp.scipy_constraints(),
                    options={"maxiter": max_iter, "ftol": tol},
                )
                z, code, msg, iters = np.asarray(res.x, dtype=np.float64), int(res.status), str(res.message), res.nit
            except _Stop:
                stopped = True
                last, code, msg, iters = nlp.last_finite, -1, "stopped by the time limit or an interrupt", 0
            except _Spent:
                spent = True
                last, code, msg, iters = nlp.last_finite, -3, f"max_evals = {options.max_evals} evaluations made", 0
            except _NonFinite:
                diverged = True
                last, code, msg, iters = nlp.last_finite, -2, "the objective or a constraint is not finite", 0
            else:
                last = z
            if last is not None:
                f, viol = nlp.judge(last)
                ends.append((last, f, viol, msg, code, iters))
            if stopped or spent:
                break
        if not ends:
            return _error("no finite point was evaluated", nlp.evaluations, 0)
        feasible = [e for e in ends if e[2] <= options.feas_tol and np.isfinite(e[1])]
        z, f, viol, msg, code, iters = min(feasible, key=lambda e: e[1]) if feasible else min(ends, key=lambda e: e[2])
        total_iters = sum(e[5] for e in ends)
        if not feasible and stopped:
            return RawSolution(
                status=ctx.stop_status(Status.ERROR),
                values={},
                iterations=total_iters,
                info={"error": "stopped before any point kept every constraint", "evaluations": nlp.evaluations},
            )
        if not feasible:
            return _error(
                f"no start ended at a point that keeps every constraint (least scaled violation {viol:.3g} > "
                f"feas_tol {options.feas_tol:g}; SLSQP: {msg}): not a proof that none exists",
                nlp.evaluations,
                total_iters,
            )
        kkt = nlp.kkt_residual(z, options.feas_tol)
        if math.isfinite(kkt) and (code == 0 or (code not in (-1, -2, -3) and kkt <= options.kkt_tol)):
            # SLSQP's own test passed, or it gave up (a line search that cannot improve on its quadratic
            # model, typical once the iterate is as exact as float64 allows) at a KKT point of our test
            status = Status.CONVERGED
        elif stopped:
            status = ctx.stop_status(Status.TIME_LIMIT)
        elif diverged and code == -2:
            status = Status.DIVERGED
        elif code in (9, -3):
            status = Status.ITERATION_LIMIT
        else:
            status = Status.FEASIBLE  # SLSQP gave up (e.g. a line search failed) at a feasible point
        info: dict[str, Any] = {
            "message": msg,
            "max_scaled_violation": viol,
            "kkt_residual": kkt,
            "starts": len(ends),
            "feasible_starts": len(feasible),
            "evaluations": nlp.evaluations,
            "evaluation_unit": "one point evaluation = the objective, every constraint and their gradients at a point",
        }
        checks = {
            "constraints_hold": (
                viol <= options.feas_tol,
                f"largest constraint violation / (1 + |its value at the start|) = {viol:.3g}, re-evaluated in "
                f"float64 (tolerance feas_tol = {options.feas_tol:g})",
            )
        }
        return RawSolution(
            status=status,
            values={k: v.numpy() for k, v in nlp.flat.split(torch.as_tensor(z)).items()},
            objective=f,
            iterations=total_iters,
            info=info,
            checks=checks,
        )


def without_general_constraints(form: Form) -> str | None:
    """The refusal of a constrained-smooth backend (slsqp, convex) for a model gd solves, else None."""
    return None if form.constraints else "takes models with general constraints; gd solves the others"


def _error(message: str, evaluations: int, iterations: int) -> RawSolution:
    return RawSolution(
        status=Status.ERROR,
        values={},
        iterations=iterations,
        info={"error": message, "evaluations": evaluations},
    )


class _NLP:
    """The model as SLSQP sees it: one flat float64 vector, the objective with its gradient, the
    inequalities (≥ 0, scipy's sign) and equalities with their Jacobians, each point evaluated once."""

    def __init__(self, problem: SmoothProblem, ctx: RunContext, max_evals: int = 0) -> None:
        self.problem, self.ctx, self.max_evals = problem, ctx, max_evals
        self.flat = FlatVariables(problem.variables)
        self.f = problem.objective.compile("cpu", torch.float64)
        self.cons = [(c.fn.compile("cpu", torch.float64), c.sense) for c in problem.constraints]
        self.bounds = [
            (float(a) if np.isfinite(a) else None, float(b) if np.isfinite(b) else None)
            for a, b in zip(self.flat.lo, self.flat.hi, strict=True)
        ]
        self.scale_ineq = self.scale_eq = np.ones(0)
        self.evaluations = 0
        self.last_finite: np.ndarray | None = None
        self._key: bytes | None = None
        self._cache: tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    # --- starts
    def start(self, ctx: RunContext, rng: np.random.Generator, r: int) -> np.ndarray:
        """Start r: the variables' init (seeded points where none is given) first, then uniform in the
        finite box (or the init moved by a standard normal where a side is infinite), projected."""
        z = self.flat.flat({k: t.detach().cpu().numpy() for k, t in init_tensors(self.problem.variables, ctx).items()})
        if r > 0:
            lo, hi = self.flat.lo, self.flat.hi
            box = np.isfinite(lo) & np.isfinite(hi)
            z = np.where(box, lo + rng.random(z.size) * (hi - lo), z + rng.standard_normal(z.size))
        return self._project(z)

    def _project(self, z: np.ndarray) -> np.ndarray:
        z = np.clip(z, self.flat.lo, self.flat.hi)
        for gi in self.flat.groups:  # a simplex: onto Σ = 1 (a start only needs to be feasible for the domain)
            idx = np.flatnonzero(self.flat.grp == gi)
            s = z[idx].sum()
            z[idx] = z[idx] / s if s > 0 else 1.0 / idx.size
        for gi, rad in self.flat.balls:
            idx = np.flatnonzero(self.flat.bgrp == gi)
            nrm = float(np.linalg.norm(z[idx]))
            if nrm > rad:
                z[idx] *= rad / nrm
        return z

    def set_scale(self, z0: np.ndarray) -> None:
        """Each constraint row's scale: 1 + |its value at the first start| (violations are judged relative)."""
        _, _, gi, _, ge, _ = self._eval(z0, strict=False)
        self.scale_ineq = 1.0 + np.abs(np.nan_to_num(gi, nan=0.0, posinf=0.0, neginf=0.0))
        self.scale_eq = 1.0 + np.abs(np.nan_to_num(ge, nan=0.0, posinf=0.0, neginf=0.0))

    # --- evaluation (one pass per point: f, ∇f, the constraints and their Jacobians)
    def _rows(self, values: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(inequalities g ≤ 0 as −g ≥ 0, equalities h) with the domains' simplex and ball rows."""
        ineq: list[torch.Tensor] = []
        eq: list[torch.Tensor] = []
        for fn, sense in self.cons:
            v = fn(values).reshape(-1)
            (eq if sense == "==" else ineq).append(v if sense == "==" else -v)
        flat = torch.cat([values[v.name].reshape(-1) for v in self.problem.variables])
        for gi in self.flat.groups:
            idx = torch.as_tensor(np.flatnonzero(self.flat.grp == gi))
            eq.append((flat[idx].sum() - 1.0).reshape(1))
        for gi, rad in self.flat.balls:
            idx = torch.as_tensor(np.flatnonzero(self.flat.bgrp == gi))
            ineq.append((rad * rad - (flat[idx] ** 2).sum()).reshape(1))
        empty = flat.new_zeros(0)
        return (torch.cat(ineq) if ineq else empty), (torch.cat(eq) if eq else empty)

    def _eval(
        self, z: np.ndarray, strict: bool = True
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        key = z.tobytes()
        if self._key == key and self._cache is not None:
            return self._cache
        if self.evaluations and self.ctx.should_stop():  # the first start's point is always evaluated
            raise _Stop
        if self.max_evals and self.evaluations >= self.max_evals:
            raise _Spent
        zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
        values = self.flat.split(zt)
        fv = self.f(values).reshape(())
        gi, ge = self._rows(values)
        (gf,) = torch.autograd.grad(fv, zt, retain_graph=True, allow_unused=True)
        Ji, Je = self._jacobian(gi, zt), self._jacobian(ge, zt)
        self.evaluations += 1
        out = (
            float(fv.detach()),
            np.zeros(z.size) if gf is None else gf.numpy().copy(),
            gi.detach().numpy().copy(),
            Ji,
            ge.detach().numpy().copy(),
            Je,
        )
        finite = all(np.all(np.isfinite(a)) for a in (out[0], out[2], out[4]))
        if finite:
            self.last_finite = z.copy()
        elif strict:
            raise _NonFinite
        self._key, self._cache = key, out
        return out

    @staticmethod
    def _jacobian(rows: torch.Tensor, zt: torch.Tensor) -> np.ndarray:
        """(k, n) Jacobian of k rows by k reverse passes (k is the number of constraint entries)."""
        J = np.zeros((rows.numel(), zt.numel()))
        for i in range(rows.numel()):
            (g,) = torch.autograd.grad(rows[i], zt, retain_graph=True, allow_unused=True)
            if g is not None:
                J[i] = g.numpy()
        return J

    def fun(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        f, g, *_ = self._eval(np.asarray(z, dtype=np.float64))
        return f, g

    def scipy_constraints(self) -> list[dict[str, Any]]:
        """SLSQP's constraint dicts (after set_scale, which counts the rows)."""
        out: list[dict[str, Any]] = []
        if self.scale_ineq.size:
            out.append(
                {
                    "type": "ineq",
                    "fun": lambda z: self._eval(np.asarray(z, dtype=np.float64))[2],
                    "jac": lambda z: self._eval(np.asarray(z, dtype=np.float64))[3],
                }
            )
        if self.scale_eq.size:
            out.append(
                {
                    "type": "eq",
                    "fun": lambda z: self._eval(np.asarray(z, dtype=np.float64))[4],
                    "jac": lambda z: self._eval(np.asarray(z, dtype=np.float64))[5],
                }
            )
        return out

    def kkt_residual(self, z: np.ndarray, active_tol: float) -> float:
        """‖∇f − Σ λ ∇c‖ / (1 + ‖∇f off the active bounds‖) at z, least over multipliers λ ≥ 0 of the active
        inequalities and bounds (scipy's sign: c ≥ 0 is kept, so ∇f = Σ λ ∇c) and free ones of the
        equalities, by NNLS in float64; an inequality is active when c / (1 + |c at the start|) ≤ active_tol,
        a bound when z lies within active_tol (1 + |bound|) of it; infinite where a gradient is not finite."""
        from scipy.optimize import nnls

        _, gf, gi, Ji, _, Je = self._eval(z, strict=False)
        if not (np.all(np.isfinite(gf)) and np.all(np.isfinite(Ji)) and np.all(np.isfinite(Je))):
            return math.inf  # a gradient that is not finite there (√ at 0): no stationarity can be measured
        cols = [Ji[gi / self.scale_ineq <= active_tol].T, Je.T, -Je.T]
        lo, hi, n = self.flat.lo, self.flat.hi, z.size
        at_lo = np.flatnonzero(np.isfinite(lo) & (z - lo <= active_tol * (1 + np.abs(lo))))
        at_hi = np.flatnonzero(np.isfinite(hi) & (hi - z <= active_tol * (1 + np.abs(hi))))
        cols += [np.eye(n)[:, at_lo], -np.eye(n)[:, at_hi]]
        A = np.concatenate([c.reshape(n, -1) for c in cols], axis=1)
        # the scale: ∇f without the coordinates on an active bound, whose (possibly huge: √ at 0) components
        # a bound's multiplier takes up and which would otherwise hide a residual elsewhere
        free = np.ones(n, dtype=bool)
        free[at_lo] = free[at_hi] = False
        scale = 1.0 + float(np.linalg.norm(gf[free]))
        if A.shape[1] == 0:
            return float(np.linalg.norm(gf)) / scale
        _, res = nnls(A, gf, maxiter=50 * A.shape[1])
        return float(res) / scale

    def judge(self, z: np.ndarray) -> tuple[float, float]:
        """(objective, largest scaled violation) at z, in float64; a non-finite value counts as infinite."""
        f, _, gi, _, ge, _ = self._eval(z, strict=False)
        vi = np.maximum(-gi, 0.0) / self.scale_ineq if gi.size else np.zeros(0)
        ve = np.abs(ge) / self.scale_eq if ge.size else np.zeros(0)
        v = np.concatenate([vi, ve])
        viol = float(v.max()) if v.size else 0.0
        if not np.isfinite(viol):
            viol = float("inf")
        return (f if np.isfinite(f) else float("inf")), viol
