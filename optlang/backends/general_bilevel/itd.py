"""`itd`: iterative differentiation, the unrolled hypergradient baseline.

At each upper iterate: K gradient steps y_{k+1} = y_k − α∇ᵧg(x, y_k) from y₀ (the previous run's
y_K when warm-started) are recorded by autograd, and ∇Φ is the exact derivative of F(x, y_K(x)) by
reverse mode through the K steps (each costs about one Hessian-vector product on the way back).
The step is α = `unroll_step`/L_g with L_g from power iteration at the start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import Backend, RawSolution, RunContext
from optlang.backends.general_bilevel import lower as lower_solve
from optlang.backends.general_bilevel.common import (
    OUTER_CHOICES,
    OUTER_RANGES,
    HyperOracle,
    OuterOptions,
    drive,
    refuse_general_bilevel,
)
from optlang.backends.general_bilevel.levels import Levels
from optlang.backends.general_bilevel.outer import Eval
from optlang.lazy import lazy_module
from optlang.problem import GeneralBilevelProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")


@dataclass
class ITDOptions(OuterOptions):
    """ITD options (docs/backends/hgms.md, baselines)."""

    unroll: int = 100  # K, the unrolled lower-level steps
    unroll_step: float = 1.0  # α·L_g
    warm_start: bool = True  # y₀ = the previous y_K (else the seeded start every time)


class _ITDOracle(HyperOracle):
    def __init__(self, levels: Levels, o: ITDOptions, y0: torch.Tensor, gscale: float) -> None:
        super().__init__(levels, o, y0, gscale)
        self.t = o
        self.y_start = self.y.clone()
        self.alpha = 0.0

    def __call__(self, x: torch.Tensor) -> Eval:
        lv = self.levels
        if self.alpha <= 0:
            self.alpha = self.t.unroll_step / lower_solve.power_lipschitz(lv, x, self.y)
        xr = x.detach().requires_grad_(True)
        y = (self.y if self.t.warm_start else self.y_start).detach()
        with torch.enable_grad():
            for _ in range(self.t.unroll):
                y = y if y.requires_grad else y.requires_grad_(True)
                val = lv.g_fn(lv.values(xr, y), lv.draw(upper=False))
                (gy,) = torch.autograd.grad(val, y, create_graph=True, allow_unused=True)
                if gy is None:
                    break
                y = y - self.alpha * gy
            lv.grads += self.t.unroll
            lv.hvps += self.t.unroll  # the reverse pass: one Hessian-vector product per step
            F = lv.F_fn(lv.values(xr, y), lv.draw(upper=True))
            (h,) = torch.autograd.grad(F, xr, allow_unused=True) if F.requires_grad else (None,)
        _, gr = lv.grad_g_y(x, y.detach())
        self.y = y.detach()
        h = h.detach() if h is not None else torch.zeros_like(x)
        return Eval(float(F.detach()), h, self.y, {"lower_grad_norm": float(torch.linalg.vector_norm(gr))})


class ITD(Backend):
    """Differentiation through K unrolled lower-level gradient steps (baseline)."""

    name = "itd"
    kinds = frozenset({"general_bilevel"})
    summary = "iterative differentiation through K unrolled lower-level gradient steps"
    research = False
    auto = False
    priority = 65
    Options = ITDOptions
    option_ranges = {**OUTER_RANGES, "unroll": ">=1", "unroll_step": ">0"}
    option_choices = OUTER_CHOICES

    def refuse(self, form: Any) -> str | None:
        return super().refuse(form) or refuse_general_bilevel(form, self.name)

    def solve(self, problem: GeneralBilevelProblem, options: ITDOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # make_options checked them; options built by hand are checked here

        def make(levels: Levels, y0: torch.Tensor, gscale: float) -> _ITDOracle:
            return _ITDOracle(levels, options, y0, gscale)

        return drive(problem, options, ctx, make, {"method": "itd", "unroll": options.unroll})
