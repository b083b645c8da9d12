"""Backend `gnnsdp`: the learned SDP proxy — certified Max-Cut upper bound, GW rounding, local search.

Also `sdp_bound(problem, ctx)`, the lower bound on an Ising energy that the planner attaches when a
model asks `bound = "sdp"` with another backend.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

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
from optlang.backends.maxcut.proxy import REFINE_SCHEDULE, ProxyResult, load_model, proxy_solve
from optlang.backends.maxcut.reduce import MaxCutForm, to_maxcut
from optlang.errors import OptionError
from optlang.lazy import lazy_module
from optlang.problem import IsingProblem

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

if TYPE_CHECKING:
    from optlang.analysis import Form


@dataclass
class GNNSDPOptions:
    """Options of `gnnsdp`."""

    refine_steps: int = 300  # max Riemannian refinement steps after the forward pass (0: network only)
    target_gap: float = 1e-3  # stop refining once (bound − primal)/primal ≤ this (certified)
    planes: int = 256  # Goemans–Williamson hyperplanes, rounded and scored in one batch
    polish: int = 16  # the best `polish` roundings get 1-flip local search
    local_search: bool = True
    shift: str = "uniform"  # dual shift: "uniform" (y + t·1) or "degree" (y + t·p, p ∝ 1 + degree)
    weights: str = ""  # a safetensors file of other trained weights ("" = the shipped ones)
    forward_bound: bool = False  # also certify the network's own dual before refining (one more eigensolve)


def run_proxy(
    mc: MaxCutForm,
    ctx: RunContext,
    refine_steps: int,
    target_gap: float,
    shift: str = "uniform",
    weights: str = "",
    certify_forward: bool = False,
) -> ProxyResult:
    """The proxy on a Max-Cut form, on ctx's device and dtype."""
    Wd = dense_weights(mc.W, ctx.device, ctx.dtype)
    try:
        model = load_model(ctx.device, ctx.dtype, weights or None)
    except Exception as e:  # a user's file that is not the proxy's weights (the shipped ones always load)
        if not weights:
            raise
        why = f"{weights!r} is not a GNN-SDP weights file ({type(e).__name__}: {e})"
        raise OptionError("weights", f"option 'weights' of 'gnnsdp': {why}") from e
    should_stop = ctx.should_stop
    if math.isfinite(ctx.remaining()):
        # leave time for what follows the refinement: the final float64 eigensolve, the rounding and
        # the certificate's own eigensolve (an eigensolve ≈ 7–10 Cholesky factorizations, timed here)
        reserve = 4.0 * eig_seconds(mc.n, ctx.device)

        def should_stop() -> bool:
            return ctx.should_stop() or ctx.remaining() <= reserve

    return proxy_solve(
        Wd,
        ctx.torch_generator(),
        model=model,
        refine_steps=refine_steps,
        target_gap=target_gap,
        shift=shift,
        should_stop=should_stop,
        certify_forward=certify_forward,
        keep_rank=True,
        first_check=REFINE_SCHEDULE[0],
        growth=REFINE_SCHEDULE[1],
        forward_check=True,  # the network's dual alone often meets the target on unsigned graphs
    )


def eig_seconds(n: int, device: str | torch.device) -> float:
    """An estimate of one float64 n × n eigensolve here: 10 × a timed Cholesky (measured 7–10×)."""
    return 10.0 * time_cholesky(n, device)


def time_cholesky(n: int, device: str | torch.device) -> float:
    """Seconds one float64 Cholesky of an n × n matrix takes here (the unit of certificate cost)."""
    A = torch.eye(n, dtype=torch.float64, device=device) * float(n)
    A += 1.0
    t = time.perf_counter()
    torch.linalg.cholesky_ex(A)
    if A.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - t


def sdp_bound(problem: IsingProblem, ctx: RunContext) -> float:
    """A valid lower bound on min E(s) of the Ising problem: offset − (certified SDP upper bound on the cut)."""
    mc = to_maxcut(problem)
    if mc.W.nnz == 0:
        return float(mc.offset)
    res = run_proxy(mc, ctx, refine_steps=GNNSDPOptions.refine_steps, target_gap=GNNSDPOptions.target_gap)
    return float(proven_lower(mc, res.bound))  # integer weights: rounded down to an integer cut


