"""`convex`: a smooth model with general constraints that is a disciplined convex program, solved through
cvxpy (Clarabel by default) — `optimal` on the conic solver's certificate, `infeasible` on its proof.

The planner sends a smooth model here when its objective and constraints pass cvxpy's DCP rules
(optlang/convexity.py decides when the planner first asks `Form.dcp`); otherwise `slsqp` finds a local
KKT point. The model is rebuilt in cvxpy from the IR's cvxpy forms (the same expressions the torch
backends evaluate), the domains as constraints. The returned objective is re-evaluated in float64 from
the model (torch), and the `cvxpy_value` check compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optlang.analysis import Form
from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.common import cvx_domain_constraints, cvx_solve, cvx_variable
from optlang.backends.smooth.slsqp import without_general_constraints
from optlang.problem import SmoothProblem


@dataclass
class ConvexOptions:
    """The cvxpy solver (any installed one that takes the model's cones) and Clarabel's tolerance."""

    solver: str = ""  # "" = CLARABEL
    tol: float = 1e-10  # Clarabel's gap (absolute and relative) and feasibility tolerances (the common tol overrides)


class Convex(Backend):
    name = "convex"
    kinds = frozenset({"smooth"})
    summary = "disciplined convex program through cvxpy (Clarabel): optimal on the solver's certificate"
    priority = 65
    Options = ConvexOptions
    requires = ("cvxpy",)
    preload = ("cvxpy",)

    def refuse(self, form: Form) -> str | None:
        base = super().refuse(form) or without_general_constraints(form)
        if base:
            return base
        if not form.dcp:
            return "not a disciplined convex program (cvxpy's DCP rules), so no certificate: slsqp finds a KKT point"
        return None

    def solve(self, problem: SmoothProblem, options: ConvexOptions, ctx: RunContext) -> RawSolution:
        import cvxpy as cp

        self.check_options(options)
        f = problem.objective.cvxpy
        forms = [(c.fn.cvxpy, c.sense) for c in problem.constraints]
        if f is None or any(g is None for g, _ in forms):
            return RawSolution(Status.ERROR, {}, info={"error": "an expression has no cvxpy form"})
        xs = {v.name: cvx_variable(v) for v in problem.variables}
        cons = [c for v in problem.variables for c in cvx_domain_constraints(v, xs[v.name])]
        for g, sense in forms:
            assert g is not None  # checked above
            e = g(xs)
            cons.append(e <= 0 if sense == "<=" else e == 0)
        # the compiled objective is minimized (a maximize model's arrives negated, its cvxpy form too)
        prob = cp.Problem(cp.Minimize(f(xs)), cons)
        if not prob.is_dcp():
            return RawSolution(Status.ERROR, {}, info={"error": "the cvxpy problem is not DCP"})
        solver = (options.solver or "CLARABEL").upper()
        kwargs: dict[str, Any] = {}
        if solver == "CLARABEL":
            # tighter than Clarabel's defaults (gap 1e-8, absolute for small objectives): a portfolio
            # variance of 1.4e-3 came out 3e-6 off in relative terms
            tol = ctx.tol or options.tol
            kwargs.update(tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
            if ctx.time_limit is not None:
                kwargs["time_limit"] = max(1.0, ctx.remaining())
        failed = cvx_solve(prob, solver, "convex", kwargs)
        if failed:
            return RawSolution(Status.ERROR, {}, info={"error": failed})
        info: dict[str, Any] = {"cvxpy_status": prob.status, "solver": solver}
        if prob.status in ("infeasible", "infeasible_inaccurate"):
            status = Status.INFEASIBLE if prob.status == "infeasible" else Status.ERROR
            info["error"] = f"cvxpy: {prob.status} (the solver's certificate of infeasibility)"
            return RawSolution(status, {}, info=info)
        if prob.status in ("unbounded", "unbounded_inaccurate"):
            info["error"] = f"cvxpy: {prob.status}"
            return RawSolution(Status.UNBOUNDED if prob.status == "unbounded" else Status.ERROR, {}, info=info)
        if any(x.value is None for x in xs.values()):
            info["error"] = f"cvxpy returned no point ({prob.status})"
            return RawSolution(Status.ERROR, {}, info=info)
        values = {name: np.asarray(x.value, dtype=np.float64).reshape(x.shape) for name, x in xs.items()}
        value = float(problem.objective.value(values))
        cvx_value = float(prob.value)
        gap = abs(cvx_value - value) / max(1.0, abs(value))
        info["cvxpy_value"] = cvx_value
        checks = {
            "cvxpy_value": (
                gap <= 1e-6,
                f"cvxpy {cvx_value:.10g} vs the model re-evaluated {value:.10g} (rel {gap:.1e})",
            )
        }
        status = Status.OPTIMAL if prob.status == "optimal" else Status.FEASIBLE
        ctx.report(value, None)
        return RawSolution(status, values, objective=value, info=info, checks=checks, history=list(ctx.history))
