"""`kkt`: the single-level reformulation min_{x, y} F(x, y) s.t. ∇ᵧg(x, y) = 0, by scipy trust-constr.

Exact for convex lower levels (every stationary y is a minimizer), a local answer otherwise. The
equality constraint's Jacobian [∇²ᵧₓg, ∇²ᵧᵧg] is formed densely in float64 with torch; the Hessian of
the Lagrangian is applied exactly as a LinearOperator (second and third derivatives by autograd), or
approximated by BFGS. Upper domains become bounds (box, ≥), a linear equality plus bounds (simplex)
or a quadratic inequality (ball). The solve starts from the seeded x and the lower solution at it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.general_bilevel import lower as lower_solve
from optlang.backends.general_bilevel.common import refuse_general_bilevel
from optlang.backends.general_bilevel.kkt_cvxpy import solve_cvxpy
from optlang.backends.general_bilevel.levels import Levels
from optlang.lazy import lazy_module
from optlang.problem import GeneralBilevelProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

MAX_DENSE = 3000  # scalar variables at most: the constraint Jacobian is n_y × (n_x + n_y), dense


@dataclass
class KKTOptions:
    """Options of the KKT baseline (docs/backends/hgms.md)."""

    hessian: str = "exact"  # exact (autograd LinearOperator) | bfgs (quasi-Newton for both parts)
    max_iter: int = 3000  # trust-constr iterations
    gtol: float = 1e-10  # trust-constr's Lagrangian-gradient tolerance
    xtol: float = 1e-12  # trust-constr's trust-radius tolerance
    barrier_tol: float = 1e-12  # trust-constr's final barrier parameter (bounds and inequalities)
    solver: str = "trust-constr"  # trust-constr (any model) | cvxpy (a convex program: degree-2 g, DCP F)


class KKT(Backend):
    """Single-level reformulation with the lower level's stationarity as an equality (baseline)."""

    name = "kkt"
    kinds = frozenset({"general_bilevel"})
    summary = "single-level reformulation min F s.t. ∇ᵧg = 0 by scipy trust-constr (exact for convex g)"
    research = False
    auto = False
    priority = 70
    Options = KKTOptions
    # max_iter in a solver block is the common option (checked with the others); the field is its default
    option_ranges = {"gtol": ">0", "xtol": ">0", "barrier_tol": ">0"}
    option_choices = {"hessian": ("exact", "bfgs"), "solver": ("trust-constr", "cvxpy")}

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form) or refuse_general_bilevel(form, self.name)
        if base:
            return base
        if form.n_scalar > MAX_DENSE:
            return (
                f"kkt forms the dense Jacobian of ∇ᵧg, too large for {form.n_scalar} scalar variables "
                f"(at most {MAX_DENSE})"
            )
        return None

    def solve(self, problem: GeneralBilevelProblem, options: KKTOptions, ctx: RunContext) -> RawSolution:
        from scipy.optimize import BFGS, Bounds, LinearConstraint, NonlinearConstraint, minimize
        from scipy.sparse.linalg import LinearOperator

        self.check_options(options)  # make_options checked them; options built by hand are checked here
        if options.solver == "cvxpy":
            return solve_cvxpy(problem, ctx)
        lv = Levels(problem, ctx, torch.float64, -1, -1)
        nx, ny = lv.xb.size, lv.yb.size
        n = nx + ny
        x0 = lv.xb.project(lv.xb.initial(ctx, torch.float64))
        y0, _, _ = lower_solve.lbfgs(lv, x0, lv.yb.initial(ctx, torch.float64), 1e-10, 2000)

        def split(z: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
            t = torch.as_tensor(z, dtype=torch.float64)
            return t[:nx], t[nx:]

        def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
            val, gx, gy = lv.grad_F(*split(z))
            return val, torch.cat([gx, gy]).numpy()

        def grad_y_g(zt: torch.Tensor) -> torch.Tensor:
            val = lv.g_fn(lv.values(zt[:nx], zt[nx:]), None)
            (gy,) = torch.autograd.grad(val, zt, create_graph=True, allow_unused=True)
            return torch.zeros(ny, dtype=torch.float64) if gy is None else gy[nx:]

        def cons(z: np.ndarray) -> np.ndarray:
            lv.grads += 1
            zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
            with torch.enable_grad():
                return grad_y_g(zt).detach().numpy()

        def cons_jac(z: np.ndarray) -> np.ndarray:
            lv.hvps += ny
            zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
            with torch.enable_grad():
                gy = grad_y_g(zt)
                rows = [
                    torch.autograd.grad(gy[i], zt, retain_graph=True, allow_unused=True)[0]
                    if gy.requires_grad
                    else None
                    for i in range(ny)
                ]
            return (
                np.stack([np.zeros(n) if r is None else r.detach().numpy() for r in rows]) if ny else np.zeros((0, n))
            )

        def hvp_of(scalar: Any, z: np.ndarray) -> LinearOperator:
            def mv(u: np.ndarray) -> np.ndarray:
                lv.hvps += 1
                zt = torch.as_tensor(z, dtype=torch.float64).requires_grad_(True)
                with torch.enable_grad():
                    s = scalar(zt)
                    if not s.requires_grad:
                        return np.zeros(n)
                    (gz,) = torch.autograd.grad(s, zt, create_graph=True, allow_unused=True)
                    if gz is None or not gz.requires_grad:  # linear in z: no curvature
                        return np.zeros(n)
                    ut = torch.as_tensor(np.asarray(u).reshape(-1), dtype=torch.float64)
                    (hu,) = torch.autograd.grad(gz, zt, grad_outputs=ut, allow_unused=True)
                return np.zeros(n) if hu is None else hu.detach().numpy()

            return LinearOperator((n, n), matvec=mv, dtype=np.float64)

        if options.hessian == "exact":

            def hess(z: np.ndarray) -> LinearOperator:
                return hvp_of(lambda zt: lv.F_fn(lv.values(zt[:nx], zt[nx:]), None), z)

            def cons_hess(z: np.ndarray, mult: np.ndarray) -> LinearOperator:
                mt = torch.as_tensor(mult, dtype=torch.float64)
                return hvp_of(lambda zt: torch.dot(grad_y_g(zt), mt), z)

            obj_hess: Any = hess
            c_hess: Any = cons_hess
        else:
            obj_hess, c_hess = BFGS(), BFGS()
        constraints: list[Any] = []
        if ny:
            constraints.append(NonlinearConstraint(cons, 0.0, 0.0, jac=cons_jac, hess=c_hess))
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
        for v, a, b in lv.xb.slices:
            d = v.domain
            if d.kind == "box":
                lb[a:b], ub[a:b] = d.lo, d.hi
            elif d.kind == "simplex":
                lb[a:b] = 0.0
                row = np.zeros((1, n))
                row[0, a:b] = 1.0
                constraints.append(LinearConstraint(row, 1.0, 1.0))
            elif d.kind == "ball":

                def ball(z: np.ndarray, a: int = a, b: int = b) -> np.ndarray:
                    return np.array([float(np.dot(z[a:b], z[a:b]))])

                def ball_jac(z: np.ndarray, a: int = a, b: int = b) -> np.ndarray:
                    row = np.zeros((1, n))
                    row[0, a:b] = 2.0 * z[a:b]
                    return row

                def ball_hess(z: np.ndarray, m: np.ndarray, a: int = a, b: int = b) -> np.ndarray:
                    h = np.zeros((n, n))
                    h[np.arange(a, b), np.arange(a, b)] = 2.0 * m[0]
                    return h

                constraints.append(NonlinearConstraint(ball, -np.inf, d.radius**2, jac=ball_jac, hess=ball_hess))
        bounds = Bounds(lb, ub) if np.any(np.isfinite(lb)) or np.any(np.isfinite(ub)) else None
        z0 = torch.cat([x0, y0]).numpy()
        if bounds is not None:
            z0 = np.clip(z0, lb + 1e-9 * np.isfinite(lb), ub - 1e-9 * np.isfinite(ub))
        max_iter = ctx.max_iter if ctx.max_iter is not None else options.max_iter

        def callback(intermediate_result: Any) -> None:
            ctx.report(float(intermediate_result.fun), None)
            if ctx.should_stop():
                raise StopIteration

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # rank-deficient ∇ᵧg Jacobians (singular lower levels) warn
            res = minimize(
                fun,
                z0,
                jac=True,
                hess=obj_hess,
                method="trust-constr",
                constraints=constraints,
                bounds=bounds,
                callback=callback,
                options={
                    "maxiter": max_iter,
                    "gtol": options.gtol,
                    "xtol": options.xtol,
                    "barrier_tol": options.barrier_tol,
                    "verbose": 0,
                },
            )
        z = np.asarray(res.x, dtype=np.float64)
        xt, yt = split(z)
        viol = float(getattr(res, "constr_violation", math.nan))
        opt = float(getattr(res, "optimality", math.nan))
        if not np.all(np.isfinite(z)):
            status = Status.DIVERGED
        elif res.status in (1, 2) and viol <= 1e-6 and opt <= 1e-6 * max(1.0, abs(float(res.fun))):
            status = Status.CONVERGED
        elif ctx.should_stop():
            status = ctx.stop_status()
        elif res.status == 0:
            status = Status.ITERATION_LIMIT
        else:  # stopped on a small trust radius away from a KKT point (rank-deficient ∇ᵧg Jacobian)
            status = Status.FEASIBLE
        values = {**lv.xb.to_numpy(xt), **lv.yb.to_numpy(yt)}
        info = {
            "method": "kkt",
            "hessian": options.hessian,
            "message": str(res.message),
            "constraint_violation": viol,
            "optimality": opt,
            **lv.counters(),
        }
        return RawSolution(status, values, objective=float(res.fun), iterations=int(res.nit), info=info)
