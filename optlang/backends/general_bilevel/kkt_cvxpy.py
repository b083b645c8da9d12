"""`kkt` with `solver = cvxpy`: the single-level reformulation as a convex program, when it is one.

If g has polynomial degree ≤ 2 (compiler: `lower_degree`), ∇ᵧg(x, y) = a + J·(x, y) is affine and
is read off exactly by autograd in float64 (a at 0, J by one reverse pass per row). If moreover
∇²ᵧᵧg (a block of J) is positive semidefinite, {y : ∇ᵧg = 0} is exactly argmin_y g(x, ·), and
min F(x, y) s.t. a + J·(x, y) = 0, x in its domain, is the optimistic bilevel problem itself —
a convex program when F has a DCP form. cvxpy (Clarabel) then solves it to global optimality.
Anything else is refused with a sentence (solver = trust-constr handles the general case).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import RawSolution, RunContext, Status, missing_package
from optlang.backends.general_bilevel.levels import Levels
from optlang.errors import OptionError
from optlang.lazy import lazy_module
from optlang.problem import GeneralBilevelProblem, Variable

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


def _refuse(why: str) -> OptionError:
    return OptionError("solver", f"kkt cannot use solver = cvxpy here: {why}; use solver = trust-constr")


def affine_stationarity(problem: GeneralBilevelProblem, ctx: RunContext) -> tuple[np.ndarray, np.ndarray, Levels]:
    """(a, J) with ∇ᵧg(z) = a + J z exactly (z = (x, y) flat), for g of degree ≤ 2, in float64."""
    lv = Levels(problem, ctx, torch.float64, -1, -1, quadratic="off")
    nx, ny = lv.xb.size, lv.yb.size
    z = torch.zeros(nx + ny, dtype=torch.float64, device=ctx.device, requires_grad=True)
    with torch.enable_grad():
        val = lv.g_fn(lv.values(z[:nx], z[nx:]), None)
        (gz,) = torch.autograd.grad(val, z, create_graph=True, allow_unused=True)
        gz = torch.zeros_like(z) if gz is None else gz
        gy = gz[nx:]
        rows = []
        for i in range(ny):
            r = torch.autograd.grad(gy[i], z, retain_graph=True, allow_unused=True)[0] if gy.requires_grad else None
            rows.append(torch.zeros_like(z) if r is None else r)
    a = gy.detach().cpu().numpy()
    J = torch.stack(rows).detach().cpu().numpy() if rows else np.zeros((0, nx + ny))
    lv.grads += 1
    lv.hvps += ny
    return a, J, lv


def _flat(x: Any) -> Any:
    import cvxpy as cp

    return cp.reshape(x, (x.size,), order="C")  # the packing order of levels.Block (row-major)


def _domain(v: Variable, x: Any) -> list[Any]:
    import cvxpy as cp

    d = v.domain
    if d.kind == "box":
        return [c for c, ok in ((x >= d.lo, np.isfinite(d.lo)), (x <= d.hi, np.isfinite(d.hi))) if ok]
    if d.kind == "ball":
        return [cp.norm(_flat(x), 2) <= d.radius]
    if d.kind == "simplex":
        return [x >= 0, cp.sum(x) == 1]
    return []


def solve_cvxpy(problem: GeneralBilevelProblem, ctx: RunContext, solver: str = "CLARABEL") -> RawSolution:
    """The convex KKT program through cvxpy, or an OptionError saying why it is not one."""
    if (why := missing_package("cvxpy")) is not None:
        raise _refuse(f"it {why}")
    import cvxpy as cp

    if not problem.lower_degree <= 2:
        raise _refuse(
            "the lower level is not a polynomial of degree ≤ 2 in (x, y), so ∇ᵧg = 0 is not an affine "
            "constraint and the reformulation is not DCP"
        )
    if problem.upper.cvxpy is None:
        raise _refuse("the upper objective uses an atom without a cvxpy form")
    a, J, lv = affine_stationarity(problem, ctx)
    nx, ny = lv.xb.size, lv.yb.size
    H = J[:, nx:]
    H = 0.5 * (H + H.T)
    if ny:
        lam = np.linalg.eigvalsh(H)
        if lam[0] < -1e-9 * max(1.0, float(np.abs(lam).max())):
            raise _refuse(
                f"∇²ᵧᵧg has a negative eigenvalue ({lam[0]:.3g}), so ∇ᵧg = 0 does not characterize the "
                "lower level's minimizers"
            )
    xs = {v.name: cp.Variable(v.shape, name=v.name) for v in (*problem.upper_vars, *problem.lower_vars)}
    order = [xs[v.name] for v in (*problem.upper_vars, *problem.lower_vars)]
    z = cp.hstack([_flat(x) for x in order]) if order else None
    cons: list[Any] = []
    for v in problem.upper_vars:
        cons += _domain(v, xs[v.name])
    if ny and z is not None:
        cons.append(J @ z + a == 0)
    obj = problem.upper.cvxpy(xs)
    prob = cp.Problem(cp.Minimize(obj), cons)
    if not prob.is_dcp():
        raise _refuse("the upper objective is not convex by cvxpy's rules (the program is not DCP)")
    kwargs: dict[str, Any] = {}
    if ctx.time_limit is not None and solver == "CLARABEL":
        kwargs["time_limit"] = max(1.0, ctx.remaining())
    try:
        prob.solve(solver=solver, **kwargs)
    except cp.error.SolverError as exc:
        return RawSolution(Status.ERROR, {}, info={"error": f"cvxpy solver failed: {exc}", "method": "kkt"})
    if prob.status in ("infeasible", "infeasible_inaccurate"):
        return RawSolution(Status.INFEASIBLE, {}, info={"cvxpy_status": prob.status, "method": "kkt"})
    if any(x.value is None for x in xs.values()):
        return RawSolution(Status.ERROR, {}, info={"cvxpy_status": prob.status, "method": "kkt"})
    values = {name: np.asarray(x.value, dtype=np.float64).reshape(x.shape) for name, x in xs.items()}
    xt = lv.xb.from_numpy(values, torch.float64, ctx.device)
    yt = lv.yb.from_numpy(values, torch.float64, ctx.device)
    value = lv.F(xt, yt)
    ctx.report(value, None)
    gap = abs(float(prob.value) - value) / max(1.0, abs(value))
    detail = f"cvxpy {float(prob.value):.10g} vs recomputed {value:.10g} (rel {gap:.1e})"
    checks = {"cvxpy_value": (gap <= 1e-6, detail)}
    status = Status.OPTIMAL if prob.status == "optimal" else Status.FEASIBLE
    info = {"method": "kkt", "solver": "cvxpy", "cvxpy_solver": solver, "cvxpy_status": prob.status, **lv.counters()}
    return RawSolution(status, values, objective=value, info=info, checks=checks)
