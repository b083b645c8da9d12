"""Whether a smooth model is a disciplined convex program (cvxpy's DCP rules), so the planner can send it
to the `convex` backend, whose `optimal` rests on a conic solver's certificate. cvxpy is imported only
here and only for smooth models with general constraints whose every atom has a cvxpy form; without
cvxpy installed the answer is False (the model goes to slsqp)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optlang.ir.model import ModelIR
    from optlang.problem import Variable


def smooth_is_dcp(ir: ModelIR, variables: tuple[Variable, ...]) -> bool:
    """True when min f (or max f) subject to the constraints and domains is DCP; any failure to build the
    cvxpy problem (an atom's rule, a product of two variables) counts as not DCP."""
    try:
        import cvxpy as cp
    except ImportError:
        return False
    from optlang.backends.common import cvx_domain_constraints, cvx_variable
    from optlang.ir.evaluate import cvxpy_expr

    obj = ir.objective
    if obj.expr is None or obj.form not in ("minimize", "maximize"):
        return False
    try:
        xs = {v.name: cvx_variable(v) for v in variables}
        cons = [c for v in variables for c in cvx_domain_constraints(v, xs[v.name])]
        for c in ir.constraints:
            e = cvxpy_expr(c.expr, xs)
            cons.append(e <= 0 if c.sense == "<=" else e == 0)
        f = cvxpy_expr(obj.expr, xs)
        goal = cp.Maximize(f) if obj.form == "maximize" else cp.Minimize(f)
        return bool(cp.Problem(goal, cons).is_dcp())
    except Exception:  # cvxpy refuses to build a non-DCP product, a shape it does not take, ...
        return False
