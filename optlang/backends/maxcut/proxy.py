"""The proxy pipeline: graph → network (V, y) → optional Burer–Monteiro refinement → certified bound.

Shared by the `gnnsdp` and `bnb` backends and by `sdp_bound`. The bound returned is always the
smaller of the shifted network dual and the shifted complementary-slackness dual of the final V,
both made feasible in float64 (bounds.shift_dual), so it is valid whatever the weights are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from optlang.backends.maxcut.bm import bm_ascent, default_rank, pad_rank, random_factor
from optlang.backends.maxcut.bounds import DualBound, cs_dual, primal_value, shift_dual, try_shift
from optlang.lazy import lazy_module

if TYPE_CHECKING:
    import torch

    from optlang.backends.maxcut.model import GNNSDP
else:
    torch = lazy_module("torch")

# (first check, growth) of the Cholesky certificate schedule: from the network's V, and for `sdp-bm`
# from a random V (its standard schedule, unchanged). Chosen on tuning graphs (seeds 777, 778; see
# docs/backends/maxcut_sdp.md). BM_TUNED is what suits a random start best there (BM needs ~20–55
# steps), shown beside the standard one in the benchmark so the proxy is also compared with a BM
# whose schedule was tuned as much as its own.
REFINE_SCHEDULE = (12, 1.5)
BM_SCHEDULE = (10, 1.5)
BM_TUNED_SCHEDULE = (30, 1.25)
FORWARD_LOOSE = 1e-2  # forward_promising: a target this loose is tried on signed graphs too
STALL_GAIN = 0.1  # stall_checks: the relative gap improvement that counts as progress
RANK_PATIENCE = 150  # keep_rank: steps at the network's rank before widening to ⌈√(2n)⌉+1
WEIGHTS = Path(__file__).resolve().parent / "weights" / "gnnsdp.safetensors"


@cache
def _load(path: str, device: str, dtype: torch.dtype) -> GNNSDP:
    from optlang.backends.maxcut.model import load_weights  # the network (torch.nn) only when used

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
    stopped: str = ""  # why refinement ended: "callback" (target/pruning), "time", "steps", "grad", ...

    @property
    def bound(self) -> float:
        return self.dual.bound

    @property
    def gap(self) -> float:
        return (self.dual.bound - self.primal) / max(abs(self.primal), 1.0)


def next_check(it: int, gap: float, state: dict, target_gap: float, check_every: int) -> int:
    """When to pay for the next O(n³) certificate: every `check_every` steps when positive, else
    where the log-linear trend of the last two certified gaps reaches 0.9·target (clamped to
    [it + 3, 2·it]); doubling while there is no trend yet."""
    if check_every > 0:
        return it + check_every
    prev = state.get("last")
    state["last"] = (it, gap)
    if prev is None or target_gap <= 0 or gap <= 0 or prev[1] <= gap:
        return 2 * it
    slope = (math.log(gap) - math.log(prev[1])) / (it - prev[0])
    need = math.log(0.9 * target_gap / gap) / slope
    return it + int(min(max(math.ceil(need), 3), it))


def forward_promising(Wd: torch.Tensor, target_gap: float) -> bool:
    """Whether the network's dual can plausibly meet `target_gap` (so its Cholesky test is worth
    one O(n³/3) factorization): graphs without negative weights, or a loose target (≥ FORWARD_LOOSE).
    On the tuning graphs (seeds 777, 778, n = 50–800) the forward gap of unsigned graphs was
    0.1–1.2 % (ER: ≤ 0.46 %), of signed ones 1.3–6.5 %: there the test always failed at 0.3 %."""
    return target_gap >= FORWARD_LOOSE or not bool((Wd < 0).any())


def forward_certificate(W64: torch.Tensor, V: torch.Tensor, y: torch.Tensor, target_gap: float) -> DualBound | None:
    """The network's dual y made feasible at the target, or None: one Cholesky of M(y) + t·I with t
    chosen so that Σy + n·t = primal(V) + 0.9·target·max(|primal|, 1) (bounds.try_shift pads t rigorously)."""
    n = W64.shape[0]
    y64 = y.to(torch.float64)
    prim = float(primal_value(W64, V.to(torch.float64)))
    t = (prim + 0.9 * target_gap * max(abs(prim), 1.0) - float(y64.sum())) / n
    if not t >= 0.0:  # the network's dual already exceeds the target before any shift
        return None
    return try_shift(W64, y64, t)


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
    certify_forward: bool = True,
    cholesky_checks: bool = True,
    keep_rank: bool = False,
    growth: float = 1.5,
    forward_check: bool = False,
    stall_checks: int = 0,
) -> ProxyResult:
    """Bound the Max-Cut SDP of dense weights Wd (working dtype, on its device).

    Start from `V0` when given (warm start), else from the network (`model`), else random.
    Refinement runs up to `refine_steps` Riemannian steps and stops early once the certified gap is
    ≤ `target_gap`, the bound is ≤ `stop_bound`, or the primal value exceeds `stop_bound` (then no
    bound of this SDP can reach it). Certificates are computed at `first_check`, then as
    `next_check` schedules them (every `check_every` steps when positive: cheap for the small
    graphs of branch and bound).
    With a target gap (and no `stop_bound`), `cholesky_checks` answers each check by one Cholesky
    test of M(y) + (0.9·target·primal/n)·I instead of an eigensolve (bounds.try_shift); the
    schedule is then geometric (×`growth`). `certify_forward=False` skips the network's own dual
    (one O(n³) eigensolve) when refining. `keep_rank=True` refines at the starting factor's own
    width (the network's 24 columns: each step costs O(n²·24) instead of O(n²·(⌈√(2n)⌉+1)); the
    certificate is valid whatever the rank) and pads to `rank` (default ⌈√(2n)⌉+1) only if the
    target is still unmet after `RANK_PATIENCE` steps, in case the low rank stalls above the SDP.
    `forward_check=True` (with a target, Cholesky checks and no `stop_bound`) first tests the
    network's own dual at the target by one Cholesky (`forward_certificate`) and returns with zero
    refinement steps when it passes; the test is made only where it can pass (`forward_promising`).
    `stall_checks=k > 0` (eigenvalue checks) stops refinement when the certified gap has not
    improved by `STALL_GAIN` (10 %) over the last k checks (`stopped = "stalled_gap"`): a target the
    working dtype cannot reach (1e-4 in float32 on small graphs) then costs a few checks, not the
    whole step budget.
    """
    t0 = time.perf_counter()
    n = Wd.shape[0]
    W64 = Wd.to(torch.float64)
    timings: dict[str, float] = {}
    best: DualBound | None = None
    forward_bound = None
    forward_checks = 0
    if V0 is not None:
        V = V0.to(Wd.dtype)
    elif model is not None:
        with torch.inference_mode():
            V, y = model(Wd, gen)
        V, y = V.clone(), y.clone()  # ordinary tensors again (inference tensors refuse some later uses)
        timings["forward"] = time.perf_counter() - t0
        finite = bool(torch.isfinite(V).all()) and bool(torch.isfinite(y).all())
        fast = cholesky_checks and stop_bound is None and target_gap > 0 and shift == "uniform"
        if finite and forward_check and fast and refine_steps > 0 and forward_promising(Wd, target_gap):
            t1 = time.perf_counter()
            db = forward_certificate(W64, V, y, target_gap)
            timings["forward_check"] = time.perf_counter() - t1
            if db is not None:  # the network alone meets the target: no refinement at all
                return ProxyResult(
                    V=V,
                    primal=float(primal_value(W64, V.to(torch.float64))),
                    dual=db,
                    forward_bound=db.bound,
                    refine_steps=0,
                    checks=1,
                    seconds=time.perf_counter() - t0,
                    timings=timings,
                    stopped="forward",
                )
            forward_checks = 1
        if finite and (certify_forward or refine_steps <= 0):
            t1 = time.perf_counter()
            best = shift_dual(W64, y.to(torch.float64), shift)
            forward_bound = best.bound
            timings["shift"] = time.perf_counter() - t1
        elif not finite:  # broken weights: fall back to a random start (the bound stays valid either way)
            V = random_factor(n, rank or default_rank(n), gen, Wd.device, Wd.dtype)
    else:
        V = random_factor(n, rank or default_rank(n), gen, Wd.device, Wd.dtype)
    checks = 0
    steps = 0
    stopped = ""
    if refine_steps > 0 and n > 1:
        t1 = time.perf_counter()
        full_rank = rank or default_rank(n)
        if not keep_rank:
            V = pad_rank(V, full_rank, gen)
        state = {"best": best, "checks": 0, "next": first_check, "gaps": [], "stalled": False}

        def check(Vc: torch.Tensor, it: int, grad_rel: float) -> bool:
            if it < state["next"]:
                return False
            state["checks"] += 1
            if cholesky_checks and stop_bound is None and target_gap > 0 and shift == "uniform":
                # one Cholesky decides "certified gap ≤ target?" (Σ y_cs = primal, so the gap is n·t)
                V64 = Vc.to(torch.float64)
                y = cs_dual(W64, V64)
                prim = float(y.sum())
                db = try_shift(W64, y, 0.9 * target_gap * max(abs(prim), 1.0) / n)
                if db is not None:
                    state["best"] = db if state["best"] is None or db.bound < state["best"].bound else state["best"]
                    return True
                state["next"] = max(it + 3, math.ceil(growth * it))
                return False
            db = certify_factor(Wd, Vc, shift)
            if state["best"] is None or db.bound < state["best"].bound:
                state["best"] = db
            prim = float(primal_value(W64, Vc.to(torch.float64)))
            b = state["best"].bound
            if stop_bound is not None and (b <= stop_bound or prim > stop_bound):
                return True  # prunes now, or never will: primal ≤ SDP value ≤ any certified bound
            gap = (b - prim) / max(abs(prim), 1.0)
            if gap <= target_gap:
                return True
            gaps = state["gaps"]
            gaps.append(gap)
            if stall_checks > 0 and len(gaps) > stall_checks and gap > (1.0 - STALL_GAIN) * gaps[-1 - stall_checks]:
                state["stalled"] = True
                return True
            state["next"] = next_check(it, gap, state, target_gap, check_every)
            return False

        budget = refine_steps
        if keep_rank and V.shape[1] < full_rank:
            V, info = bm_ascent(Wd, V, min(budget, RANK_PATIENCE), callback=check, should_stop=should_stop)
            steps, stopped = info.steps, info.stopped
            if stopped not in ("callback", "time") and budget > steps:  # the low rank missed the target: widen
                V = pad_rank(V, full_rank, gen)
                offset = steps

                def check_after(Vc: torch.Tensor, it: int, grad_rel: float) -> bool:
                    return check(Vc, it + offset, grad_rel)

                V, info = bm_ascent(Wd, V, budget - steps, callback=check_after, should_stop=should_stop)
                steps, stopped = steps + info.steps, info.stopped
        else:
            V, info = bm_ascent(Wd, V, budget, callback=check, should_stop=should_stop)
            steps, stopped = info.steps, info.stopped
        best, checks = state["best"], state["checks"] + forward_checks
        if state["stalled"]:
            stopped = "stalled_gap"
        timings["refine"] = time.perf_counter() - t1
    V64 = V.to(torch.float64)
    if best is None or (steps > 0 and stopped not in ("callback", "stalled_gap")):  # final V not yet certified
        db = certify_factor(Wd, V, shift)
        checks += 1
        if best is None or db.bound < best.bound:
            best = db
    assert best is not None
    return ProxyResult(
        V=V,
        primal=float(primal_value(W64, V64)),
        dual=best,
        forward_bound=forward_bound,
        refine_steps=steps,
        checks=checks,
        seconds=time.perf_counter() - t0,
        timings=timings,
        stopped=stopped,
    )
