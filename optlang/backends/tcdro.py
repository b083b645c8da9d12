"""TC-DRO: target-conditional distributionally robust regression on torch (backend `tcdro`).

The ambiguity set holds the target-region masses and lets each region's conditional
distribution move within its own χ² (or KL) ball, with radii that grow where regions are scarce.
Its dual is a weighted empirical risk: per-sample weights q_{k,i} ∝ (ℓ_i − η_k)₊ inside each
region (χ²) or ∝ exp(ℓ_i/λ_k) (KL), trained by L-BFGS with the exact inner duals (full batch) or
by Adam on the duals' variational forms (minibatch). The same code serves global χ² and KL (one
region) and Wasserstein balls for linear models through their closed forms. This module also
holds the float64 solution report shared with `erm` and `dro-cvxpy`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from optlang.backends import dro_auto
from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.dro_auto import AUTO_OPTIONS
from optlang.backends.dro_common import (
    RADIUS_RULES,
    REGION_SCHEMES,
    REGION_WEIGHTS,
    Regions,
    make_regions,
    robust_value,
    single_region,
    wasserstein_linear_value,
    weights_summary,
)
from optlang.errors import OptionError
from optlang.problem import DROProblem


# ----------------------------------------------------------------------------- shared helpers
def check_choice(backend: str, key: str, value: str, choices: tuple[str, ...]) -> None:
    """Reject an option value outside its documented choices, naming them."""
    if value not in choices:
        raise OptionError(key, f"option '{key}' of '{backend}' must be one of {', '.join(choices)}, got {value!r}")


def region_targets(problem: DROProblem) -> np.ndarray | None:
    """The per-sample targets that define regions: `targets`, else the linear residual's y."""
    if problem.targets is not None:
        return np.asarray(problem.targets, dtype=np.float64).ravel()
    if problem.linear is not None:
        return np.asarray(problem.linear.y, dtype=np.float64).ravel()
    return None


def problem_regions(problem: DROProblem, scheme: str, rule: str) -> Regions:
    """Regions for the problem's ambiguity: one region for chi2/kl, target regions otherwise."""
    amb = problem.ambiguity
    if amb.kind in ("chi2", "kl"):
        return single_region(problem.n_samples, amb.radius)
    if amb.kind != "target_conditional":
        raise ValueError(f"ambiguity '{amb.kind}' has no regions")
    y = region_targets(problem)
    if y is None or y.size != problem.n_samples:
        raise ValueError("target_conditional needs one target per sample (DROProblem.targets)")
    return make_regions(y, amb.bins, amb.radius, edges=amb.edges, scheme=scheme, rule=rule)


def base_divergence(problem: DROProblem) -> str:
    amb = problem.ambiguity
    return amb.base if amb.kind == "target_conditional" else amb.kind


def linear_residuals(problem: DROProblem, values: dict[str, np.ndarray]) -> np.ndarray | None:
    """x_iᵀw + b − y_i in float64 when the loss has linear-residual structure."""
    lin = problem.linear
    if lin is None:
        return None
    res = np.asarray(lin.X, dtype=np.float64) @ np.asarray(values[lin.weight], dtype=np.float64).ravel()
    if lin.bias is not None:
        res = res + float(np.asarray(values[lin.bias]).reshape(()))
    return res - np.asarray(lin.y, dtype=np.float64)


def resolve_mix(mix: str, base: str) -> str:
    """The region weighting an 'auto' option means: the robust (two-level χ²) mix for any base."""
    return "robust" if mix == "auto" else mix


def _divergence(base: str, q: np.ndarray) -> float:
    n = q.size
    if base == "chi2":
        return float(0.5 * np.mean((n * q - 1.0) ** 2))
    pos = q > 0
    return float(np.sum(q[pos] * np.log(n * q[pos])))


