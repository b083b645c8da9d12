"""Backend `sdp-bm`: Burer–Monteiro for the Max-Cut SDP in torch (Riemannian gradient, Armijo line
search on the product of spheres, random start), dual bound by the same eigenvalue shift, GW rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from optlang.backends.base import Backend, RawSolution, RunContext, Status
from optlang.backends.maxcut.bounds import certificate, dense_weights
from optlang.backends.maxcut.common import (
    ROUNDING_CHOICES,
    ROUNDING_RANGES,
    edgeless,
    energy_check,
    proven_lower,
    refuse_maxcut,
    status_for,
)
from optlang.backends.maxcut.gw import gw_round
from optlang.backends.maxcut.proxy import BM_SCHEDULE, proxy_solve
from optlang.backends.maxcut.reduce import to_maxcut
from optlang.lazy import lazy_module
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form


@dataclass
class SDPBMOptions:
    """Options of `sdp-bm`."""

    steps: int = 5000  # max Riemannian steps
    target_gap: float = 1e-4  # stop once (bound − primal)/primal ≤ this (certified)
    rank: int = 0  # columns of V (0: ⌈√(2n)⌉ + 1)
    planes: int = 256
    polish: int = 16  # the best `polish` roundings get 1-flip local search
    local_search: bool = True
    shift: str = "uniform"


class SDPBM(Backend):
    """Burer–Monteiro SDP solver with a certified dual bound (the classical fast baseline)."""

    name: ClassVar[str] = "sdp-bm"
    kinds: ClassVar[frozenset[str]] = frozenset({"maxcut", "ising"})
    summary: ClassVar[str] = "Max-Cut SDP by Burer–Monteiro (torch, Riemannian gradient), shifted dual, GW rounding"
    auto: ClassVar[bool] = False
    priority: ClassVar[int] = 80
    Options: ClassVar[type] = SDPBMOptions
    # rank 0: ⌈√(2n)⌉ + 1; target_gap 0: all the steps
    option_ranges: ClassVar[dict[str, str]] = {**ROUNDING_RANGES, "steps": ">=1", "target_gap": ">=0", "rank": ">=0"}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = ROUNDING_CHOICES

    def refuse(self, form: Form) -> str | None:
        return refuse_maxcut(form, self.kinds)

    def solve(self, problem: IsingProblem, options: SDPBMOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        mc = to_maxcut(problem)
        if mc.W.nnz == 0:
            return edgeless(problem, mc)
        steps = options.steps if ctx.max_iter is None else min(options.steps, ctx.max_iter)
        target = options.target_gap if ctx.tol is None else ctx.tol
        Wd = dense_weights(mc.W, ctx.device, ctx.dtype)
        gen = ctx.torch_generator()
        res = proxy_solve(
            Wd,
            gen,
            refine_steps=steps,
            target_gap=target,
            shift=options.shift,
            should_stop=ctx.should_stop,
            rank=options.rank or None,
            first_check=BM_SCHEDULE[0],
            growth=BM_SCHEDULE[1],
        )
        ctx.report(mc.offset - res.primal, mc.offset - res.bound, stage="sdp")
        with torch.no_grad():
            t, cut = gw_round(mc.W, res.V, options.planes, gen, options.local_search, options.polish)
        s = mc.spins(t)
        energy, echeck = energy_check(problem, mc, s, cut)
        lower = proven_lower(mc, res.bound)  # integer weights: the bound rounded down to an integer cut
        ctx.report(energy, lower, stage="rounding")
        checks = certificate(torch.as_tensor(mc.W.toarray(), dtype=torch.float64), res.dual.y, cut)
        checks["energy_recomputed"] = echeck
        status = status_for(energy, lower, ctx, ctx.should_stop())
        if status == Status.FEASIBLE and res.gap > target and res.refine_steps >= steps:
            status = Status.ITERATION_LIMIT  # the SDP was not solved to the requested gap
        info = {
            "cut": cut,
            "sdp_upper_bound": res.bound,
            "sdp_primal": res.primal,
            "sdp_gap": res.gap,
            "gap": (res.bound - cut) / max(abs(res.bound), 1.0),
            "steps": res.refine_steps,
            "eig_checks": res.checks,
            "shift": res.dual.shift,
            "timings": res.timings,
        }
        return RawSolution(
            status=status,
            values={"s": s},
            objective=energy,
            bound=lower,
            iterations=res.refine_steps,
            history=list(ctx.history),
            info=info,
            checks=checks,
        )
