"""What hgms, aid and itd share: the options of the outer loop and the lower solve, the refusals,
and the driver (a run in ctx's dtype, then a float64 polish from its point, then the RawSolution)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import RawSolution, RunContext, Status
from optlang.backends.general_bilevel import lower as lower_solve
from optlang.backends.general_bilevel.levels import Levels
from optlang.backends.general_bilevel.outer import Eval, OuterResult, plbfgs, spg, stochastic
from optlang.lazy import lazy_module
from optlang.problem import GeneralBilevelProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

# The float32 stage runs until its projected hypergradient is below F32_OUTER_TOL·max(1, |Φ|), or Φ
# fell by ≤ F32_STALL·max(1, |Φ|) over 10 iterations (float32 noise: aid on ridge otherwise wandered
# 264 iterations), or its line search fails. Float64 iterations cost ~4× more (feat 10000 × 1000:
# 0.09 s against 0.35 s CPU), and the former stop at 1e-4 handed a flat hyper-objective (Φ still
# 2.9e-2 off) to the polish.
F32_OUTER_TOL = 1e-6
F32_STALL = 1e-6


@dataclass
class OuterOptions:
    """Options every hypergradient backend has (defaults documented in docs/backends/hgms.md)."""

    outer: str = "lbfgs"  # upper loop: lbfgs (projected L-BFGS, free/box domains; else spg) | spg
    outer_iters: int = 500  # upper-level iterations (each stage)
    outer_tol: float = 1e-7  # stop at ‖x − Π(x − ∇Φ)‖ ≤ outer_tol·max(1, |Φ|) (float32 stage: ≥ F32_OUTER_TOL)
    lr: float = -1.0  # cap on the first upper step (−1: 1/‖∇Φ(x₀)‖∞); stochastic: the step α₀ (−1: BB)
    memory: int = 10  # non-monotone window of the line search
    lower_tol: float = 1e-10  # ‖∇ᵧg‖ ≤ lower_tol·max(1, ‖∇ᵧg(x₀, y₀)‖) (float32 stage: ≥ 1e-5)
    lower_iters: int = 2000  # L-BFGS iterations per lower solve
    polish: int = 1000  # float64 outer iterations after a float32 (or minibatch) run; 0: none
    batch_upper: int = 0  # minibatch of F's sample axis: 0 auto (full up to 16384), −1 full, k > 0
    batch_lower: int = 0  # minibatch of g's sample axis (same rule)
    lower_steps: int = 20  # minibatch levels: heavy-ball lower steps per outer step
    stochastic_iters: int = 300  # minibatch levels: outer steps before the polish
    lr_decay: float = 100.0  # minibatch levels: α_k = α₀/(1 + k/lr_decay)
    quadratic: str = "auto"  # auto: follower-only quadratic summands over data rows as c + bᵀy + ½yᵀQy | off


# the declared meaning of the OuterOptions every hypergradient backend has (Backend.option_ranges /
# option_choices); lr (−1: automatic) and batch_upper, batch_lower (−1: full, 0: automatic) are not in it
OUTER_RANGES = {
    "outer_iters": ">=1",
    "outer_tol": ">0",
    "memory": ">=1",
    "lower_tol": ">0",
    "lower_iters": ">=1",
    "polish": ">=0",
    "lower_steps": ">=1",
    "stochastic_iters": ">=1",
    "lr_decay": ">0",
}
OUTER_CHOICES = {"outer": ("lbfgs", "spg"), "quadratic": ("auto", "off")}


def refuse_general_bilevel(form: Any, name: str) -> str | None:
    """Refusals shared by every general bilevel backend, each a sentence."""
    if getattr(form, "constraints", ()):
        return (
            f"{name} honours variable domains and the argmin constraint only; this model has general "
            f"constraints ({'; '.join(form.constraints)}) that it cannot enforce"
        )
    for v in getattr(form, "variables", ()):
        if v.kind != "real":
            return f"{name} needs real variables; '{v.name}' is {v.kind}"
        if v.role == "lower" and v.domain != "free":
            return (
                f"cannot honour the domain of the lower-level variable '{v.name}' ({v.domain}): the lower "
                "level must be unconstrained (∇ᵧg = 0 at its minimizers); reparameterize it in g, e.g. y = exp(u)"
            )
        if v.domain not in ("free", "box", "simplex", "ball"):
            return f"{name} cannot project onto the domain '{v.domain}' of '{v.name}'"
    return None


class HyperOracle(ABC):
    """Base of a hypergradient oracle: the lower solve with warm state, tolerances per dtype."""

    def __init__(self, levels: Levels, o: OuterOptions, y0: torch.Tensor, gscale: float) -> None:
        self.levels = levels
        self.o = o
        self.y = y0.to(levels.dtype)
        self.v: torch.Tensor | None = None
        self.gscale = gscale
        f64 = levels.dtype == torch.float64
        self.lower_tol = (o.lower_tol if f64 else max(o.lower_tol, 1e-5)) * gscale
        self.lower_lr = 0.0
        self.lower_grad = math.nan

    def solve_lower(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """y on the lower level's solution set at x (warm-started); records ‖∇ᵧg‖."""
        lv = self.levels
        if lv.bg is None:
            y, self.lower_grad, _ = lower_solve.lbfgs(lv, x, y, self.lower_tol, self.o.lower_iters)
            return y
        # g's curvature moves with x (e.g. a weight exp(t)): re-estimate it at every call
        self.lower_lr = 0.5 / lower_solve.power_lipschitz(lv, x, y, iters=8)
        y, self.lower_grad = lower_solve.sgd(lv, x, y, self.o.lower_steps, self.lower_lr)
        return y

    def adopt(self, levels: Levels, x: torch.Tensor, e: Eval) -> None:
        """Continue in another dtype/batching from a previous stage's state."""
        self.y = e.y.to(levels.dtype)
        if self.v is not None:
            self.v = self.v.to(levels.dtype)

    @abstractmethod
    def __call__(self, x: torch.Tensor) -> Eval:
        """Φ, the hypergradient and the follower's y at x: each method's own way."""