def solution_report(
    problem: DROProblem,
    values: dict[str, np.ndarray],
    scheme: str = "quantile",
    rule: str = "count",
    mix: str = "robust",
    outer_radius: float = -1.0,
) -> tuple[float, dict[str, Any], dict[str, tuple[bool, str]]]:
    """The robust objective recomputed in float64 at `values`, the per-region info and checks.

    The check `worst_case_weights` verifies, without trusting any solver, that the reported
    worst-case distribution lies in each region's ball and attains the dual value (a primal
    point equal to a dual bound certifies that the value is the exact supremum).
    """
    amb = problem.ambiguity
    info: dict[str, Any] = {"ambiguity": amb.kind, "radius": float(amb.radius)}
    checks: dict[str, tuple[bool, str]] = {}
    res = linear_residuals(problem, values)
    if amb.kind == "wasserstein":
        lin = problem.linear
        if lin is None or res is None:
            raise ValueError("wasserstein needs linear-residual structure")
        w = np.asarray(values[lin.weight], dtype=np.float64).ravel()
        wn = float(np.linalg.norm(w))
        value = wasserstein_linear_value(res, wn, amb.radius, amb.p, lin.loss)
        info.update({"p": int(amb.p), "weight_norm": wn, "mse": float(np.mean(res * res))})
        if np.isfinite(value) and wn > 0 and amb.radius > 0 and (lin.loss == "abs" or amb.p == 2):
            # Build the attaining feature shift and evaluate the loss on the shifted data.
            X = np.asarray(lin.X, dtype=np.float64)
            if lin.loss == "square":
                scale = amb.radius / max(np.sqrt(np.mean(res * res)), 1e-300)
                shift = (scale * res)[:, None] * (w / wn)[None, :]
            else:
                shift = (amb.radius * np.sign(res))[:, None] * (w / wn)[None, :]
            res2 = (X + shift) @ w - np.asarray(lin.y, dtype=np.float64)
            if lin.bias is not None:
                res2 = res2 + float(np.asarray(values[lin.bias]).reshape(()))
            cost = float(np.mean(np.linalg.norm(shift, axis=1) ** amb.p)) ** (1.0 / amb.p)
            attained = float(np.mean(res2 * res2)) if lin.loss == "square" else float(np.mean(np.abs(res2)))
            ok = abs(attained - value) <= 1e-7 * max(1.0, abs(value)) and cost <= amb.radius * (1 + 1e-9)
            checks["worst_case_attained"] = (
                ok,
                f"shifted-data loss {attained:.10g} vs closed form {value:.10g}, transport cost {cost:.6g}",
            )
        return value, info, checks
    losses = np.asarray(problem.loss.value(values), dtype=np.float64).ravel()
    regions = problem_regions(problem, scheme, rule)
    base = base_divergence(problem)
    mix = resolve_mix(mix, base)
    outer = amb.radius if outer_radius < 0 else outer_radius
    rv = robust_value(losses, regions, base, mix, outer)
    worst_gap, worst_div = 0.0, 0.0
    if mix == "adaptive":  # L_i = w_i N: E L = 1 and ½ E[(L − 1)² | R_k] ≤ ρ_k, Σ w ℓ = dual value
        L = rv.sample_weights * losses.size
        worst_gap = abs(float(rv.sample_weights @ losses) - rv.value) / max(1.0, abs(rv.value))
        worst_gap = max(worst_gap, abs(float(rv.sample_weights.sum()) - 1.0))
    rows = []
    for k in range(regions.k):
        idx = regions.index(k)
        if mix == "adaptive":
            excess = 0.5 * float(np.mean((L[idx] - 1.0) ** 2)) - regions.radii[k]
            worst_div = max(worst_div, excess - 1e-6 * regions.radii[k] - 1e-9)
        elif rv.region_weights[k] > 0:
            q = rv.sample_weights[idx] / rv.region_weights[k]
            gap = abs(float(q @ losses[idx]) - rv.region_values[k]) / max(1.0, abs(rv.region_values[k]))
            worst_gap = max(worst_gap, gap)
            worst_div = max(worst_div, _divergence(base, q) - regions.radii[k] * (1 + 1e-6) - 1e-9)
        row = {
            "region": k,
            "lo": float(regions.edges[k]),
            "hi": float(regions.edges[k + 1]),
            "size": int(regions.counts[k]),
            "radius": float(regions.radii[k]),
            "weight": float(rv.region_weights[k]),
            "worst_case": float(rv.region_values[k]),
            "mean_loss": float(losses[idx].mean()),
        }
        if res is not None:
            row["mse"] = float(np.mean(res[idx] ** 2))
        rows.append(row)
    info.update(
        {
            "base": base,
            "regions": rows,
            "region_weights": mix if regions.k > 1 else "single",
            "sample_weights": weights_summary(rv.sample_weights),
            "mean_loss": float(losses.mean()),
        }
    )
    checks["worst_case_weights"] = (
        worst_gap <= 1e-6 and worst_div <= 0.0,
        f"max |Σqℓ − dual| = {worst_gap:.2e}, max divergence excess = {max(worst_div, 0.0):.2e}",
    )
    return rv.value, info, checks


