"""`hgms`: select-then-differentiate for general bilevel problems (pseudoinverse hypergradients).

At each upper iterate x: (1) solve the lower level to its solution set S(x) from the previous y;
(2) select: with v from a Krylov solve of H v = ∇ᵧF (H = ∇²ᵧᵧg), the residual r = ∇ᵧF − H v is the
part of ∇ᵧF along S(x) (the null space of H); step y ← y − η r with η from the curvature of F along
r, then return to S(x); repeat until r is negligible — y is then the optimistic selection;
(3) differentiate: v = H⁺∇ᵧF, the minimum-norm solution of the now consistent system, and
∇Φ = ∇ₓF − ∇²ₓᵧg·v; (4) a projected upper step (outer.py). Only Hessian-vector products are used.
Formulas and option defaults: docs/backends/hgms.md.
"""

from __future__ import annotations

import math
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
class HGMSOptions(OuterOptions):
    """HG-MS options (docs/backends/hgms.md)."""

    krylov: str = "minres"  # minres | cgnr (CG on the normal equations) | clip (spectrally clipped Lanczos)
    krylov_tol: float = -1.0  # relative residual / least-squares test; −1: 1e-10 in float64, 1e-4 in float32
    krylov_iters: int = 500  # products per Krylov solve at most (Lanczos steps for clip)
    clip_delta: float = 1e-6  # clip: eigenvalues of H below clip_delta·‖H‖ are raised to it
    warm_start: bool = True  # start each Krylov solve from the previous v (else from 0: exact minimum norm)
    select_iters: int = 50  # selection steps along S(x) per upper iterate at most
    select_tol: float = -1.0  # selected when ‖r‖ ≤ select_tol·max(1, ‖∇ᵧF‖); −1: 1e-9 float64, 1e-4 float32


class HGMSOracle(HyperOracle):
    """Lower solve → optimistic selection → pseudoinverse hypergradient, warm-started across calls."""

    def __init__(self, levels: Levels, o: HGMSOptions, y0: torch.Tensor, gscale: float) -> None:
        super().__init__(levels, o, y0, gscale)
        self.h = o
        f64 = levels.dtype == torch.float64
        self.ktol = o.krylov_tol if o.krylov_tol > 0 else (1e-10 if f64 else 1e-4)
        self.stol = o.select_tol if o.select_tol > 0 else (1e-9 if f64 else 1e-4)
        self.eta = math.nan
        self.selection_steps = 0

    def _solve(self, ops: Any, b: torch.Tensor, warm: torch.Tensor | None) -> krylov.KrylovResult:
        o = self.h
        x0 = warm if o.warm_start else None
        if o.krylov == "minres":
            return krylov.minres(ops.yy, b, x0, o.krylov_iters, self.ktol)
        if o.krylov == "cgnr":
            return krylov.cg_normal(ops.yy, b, x0, o.krylov_iters, self.ktol)
        # clip: δ relative to ‖H‖ (a few power steps are part of the Lanczos run itself)
        hn = float(torch.linalg.vector_norm(ops.yy(b))) / max(float(torch.linalg.vector_norm(b)), 1e-300)
        return krylov.lanczos_clipped(ops.yy, b, o.clip_delta * max(hn, 1e-300), o.krylov_iters, self.ktol)

    def __call__(self, x: torch.Tensor) -> Eval:
        lv = self.levels
        bF, bg = lv.draw(upper=True), lv.draw(upper=False)
        y = self.solve_lower(x, self.y)
        steps = 0
        while True:
            phi, gx, gy = lv.grad_F(x, y, bF)
            ops = lv.hessian_ops(x, y, bg)
            res = self._solve(ops, gy, self.v)
            r = res.residual
            rn = float(torch.linalg.vector_norm(r))
            gyn = float(torch.linalg.vector_norm(gy))
            if self.h.krylov == "clip" or rn <= self.stol * max(1.0, gyn) or steps >= self.h.select_iters:
                break
            # a selection step along S(x): r lies in null(H), F's curvature along it gives the step
            c = float(torch.dot(r, lv.hvp_F_yy(x, y, r, bF)))
            eta = rn * rn / c if c > 0 else (self.eta if self.eta == self.eta else 1.0 / max(gyn, 1e-30))
            f0 = phi
            for _ in range(30):
                yn = y - eta * r
                if lv.F(x, yn, bF) <= f0 - 0.25 * eta * rn * rn or lv.stochastic:
                    break
                eta *= 0.5
            self.eta = eta
            y = self.solve_lower(x, yn)
            self.v = res.x
            steps += 1
        self.selection_steps += steps
        v = res.x
        if self.h.krylov == "minres" and rn > self.ktol * max(1.0, gyn):
            # MINRES on an inconsistent system leaks the null-space part into x: re-solve on the
            # consistent right-hand side ∇ᵧF − r ∈ range(H) for the minimum-norm v
            v = krylov.minres(ops.yy, gy - r, None, self.h.krylov_iters, self.ktol).x
        h = gx - ops.xy(v)
        self.y, self.v = y, v
        info = {
            "lower_grad_norm": self.lower_grad,
            "selection_residual": rn / max(1.0, gyn),
            "selection_steps": self.selection_steps,
            "krylov_reason": res.reason,
        }
        return Eval(phi, h, y, info)


class HGMS(Backend):
    """Select-then-differentiate with pseudoinverse hypergradients (research)."""

    name = "hgms"
    kinds = frozenset({"general_bilevel"})
    summary = "HG-MS: lower solve, optimistic selection along the solution set, H⁺ hypergradient by Krylov"
    research = True
    priority = 10
    Options = HGMSOptions
    option_ranges = {**OUTER_RANGES, "krylov_iters": ">=1", "select_iters": ">=0", "clip_delta": ">0"}
    option_choices = {**OUTER_CHOICES, "krylov": ("minres", "cgnr", "clip")}

    def refuse(self, form: Any) -> str | None:
        return super().refuse(form) or refuse_general_bilevel(form, self.name)

    def solve(self, problem: GeneralBilevelProblem, options: HGMSOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # make_options checked them; options built by hand are checked here

        def make(levels: Levels, y0: torch.Tensor, gscale: float) -> HGMSOracle:
            return HGMSOracle(levels, options, y0, gscale)

        return drive(problem, options, ctx, make, {"method": "hgms", "krylov": options.krylov})
