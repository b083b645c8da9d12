"""ERM: the empirical-risk baseline for DRO models (backend `erm`).

It minimizes the plain mean of the per-sample loss and ignores the ambiguity set, which is why
the planner never picks it on its own (auto=False); a user asks for it to compare. The robust
objective of the model is still recomputed at the ERM solution and reported in `info`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.dro.common import TRAIN_CHOICES, TRAIN_RANGES, shared_refusal
from optlang.backends.dro.report import solution_report
from optlang.backends.loop import from_fields
from optlang.problem import DROProblem


@dataclass
class ERMOptions:
    """Options of `erm`: the optimizer only."""

    solver: str = "auto"  # auto | lbfgs | adam
    lr: float = 0.01
    batch_size: int = 0  # 0: full batch up to full_batch_max samples, else 1024
    full_batch_max: int = 200_000
    polish_iter: int = 200  # float32 L-BFGS runs end with up to this many float64 iterations (0: off)


class ERM(Backend):
    """Minimize the mean loss (the baseline every DRO method is compared with)."""

    name = "erm"
    kinds = frozenset({"dro"})
    summary = "empirical risk minimization baseline: the plain mean loss, ambiguity set ignored"
    auto = False
    priority = 90
    Options = ERMOptions
    option_ranges = TRAIN_RANGES
    option_choices = TRAIN_CHOICES
    preload = ("torch._dynamo",)  # torch.optim imports it on first use

    def refuse(self, form: Any) -> str | None:
        base = super().refuse(form)
        if base:
            return base
        shared = shared_refusal(form, "erm")
        if shared:
            return shared
        return None

    def solve(self, problem: DROProblem, options: ERMOptions, ctx: RunContext) -> RawSolution:
        from optlang.backends.dro.train import MeanObjective, TrainConfig, train_polished

        o = options
        self.check_options(o)  # make_options checked them; options built by hand are checked here
        cfg = from_fields(TrainConfig, o)  # solver, lr, batch_size, full_batch_max: by name
        out = train_polished(
            problem, lambda dtype: MeanObjective(problem.loss.compile(ctx.device, dtype)), ctx, cfg, o.polish_iter
        )
        losses = np.asarray(problem.loss.value(out.values), dtype=np.float64).ravel()
        mean = float(losses.mean())
        info: dict[str, Any] = {"solver": out.solver, "mean_loss": mean}
        checks: dict[str, tuple[bool, str]] = {}
        try:
            robust, rinfo, _ = solution_report(problem, out.values)
            info["robust_objective_at_solution"] = float(robust)
            if "regions" in rinfo:
                info["regions"] = rinfo["regions"]
        except ValueError as exc:  # e.g. wasserstein without linear structure: nothing to report
            info["robust_objective_at_solution"] = None
            info["robust_note"] = str(exc)
        status = out.status if np.isfinite(mean) else Status.DIVERGED
        return RawSolution(
            status,
            out.values,
            objective=mean,
            iterations=out.iterations,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )
