"""The proxy pipeline: graph → network (V, y) → optional Burer–Monteiro refinement → certified bound.

Shared by the `gnnsdp` and `bnb` backends and by `sdp_bound`. The bound returned is always the
smaller of the shifted network dual and the shifted complementary-slackness dual of the final V,
both made feasible in float64 (bounds.shift_dual), so it is valid whatever the weights are.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import torch

from optlang.backends.maxcut_sdp.bm import bm_ascent, default_rank, pad_rank, random_factor
from optlang.backends.maxcut_sdp.bounds import DualBound, cs_dual, primal_value, shift_dual
from optlang.backends.maxcut_sdp.model import GNNSDP, load_weights

WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "gnnsdp.safetensors"


@cache
def _load(path: str, device: str, dtype: torch.dtype) -> GNNSDP:
    return load_weights(path, device=device, dtype=dtype)


def load_model(device: str | torch.device, dtype: torch.dtype, path: str | Path | None = None) -> GNNSDP:
    """The shipped network (or the one at `path`), cached per device and dtype."""
    return _load(str(path or WEIGHTS), str(device), dtype)


@dataclass
class ProxyResult:
    """A primal factor, its value, the best certified dual and what it cost."""

    V: torch.Tensor
    primal: float  # ¼⟨L, VVᵀ⟩ (a lower bound on the SDP value)
    dual: DualBound  # Σ y' ≥ SDP value ≥ max cut
    forward_bound: float | None  # the bound of the network alone (None when warm-started)
    refine_steps: int
    checks: int  # eigenvalue checks done
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def bound(self) -> float:
        return self.dual.bound

    @property
    def gap(self) -> float:
        return (self.dual.bound - self.primal) / max(abs(self.primal), 1.0)


def certify_factor(Wd: torch.Tensor, V: torch.Tensor, mode: str) -> DualBound:
    """The shifted complementary-slackness dual of V (float64)."""
    W64 = Wd.to(torch.float64)
    return shift_dual(W64, cs_dual(W64, V.to(torch.float64)), mode)


def proxy_solve(
    Wd: torch.Tensor,
    gen: torch.Generator,
    model: GNNSDP | None = None,
    V0: torch.Tensor | None = None,
    refine_steps: int = 0,
    target_gap: float = 0.0,
    stop_bound: float | None = None,
    shift: str = "uniform",
    first_check: int = 10,
    check_every: int = 0,
    should_stop: Callable[[], bool] | None = None,
    rank: int | None = None,
) -> ProxyResult:
    """Bound the Max-Cut SDP of dense weights Wd (working dtype, on its device).

    Start from `V0` when given (warm start), else from the network (`model`), else random.
    Refinement runs up to `refine_steps` Riemannian steps and stops early once the certified gap is
    ≤ `target_gap` or the bound is ≤ `stop_bound` (checked at steps first_check·2^j, or at every
    multiple of `check_every` when it is positive: cheap for the small graphs of branch and bound).
    """
    t0 = time.perf_counter()
    n = Wd.shape[0]
    W64 = Wd.to(torch.float64)
    timings: dict[str, float] = {}
    best: DualBound | None = None
    forward_bound = None
    if V0 is not None:
        V = V0.to(Wd.dtype)
    elif model is not None:
        with torch.no_grad():
            V, y = model(Wd, gen)
        timings["forward"] = time.perf_counter() - t0
        if bool(torch.isfinite(V).all()) and bool(torch.isfinite(y).all()):
            t1 = time.perf_counter()
            best = shift_dual(W64, y.to(torch.float64), shift)
            forward_bound = best.bound
            timings["shift"] = time.perf_counter() - t1
        else:  # broken weights: fall back to a random start (the bound stays valid either way)
            V = random_factor(n, rank or default_rank(n), gen, Wd.device, Wd.dtype)
    else:
        V = random_factor(n, rank or default_rank(n), gen, Wd.device, Wd.dtype)
    checks = 0
    steps = 0
    stopped = ""
    if refine_steps > 0 and n > 1:
        t1 = time.perf_counter()
        V = pad_rank(V, rank or default_rank(n), gen)
        state = {"best": best, "checks": 0, "next": first_check}

        def check(Vc: torch.Tensor, it: int) -> bool:
            if it < state["next"]:
                return False
            state["next"] = it + check_every if check_every > 0 else 2 * state["next"]
            state["checks"] += 1
            db = certify_factor(Wd, Vc, shift)
            if state["best"] is None or db.bound < state["best"].bound:
                state["best"] = db
            prim = float(primal_value(W64, Vc.to(torch.float64)))
            b = state["best"].bound
            if stop_bound is not None and b <= stop_bound:
                return True
            return (b - prim) <= target_gap * max(abs(prim), 1.0)

        V, info = bm_ascent(Wd, V, refine_steps, callback=check, should_stop=should_stop)
        steps, stopped = info.steps, info.stopped
        best, checks = state["best"], state["checks"]
        timings["refine"] = time.perf_counter() - t1
    V64 = V.to(torch.float64)
    if best is None or (steps > 0 and stopped != "callback"):  # the final V is not yet certified
        db = certify_factor(Wd, V, shift)
        checks += 1
        if best is None or db.bound < best.bound:
            best = db
    assert best is not None
    return ProxyResult(
        V=V, primal=float(primal_value(W64, V64)), dual=best, forward_bound=forward_bound,
        refine_steps=steps, checks=checks, seconds=time.perf_counter() - t0, timings=timings,
    )
