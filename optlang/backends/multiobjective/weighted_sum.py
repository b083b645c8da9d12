"""The `weighted-sum` baseline for multi-objective problems: a scalarization sweep on torch.

For K weight vectors w_k on the simplex (Das-Dennis), each instance minimizes the scalarization
s_k(x) = Σ_i w_ki F_i(x) ("linear") or max_i w_ki (F_i(x) − z_i) ("chebyshev", z = the ideal point
of the initial sample) by projected Adam, all K at once. With a preference, the swept point of
best preference is returned; without, the non-dominated points seen form the front. Linear
weights cannot reach the inside of a concave front (ZDT2, DTLZ2): that is the baseline's known
weakness, measured in benchmarks/multiobjective.py. General constraints are the penalty method a user
would write: a fixed exact penalty `penalty` · Σ scaled violations on each scalarization, and only points
within `constraint_tol` archived; with a preference, the swept point of least preference among those that
keep the constraints (none: the archive's feasible points).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.multiobjective.common import (
    Archive,
    BatchEval,
    ProjectedAdam,
    archive_feasible,
    batched_init,
    batched_project_,
    cosine,
    coupled_domains,
    front_feasibility,
    front_info,
    front_rule,
    hv_reference,
    no_feasible_point,
    refuse_multiobjective,
    repaired,
    safe_grads,
    step_back,
    variable_scale,
)
from optlang.backends.multiobjective.metrics import directions, hypervolume, nondominated_mask
from optlang.errors import OptionError
from optlang.lazy import lazy_module
from optlang.problem import MultiObjectiveProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class WeightedSumOptions:
    """Options of the scalarization sweep."""

    points: int = 20  # about this many weight vectors (Das-Dennis)
    iters: int = 300  # projected Adam steps per weight (all weights run as one batch; ctx.max_iter overrides)
    front_evals: int = 0  # > 0: the sweep's point evaluations at most (sets iters), as paretom3's front_evals
    lr: float = 0.02  # Adam step, in units of the domain width (box), radius (ball) or max(1, |x0|)
    lr_final: float = 1e-3  # cosine decay to this fraction of lr
    scalarization: str = "linear"  # "linear" (weighted sum) | "chebyshev" (weighted max)
    front_max: int = 0  # points in info["front"]: 0 = all non-dominated seen; k > 0 = k kept by hypervolume
    penalty: float = 1000.0  # general constraints (front): the exact penalty's weight on the scaled violations
    constraint_tol: float = 1e-6  # ... and a point is feasible when every scaled violation is at most this


class WeightedSum(Backend):
    """Weighted-sum (or Chebyshev) scalarization sweep; the swept point of best preference."""

    name = "weighted-sum"
    kinds = frozenset({"multiobjective"})
    summary = "scalarization sweep over simplex weights (projected Adam), best swept point or the swept front"
    option_ranges = {
        "points": ">=1",
        "iters": ">=1",
        "front_evals": ">=0",
        "lr": ">0",
        "lr_final": "[0,1]",
        "front_max": ">=0",
        "penalty": ">0",
        "constraint_tol": ">0",
    }
    option_choices = {"scalarization": ("linear", "chebyshev")}
    priority = 60
    Options = WeightedSumOptions
    preload = ("torch._dynamo", "torch.func")  # first autograd/vmap use imports them (seconds)

    def refuse(self, form: Any) -> str | None:
        return refuse_multiobjective(form, self.kinds, front_constraints=True)

    def check_for_model(self, options: Any, form: Any) -> None:
        """`optlang check`: front_evals against the model's weights (`_check_budget`)."""
        if form.n_objectives >= 2:
            _check_budget(options, form.n_objectives)

    def solve(self, problem: MultiObjectiveProblem, options: WeightedSumOptions, ctx: RunContext) -> RawSolution:
        o = options
        self.check_options(o)  # make_options checked them; options built by hand are checked here
        m = len(problem.objectives)
        names = [n for n, _ in problem.objectives]
        _check_budget(o, m)
        W = torch.as_tensor(directions(o.points, m), dtype=ctx.dtype, device=ctx.device)
        K = W.shape[0]
        ev = BatchEval(problem, ctx, with_preference=False, with_constraints=True)
        archive = Archive()
        X = batched_init(problem.variables, K, ctx)
        X = {k: v.requires_grad_(True) for k, v in X.items()}
        scales = {v.name: variable_scale(v, X[v.name]) for v in problem.variables}
        opt = ProjectedAdam(X, scales, o.lr, coupled=coupled_domains(problem.variables))
        # front_evals (the multi-objective wing's shared budget, so that `solver auto { front_evals = N }` and
        # `optlang compare` run this baseline at paretom3's evaluations) sets the steps of every weight
        budget_iters = max(1, o.front_evals // K - 1) if o.front_evals > 0 else o.iters  # (and a last evaluation)
        iters = ctx.max_iter if ctx.max_iter is not None else budget_iters
        z = None
        status = Status.ITERATION_LIMIT
        k = 0
        last = {n: t.detach().clone() for n, t in X.items()}
        good: tuple[dict[str, torch.Tensor], torch.Tensor] | None = None  # X and out when F was last finite
        while k < iters:
            if ctx.should_stop():
                status = ctx.stop_status(Status.TIME_LIMIT)
                break
            # copies: `repaired` moves rows at +∞ or NaN (a pole, where the model is undefined) back in place
            back = repaired(X, ev({n: t.clone() for n, t in X.items()}), ev, good, [opt.m])
            if back is None:  # −∞ (unbounded below), or no finite point at all
                status = Status.DIVERGED
                X = {n: t.clone() for n, t in last.items()}
                break
            out = back
            F = out[:, :m]
            last = {n: t.detach().clone() for n, t in X.items()}
            good = last, out.detach().clone()
            V = ev.finite_violations(out) if ev.constrained else None
            archive_feasible(archive, ev, out, X, o.constraint_tol, None if V is None else V.detach())
            if o.scalarization == "linear":
                s = (W * F).sum(1)
            else:
                if z is None:
                    z = F.detach().min(0).values - 1e-3 * (1 + F.detach().abs().max(0).values)
                s = (W * (F - z)).max(1).values
            if V is not None:
                s = s + o.penalty * V.sum(1)
            g, _ = safe_grads(s.sum(), X)
            opt.step(
                X,
                {n: torch.nan_to_num(t, nan=0.0, posinf=0.0, neginf=0.0) for n, t in g.items()},
                cosine(k, iters, o.lr_final),
            )
            batched_project_(problem.variables, X)
            k += 1
            if k % 25 == 0:
                ctx.report(float(s.detach().mean()), None, iteration=k)
        with torch.no_grad():
            final = ev(X)
            bad = ~torch.isfinite(final[:, :m]).all(1)
            if bool(bad.any()) and good is not None and status != Status.DIVERGED:  # the last step's, back
                back = step_back(X, final, bad, good, [opt.m])
                final = final if back is None else back
            final_ok = archive_feasible(archive, ev, final, X, o.constraint_tol)
        evals = ev.count
        info: dict[str, Any] = {
            "weights": int(K),
            "scalarization": o.scalarization,
            "evaluation_unit": "one point evaluation = the objective vector (or the preference) at one point, "
            "with or without its gradient",
        }
        if problem.preference is not None:
            pts = [{n: t[b].detach().cpu().numpy().astype(np.float64) for n, t in X.items()} for b in range(K)]
            weight_of = list(range(K))  # the swept point's weight row; -1: an archived point
            if problem.constraints:  # only swept points that keep the constraints; else the archive's feasible ones
                keep = final_ok.cpu().numpy()
                if not keep.any():
                    Ff, fpts = archive.front()
                    if Ff.size == 0 or fpts is None:
                        info["error"] = no_feasible_point(evals, o.constraint_tol)
                        return RawSolution(Status.ERROR, {}, iterations=k, history=list(ctx.history), info=info)
                    pts = [{n: np.asarray(v[i], dtype=np.float64) for n, v in fpts.items()} for i in range(Ff.shape[0])]
                    keep = np.ones(len(pts), bool)
                    weight_of = [-1] * len(pts)
                pts = [p for p, ok in zip(pts, keep, strict=True) if ok]
                weight_of = [w for w, ok in zip(weight_of, keep, strict=True) if ok]
            phi = np.array([float(problem.preference.value(p)) for p in pts])
            evals += len(pts)
            phi = np.where(np.isfinite(phi), phi, np.inf)
            best = int(np.argmin(phi))
            Fb = np.array([float(f.value(pts[best])) for _, f in problem.objectives])
            info.update(
                preference=float(phi[best]),
                objectives={n: float(Fb[j]) for j, n in enumerate(names)},
                best_weight=W[weight_of[best]].detach().cpu().numpy().tolist() if weight_of[best] >= 0 else None,
                evaluations=int(evals),
            )
            ctx.report(float(phi[best]), None)
            return RawSolution(
                status=status,
                values=pts[best],
                objective=float(phi[best]),
                iterations=k,
                history=list(ctx.history),
                info=info,
            )
        Ff, fpts = archive.front()
        if Ff.size == 0:  # every evaluated point broke a general constraint
            info["error"] = no_feasible_point(evals, o.constraint_tol)
            return RawSolution(Status.ERROR, {}, iterations=k, history=list(ctx.history), info=info)
        ideal, nadir = Ff.min(0), Ff.max(0)
        span = np.where(nadir > ideal, nadir - ideal, 1.0)
        knee = int(np.argmin((((Ff - ideal) / span) ** 2).sum(1)))
        if fpts is not None:
            values = {n: np.asarray(v[knee], dtype=np.float64) for n, v in fpts.items()}
        else:
            values = {n: t[0].detach().cpu().numpy().astype(np.float64) for n, t in X.items()}
        info.update(
            front=front_info(names, Ff, fpts, o.front_max),
            front_size=int(Ff.shape[0]),
            front_rule=front_rule(Ff.shape[0], o.front_max, m),
            evaluations=int(evals),
        )
        if m <= 3:
            ref = hv_reference(Ff)
            info["hypervolume"] = hypervolume(Ff, ref)
            info["hv_reference"] = ref.tolist()
        checks = {"front_nondominated": (bool(nondominated_mask(Ff).all()), f"{Ff.shape[0]} front points")}
        if problem.constraints:
            checks["front_feasible"] = front_feasibility(problem, fpts, ev, o.constraint_tol)
        return RawSolution(
            status=status,
            values=values,
            objective=None,
            iterations=k,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )


def _check_budget(options: WeightedSumOptions, m: int) -> None:
    """front_evals (when not 0) must pay for one step of every weight and its last point (2 K)."""
    least = 2 * directions(options.points, m).shape[0]
    if 0 < options.front_evals < least:
        raise OptionError(
            "front_evals",
            f"front_evals = {options.front_evals} is below the {least} evaluations of one step of each of the "
            f"{least // 2} weights and their last points",
            hint="raise front_evals, lower points, or give 0 (iters decides)",
        )