# ----------------------------------------------------------------------------- the backend
@dataclass
class TCDROOptions:
    """Options of `tcdro` (defaults are the documented TC-DRO reconstruction)."""

    regions: str = "quantile"  # quantile | uniform (equal-width target bins); user edges come from the model
    radius_rule: str = "count"  # count | inverse | density | uniform (see dro_common.region_radii)
    region_weights: str = "robust"  # robust | adaptive | empirical | balanced (see dro_common.region_mix)
    outer_radius: float = -1.0  # robust region weights: χ² radius over region masses (< 0: the model's radius)
    solver: str = "auto"  # auto | lbfgs | adam
    lr: float = 0.01  # Adam step size
    batch_size: int = 0  # 0: full batch up to full_batch_max samples, else 1024
    full_batch_max: int = 200_000
    dual: str = "closed_form"  # minibatch duals: closed_form (refreshed exactly) | joint (also trained)
    refresh: int = 0  # minibatch: steps between exact dual refreshes (0: once per epoch)
    polish_iter: int = 200  # float32 L-BFGS runs end with up to this many float64 iterations (0: off)
    # `auto` parameters (dro_auto.py): validation on the training data alone
    select: str = "kfold"  # kfold | holdout
    folds: int = 5  # kfold: number of seeded folds
    val_frac: float = 0.25  # holdout: share held out
    val_slack: float = 1.10  # admissible validation mean loss, relative to ERM's
    tail_quantile: float = 0.9  # validation tail: targets at or above this quantile of the training targets


