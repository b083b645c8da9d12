"""Turn a backend's RawSolution into a Result the user can trust.

Values are mapped back to the user's variables (undoing the rewrites), the objective is recomputed
from the IR in float64, domains and constraints are checked, and a claimed bound is tested against
the recomputed objective. Nothing here trusts the solver's own numbers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang import guard
from optlang.backends.base import RawSolution, RunContext
from optlang.compiler import Compiled
from optlang.ir.evaluate import constraint_sides, evaluate_np
from optlang.planner import Plan
from optlang.problem import DROProblem, IsingProblem
from optlang.result import OPTIMAL_GAP_TOL, Check, HistoryRow, Result, Status, consistent_status

if TYPE_CHECKING:
    from optlang.analysis import Form
    from optlang.ir.model import ModelIR


def robust_mean(losses: np.ndarray, kind: str, radius: float) -> float:
    """Worst-case mean of per-sample losses over a χ² or KL ball (LANGUAGE.md §3), float64."""
    from scipy.optimize import minimize_scalar  # only DRO checks need it (≈0.2 s to import)

    losses = np.asarray(losses, dtype=np.float64)
    if radius == 0:
        return float(losses.mean())
    if kind == "chi2":
        k = math.sqrt(1.0 + 2.0 * radius)

        def dual(eta: float) -> float:
            return eta + k * math.sqrt(np.mean(np.maximum(losses - eta, 0.0) ** 2))

        lo, hi = float(losses.min()) - abs(float(losses.max() - losses.min())) - 1.0, float(losses.max())
        r = minimize_scalar(dual, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
        return float(min(r.fun, dual(hi)))
    if kind == "kl":
        lmax = float(losses.max())

        def dual_kl(log_a: float) -> float:
            a = math.exp(log_a)
            return a * (math.log(np.mean(np.exp((losses - lmax) / a))) + radius) + lmax

        r = minimize_scalar(dual_kl, bounds=(-20, 20), method="bounded", options={"xatol": 1e-10})
        return float(min(r.fun, lmax))
    raise ValueError(kind)


def verify(
    ir: ModelIR,
    form: Form,
    compiled: Compiled,
    raw: RawSolution,
    plan: Plan,
    backend: str,
    timing: dict[str, float],
    ctx: RunContext,
) -> Result:
    kind = form.kind
    checks: list[Check] = [Check(k, bool(v[0]), str(v[1])) for k, v in raw.checks.items()]
    info = dict(raw.info)
    if info.get("front") and compiled.rescaled:  # front points in the user's variables
        info["front"] = [_front_point_to_user(p, compiled) for p in info["front"]]
    values: dict[str, np.ndarray] = {}
    objective: float | None = None
    bound: float | None = None
    status = raw.status
    if status.has_solution and raw.values:
        values = compiled.to_user(raw.values)
        finite = all(np.all(np.isfinite(v)) for v in values.values())
        if not finite and status != Status.DIVERGED:
            status = Status.DIVERGED
        checks += _domain_checks(ir, values)
        if kind in ("ising", "maxcut"):
            objective, extra = _discrete_objective(ir, kind, compiled, values, raw)
            checks += extra
        elif finite:
            objective, extra = _continuous_objective(ir, compiled, values, info, raw.objective)
            checks += extra
            if kind == "general_bilevel":  # gap, selection and hypergradient re-derived in float64
                from optlang.backends.general_bilevel.checks import general_bilevel_checks

                gb_checks, gb_info = general_bilevel_checks(compiled.problem, values)  # type: ignore[arg-type]
                checks += [Check(n, ok, detail) for n, ok, detail in gb_checks]
                info.update(gb_info)
        if raw.bound is not None and math.isfinite(raw.bound):
            bound = compiled.sign * raw.bound + compiled.offset
            if objective is not None:
                tol = 1e-6 * max(1.0, abs(objective))
                ok = objective >= bound - tol if form.sense == "minimize" else objective <= bound + tol
                checks.append(Check("bound_valid", ok, f"bound {bound:.10g} vs objective {objective:.10g}"))
    if status.has_solution and guard.unbounded(objective, form.sense, values, raw.history):
        status = Status.UNBOUNDED
        info["unbounded"] = "the objective ran past 1e20 in the improving direction while the iterates grew"
    gap = None
    if bound is not None and objective is not None:
        gap = abs(bound - objective) / max(1.0, abs(objective))
    status, why = consistent_status(status, gap)  # never `optimal` with a positive gap
    if why:
        info["status_claimed"], info["status_note"] = raw.status.value, why
    elif (
        kind in ("ising", "maxcut")
        and status in (Status.FEASIBLE, Status.TIME_LIMIT, Status.ITERATION_LIMIT)
        and gap is not None
        and gap <= OPTIMAL_GAP_TOL
        and all(c.passed for c in checks)
    ):
        # a heuristic's state whose certified bound (e.g. bound = "sdp") meets it: that is a proof
        info["status_note"] = f"{status.value} by the backend; the certified bound proves the objective optimal"
        status = Status.OPTIMAL
    history = tuple(
        HistoryRow(
            float(t),
            compiled.sign * float(o) + compiled.offset if o is not None and math.isfinite(o) else float("nan"),
            None if b is None else compiled.sign * float(b) + compiled.offset,
        )
        for t, o, b in raw.history
    )
    return Result(
        status=status,
        objective=objective,
        values=dict(values),  # Result's values also hold floats (scalars); the dict is rebuilt there anyway
        backend=backend,
        kind=kind,
        sense=form.sense,
        bound=bound,
        gap=gap,
        plan=plan.explain(),
        timing=timing,
        iterations=raw.iterations,
        history=history,
        checks=tuple(checks),
        device=ctx.device,
        seed=ctx.seed,
        model=ir.name,
        backend_objective=None if raw.objective is None else compiled.sign * raw.objective + compiled.offset,
        info=info,
    )


def _domain_checks(ir: ModelIR, values: dict[str, np.ndarray]) -> list[Check]:
    out = []
    for name, v in ir.variables.items():
        if name not in values:
            continue
        x = values[name]
        if v.kind == "spin":
            ok = bool(np.all(np.abs(np.abs(x) - 1.0) < 1e-9))
            out.append(Check(f"{name}_is_spin", ok, "all values are ±1" if ok else "values outside {-1, +1}"))
        elif v.kind == "binary":
            ok = bool(np.all((np.abs(x) < 1e-9) | (np.abs(x - 1.0) < 1e-9)))
            out.append(Check(f"{name}_is_binary", ok, "all values are 0/1" if ok else "values outside {0, 1}"))
        elif v.domain.kind != "free":
            ok = v.domain.contains(x, tol=1e-5)
            out.append(Check(f"{name}_in_domain", ok, f"{name} {v.domain.describe()}"))
    return out


def _discrete_objective(
    ir: ModelIR, kind: str, compiled: Compiled, values: dict[str, np.ndarray], raw: RawSolution
) -> tuple[float, list[Check]]:
    checks = []
    if kind == "maxcut":
        W = ir.graphs[ir.objective.graph or ""].W
        s = values["s"]
        objective = float((W.sum() / 2.0 - s @ (W @ s) / 2.0) / 2.0)
    else:
        assert ir.objective.expr is not None
        objective = float(evaluate_np(ir.objective.expr, values))
    assert isinstance(compiled.problem, IsingProblem)
    energy = compiled.problem.energy(np.asarray(raw.values["s"], dtype=np.float64))
    lowered = compiled.sign * float(energy) + compiled.offset
    ok = abs(lowered - objective) <= 1e-7 * max(1.0, abs(objective))
    checks.append(Check("objective_recomputed", ok, f"model {objective:.12g} vs lowered problem {lowered:.12g}"))
    if raw.objective is not None:
        claimed = compiled.sign * raw.objective + compiled.offset
        ok = abs(claimed - objective) <= 1e-4 * max(1.0, abs(objective))
        checks.append(Check("backend_objective", ok, f"backend {claimed:.10g} vs recomputed {objective:.10g}"))
    return objective, checks


def _continuous_objective(
    ir: ModelIR, compiled: Compiled, values: dict[str, np.ndarray], info: dict[str, Any], raw_objective: float | None
) -> tuple[float | None, list[Check]]:
    obj = ir.objective
    checks: list[Check] = []
    objective: float | None = None
    if obj.form in ("minimize", "maximize", "minimax"):
        assert obj.expr is not None
        objective = float(evaluate_np(obj.expr, values))
    elif obj.form == "multi":
        objs = {name: float(evaluate_np(e, values)) for name, e in obj.entries}
        info["objectives"] = objs
        if obj.prefer is not None:
            objective = float(evaluate_np(obj.prefer, values))
    elif obj.form == "robust":
        assert obj.expr is not None and obj.ambiguity is not None
        losses = np.asarray(evaluate_np(obj.expr, values), dtype=np.float64)
        info["mean_loss"] = float(losses.mean())
        amb = obj.ambiguity
        problem, outer = compiled.problem, -1.0
        if amb.auto:  # recompute at the values the backend chose by validation (info["auto"])
            from optlang.backends.dro.auto import resolved

            chosen = (info.get("auto") or {}).get("chosen")
            if chosen is None:
                checks.append(Check("auto_resolved", False, "the backend did not report its choice of the auto values"))
                return None, checks
            problem = resolved(problem, chosen)  # type: ignore[arg-type]
            amb, outer = problem.ambiguity, float(chosen.get("outer_radius", -1.0))
        if amb.kind in ("chi2", "kl"):
            objective = robust_mean(losses, amb.kind, amb.radius)
        else:
            # region radii (target_conditional) and transport costs (wasserstein) follow TC-DRO's
            # documented defaults, recomputed here in float64 whichever backend produced the point
            from optlang.backends.dro.report import solution_report

            assert isinstance(problem, DROProblem)
            objective, _, _ = solution_report(problem, values, outer_radius=outer)
            objective = float(objective)
            ok = objective >= float(losses.mean()) * (1 - 1e-9) - 1e-9
            checks.append(
                Check(
                    "robust_at_least_empirical",
                    ok,
                    f"robust {objective:.8g} vs empirical mean {float(losses.mean()):.8g}",
                )
            )
    for c in ir.constraints:
        if c.sense == "argmin":
            g = float(evaluate_np(c.expr, values))
            info["lower_level"] = g
            continue
        checks.append(constraint_check(c, values))
    return objective, checks


CONSTRAINT_TOL = 1e-4  # a constraint `a <= b` holds when its violation is at most this times 1 + |a| + |b|


def constraint_check(c: Any, values: dict[str, Any]) -> Check:
    """The check of one `<=` / `==` constraint (a `ConstraintDecl`) at `values`, in float64: its violation at
    most `CONSTRAINT_TOL` times 1 + |lhs| + |rhs| (elementwise)."""
    v = np.asarray(evaluate_np(c.expr, values), dtype=np.float64)
    excess = np.abs(v) if c.sense == "==" else np.maximum(v, 0.0)
    size = _constraint_size(c.expr, values)
    viol = float(np.max(excess))
    worst = float(np.max(excess / (1.0 + size)))  # relative to the size of the two sides (1e-4 when small)
    return Check(
        f"constraint line {c.span.line}",
        worst <= CONSTRAINT_TOL,
        f"{c.text}: violation {viol:.3g}" + (f" ({worst:.3g} of 1 + |lhs| + |rhs|)" if viol > 0 else ""),
    )


def _constraint_size(expr: Any, values: dict[str, Any]) -> np.ndarray:
    """|a| + |b| at `values` of a constraint lowered to `a - b` (0 for another shape of expression): the
    check's tolerance is relative to it, as a stress limit of 13 600 psi that float32 arithmetic resolves
    to ~1e-3 psi, while a constraint of size 1 is checked to 1e-4 as before."""
    sides = constraint_sides(expr)
    if sides is None:
        return np.zeros(())
    a, b = (np.abs(np.asarray(evaluate_np(x, values), dtype=np.float64)) for x in sides)
    return np.broadcast_to(a + b, np.broadcast_shapes(a.shape, b.shape))


def _front_point_to_user(point: dict[str, Any], compiled: Compiled) -> dict[str, Any]:
    """One front point with its decision values mapped from the backend's variables to the user's (a
    per-element box is solved on [0, 1])."""
    if "values" not in point:
        return point
    vals = compiled.to_user({k: np.asarray(v, dtype=np.float64) for k, v in point["values"].items()})
    return {**point, "values": {k: v.tolist() for k, v in vals.items()}}