def drive(
    problem: GeneralBilevelProblem,
    o: OuterOptions,
    ctx: RunContext,
    make_oracle: Any,
    method_info: dict[str, Any],
) -> RawSolution:
    """Run the outer loop (minibatch or SPG) in ctx.dtype, polish in float64, build the RawSolution."""
    levels = Levels(problem, ctx, ctx.dtype, o.batch_upper, o.batch_lower, o.quadratic)
    x0 = levels.xb.initial(ctx, ctx.dtype)
    y0 = levels.yb.initial(ctx, ctx.dtype)
    _, g0 = levels.grad_g_y(x0, y0)
    gscale = max(1.0, float(torch.linalg.vector_norm(g0)))
    oracle = make_oracle(levels, y0, gscale)
    max_iter = ctx.max_iter if ctx.max_iter is not None else o.outer_iters

    def report(phi: float, pgn: float) -> None:
        ctx.report(phi, None, hypergradient=pgn)

    f64 = ctx.dtype == torch.float64
    stages = []
    if levels.stochastic:
        res = stochastic(oracle, levels.xb, x0, ctx, min(max_iter, o.stochastic_iters), o.lr, o.lr_decay, report)
        stages.append(("minibatch", res))
    else:
        tol = o.outer_tol if f64 else max(o.outer_tol, F32_OUTER_TOL)
        loop = plbfgs if o.outer == "lbfgs" else spg
        res = loop(oracle, levels.xb, x0, ctx, max_iter, tol, o.lr, o.memory, report, 0.0 if f64 else F32_STALL)
        stages.append((str(ctx.dtype).removeprefix("torch."), res))
    counters = dict(levels.counters())
    if o.polish > 0 and res.status != Status.DIVERGED and not ctx.should_stop() and (levels.stochastic or not f64):
        lv64 = Levels(problem, ctx, torch.float64, -1, -1, o.quadratic)
        oracle64 = make_oracle(lv64, res.last.y.to(torch.float64), gscale)
        oracle64.v = None if oracle.v is None else oracle.v.to(torch.float64)
        loop = plbfgs if o.outer == "lbfgs" else spg
        res = loop(oracle64, lv64.xb, res.x.to(torch.float64), ctx, o.polish, o.outer_tol, -1.0, o.memory, report)
        stages.append(("float64 polish", res))
        for k, v in lv64.counters().items():
            counters[k] += v
    return solution(levels, res, stages, counters, method_info)


def solution(
    levels: Levels, res: OuterResult, stages: list[tuple[str, OuterResult]], counters: dict[str, int], info: dict
) -> RawSolution:
    values = {**levels.xb.to_numpy(res.x), **levels.yb.to_numpy(res.last.y)}
    info = {
        **info,
        **counters,
        "hypergradient_norm": res.pg_norm,
        "quadratic_form": ",".join(levels.quadratic) or "none",  # levels whose quadratic part is c + bᵀy + ½yᵀQy
        "outer_iterations": sum(r.iterations for _, r in stages),
        "stages": [{"stage": n, "iterations": r.iterations, "status": str(r.status)} for n, r in stages],
        **{k: v for k, v in res.last.info.items() if isinstance(v, (int, float, str, bool))},
    }
    return RawSolution(
        status=res.status,
        values=values,
        objective=res.last.phi,
        iterations=info["outer_iterations"],
        info=info,
    )
