"""TC-DRO: target-conditional distributionally robust regression on torch (backend `tcdro`).

The ambiguity set holds the target-region masses and lets each region's conditional
distribution move within its own χ² (or KL) ball, with radii that grow where regions are scarce.
Its dual is a weighted empirical risk: per-sample weights q_{k,i} ∝ (ℓ_i − η_k)₊ inside each
region (χ²) or ∝ exp(ℓ_i/λ_k) (KL), trained by L-BFGS with the exact inner duals (full batch) or
by Adam on the duals' variational forms (minibatch). The same code serves global χ² and KL (one
region) and Wasserstein balls for linear models through their closed forms. The float64 solution
report it shares with `erm` and `dro-cvxpy` is in report.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.dro import auto as dro_auto
from optlang.backends.dro.auto import AUTO_OPTIONS
from optlang.backends.dro.common import REGION_CHOICES, TRAIN_CHOICES, TRAIN_RANGES, shared_refusal
from optlang.backends.dro.report import base_divergence, problem_regions, region_targets, resolve_mix, solution_report
from optlang.backends.loop import from_fields
from optlang.errors import OptionError
from optlang.problem import DROProblem


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
    # `auto` parameters (dro/auto.py): validation on the training data alone
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
    priority = 10
    Options = TCDROOptions
    # outer_radius < 0 means the model's radius and is not in the table; folds ≥ 2 is checked by check_options
    option_ranges = {**TRAIN_RANGES, "refresh": ">=0", "val_frac": "(0,1)", "val_slack": ">0", "tail_quantile": "[0,1]"}
    option_choices = {
        **REGION_CHOICES,
        **TRAIN_CHOICES,
        "dual": ("closed_form", "joint"),
        "select": ("kfold", "holdout"),
    }
    preload = ("torch._dynamo",)  # torch.optim imports it on first use

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The declared ranges and choices, and `folds` ≥ 2 (k-fold validation trains on the other folds)."""
        super().check_options(options, auto)
        for folds in (options.folds, *(auto or {}).get("folds", ())):
            if folds < 2:
                raise OptionError("folds", f"option 'folds' of '{self.name}' must be >= 2, got {folds!r}")

    def make_options(self, given: Any) -> TCDROOptions:
        """As the base, plus `outer_radius = auto [in [...]]`: kept aside as `_auto` for dro_auto (a
        model quantity, chosen in the batched validation); other numeric options given as `auto`
        (`lr`, ...) are the base's (backends/autotune.py)."""
        from optlang.problem import AUTO_GRIDS, Auto

        given = dict(given)
        auto: dict[str, tuple[float, ...]] = {}
        for key, value in list(given.items()):
            if key in AUTO_OPTIONS and (isinstance(value, Auto) or value == "auto"):
                cands = value.candidates if isinstance(value, Auto) and value.candidates else AUTO_GRIDS[key]
                auto[key] = tuple(sorted(set(float(c) for c in cands)))
                del given[key]
        opts = super().make_options(given)
        opts._auto = auto
        return opts

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        shared = shared_refusal(form, "tcdro", validates_auto=True)
        if shared:
            return shared
        if form.ambiguity == "wasserstein" and not form.linear_residual:
            return (
                "tcdro solves Wasserstein DRO only for linear models (a loss of the form φ(X @ w + b − y) with φ "
                "square or abs), through the closed form; this loss is not of that form"
            )
        if form.ambiguity not in (None, "chi2", "kl", "wasserstein", "target_conditional"):
            return f"tcdro does not know the ambiguity set '{form.ambiguity}'"
        return None

    def solve(self, problem: DROProblem, options: TCDROOptions, ctx: RunContext) -> RawSolution:
        from optlang.backends.dro.train import (
            RegionObjective,
            TrainConfig,
            WassersteinLinearObjective,
            train_polished,
        )

        o = options
        self.check_options(o)  # make_options checked them; options built by hand are checked here
        selection = None
        if problem.ambiguity.auto or getattr(o, "_auto", None):
            chosen, selection = self._select(problem, o, ctx)
            if chosen is None:
                return RawSolution(Status.ERROR, {}, info={"error": selection["error"], "auto": selection})
            problem = dro_auto.resolved(problem, chosen)
            o = dataclasses.replace(o, outer_radius=float(chosen.get("outer_radius", o.outer_radius)))
        amb = problem.ambiguity
        cfg = from_fields(TrainConfig, o)  # solver, lr, batch_size, full_batch_max, dual, refresh: by name
        if amb.kind == "wasserstein":
            if problem.linear is None:
                return RawSolution(Status.ERROR, {}, info={"error": "wasserstein needs a linear-residual loss"})
            lin = problem.linear
            if amb.p == 1 and lin.loss == "square" and amb.radius > 0:
                raw = self._wasserstein_square_p1(problem, ctx)
                _record_selection(raw.info, selection)
                return raw

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
        _record_selection(info, selection)
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


def _record_selection(info: dict[str, Any], selection: dict[str, Any] | None) -> None:
    """The validation record of `auto` parameters (dro_auto.select) in the solution's info."""
    if selection is None:
        return
    info["auto"] = selection
    keys = [k for k in selection["chosen"] if k in selection["parameters"] or k == "outer_radius"]
    chosen = ", ".join(f"{k} {selection['chosen'][k]:g}" for k in keys)
    info["auto_choice"] = f"{chosen}, {selection['method'].split(' ')[0]}"
