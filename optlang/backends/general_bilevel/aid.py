"""`aid`: approximate implicit differentiation, the classical hypergradient baseline.

At each upper iterate: the lower level is solved from the previous y (no selection: whichever
minimizer the solver reaches), v solves ∇²ᵧᵧg·v = ∇ᵧF by conjugate gradient (warm-started), and
∇Φ = ∇ₓF − ∇²ₓᵧg·v. CG assumes an invertible (positive definite) lower-level Hessian; on a singular
one it still returns an answer, and the benchmark shows where that answer lands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optlang.backends.base import Backend, RawSolution, RunContext
from optlang.backends.general_bilevel import krylov
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
class AIDOptions(OuterOptions):
    """AID options (docs/backends/hgms.md, baselines)."""

    cg_tol: float = -1.0  # relative residual; −1: 1e-10 in float64, 1e-4 in float32
    cg_iters: int = 500
    warm_start: bool = True  # CG from the previous v


class _AIDOracle(HyperOracle):
    def __init__(self, levels: Levels, o: AIDOptions, y0: torch.Tensor, gscale: float) -> None:
        super().__init__(levels, o, y0, gscale)
        self.a = o
        self.tol = o.cg_tol if o.cg_tol > 0 else (1e-10 if levels.dtype == torch.float64 else 1e-4)

    def __call__(self, x: torch.Tensor) -> Eval:
        lv = self.levels
        bF, bg = lv.draw(upper=True), lv.draw(upper=False)
        y = self.solve_lower(x, self.y)
        phi, gx, gy = lv.grad_F(x, y, bF)
        ops = lv.hessian_ops(x, y, bg)
        res = krylov.cg(ops.yy, gy, self.v if self.a.warm_start else None, self.a.cg_iters, self.tol)
        h = gx - ops.xy(res.x)
        self.y, self.v = y, res.x
        return Eval(phi, h, y, {"lower_grad_norm": self.lower_grad, "cg_reason": res.reason})


class AID(Backend):
    """Implicit differentiation with CG on the lower-level Hessian (baseline)."""

    name = "aid"
    kinds = frozenset({"general_bilevel"})
    summary = "approximate implicit differentiation: lower solve, CG on ∇²ᵧᵧg (assumes it invertible)"
    research = False
    auto = False
    priority = 60
    Options = AIDOptions
    option_ranges = {**OUTER_RANGES, "cg_iters": ">=1"}
    option_choices = OUTER_CHOICES

    def refuse(self, form: Any) -> str | None:
        return super().refuse(form) or refuse_general_bilevel(form, self.name)

    def solve(self, problem: GeneralBilevelProblem, options: AIDOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # make_options checked them; options built by hand are checked here

        def make(levels: Levels, y0: torch.Tensor, gscale: float) -> _AIDOracle:
            return _AIDOracle(levels, options, y0, gscale)

        return drive(problem, options, ctx, make, {"method": "aid"})
