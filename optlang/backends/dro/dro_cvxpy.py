"""dro-cvxpy: exact convex reformulations of DRO models through cvxpy (backend `dro-cvxpy`).

χ²:  min η + √(1+2r) ‖u‖₂/√n,  u ≥ ℓ − η, u ≥ 0                  (second-order cone)
KL:  min λr + μ + mean(t) − λ,  (u − μ, λ, t) ∈ K_exp, u ≥ ℓ    (exponential cone; the
     variational form of λ log E e^{ℓ/λ})
target_conditional: one such block per target region, mixed with the region weights
(empirical / balanced sums, or a χ² ball over region masses for `robust`).
Wasserstein (linear models): the closed forms, as SOCPs. It is the exact reference for convex
losses; it needs a cvxpy form of the loss (`loss.cvxpy`) or linear-residual structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.common import cvx_domain_constraints, cvx_solve, cvx_variable
from optlang.backends.dro.common import REGION_CHOICES, Regions, shared_refusal
from optlang.backends.dro.report import base_divergence, problem_regions, resolve_mix, solution_report
from optlang.problem import DROProblem

MAX_SAMPLES = 100_000


@dataclass
class DROCvxpyOptions:
    """Options of `dro-cvxpy`: the region rules (they must match tcdro's to compare) and the solver."""

    regions: str = "quantile"
    radius_rule: str = "count"
    region_weights: str = "robust"
    outer_radius: float = -1.0
    solver: str = ""  # a cvxpy solver name; "" = Clarabel


def _loss_expr(problem: DROProblem, xs: dict[str, Any]) -> Any:
    import cvxpy as cp

    if problem.loss.cvxpy is not None:
        return problem.loss.cvxpy(xs)
    lin = problem.linear
    assert lin is not None
    res = np.asarray(lin.X, dtype=np.float64) @ xs[lin.weight] - np.asarray(lin.y, dtype=np.float64)
    if lin.bias is not None:
        res = res + xs[lin.bias]
    return cp.square(res) if lin.loss == "square" else cp.abs(res)


def _region_block(base: str, loss: Any, radius: float, cons: list[Any]) -> Any:
    """An upper-bounding convex expression of one region's worst-case mean (exact at the optimum)."""
    import cvxpy as cp

    n = loss.shape[0] if loss.ndim else 1
    if radius <= 0:
        return cp.sum(loss) / n
    u = cp.Variable(n)
    if base == "chi2":
        eta = cp.Variable()
        cons += [u >= loss - eta, u >= 0]
        return eta + np.sqrt(1.0 + 2.0 * radius) * cp.norm(u, 2) / np.sqrt(n)
    lam, mu, t = cp.Variable(nonneg=True), cp.Variable(), cp.Variable(n)
    cons += [u >= loss, cp.constraints.ExpCone(u - mu, lam * np.ones(n), t)]
    return lam * radius + mu + cp.sum(t) / n - lam


def _mix(values: list[Any], regions: Regions, mode: str, outer: float, cons: list[Any]) -> Any:
    import cvxpy as cp

    if mode == "empirical":
        return sum(float(m) * v for m, v in zip(regions.masses, values, strict=True))
    if mode == "balanced":
        return sum(values) / len(values)
    v = cp.Variable(len(values))
    cons += [v[k] >= values[k] for k in range(len(values))]
    if outer <= 0:
        return regions.masses @ v
    eta, u = cp.Variable(), cp.Variable(len(values))
    cons += [u >= v - eta, u >= 0]
    return eta + np.sqrt(1.0 + 2.0 * outer) * cp.norm(cp.multiply(np.sqrt(regions.masses), u), 2)


def _adaptive(loss: Any, regions: Regions, cons: list[Any]) -> Any:
    """Adaptive target-conditional χ² (dro_common.adaptive_chi2) as a convex program:
    η + Σ_k π_k [λ_k ρ_k − λ_k/2 + Σ_{i∈k} u_i² / (2 n_k λ_k)], u ≥ λ_k + ℓ − η, u ≥ 0."""
    import cvxpy as cp

    eta = cp.Variable()
    total = eta
    for k in range(regions.k):
        idx = regions.index(k)
        pi, rho, nk = float(regions.masses[k]), float(regions.radii[k]), int(regions.counts[k])
        if rho <= 0:
            total = total + pi * (cp.sum(loss[idx]) / nk - eta)
            continue
        lam, u = cp.Variable(nonneg=True), cp.Variable(nk)
        cons += [u >= lam + loss[idx] - eta, u >= 0]
        total = total + pi * (lam * (rho - 0.5) + cp.quad_over_lin(u, 2.0 * nk * lam))
    return total


class DROCvxpy(Backend):
    """Exact DRO through cvxpy for convex losses (the reference for tcdro on small problems)."""

    name = "dro-cvxpy"
    kinds = frozenset({"dro"})
    summary = "exact convex reformulation of χ²/KL/Wasserstein/target-conditional DRO through cvxpy (Clarabel)"
    priority = 40
    Options = DROCvxpyOptions
    # solver is any installed cvxpy solver's name (cvxpy says which are not); outer_radius < 0: the model's radius
    option_choices = REGION_CHOICES
    requires = ("cvxpy",)
    preload = ("cvxpy",)

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        shared = shared_refusal(form, "dro-cvxpy")
        if shared:
            return shared
        if form.ambiguity == "wasserstein" and not form.linear_residual:
            return (
                "dro-cvxpy solves Wasserstein DRO only for linear models (loss φ(X @ w + b − y), φ square or "
                "abs), where it has a closed form"
            )
        if not (form.cvxpy_ok or form.linear_residual):
            return "the loss has no cvxpy form (a nonconvex or torch-only atom), so dro-cvxpy cannot reformulate it"
        if form.n_samples is not None and form.n_samples > MAX_SAMPLES:
            return (
                f"{form.n_samples} samples is more than dro-cvxpy's {MAX_SAMPLES} (one cone per sample); "
                "use tcdro, which trains by minibatches"
            )
        return None

    def solve(self, problem: DROProblem, options: DROCvxpyOptions, ctx: RunContext) -> RawSolution:
        import cvxpy as cp

        o = options
        self.check_options(o)  # make_options checked them; options built by hand are checked here
        amb = problem.ambiguity
        xs = {v.name: cvx_variable(v) for v in problem.variables}
        cons: list[Any] = []
        for v in problem.variables:
            cons += cvx_domain_constraints(v, xs[v.name])
        squared = False
        if amb.kind == "wasserstein":
            lin = problem.linear
            if lin is None:
                return RawSolution(Status.ERROR, {}, info={"error": "wasserstein needs a linear-residual loss"})
            res = np.asarray(lin.X, dtype=np.float64) @ xs[lin.weight] - np.asarray(lin.y, dtype=np.float64)
            if lin.bias is not None:
                res = res + xs[lin.bias]
            n = problem.n_samples
            wn = cp.norm(xs[lin.weight], 2)
            if lin.loss == "abs":
                obj = cp.sum(cp.abs(res)) / n + amb.radius * wn
            elif amb.p == 1 and amb.radius > 0:
                cons.append(xs[lin.weight] == 0)
                obj = cp.sum_squares(res) / n
            else:
                obj = cp.norm(res, 2) / np.sqrt(n) + amb.radius * wn  # the square root of the closed form
                squared = True
        else:
            loss = _loss_expr(problem, xs)
            regions = problem_regions(problem, o.regions, o.radius_rule)
            base = base_divergence(problem)
            mix = resolve_mix(o.region_weights, base)
            if mix == "adaptive" and base == "chi2":
                obj = _adaptive(loss, regions, cons)
            elif mix == "adaptive":
                return RawSolution(Status.ERROR, {}, info={"error": "region_weights 'adaptive' needs the chi2 base"})
            else:
                blocks = []
                for k in range(regions.k):
                    idx = regions.index(k)
                    blocks.append(_region_block(base, loss[idx], float(regions.radii[k]), cons))
                outer = amb.radius if o.outer_radius < 0 else o.outer_radius
                obj = blocks[0] if regions.k == 1 else _mix(blocks, regions, mix, outer, cons)
        prob = cp.Problem(cp.Minimize(obj), cons)
        kwargs: dict[str, Any] = {}
        solver = (o.solver or "CLARABEL").upper()
        if ctx.time_limit is not None and solver == "CLARABEL":
            kwargs["time_limit"] = max(1.0, ctx.remaining())
        failed = cvx_solve(prob, solver, "dro-cvxpy", kwargs)
        if failed:
            return RawSolution(Status.ERROR, {}, info={"error": failed})
        if prob.status in ("infeasible", "infeasible_inaccurate"):
            return RawSolution(Status.INFEASIBLE, {}, info={"cvxpy_status": prob.status})
        if xs and any(x.value is None for x in xs.values()):
            return RawSolution(Status.ERROR, {}, info={"cvxpy_status": prob.status})
        values = {name: np.asarray(x.value, dtype=np.float64).reshape(x.shape) for name, x in xs.items()}
        if (
            amb.kind == "wasserstein"
            and amb.p == 1
            and amb.radius > 0
            and problem.linear is not None
            and problem.linear.loss == "square"
        ):
            values[problem.linear.weight] = np.zeros_like(values[problem.linear.weight])  # exactly, not ~1e-12
        value, info, checks = solution_report(
            problem, values, o.regions, o.radius_rule, o.region_weights, o.outer_radius
        )
        cvx_value = float(prob.value) ** 2 if squared else float(prob.value)
        gap = abs(cvx_value - value) / max(1.0, abs(value))
        checks["cvxpy_value"] = (gap <= 1e-5, f"cvxpy {cvx_value:.10g} vs recomputed {value:.10g} (rel {gap:.1e})")
        info.update({"cvxpy_status": prob.status, "cvxpy_value": cvx_value, "solver": o.solver or "CLARABEL"})
        status = Status.OPTIMAL if prob.status == "optimal" else Status.FEASIBLE
        ctx.report(value, None)
        return RawSolution(
            status, values, objective=value, bound=None, info=info, checks=checks, history=list(ctx.history)
        )