class GNNSDP(Backend):
    """Learned SDP proxy with a float64 dual certificate, GW rounding and 1-flip local search."""

    name: ClassVar[str] = "gnnsdp"
    kinds: ClassVar[frozenset[str]] = frozenset({"maxcut", "ising"})
    summary: ClassVar[str] = "GNN-SDP proxy: learned Max-Cut SDP primal/dual, certified bound, GW rounding"
    priority: ClassVar[int] = 20
    Options: ClassVar[type] = GNNSDPOptions
    # refine_steps 0: the network's answer only; target_gap 0: refine for all the steps
    option_ranges: ClassVar[dict[str, str]] = {**ROUNDING_RANGES, "refine_steps": ">=0", "target_gap": ">=0"}
    option_choices: ClassVar[dict[str, tuple[str, ...]]] = ROUNDING_CHOICES

    def check_options(self, options: Any, auto: Mapping[str, tuple[float, ...]] | None = None) -> None:
        """The tables, and a `weights` file that exists (read relative to the working directory)."""
        super().check_options(options, auto)
        if options.weights and not Path(options.weights).is_file():
            raise OptionError(
                "weights",
                f"option 'weights' of 'gnnsdp': no file {options.weights!r} (from {Path.cwd()})",
                hint='a safetensors file of trained proxy weights; "" = the shipped ones',
            )

    def refuse(self, form: Form) -> str | None:
        return refuse_maxcut(form, self.kinds)

    def solve(self, problem: IsingProblem, options: GNNSDPOptions, ctx: RunContext) -> RawSolution:
        self.check_options(options)  # (options built by hand, not by make_options)
        mc = to_maxcut(problem)
        if mc.W.nnz == 0:
            return edgeless(problem, mc)
        steps = options.refine_steps if ctx.max_iter is None else min(options.refine_steps, ctx.max_iter)
        target = options.target_gap if ctx.tol is None else ctx.tol
        res = run_proxy(mc, ctx, steps, target, options.shift, options.weights, options.forward_bound)
        ctx.report(mc.offset - res.primal, mc.offset - res.bound, stage="proxy")
        polish = options.polish if not ctx.should_stop() else 1  # out of time: polish only the best rounding
        stop = None
        if math.isfinite(ctx.remaining()):  # end the 1-flip descent in time for the certificate's eigensolve
            cert = 1.5 * eig_seconds(mc.n, ctx.device)

            def stop() -> bool:
                return ctx.remaining() <= cert

        with torch.no_grad():
            t, cut = gw_round(
                mc.W, res.V, options.planes, ctx.torch_generator(), options.local_search, polish, stop=stop
            )
        s = mc.spins(t)
        energy, echeck = energy_check(problem, mc, s, cut)
        lower = proven_lower(mc, res.bound)  # integer weights: the bound rounded down to an integer cut
        ctx.report(energy, lower, stage="rounding")
        checks = certificate(torch.as_tensor(mc.W.toarray(), dtype=torch.float64), res.dual.y, cut)
        checks["energy_recomputed"] = echeck
        status = status_for(energy, lower, ctx, ctx.should_stop())
        if status == Status.FEASIBLE and res.stopped == "time":  # stopped early to finish within the limit
            status = Status.TIME_LIMIT if not ctx.interrupted else ctx.stop_status(Status.FEASIBLE)
        info = {
            "cut": cut,
            "sdp_upper_bound": res.bound,
            "sdp_primal": res.primal,
            "gap": (res.bound - cut) / max(abs(res.bound), 1.0),
            "sdp_gap": res.gap,
            "forward_bound": res.forward_bound,
            "refine_steps": res.refine_steps,
            "eig_checks": res.checks,
            "shift": res.dual.shift,
            "lambda_min_before_shift": res.dual.lam_min,
            "timings": res.timings,
            "maxcut_nodes": mc.n,
            "field_spin": mc.field_spin,
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