class TCDRO(Backend):
    """Target-conditional χ²/KL DRO (and global χ²/KL, Wasserstein for linear models) on torch."""

    name = "tcdro"
    kinds = frozenset({"dro"})
    summary = "TC-DRO: per-target-region χ²/KL balls, radii growing in scarce regions; torch L-BFGS/Adam"
    research = True
    priority = 10
    Options = TCDROOptions

    def make_options(self, given: Any) -> TCDROOptions:
        """As the base, plus `outer_radius = auto [in [...]]`: kept aside as `_auto` for dro_auto."""
        from optlang.problem import AUTO_GRIDS, Auto

        given = dict(given)
        auto: dict[str, tuple[float, ...]] = {}
        for key, value in list(given.items()):
            if isinstance(value, Auto) or (value == "auto" and key in AUTO_OPTIONS):
                if key not in AUTO_OPTIONS:
                    raise OptionError(
                        key,
                        f"option '{key}' of '{self.name}' cannot be chosen by validation",
                        hint=f"auto applies to {', '.join(AUTO_OPTIONS)} and to the ambiguity's radius and bins",
                    )
                cands = value.candidates if isinstance(value, Auto) and value.candidates else AUTO_GRIDS[key]
                auto[key] = tuple(sorted(set(float(c) for c in cands)))
                del given[key]
        opts = super().make_options(given)
        opts._auto = auto  # type: ignore[attr-defined]
        return opts

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        if form.constraints:
            return "tcdro handles variable domains only, not general constraints: " + "; ".join(form.constraints)
        if form.ambiguity == "wasserstein" and not form.linear_residual:
            return (
                "tcdro solves Wasserstein DRO only for linear models (a loss of the form φ(X @ w + b − y) with φ "
                "square or abs), through the closed form; this loss is not of that form"
            )
        if form.ambiguity not in (None, "chi2", "kl", "wasserstein", "target_conditional"):
            return f"tcdro does not know the ambiguity set '{form.ambiguity}'"
        return None

    def solve(self, problem: DROProblem, options: TCDROOptions, ctx: RunContext) -> RawSolution:
        from optlang.backends.dro_train import (
            RegionObjective,
            TrainConfig,
            WassersteinLinearObjective,
            train_polished,
        )

        o = options
        check_choice(self.name, "regions", o.regions, REGION_SCHEMES)
        check_choice(self.name, "radius_rule", o.radius_rule, RADIUS_RULES)
        check_choice(self.name, "region_weights", o.region_weights, ("auto", *REGION_WEIGHTS))
        check_choice(self.name, "solver", o.solver, ("auto", "lbfgs", "adam"))
        check_choice(self.name, "dual", o.dual, ("closed_form", "joint"))
        check_choice(self.name, "select", o.select, ("kfold", "holdout"))
        selection = None
        if problem.ambiguity.auto or getattr(o, "_auto", None):
            chosen, selection = self._select(problem, o, ctx)
            if chosen is None:
                return RawSolution(Status.ERROR, {}, info={"error": selection["error"], "auto": selection})
            problem = dro_auto.resolved(problem, chosen)
            o = dataclasses.replace(o, outer_radius=float(chosen.get("outer_radius", o.outer_radius)))
        amb = problem.ambiguity
        cfg = TrainConfig(
            solver=o.solver,
            lr=o.lr,
            batch_size=o.batch_size,
            full_batch_max=o.full_batch_max,
            dual=o.dual,
            refresh=o.refresh,
        )
        if amb.kind == "wasserstein":
            if problem.linear is None:
                return RawSolution(Status.ERROR, {}, info={"error": "wasserstein needs a linear-residual loss"})
            lin = problem.linear
            if amb.p == 1 and lin.loss == "square" and amb.radius > 0:
                return self._wasserstein_square_p1(problem, ctx)

            def make_objective(dtype: Any) -> Any:
                return WassersteinLinearObjective(lin, amb.radius, amb.p, ctx.device, dtype)
        else:
            if amb.kind == "target_conditional" and region_targets(problem) is None:
                return RawSolution(Status.ERROR, {}, info={"error": "target_conditional needs per-sample targets"})
            regions = problem_regions(problem, o.regions, o.radius_rule)
            outer = amb.radius if o.outer_radius < 0 else o.outer_radius
            base = base_divergence(problem)
            mix = resolve_mix(o.region_weights, base)
            if mix == "adaptive" and base != "chi2":
                raise OptionError(
                    "region_weights",
                    "region_weights 'adaptive' is defined for the chi2 base only",
                    hint="use empirical, balanced or robust with kl",
                )

            def make_objective(dtype: Any) -> Any:
                fn = problem.loss.compile(ctx.device, dtype)
                chunk = max(o.batch_size, 65536)
                return RegionObjective(fn, regions, base, mix, outer, ctx.device, dtype, chunk=chunk)

        out = train_polished(problem, make_objective, ctx, cfg, o.polish_iter)
        value, info, checks = solution_report(
            problem, out.values, o.regions, o.radius_rule, o.region_weights, o.outer_radius
        )
        info["solver"] = out.solver
        if selection is not None:
            info["auto"] = selection
            keys = [k for k in selection["chosen"] if k in selection["parameters"] or k == "outer_radius"]
            chosen = ", ".join(f"{k} {selection['chosen'][k]:g}" for k in keys)
            info["auto_choice"] = f"{chosen}, {selection['method'].split(' ')[0]}"
        status = out.status
        if not np.isfinite(value):
            status = Status.DIVERGED
        return RawSolution(
            status,
            out.values,
            objective=float(value),
            iterations=out.iterations,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )

    def _select(self, problem: DROProblem, o: TCDROOptions, ctx: RunContext) -> tuple[Any, dict[str, Any]]:
        """Choose the auto parameters by batched validation (dro_auto); None + a reason when impossible."""
        if any(v.domain.kind != "free" for v in problem.variables):
            return None, {
                "error": "auto parameters need unconstrained variables (the batched validation fit "
                "has no projection); give the radius a value"
            }
        if o.batch_size or problem.n_samples > o.full_batch_max:
            return None, {"error": "auto parameters are chosen by full-batch fits; this problem is minibatched"}
        targets = region_targets(problem)
        if problem.ambiguity.kind == "target_conditional" and targets is None:
            return None, {"error": "target_conditional needs per-sample targets"}
        return dro_auto.select(problem, o, ctx, targets)

    def _wasserstein_square_p1(self, problem: DROProblem, ctx: RunContext) -> RawSolution:
        """Square loss in a type-1 Wasserstein ball: any w ≠ 0 has an infinite worst case, so w = 0."""
        lin = problem.linear
        assert lin is not None
        values: dict[str, np.ndarray] = {}
        for v in problem.variables:
            values[v.name] = np.zeros(v.shape)
        wvar = next(v for v in problem.variables if v.name == lin.weight)
        if not wvar.domain.contains(values[lin.weight]):
            return RawSolution(
                Status.INFEASIBLE,
                {},
                info={"error": "square loss in a type-1 Wasserstein ball is finite only at w = 0, outside w's domain"},
            )
        if lin.bias is not None:
            bvar = next(v for v in problem.variables if v.name == lin.bias)
            values[lin.bias] = bvar.domain.project_np(np.full(bvar.shape, float(np.mean(lin.y))))
        for v in problem.variables:  # other variables do not enter the loss: a feasible point
            if v.name not in (lin.weight, lin.bias):
                values[v.name] = v.initial(ctx.generator())
        value, info, checks = solution_report(problem, values)
        info["note"] = (
            "square loss with p = 1: the worst case is +inf for every w != 0 (mass moved far away), "
            "so the robust solution is w = 0 and the bias fits the mean target"
        )
        ctx.report(value)
        return RawSolution(Status.OPTIMAL, values, objective=value, info=info, checks=checks, history=list(ctx.history))
